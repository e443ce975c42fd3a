"""Write a model type's config-class defaults as a config.json kvledger and vLLM can read.

For a model type with a transformers config class but no real checkpoint config at hand, the
class's own defaults are a config the project can generate (nothing fetched): this script
instantiates the class with no arguments and writes its ``to_dict()`` to
``tests/data/class-default-configs/<model_type>.json``. Two keys are set beyond the class's:
``architectures`` (the class leaves it None, and vLLM picks its model by it; the value is the
architecture the table below names) and ``dtype`` "bfloat16" (the class leaves it None, and vLLM
would then run a float32 config in float16 or bfloat16 depending on the platform). Both are
recorded under ``_generated_by`` in the file, with the transformers version and the checkpoint
the class's docstring says its defaults resemble (``reference_checkpoint``).

Run with a transformers 5.x installed OUTSIDE the repository (it is not a project dependency),
e.g. the vLLM oracle's venv, which holds the transformers vLLM runs with:

    /work/venvs/vllm032/bin/python scripts/class_default_configs.py [MODEL_TYPE ...]
    python scripts/class_default_configs.py --python /work/venvs/vllm033/bin/python \\
        --transformers 5.20 beam kolibri1 molmo2 moss_transcribe_diarize muse_spark

``--python`` runs the script again under that interpreter (the venv whose transformers is
wanted); ``--transformers`` refuses to write unless the transformers imported is that version
(a prefix: ``5.20`` takes 5.20.2), so a file never records another release's defaults by
mistake. Without model types it writes every model type below, and the ``VARIANTS`` (the
class given arguments, named ``<model_type>.<variant>.json``); a class the imported
transformers does not have is one line and exit 2.

vLLM's own config classes: for a model type vLLM loads with a class of its own
(``vllm/transformers_utils/config.py`` ``_CONFIG_REGISTRY``; the classes live in
``transformers_utils/configs/<file>.py``), ``VLLM_CLASSES`` names the file and class, and the
script imports that one module (``vllm.transformers_utils.configs.<file>``, with
``VLLM_TARGET_DEVICE=cpu``; it pulls in none of vLLM's engine) under a venv holding that vLLM:

    python scripts/class_default_configs.py --python /work/venvs/vllm033/bin/python \\
        --vllm 0.33 step3_text step3_vl kimi_vl

``--vllm`` refuses to write unless the vLLM installed is that version (a prefix), as
``--transformers`` does; with no model types it writes every ``VLLM_CLASSES`` entry.
``_generated_by`` then records ``vllm 0.33.0 transformers_utils/configs/<file>.py <Class>``
and, as for transformers' classes, the checkpoint the class's docstring names (vLLM's
classes mostly name none; the file then says so).
A ``_CONFIG_REGISTRY`` entry that names an upstream transformers class (step3p5 →
transformers' Step3p7TextConfig) is recorded with the file ``transformers``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "class-default-configs"

# model_type -> (transformers config class, the architecture vLLM's registry serves it as)
CLASSES: dict[str, tuple[str, str]] = {
    "glm4_moe_lite": ("Glm4MoeLiteConfig", "Glm4MoeLiteForCausalLM"),
    "cohere2": ("Cohere2Config", "Cohere2ForCausalLM"),
    "glm4": ("Glm4Config", "Glm4ForCausalLM"),
    "apertus": ("ApertusConfig", "ApertusForCausalLM"),
    "seed_oss": ("SeedOssConfig", "SeedOssForCausalLM"),
    "granitemoeshared": ("GraniteMoeSharedConfig", "GraniteMoeSharedForCausalLM"),
    "lfm2_moe": ("Lfm2MoeConfig", "Lfm2MoeForCausalLM"),
    "exaone_moe": ("ExaoneMoeConfig", "ExaoneMoeForCausalLM"),
    "olmo_hybrid": ("OlmoHybridConfig", "OlmoHybridForCausalLM"),
    # served by vLLM's Transformers backend (registry _TRANSFORMERS_SUPPORTED_MODELS)
    "olmo": ("OlmoConfig", "OlmoForCausalLM"),
    "glm": ("GlmConfig", "GlmForCausalLM"),
    "arcee": ("ArceeConfig", "ArceeForCausalLM"),
    "cwm": ("CwmConfig", "CwmForCausalLM"),
    "jais2": ("Jais2Config", "Jais2ForCausalLM"),
    "vaultgemma": ("VaultGemmaConfig", "VaultGemmaForCausalLM"),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM"),
    "flex_olmo": ("FlexOlmoConfig", "FlexOlmoForCausalLM"),
    "hunyuan_v1_dense": ("HunYuanDenseV1Config", "HunYuanDenseV1ForCausalLM"),
    # breadth round 3: the rest of vLLM 0.33's generative architectures with a config class
    "axk1": ("AXK1Config", "AXK1ForCausalLM"),
    "cohere2_moe": ("Cohere2MoeConfig", "Cohere2MoeForCausalLM"),
    "granite_swa": ("GraniteSWAConfig", "GraniteSWAForCausalLM"),
    "granitemoe_swa": ("GraniteMoeSWAConfig", "GraniteMoeSWAForCausalLM"),
    "hy_v3": ("HYV3Config", "HYV3ForCausalLM"),
    "hy_v4": ("HYV4Config", "HYV4ForCausalLM"),
    "hrm_text": ("HrmTextConfig", "HrmTextForCausalLM"),
    "hyperclovax": ("HyperCLOVAXConfig", "HyperCLOVAXForCausalLM"),
    "inkling_text": ("InklingTextConfig", "InklingForCausalLM"),
    "inkling_mm_model": ("InklingConfig", "InklingForConditionalGeneration"),
    "longcat_flash": ("LongcatFlashConfig", "LongcatFlashForCausalLM"),
    "mellum": ("MellumConfig", "MellumForCausalLM"),
    "qwen4_exp_text": ("Qwen4ExpTextConfig", "Qwen4ExpForCausalLM"),
    "qwen4_exp": ("Qwen4ExpConfig", "Qwen4ExpForConditionalGeneration"),
    "aria": ("AriaConfig", "AriaForConditionalGeneration"),
    "audioflamingo3": ("AudioFlamingo3Config", "AudioFlamingo3ForConditionalGeneration"),
    "blip-2": ("Blip2Config", "Blip2ForConditionalGeneration"),
    "cohere2_vision": ("Cohere2VisionConfig", "Cohere2VisionForConditionalGeneration"),
    "cohere_asr": ("CohereAsrConfig", "CohereAsrForConditionalGeneration"),
    "cohere_compass": ("CohereCompassConfig", "CohereCompassForConditionalGeneration"),
    "cosmos3_edge": ("Cosmos3EdgeConfig", "Cosmos3EdgeForConditionalGeneration"),
    "diffusion_gemma": ("DiffusionGemmaConfig", "DiffusionGemmaForBlockDiffusion"),
    "emu3": ("Emu3Config", "Emu3ForConditionalGeneration"),
    "ernie4_5_vl_moe": ("Ernie4_5_VLMoeConfig", "Ernie4_5_VLMoeForConditionalGeneration"),
    "gemma4_unified": ("Gemma4UnifiedConfig", "Gemma4UnifiedForConditionalGeneration"),
    "glm4v_moe": ("Glm4vMoeConfig", "Glm4vMoeForConditionalGeneration"),
    "glmasr": ("GlmAsrConfig", "GlmAsrForConditionalGeneration"),
    "glm_ocr": ("GlmOcrConfig", "GlmOcrForConditionalGeneration"),
    "granite4_vision": ("Granite4VisionConfig", "Granite4VisionForConditionalGeneration"),
    "granite_speech": ("GraniteSpeechConfig", "GraniteSpeechForConditionalGeneration"),
    "granite_speech_plus": ("GraniteSpeechPlusConfig",
                            "GraniteSpeechPlusForConditionalGeneration"),
    "hunyuan_vl": ("HunYuanVLConfig", "HunYuanVLForConditionalGeneration"),
    "internvl": ("InternVLConfig", "InternVLForConditionalGeneration"),
    "llava_next_video": ("LlavaNextVideoConfig", "LlavaNextVideoForConditionalGeneration"),
    "llava_onevision": ("LlavaOnevisionConfig", "LlavaOnevisionForConditionalGeneration"),
    "minicpmv4_7": ("MiniCPMV4_7Config", "MiniCPMV4_7ForConditionalGeneration"),
    "nemotron_h_omni": ("NemotronH_Omni_Reasoning_V3_Config", "NemotronH_Omni_Reasoning_V3"),
    "paddleocr_vl": ("PaddleOCRVLConfig", "PaddleOCRVLForConditionalGeneration"),
    "qianfan_ocr": ("QianfanOCRConfig", "QianfanOCRForConditionalGeneration"),
    "qwen3_omni_moe": ("Qwen3OmniMoeConfig", "Qwen3OmniMoeForConditionalGeneration"),
    "step3p7": ("Step3p7Config", "Step3p7ForConditionalGeneration"),
    "vibevoice_asr": ("VibeVoiceAsrConfig", "VibeVoiceAsrForConditionalGeneration"),
    # breadth round 5: the classes transformers 5.20 (vLLM 0.33's pin) adds; run with
    # --python /work/venvs/vllm033/bin/python --transformers 5.20
    "beam": ("BeamConfig", "BeamForCausalLM"),
    "kolibri1": ("Kolibri1Config", "Kolibri1ForCausalLM"),
    "molmo2": ("Molmo2Config", "Molmo2ForConditionalGeneration"),
    "moss_transcribe_diarize": ("MossTranscribeDiarizeConfig",
                                "MossTranscribeDiarizeForConditionalGeneration"),
    "muse_spark": ("MuseSparkConfig", "MuseSparkForConditionalGeneration"),
}
# vLLM's own config classes (vllm/transformers_utils/config.py _CONFIG_REGISTRY): model_type ->
# (the module under vllm/transformers_utils/configs/, or "transformers" for an upstream class
# the registry names, or a dotted module of vLLM's for one kept beside its model; the class;
# the architecture vLLM's registry serves it as). Run with --python <venv of that vLLM>.
VLLM_CLASSES: dict[str, tuple[str, str, str]] = {
    "step3_text": ("step3_vl", "Step3TextConfig", "Step3TextForCausalLM"),
    "step3_vl": ("step3_vl", "Step3VLConfig", "Step3VLForConditionalGeneration"),
    "step3p5": ("transformers", "Step3p7TextConfig", "Step3p5ForCausalLM"),
    "kimi_vl": ("kimi_vl", "KimiVLConfig", "KimiVLForConditionalGeneration"),
    "ovis": ("ovis", "OvisConfig", "Ovis"),
    "ultravox": ("ultravox", "UltravoxConfig", "UltravoxModel"),
    "deepseek_v41": ("deepseek_v41", "DeepseekV41Config", "DeepseekV41ForCausalLM"),
    "dots3_note": ("dots3_note", "Dots3NoteConfig", "Dots3NoteForCausalLM"),
    "bailing_moe_v3_vl": ("bailing_moe_v3_vl", "BailingMoeV3VLConfig",
                          "BailingMoeV3VLForConditionalGeneration"),
    "moondream3": ("moondream3", "Moondream3Config", "Moondream3ForCausalLM"),
    "isaac": ("isaac", "IsaacConfig", "IsaacForConditionalGeneration"),
    "bagel": ("bagel", "BagelConfig", "BagelForConditionalGeneration"),
    "dory": ("dory", "DoryConfig", "DoryForCausalLM"),
    "funaudiochat": ("funaudiochat", "FunAudioChatConfig",
                     "FunAudioChatForConditionalGeneration"),
    "midashenglm": ("midashenglm", "MiDashengLMConfig", "MiDashengLMModel"),
    "openvla": ("openvla", "OpenVLAConfig", "OpenVLAForActionPrediction"),
    "step5": ("step5", "Step5Config", "Step5ForCausalLM"),
    "step5_vl": ("step5", "Step5VLConfig", "Step5ForConditionalGeneration"),
    "unlimited-ocr": ("unlimited_ocr", "UnlimitedOCRConfig", "UnlimitedOCRForCausalLM"),
    "alpamayo2_super": ("alpamayo2_super", "Alpamayo2SuperConfig", "Alpamayo2Super"),
    "deepseek_vl_v2": ("deepseek_vl2", "DeepseekVLV2Config", "DeepseekVLV2ForCausalLM"),
    "flint": ("vllm.models.flint.configs", "FlintConfig", "FlintForCausalLM"),
}
# A class-default config with arguments, for a model type whose class leaves a key vLLM
# indexes unset: name -> (model_type, the arguments given to the class)
VARIANTS: dict[str, tuple[str, dict[str, object]]] = {
    # Lfm2MoeConfig builds no layer_types; every 4th layer attention, the others short conv.
    "lfm2_moe.layer-types": ("lfm2_moe", {"layer_types": [
        "full_attention" if i % 4 == 3 else "conv" for i in range(32)]}),
    # Glm4vMoeTextConfig leaves head_dim None (4096 / 96 heads does not divide); GLM-4.5V's
    # text config states 128.
    "glm4v_moe.head-dim": ("glm4v_moe", {"text_config": {"head_dim": 128}}),
    # Qwen3OmniMoeTextConfig leaves head_dim None too (2048 / 28 heads does not divide);
    # Qwen3-Omni-30B-A3B's text config states 128.
    "qwen3_omni_moe.head-dim": ("qwen3_omni_moe",
                                {"thinker_config": {"text_config": {"head_dim": 128}}}),
    # HunYuanVLTextConfig leaves head_dim None, which the attention vLLM's Transformers
    # backend builds cannot take; 4096 / 32 heads = 128 stated.
    "hunyuan_vl.head-dim": ("hunyuan_vl", {"text_config": {"head_dim": 128}}),
    # Gemma4UnifiedConfig leaves vision_config None, and vLLM's gemma4_unified.py refuses to
    # build without one; the vision class's own defaults given.
    "gemma4_unified.vision": ("gemma4_unified", {"vision_config": {}}),
    # vLLM's Step3TextConfig defaults moe_layers_enum to a tuple, but step3_text.py parses it
    # as a comma-separated string (moe_layers_enum.strip().split(",")), as Step3's checkpoints
    # write it; the same layers 4..59 given as that string (vLLM's class, --vllm 0.33).
    "step3_text.moe-layers-string": ("step3_text", {
        "moe_layers_enum": ",".join(str(i) for i in range(4, 60))}),
    "step3_vl.moe-layers-string": ("step3_vl", {"text_config": {
        "moe_layers_enum": ",".join(str(i) for i in range(4, 60))}}),
    # ... and step3_vl.py builds its language model from text_config with no architectures=,
    # which transformers cannot name for step3_text: the text config states it, as Step3's
    # checkpoints do.
    # Step3p5MoEFeedForward (step3p5.py) reads use_moe_router_bias, which transformers'
    # Step3p7TextConfig lacks, and asserts it true; Step-3.5's checkpoints state true.
    "step3p5.router-bias": ("step3p5", {"use_moe_router_bias": True}),
    # vLLM's DeepseekVLV2Config reads its language model from language_config (as DeepSeek-VL2's
    # checkpoints write it) but to_dict() writes the text_config attribute it built; read
    # back, that text_config reaches PreTrainedConfig.__init__ as a plain dict and language_config
    # is absent, so the class's defaults do not round-trip. The same defaults, the key renamed
    # to the one the class reads (RENAMED).
    "deepseek_vl_v2.language-config": ("deepseek_vl_v2", {}),
    # vLLM's Moondream3Config builds text_config / vision_config from config["text"] /
    # config["vision"] (Moondream's own schema, as its checkpoints write it) and to_dict()
    # writes both built objects beside config, which read back as plain dicts the class then
    # indexes (self.text_config.hidden_size). The same defaults given as empty "text" and
    # "vision" sections, the two built objects left out (DROPPED).
    "moondream3.config-text": ("moondream3", {"config": {"text": {}, "vision": {}}}),
    "step3_vl.text-architectures": ("step3_vl", {"text_config": {
        "moe_layers_enum": ",".join(str(i) for i in range(4, 60)),
        "architectures": ["Step3TextForCausalLM"]}}),
}


# A variant whose to_dict() key is not the key the class reads: name -> {written: read}
RENAMED: dict[str, dict[str, str]] = {
    "deepseek_vl_v2.language-config": {"text_config": "language_config"},
}
# A variant whose to_dict() writes objects the class rebuilds from other keys: name -> keys
DROPPED: dict[str, tuple[str, ...]] = {
    "moondream3.config-text": ("text_config", "vision_config"),
}


def reference_checkpoint(config_class: type) -> str:
    """The checkpoint the class's docstring says its defaults resemble ("... will yield a
    similar configuration to that of the [org/name](https://huggingface.co/org/name)")."""
    found = re.search(r"similar configuration to that of\s+(?:the\s+)?\[([^\]]+)\]",
                      config_class.__doc__ or "")
    return found.group(1) if found else "not named by the class docstring"


def _vllm_class(model_type: str) -> tuple[type, str, str]:
    """vLLM's own class for ``model_type``: (the class, where it is, the architecture)."""
    where, class_name, architecture = VLLM_CLASSES[model_type]
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    if where == "transformers":
        module_name, shown = "transformers", "transformers (upstream, named by _CONFIG_REGISTRY)"
    elif "." in where:
        module_name, shown = where, where.removeprefix("vllm.").replace(".", "/") + ".py"
    else:
        module_name = f"vllm.transformers_utils.configs.{where}"
        shown = f"transformers_utils/configs/{where}.py"
    config_class = getattr(importlib.import_module(module_name), class_name, None)
    if config_class is None:
        raise SystemExit(f"class_default_configs: {module_name} has no {class_name} (model "
                         f"type {model_type})")
    return config_class, f"vllm {_vllm_version()} {shown} {class_name}", architecture


def generate(name: str) -> Path:
    import transformers  # the scratch venv's, never the project's

    model_type, arguments = VARIANTS.get(name, (name, {}))
    made_by: dict[str, object] = {}
    if model_type in VLLM_CLASSES:
        config_class, made_by["vllm_config_class"], architecture = _vllm_class(model_type)
        class_name = config_class.__name__
    else:
        class_name, architecture = CLASSES[model_type]
        config_class = getattr(transformers, class_name, None)
        if config_class is None:
            raise SystemExit(f"class_default_configs: transformers {transformers.__version__} "
                             f"has no {class_name} (model type {model_type})")
    config = config_class(**arguments)
    if config.model_type != model_type:
        raise SystemExit(f"{class_name} is model_type {config.model_type!r}, not {model_type!r}")
    data = config.to_dict()
    renamed = RENAMED.get(name, {})
    for written, read in renamed.items():
        data[read] = data.pop(written)
    dropped = DROPPED.get(name, ())
    for written in dropped:
        del data[written]
    data["architectures"] = [architecture]
    data["dtype"] = "bfloat16"
    data["_generated_by"] = {
        "by": "scripts/class_default_configs.py",
        "config_class": class_name,
        **made_by,
        "reference_checkpoint": reference_checkpoint(config_class),
        "transformers_version": transformers.__version__,
        "set_beyond_the_class": ["architectures", "dtype"],
        "class_arguments": sorted(arguments),
        **({"keys_renamed": renamed} if renamed else {}),
        **({"keys_dropped": list(dropped)} if dropped else {}),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def _vllm_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vllm")
    except PackageNotFoundError:
        raise SystemExit("class_default_configs: no vllm installed in this interpreter "
                         "(give --python the venv of the vLLM release wanted)") from None


def _matches(found: str, asked: str) -> bool:
    return found == asked or found.startswith(asked + ".")


def _transformers_version() -> str:
    import transformers  # the scratch venv's, never the project's

    return str(transformers.__version__)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_types", nargs="*")
    parser.add_argument("--python", help="run under this interpreter (its transformers)")
    parser.add_argument("--transformers", help="the transformers version required (a prefix)")
    parser.add_argument("--vllm", help="the vLLM version required (a prefix), for VLLM_CLASSES")
    args = parser.parse_args(argv)
    if args.python:
        rest = [*args.model_types,
                *(["--transformers", args.transformers] if args.transformers else []),
                *(["--vllm", args.vllm] if args.vllm else [])]
        try:
            return subprocess.call([args.python, __file__, *rest])
        except OSError as error:
            print(f"class_default_configs: cannot run {args.python}: {error}", file=sys.stderr)
            return 2
    if args.transformers:
        found = _transformers_version()
        if not _matches(found, args.transformers):
            print(f"class_default_configs: transformers {found} imported, "
                  f"{args.transformers} asked", file=sys.stderr)
            return 2
    if args.vllm and not _matches(found := _vllm_version(), args.vllm):
        print(f"class_default_configs: vllm {found} installed, {args.vllm} asked",
              file=sys.stderr)
        return 2
    # Without model types: transformers' classes, or with --vllm, vLLM's (another venv).
    vllm_variants = [v for v, (m, _) in VARIANTS.items() if m in VLLM_CLASSES]
    wanted = args.model_types or ([*VLLM_CLASSES, *vllm_variants] if args.vllm else
                                  [*CLASSES, *(v for v in VARIANTS if v not in vllm_variants)])
    unknown = [m for m in wanted if m not in CLASSES and m not in VARIANTS
               and m not in VLLM_CLASSES]
    if unknown:
        print(f"class_default_configs: not in the table: {', '.join(unknown)}", file=sys.stderr)
        return 2
    for model_type in wanted:
        print(generate(model_type))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

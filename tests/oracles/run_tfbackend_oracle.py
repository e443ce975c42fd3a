"""Ask vLLM 0.32 what it does with model types it dropped from its own models but still hands
to its Transformers backend, with the processor files a multimodal model needs; write the answers.

A research tool, never imported by the package or the tests. It needs the oracle venv
(``../shared/oracles/tool/README.md``), from the repository root, one run at a time::

    /work/oracle/vllm-venv/bin/python tests/oracles/run_tfbackend_oracle.py \
        > tests/oracles/vllm-0.32/vllm-0.32-tfbackend.jsonl
    /work/oracle/vllm-venv/bin/python tests/oracles/run_tfbackend_oracle.py 3 8 \
        > some.jsonl          # some runs, by index in RUNS (merge them by "command")

Why a script of its own: for an architecture vLLM 0.32 no longer registers (it lists
``MllamaForConditionalGeneration`` in ``_PREVIOUSLY_SUPPORTED_MODELS``) its registry first tries
the Transformers backend (model_executor/models/registry.py ``inspect_model_cls`` →
``_try_resolve_transformers``), and raises the "was supported until" message
(``_raise_for_unsupported``) only when that fails. For a multimodal class the backend is
``TransformersMultiModalForCausalLM``, and already ``ModelConfig.__post_init__`` asks it which
modalities it takes (transformers/multimodal.py ``_get_supported_modalities`` →
``get_hf_processor``), which loads the checkpoint's processor. The shared ``vllm_oracle.py``
copies config.json alone into its model directory, so it stops there with "Can't load image
processor". This script runs that same tool (imported, unchanged: its ``run``) with three of its
functions swapped:

- ``_model_dir_for``: the directory also holds a processor built from transformers 5.19's own
  default classes (``MllamaImageProcessor()``, a small word-level tokenizer carrying the special
  tokens the processor looks up);
- ``build_engine_args``: vLLM loads that tokenizer, as a served model does (the tool skips
  tokenizer init, and without a tokenizer vLLM cannot build the processor), and takes the run's
  engine arguments (``language_model_only``);
- ``build_vllm_config``: after the config, the multimodal budget vLLM's front end builds before
  any worker runs (v1/engine/input_processor.py ``InputProcessor.__init__`` →
  ``MultiModalBudget``); what it raises is recorded as vLLM's refusal.

The processor decides which modalities vLLM accepts (and whether it starts), never the KV cache:
the KV specs come from the layers the model builds (transformers/base.py
``Base._create_attention_instances``: one ``Attention`` per text layer, a per-layer window
where ``layer_types`` says sliding).

No run uses ``--tp`` > 1: the tool runs each TP rank in a spawned process, which imports the
tool afresh, without these swaps. phi4_multimodal has no run: its image processor needs
torchvision, which the oracle venv lacks.

Output: one JSON line per run in ``vllm-0.32-more.jsonl``'s format (``make_vllm_cases.py``),
plus ``why``, ``command``, ``processor_files`` (what was put beside config.json), ``engine_args``
and ``oracle_args``; a run vLLM refused carries ``vllm_refuses_to_start_with`` (type and first
line of the error) instead of the plan. ``tests/plan/test_vllm_tfbackend.py`` replays every line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from oracle_run import (  # noqa: E402
    first_error_line,
    release_tool,
    run_each,
    take_release,
    tool_case_line,
)

SHARED = HERE.parents[1] / ".." / "shared"
# The release asked (``--vllm 0.33``; 0.32 without it), passed to each --one child.
RELEASE, _ARGS = take_release(sys.argv[1:])
TOOL = release_tool(RELEASE)
MLLAMA = "meta-llama--Llama-3.2-Vision-mllama-4layer-TEST.json"
# PersimmonConfig().to_dict() of transformers 5.19 with architectures added (its defaults are
# persimmon-8b's sizes); ../shared/configs/SOURCES-tfbackend.md
PERSIMMON = "transformers--PersimmonConfig-defaults.CLASS.json"

# (config, processor builder, oracle arguments, engine arguments beyond the tool's, why).
# A config is a file of ../shared/configs, "FILE:KEY:Architecture"
# (that file's KEY object alone, naming Architecture), or "class:ConfigClass:Architecture[:JSON]"
# (transformers 5.19's defaults, with JSON's keyword arguments, for model types of which no real
# config.json is at hand: they show what vLLM does with the type, never kvledger's sizes).
RUNS: list[tuple[str, str, list[str], dict[str, Any], str]] = [
    (MLLAMA, "mllama", ["--max-model-len", "8192"], {},
     "MllamaForConditionalGeneration as vLLM serves it by default: the Transformers "
     "multimodal backend, images on"),
    (MLLAMA, "mllama", ["--max-model-len", "8192"], {"language_model_only": True},
     "the same with --language-model-only (every modality limit 0): text only"),
    (MLLAMA, "mllama", ["--max-model-len", "8192", "--kv-cache-dtype", "fp8"],
     {"language_model_only": True},
     "text only with an fp8 cache: the backend passes cache_config to every Attention"),
    (MLLAMA, "mllama", [], {"language_model_only": True},
     "text only at the derived length (131,072: the llama3 rope factor is not applied)"),
    (f"{MLLAMA}:text_config:MllamaForCausalLM", "none", ["--max-model-len", "8192"], {},
     "mllama_text_model on its own (MllamaForCausalLM): the text-only Transformers backend"),
    (PERSIMMON, "none", ["--max-model-len", "8192"], {},
     "persimmon (dropped after v0.25.0): the text-only Transformers backend, bf16"),
    (PERSIMMON, "none", [], {}, "persimmon at its derived length (max_position_embeddings)"),
    (PERSIMMON, "none", ["--max-model-len", "8192", "--kv-cache-dtype", "fp8"], {},
     "persimmon with an fp8 cache"),
    (PERSIMMON, "none", ["--max-model-len", "4096", "--block-size", "32"], {},
     "persimmon with blocks of 32 tokens"),
    # phi4_multimodal has no run: Phi4MultimodalImageProcessor needs torchvision, which this
    # venv lacks (the shared tool stubs it), so its processor cannot be built or loaded here.
    # AyaVisionConfig's default vision tower (SigLIP, 1152 wide, 14 heads) does not build;
    # aya-vision-8b's own SigLIP-2 so400m sizes do.
    ("class:AyaVisionConfig:AyaVisionForConditionalGeneration:" + json.dumps(
        {"vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152,
                           "num_attention_heads": 16, "intermediate_size": 4304,
                           "num_hidden_layers": 27, "image_size": 364, "patch_size": 14}}),
     "aya_vision",
     ["--max-model-len", "8192"], {},
     "aya_vision (dropped after v0.24.0): the multimodal Transformers backend"),
    ("mosaicml--mpt-7b.json", "none", ["--max-model-len", "2048"], {},
     "mpt (dropped after v0.28.0): transformers' MptForCausalLM does not take vLLM's attention "
     "(is_backend_compatible and _can_set_attn_implementation both false), so the fallback "
     "fails and vLLM says 'was supported until'"),
]


class _StartupRefused(Exception):
    """vLLM stopped before its workers ran (the message is vLLM's)."""


def _config_path(name: str) -> Path:
    for folder in (SHARED / "configs",):
        if (folder / name).is_file():
            return folder / name
    raise SystemExit(f"{name}: not in ../shared/configs")


def _config(source: str) -> dict[str, Any]:
    """The config.json a run puts in its model directory (see ``RUNS``)."""
    if source.startswith("class:"):
        import transformers

        _, cls, arch, *kwargs = source.split(":", 3)
        raw: dict[str, Any] = getattr(transformers, cls)(
            **json.loads(kwargs[0] if kwargs else "{}")).to_dict()
        raw["architectures"] = [arch]
        return raw
    name, *lifted = source.split(":")
    raw = json.loads(_config_path(name).read_text())
    if lifted:
        key, arch = lifted
        raw = {**raw[key], "architectures": [arch]}
    return raw


def _word_tokenizer(tokens: list[str], **special: str) -> Any:
    """A fast tokenizer whose vocabulary is just ``tokens`` (the processor only looks up the
    ids of its special tokens when it is built)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(tokens)}, unk_token=tokens[0]))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token=tokens[0], **special)


def _mllama_processor(folder: str) -> None:
    """MllamaProcessor (transformers/models/mllama/processing_mllama.py) with the default
    MllamaImageProcessor and a tokenizer holding '<|image|>' and '<|python_tag|>', which its
    __init__ looks up."""
    from transformers import MllamaImageProcessor, MllamaProcessor

    tokenizer = _word_tokenizer(
        ["<unk>", "<|begin_of_text|>", "<|image|>", "<|python_tag|>", "<|eot_id|>",
         "<|finetune_right_pad_id|>"],
        bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
        pad_token="<|finetune_right_pad_id|>")
    MllamaProcessor(image_processor=MllamaImageProcessor(),
                    tokenizer=tokenizer).save_pretrained(folder)


def _aya_vision_processor(folder: str) -> None:
    """AyaVisionProcessor with transformers' default image processor for it (GotOcr2) and a
    tokenizer holding the image tokens it names."""
    from transformers import AyaVisionProcessor, GotOcr2ImageProcessor

    tokenizer = _word_tokenizer(
        ["<unk>", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>", "<image>", "<|START_OF_IMG|>",
         "<|END_OF_IMG|>", "<|IMG_PATCH|>", "<|IMG_LINE_BREAK|>", "TILE", "TILE_GLOBAL"],
        bos_token="<BOS_TOKEN>", eos_token="<|END_OF_TURN_TOKEN|>")
    AyaVisionProcessor(image_processor=GotOcr2ImageProcessor(),
                       tokenizer=tokenizer).save_pretrained(folder)


PROCESSORS = {"mllama": _mllama_processor, "aya_vision": _aya_vision_processor,
              "none": lambda folder: None}


def _one(index: int) -> None:
    """Run ``RUNS[index]`` through the shared tool's ``run`` in this process; print its line."""
    name, processor, extra, engine, why = RUNS[index]
    spec = importlib.util.spec_from_file_location("vllm_oracle", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    files: list[str] = []

    def model_dir_for(config_path: str, hf_quant_config: str | None = None) -> tuple[str, bool]:
        folder = tempfile.mkdtemp(prefix="vllm_tfbackend_model_")
        PROCESSORS[processor](folder)
        files.extend(sorted(os.listdir(folder)))
        Path(folder, "config.json").write_text(json.dumps(_config(name), indent=2))
        return folder, True

    build_engine_args = tool.build_engine_args
    build_vllm_config = tool.build_vllm_config

    def with_tokenizer(args: Any, model_dir: str) -> Any:
        # The shared tool passes skip_tokenizer_init=True (it has no tokenizer); vLLM serving
        # a model loads its tokenizer, and the processor vLLM builds takes it
        # (multimodal/registry.py _create_processing_ctx → cached_tokenizer_from_config, which
        # is None when the init is skipped, and MllamaProcessor needs one).
        engine_args = build_engine_args(args, model_dir)
        engine_args.skip_tokenizer_init = False
        for key, value in engine.items():
            setattr(engine_args, key, value)
        return engine_args

    def with_budget(args: Any, model_dir: str) -> Any:
        # What vLLM builds next, before any worker: the front end's InputProcessor (and the
        # scheduler, and GPUModelRunner.__init__) size the encoder cache with a
        # MultiModalBudget whenever the model takes multimodal inputs
        # (v1/engine/input_processor.py InputProcessor.__init__). The shared tool skips it
        # (it has no processor); here it runs, and whatever it raises stops vLLM.
        from vllm.multimodal import MULTIMODAL_REGISTRY
        from vllm.multimodal.encoder_budget import MultiModalBudget

        vllm_config = build_vllm_config(args, model_dir)
        if vllm_config.model_config.supports_multimodal_inputs:
            try:
                MultiModalBudget(vllm_config, MULTIMODAL_REGISTRY)
            except Exception as err:
                raise _StartupRefused(f"{type(err).__name__}: {err}") from err
        return vllm_config

    tool._model_dir_for = model_dir_for
    tool.build_engine_args = with_tokenizer
    tool.build_vllm_config = with_budget
    argv = [name, "--kv-cache-memory-bytes", "16GiB", *extra]
    args = tool.build_parser().parse_args(argv)
    tool._redirect_stdout_to_stderr()
    head = {"config": name, "why": why,
            "command": f"tests/oracles/run_tfbackend_oracle.py --vllm {RELEASE} {index}",
            "processor_files": files, "engine_args": engine, "oracle_args": extra}
    try:
        got = tool.run(args)  # raises, with vLLM's traceback on stderr, when vLLM refuses
    except _StartupRefused as refused:
        tool._emit_json({**head, "vllm_refuses_to_start_with": str(refused)})
        return
    except Exception as err:  # vLLM stopped building the config or the model
        tool._emit_json({**head, "vllm_refuses_to_start_with": first_error_line(err)})
        return
    tool._emit_json(tool_case_line(head, got))


def main(argv: list[str]) -> int:
    """``[--vllm 0.33] [K ...]``: the runs (indexes of ``RUNS``; all without), one line each
    on stdout; ``--one K`` is one run in this process."""
    if argv[:1] == ["--one"]:
        _one(int(argv[1]))  # the tool's own stdout handling: logs to stderr, the line to stdout
        return 0
    run_each(__file__, [run[0] for run in RUNS], argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(_ARGS))

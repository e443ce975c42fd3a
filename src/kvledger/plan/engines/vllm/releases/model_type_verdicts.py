"""Which model types vLLM does not serve, and why, in vLLM's own words (moved here from
``derive/model_types.py``: what a model *is* belongs to derive; whether an engine release
serves it belongs to that engine).

``NOT_SERVED``: the layout refuses these model types by name, before or after derive (a type
derive cannot read is refused with vLLM's reason, not kvledger's); ``--engine native`` still
plans every one derive can read. ``NO_CACHE_CONFIG``: vLLM's model file builds its Attention
without ``cache_config``, so ``--kv-cache-dtype`` never reaches the layers (``no_cache_config.py``).

The wording names the release being planned (``build``'s ``v``, e.g. "vLLM 0.32") and the
transformers release it runs with (``t``); each reason cites the vLLM source it was read
from. Read for vLLM 0.32.0 (``model_executor/models/registry.py`` ``_PREVIOUSLY_SUPPORTED_MODELS``,
``inspect_model_cls``, ``_try_resolve_transformers``) and confirmed by oracle runs
(tests/oracles/vllm-0.32/vllm-0.32-tfbackend.jsonl, vllm-0.32-remote.jsonl).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


class _Names:
    """The release words the reasons below are written with (set by ``build``)."""

    v = ""
    t = ""


_N = _Names()


def _dropped(model_type: str, architecture: str, last: str, *, also: str = "",
             remote: bool = False) -> str:
    """``refused`` / ``not_in_vllm`` for an architecture vLLM dropped: it lists it in
    ``_PREVIOUSLY_SUPPORTED_MODELS`` (model_executor/models/registry.py) and refuses it in
    ``_raise_for_unsupported``'s words, quoted — once its Transformers-backend fallback
    (``_try_resolve_transformers``) has failed, as it does when transformers has no such
    class or the class does not take vLLM's attention (MPT: tests/oracles/
    vllm-0.32-tfbackend.jsonl). ``remote``: the model_type has no transformers or vLLM
    0.32 config class, so vLLM gets that far only with --trust-remote-code, and what the
    fallback then does depends on the checkpoint's own model code."""
    if remote:
        note = (f"vLLM reaches that only with --trust-remote-code, since model_type "
                f"'{model_type}' has no {_N.t} or {_N.v} config class (without "
                "the flag it stops at config loading; with it, its Transformers backend may "
                "first take the checkpoint's own model class, which kvledger does not run)")
        also = f"{also}; {note}" if also else note
    return (f"{_N.v} has no model for model_type '{model_type}' ('Model architecture "
            f"{architecture} was supported in vLLM until v{last}, and is not supported "
            "anymore')" + (f"; {also}" if also else ""))


def _tf_backend(model_type: str, architecture: str, last: str, backend: str,
                what: str, *, history: str = "") -> str:
    """``refused`` / ``not_in_vllm`` for an architecture vLLM dropped from its own models
    (``_PREVIOUSLY_SUPPORTED_MODELS``) but still serves: its registry tries the Transformers
    backend first (model_executor/models/registry.py ``inspect_model_cls`` →
    ``_try_resolve_transformers``: transformers has the class and it takes vLLM's
    attention), so the "was supported until" message is never reached. ``what`` says what
    vLLM then does and why kvledger does not plan it (tests/oracles/run_tfbackend_oracle.py)."""
    history = history or f"served by its own model until v{last}"
    return (f"{_N.v} has no model of its own for model_type '{model_type}' ({architecture}, "
            f"{history}) and hands it to its Transformers backend ({backend}): {what}")


def _remote(model_type: str, architecture: str, *, what: str = "", also: str = "") -> str:
    """``refused`` for a model_type with no config class in transformers or in vLLM's
    config registry: vLLM loads such a checkpoint only with --trust-remote-code (the
    checkpoint's own Python), and without it stops at config loading with transformers'
    error, quoted (which one depends on whether config.json carries an ``auto_map``)."""
    named = f"model_type '{model_type}'" + (f" ({what})" if what else "")
    return (f"{named} has no {_N.t} or {_N.v} config class, so {_N.v} serves "
            f"{architecture} only with --trust-remote-code, running the checkpoint's own "
            "configuration code, which kvledger does not run. Without the flag vLLM stops at "
            "config loading: 'The repository ... contains custom code which must be executed "
            "to correctly load the model' when the config carries an auto_map, 'The "
            f"checkpoint you are trying to load has model type `{model_type}` but Transformers "
            "does not recognize this architecture' when it does not"
            + (f"; {also}" if also else ""))


def _not_yet(model_type: str, architecture: str, later: str) -> str:
    """``refused`` for a model type of a later release: this one's registry has no
    ``architecture`` and its transformers release no config class for ``model_type``, so vLLM
    stops at config loading in transformers' words, quoted."""
    return (f"{_N.v} does not serve model_type '{model_type}': its registry has no "
            f"{architecture} and {_N.t} has no config class for it (vLLM stops at config "
            f"loading: 'The checkpoint you are trying to load has model type `{model_type}` but "
            f"Transformers does not recognize this architecture'); {later}")


# Model types whose verdicts above are for the releases before the one kvledger plans them
# for: a release profile that serves one (and whose PP table answers it) drops it from its
# ``not_served`` (v0_33.py). midashenglm: 0.32's PP table has no answer, 0.33's has.
SERVED_LATER = frozenset({"beam", "kolibri1", "midashenglm"})


def _new_in_033(architecture: str, where: str) -> str:
    """``refused`` for an architecture vLLM 0.33's registry added (vLLM 0.32 has no class for
    it) that a model type of vLLM 0.33's own config classes names: kvledger's
    pipeline-parallel table is vLLM 0.32's registry answer, so it has no verdict to give."""
    return (f"{architecture} is in vLLM 0.33's registry, not 0.32's ({where}; the model type "
            "has a config class of vLLM 0.33's own, transformers_utils/config.py "
            "_CONFIG_REGISTRY); kvledger's pipeline-parallel table is vLLM 0.32's registry "
            f"answer and holds no verdict for it, so kvledger does not plan it for {_N.v}")


def build(v: str, t: str) -> tuple[Mapping[str, str], Mapping[str, str]]:
    """(``NOT_SERVED``, ``NO_CACHE_CONFIG``) worded for release ``v`` ("vLLM 0.32") running
    transformers ``t`` ("transformers 5.19")."""
    _N.v, _N.t = v, t
    not_served = {
        'ernie4_5_remote_code': "architecture Ernie4_5_ForCausalLM (ERNIE-4.5 configs that point "
            f"auto_map at Baidu's own code) is not in {_N.v}'s model registry "
            "('Model architectures ['Ernie4_5_ForCausalLM'] are not supported for "
            "now'); vLLM serves the "
            "same model_type 'ernie4_5' as Ernie4_5ForCausalLM, the architecture the "
            "transformers-native release of the checkpoint names",
        'solar': _remote("solar", "SolarForCausalLM", what="Upstage Solar"),
        'plamo3': _remote("plamo3", "Plamo3ForCausalLM", what="PFN PLaMo 3"),
        'teleflm': _remote("teleflm", "TeleFLMForCausalLM", what="Tele-FLM"),
        'baichuan': _dropped("baichuan", "BaichuanForCausalLM", "0.23.0",
                     also="BaiChuanForCausalLM (Baichuan-7B) likewise",
                     remote=True),
        'qwen': _dropped("qwen", "QWenLMHeadModel", "0.23.0",
                     also="Qwen v1; vLLM serves Qwen1.5 and later as qwen2",
                     remote=True),
        'xverse': _dropped("xverse", "XverseForCausalLM", "0.23.0", remote=True),
        'internlm': _dropped("internlm", "InternLMForCausalLM", "0.23.0",
                     also="InternLM v1; InternLM3 is served as internlm3",
                     remote=True),
        'mpt': _dropped("mpt", "MptForCausalLM", "0.28.0",
                     also="MPTForCausalLM likewise"),
        'RefinedWeb': _dropped("RefinedWeb", "RWForCausalLM", "0.28.0",
                     also="the pre-transformers Falcon-40B schema; the "
                          "model_type 'falcon' form of the same "
                          "checkpoint is served"),
        'RefinedWebModel': _dropped("RefinedWebModel", "RWForCausalLM", "0.28.0",
                     also="the pre-transformers Falcon-7B schema; the "
                          "model_type 'falcon' form of the same "
                          "checkpoint is served"),
        'stablelm_epoch': _dropped("stablelm_epoch", "StableLMEpochForCausalLM",
                     "0.28.0", also="vLLM serves StableLM as "
                                    "model_type 'stablelm'", remote=True),
        'aquila': _dropped("aquila", "AquilaForCausalLM", "0.24.0",
                     also="AquilaModel likewise", remote=True),
        'jais': _dropped("jais", "JAISLMHeadModel", "0.22.0", remote=True),
        'telechat': _remote("telechat", "TeleChat2ForCausalLM",
                    also="the TelechatForCausalLM spelling (TeleChat2-115B) "
                         "is not in its registry at all ('Model "
                         "architectures ['TelechatForCausalLM'] are not "
                         "supported for now')"),
        'internlm3': _remote("internlm3", "InternLM3ForCausalLM",
                    also="vLLM routes it to llama.py once the remote "
                         "config has loaded"),
        'voxtral': f"{_N.v} builds VoxtralForConditionalGeneration from "
            "Mistral-format params (params.json, --config-format mistral, "
            "which it picks for mistralai repositories); from a Hugging Face "
            "config.json alone its __init__ stops with \"AttributeError: "
            "'VoxtralEncoderConfig' object has no attribute "
            "'downsample_factor'\", and kvledger does not read params.json",
        'internvl_chat': _remote("internvl_chat", "InternVLChatModel"),
        'molmo': _remote("molmo", "MolmoForCausalLM"),
        'phi3_v': _remote("phi3_v", "Phi3VForCausalLM"),
        'phi4mm': _remote("phi4mm", "Phi4MMForCausalLM"),
        'minicpmv': _remote("minicpmv", "MiniCPMV"),
        'aya_vision': _tf_backend(
            "aya_vision", "AyaVisionForConditionalGeneration", "0.24.0",
            "TransformersMultiModalForCausalLM",
            "vLLM starts (an oracle run on AyaVisionConfig's defaults: 30 sliding-window and 10 "
            "full-attention layers from the Cohere-2 text config's layer_types), but kvledger "
            "derives no cohere2 text config and has no real aya_vision config.json to check "
            "one against"),
        'phi4_multimodal': _tf_backend(
            "phi4_multimodal", "Phi4MultimodalForCausalLM", "0.12.0",
            "TransformersMultiModalForCausalLM",
            "by vLLM's source it then stops while it starts, as Llama-3.2-Vision does, "
            f"since {_N.t}'s Phi4MultimodalProcessor has no "
            "_get_num_multimodal_tokens either (not confirmed by an oracle run: its image "
            "processor needs torchvision, which the oracle's venv lacks); kvledger derives "
            "no phi4_multimodal config"),
        'interns1': _remote("interns1", "InternS1ForConditionalGeneration",
                    what="Intern-S1",
                    also="the HF-format InternVL checkpoints (model_type "
                         "'internvl') load without it"),
        'hunyuan': _remote("hunyuan", "HunYuanMoEV1ForCausalLM",
                    what="Tencent Hunyuan-A13B's own schema",
                    also=f"{_N.v} hands HunYuanMoEV1ForCausalLM to its "
                         "Transformers backend (TransformersMoEForCausalLM), "
                         "which for this model_type builds the checkpoint's "
                         "own modeling code too; vLLM serves "
                         "HunYuanMoEV1ForCausalLM without remote code only as "
                         "model_type 'hunyuan_v1_moe'"),
        'bailing_moe_v2': _remote("bailing_moe_v2", "BailingMoeV2ForCausalLM",
                    what="Ling 2.0"),
        'mimo': _remote(
            "mimo", "MiMoForCausalLM",
            also="which layers slide depends on that code: given the keys MiMo-7B's "
            "config.json states (sliding_window 32768, use_sliding_window false) vLLM "
            "windows every layer, while a Qwen2Config subclass, as MiMo's published "
            "configuration_mimo.py is, drops the window when use_sliding_window is "
            "false"),
        'bailing_moe_v3': _remote("bailing_moe_v3", "BailingMoeV3ForCausalLM"),
        'bailing_hybrid': _remote("bailing_hybrid", "BailingMoeV2_5ForCausalLM"),
        'deepseek_ref': f"model_type 'deepseek_ref' is unknown to {_N.t} "
            f"and to {_N.v}'s config registry ('The checkpoint you are "
            "trying to load has model type `deepseek_ref` but "
            "Transformers does not recognize this architecture'); vLLM "
            "serves DeepSeek-V4 as model_type 'deepseek_v4'",
        'step3p7_flash': "architecture Step3p7FlashForCausalLM is not in "
            f"{_N.v}'s model registry ('Model architectures "
            "['Step3p7FlashForCausalLM'] are not supported for now'); "
            f"{_N.v} serves Step-3.7 only as "
            "Step3p7ForConditionalGeneration",
        'phi3small': _dropped("phi3small", "Phi3SmallForCausalLM", "0.9.2",
                     remote=True),
        'mllama': _tf_backend(
            "mllama", "MllamaForConditionalGeneration", "0.10.2",
            "TransformersMultiModalForCausalLM",
            "vLLM then stops while it starts, with \"AttributeError: "
            "'MllamaProcessor' object has no attribute "
            "'_get_num_multimodal_tokens'\" (its multimodal budget, "
            "vllm/multimodal/encoder_budget.py MultiModalBudget, asks "
            f"{_N.t}'s processor for a token count MllamaProcessor "
            "cannot give). With --language-model-only it starts text-only and "
            "gives every text layer, the cross-attention ones too, an ordinary "
            "full-attention KV cache, a layout kvledger does not plan (it does "
            "not take that flag)"),
        'mllama_text_model': _tf_backend(
            "mllama_text_model", "MllamaForCausalLM", "0.10.2",
            "TransformersForCausalLM",
            "vLLM then stops building the model, with \"ValueError: "
            "Unrecognized configuration class <class "
            "'transformers.models.mllama.configuration_mllama."
            "MllamaTextConfig'> for this kind of AutoModel: "
            "AutoModel.\" (transformers' AutoModel has no text-only "
            "Mllama)",
            history="its own mllama.py, gone after v0.10.2, built this "
            "text model only inside the wrapper"),
        'minimax_m1': _dropped("minimax_m1", "MiniMaxM1ForCausalLM", "0.23.0",
                     remote=True),
        'minimax_m3': f"{_N.v} has no model for model_type 'minimax_m3' "
            "(MiniMaxM3ForCausalLM); it serves MiniMax-M3 as "
            "minimax_m3_vl (MiniMaxM3SparseForConditionalGeneration), the checkpoint's own "
            "config (kvledger's bundled MiniMaxAI/MiniMax-M3 row is a text-only rebuild, "
            "used only offline: the Hub's or a model directory's config.json plans it)",
        # -- breadth round 4: architectures vLLM registers that kvledger does not plan --
        'ernie4_5_vl_moe': f"{_N.v} builds Ernie4_5_VLMoeForConditionalGeneration "
            "(model_executor/models/ernie45_vl.py) from the flat configuration of Baidu's "
            "own checkpoint code; from transformers' Ernie4_5_VLMoeConfig its __init__ stops "
            "while it builds the vision tower, with \"AttributeError: "
            "'Ernie4_5_VLMoeVisionConfig' object has no attribute 'embed_dim'\" "
            "(Ernie4_5_VisionTransformer reads vision_config.embed_dim; the resampler then "
            "reads pixel_hidden_size, which Ernie4_5_VLMoeConfig has none of either)",
        'cohere_asr': f"{_N.v} serves CohereAsrForConditionalGeneration "
            "(model_executor/models/cohere_asr.py) as an encoder-decoder: its decoder's "
            "cross-attention caches the keys and values of the Conformer encoder's output, "
            "whose length follows the audio front end's subsampling, which kvledger does not "
            "derive (it plans cross-attention caches for Whisper only, sized by "
            "max_source_positions)",
        'diffusion_gemma': f"{_N.v} serves DiffusionGemmaForBlockDiffusion "
            "(model_executor/models/diffusion_gemma.py) as a block-diffusion model: its "
            "DiffusionGemmaModelState runs the Gemma-4 layers causally to write the KV cache "
            "and again bidirectionally over a block of draft tokens that reads it, a runner "
            "and token budget kvledger does not plan",
        'hrm_text': f"{_N.v} serves HrmTextForCausalLM (model_executor/models/hrm_text.py) "
            "with one KV cache per layer per recurrence step, each a "
            "PrefillPrefixLMAttention whose cache spec is non-causal "
            "(layers/attention/prefill_prefix_lm_attention.py get_kv_cache_spec), which "
            "turns chunked prefill and prefix caching off; kvledger does not plan a "
            "non-causal cache or the scheduler limits that follow from it",
        'hy_v4': f"{_N.v} serves HYV4ForCausalLM (vllm/models/hy_v4) with multi-head "
            "latent attention beside a lightning indexer (DSA-style sparse top-k, "
            "FlashMLA sparse kernels), an output gate and a learnable sink; kvledger does "
            "not plan HY-V4's latent and indexer caches",
        'inkling_text': f"{_N.v} serves InklingForCausalLM (vllm/models/inkling) with short-"
            "convolution states kept as sliding-window KV caches "
            "(nvidia/sconv_swa_attn.py: a SlidingWindowSpec whose window is the kernel size) "
            "beside its attention layers, a cache kind kvledger does not plan",
        'inkling_mm_model': f"{_N.v} serves InklingForConditionalGeneration "
            "(vllm/models/inkling) on the Inkling text model, whose short-convolution states "
            "are kept as sliding-window KV caches (nvidia/sconv_swa_attn.py), a cache kind "
            "kvledger does not plan",
        'qwen4_exp': f"{_N.v} serves Qwen4ExpForConditionalGeneration "
            "(vllm/models/qwen4_exp) with QSA attention layers that keep a paged side cache "
            "(a circular buffer of raw index keys and one compressed key: "
            "common/qsa_cache.py) beside the main KV cache; kvledger does not plan it",
        'qwen4_exp_text': f"{_N.v} serves Qwen4ExpForCausalLM (vllm/models/qwen4_exp) with "
            "QSA attention layers that keep a paged side cache (common/qsa_cache.py) beside "
            "the main KV cache; kvledger does not plan it",
        'step3p7': f"{_N.v} builds Step3p7ForConditionalGeneration "
            "(model_executor/models/step3p7.py) from the configuration of StepFun's own "
            "checkpoint code; from transformers' Step3p7Config its __init__ stops while it "
            "builds the vision tower, with \"AttributeError: 'Step3p7VisionConfig' object has "
            "no attribute 'output_dim'\" (step_vl.py PerceptionEncoder.__init__ reads "
            "config.output_dim)",
        # -- breadth round 5: the classes transformers 5.20 adds --
        'molmo2': f"{_N.v} builds Molmo2ForConditionalGeneration "
            "(model_executor/models/molmo2.py) from the configuration of Ai2's own "
            "checkpoint code; from transformers' Molmo2Config its __init__ stops before it "
            "builds the vision tower, with \"AttributeError: 'Molmo2Config' object has no "
            "attribute 'vit_config'\" (it copies VitConfig's fields from config.vit_config; "
            "transformers names it vision_config, and its text config lacks the rope_theta "
            "and use_qk_norm fields molmo2.py's TextConfig copies too)",
        'muse_spark': "vLLM 0.33 registers MuseSparkForConditionalGeneration (vLLM 0.32 "
            "none) and loads muse_spark with its own MuseSparkConfig "
            "(transformers_utils/configs/muse_spark.py, a class of no defaults); from "
            "transformers' MuseSparkConfig the text config stops at load with "
            "\"AttributeError: 'MuseSparkTextConfig' object has no attribute "
            "'num_shared_experts'\" (MuseSparkTextConfig.__init__ checks "
            "self.num_shared_experts, which transformers' class does not write)",
        # Rows only a later release serves (``SERVED_LATER``: that release's profile drops
        # them): vLLM 0.32's registry lists neither architecture, and transformers 5.19 has
        # neither config class.
        'beam': _not_yet("beam", "BeamForCausalLM", "vLLM 0.33 registers it "
                         "(vllm/models/beam/) with its own BeamConfig"),
        'kolibri1': _not_yet("kolibri1", "Kolibri1ForCausalLM", "vLLM 0.33 serves it by its "
                             "Transformers backend (_TRANSFORMERS_SUPPORTED_MODELS) on "
                             "transformers 5.20's Kolibri1Config"),
        # -- breadth round 6: vLLM 0.33's own config classes, architectures new in its
        # registry (no 0.32 class, so no pipeline-parallel verdict in kvledger's table yet)
        'step5': _new_in_033("Step5ForCausalLM", "vllm/models/step5/nvidia/model.py "
                             "Step5ForCausalLM, declared SupportsPP"),
        'step5_vl': _new_in_033(
            "Step5ForConditionalGeneration", "vllm/models/step5/nvidia/vl.py "
            "Step5ForConditionalGeneration, a subclass of step_vl.py's "
            "Step3p7ForConditionalGeneration, whose vision tower stops step3p7's class "
            "defaults"),
        'dory': _new_in_033("DoryForCausalLM", "model_executor/models/dory.py "
                            "DoryForCausalLM, declared without SupportsPP"),
        'flint': _new_in_033("FlintForCausalLM", "vllm/models/flint/model.py "
                             "FlintForCausalLM, declared SupportsPP"),
        'alpamayo2_super': _new_in_033(
            "Alpamayo2Super", "model_executor/models/alpamayo2_super.py "
            "Alpamayo2SuperForConditionalGeneration, a subclass of qwen3_vl.py's "
            "Qwen3VLForConditionalGeneration"),
        'ovis': "vLLM's own OvisConfig (transformers_utils/configs/ovis.py) builds its "
            "language model from llm_config, which its defaults leave None, so text_config and "
            "hidden_size stay None and vLLM 0.33 stops on them (\"ValidationError: 1 "
            "validation error for ModelConfig hidden_size Input should be a valid integer\"); "
            "kvledger reads no Ovis llm_config yet (no real Ovis config checked), so it does "
            "not plan it",
        'ultravox': f"{_N.v}'s UltravoxModel (model_executor/models/ultravox.py) reads "
            "config.vocab_size in __init__, which vLLM's own UltravoxConfig "
            "(transformers_utils/configs/ultravox.py) does not set: on the class's defaults "
            "vLLM 0.33 stops with \"AttributeError: 'UltravoxConfig' object has no attribute "
            "'vocab_size'\"; and the class builds its language model from the checkpoint's "
            "text_config, or from text_model_id, another repository's config it fetches at "
            "load (as Ultravox's checkpoints do), which kvledger cannot read from the file, so "
            "kvledger does not plan it",
        'midashenglm': "vLLM's registry gave no pipeline-parallel answer for "
            "MiDashengLMModel: run_pp_oracle.py could not import "
            "model_executor/models/midashenglm.py (it imports torchaudio, which the oracle's "
            "venv lacks), so kvledger's pipeline-parallel table holds None for it (the source "
            "declares MiDashengLMModel(nn.Module, SupportsMultiModal, SupportsPP)), and "
            f"kvledger does not plan it for {_N.v}",
    }
    no_cache_config = {
        'falcon': "vLLM's falcon.py builds its rotary and ALiBi "
            "Attention without cache_config, and "
            "Attention.__init__ then stores 'auto' (the model "
            "dtype) whatever --kv-cache-dtype says",
    }
    return not_served, no_cache_config


def inherited(previous: Any, v: str, t: str) -> dict[str, Any]:
    """The verdict fields of a profile built on the next newer release's (``previous``):
    this release's own reasons (``build(v, t)``), and ``previous``'s other not-served reasons
    reworded with this release's name. Splat into ``replace(previous, ...)``."""
    from types import MappingProxyType

    not_served, no_cache_config = build(v, t)
    kept = {k: why.replace(previous.short, v) for k, why in previous.not_served.items()
            if k not in not_served}
    return {"not_served": MappingProxyType({**not_served, **kept}),
            "no_cache_config": MappingProxyType(dict(no_cache_config))}

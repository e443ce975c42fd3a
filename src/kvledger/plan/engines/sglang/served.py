"""Whether SGLang 0.5.23 can load a model at all, before any pool is sized.

kvledger derives a model type because *vLLM* serves it; SGLang may not. SGLang's loader
(``model_loader/utils.py``: ``get_model_architecture``) serves a config natively when one of
its ``architectures`` is a registered class (``registry.py``); otherwise
``resolve_transformers_arch`` hands it to SGLang's Transformers backend
(``models/transformers.py``) if transformers has a class of that name and the class accepts a
custom attention backend — else it raises. A pool sized for a model SGLang will not load is a
plausible number for a deployment that cannot exist, so the layout refuses it with SGLang's
reason.

The Transformers-backend decision depends on transformers' own classes, so it is not
re-derived here: each architecture below was put to SGLang's ``get_model_architecture`` by the
oracle (``sglang_oracle_plus.py --resolve-model-class``; the case id is given), and an
architecture that is neither registered nor listed is refused as not checked.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvledger.plan.engines.sglang.registry import NATIVE_ARCHITECTURES
from kvledger.plan.engines.sglang.releases.profile import sglang_words
from kvledger.plan.engines.sglang.unchecked import unchecked_reason

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.plan.engines.sglang.releases.profile import SglangRelease

# Config classes SGLang registers that rename the architecture before the loader sees it:
# configs/olmo3.py (Olmo3Config: "uses Olmo3ForCausalLM in transformers but
# Olmo2ForCausalLM" in SGLang). Oracle case cov-olmo3.
RENAMED: Mapping[str, str] = {"Olmo3ForCausalLM": "Olmo2ForCausalLM"}

# No SGLang class; served by the Transformers backend (TransformersForCausalLM or
# TransformersMultiModalForCausalLM), whose KV pool the configurator sizes from ModelConfig
# like any other. Architecture → the oracle case that resolved it and matched the plan.
TRANSFORMERS_BACKEND: Mapping[str, str] = {
    "Ernie4_5ForCausalLM": "cov-ernie4-5",
    "GPTNeoXForCausalLM": "cov-gpt-neox",
    "Idefics3ForConditionalGeneration": "cov-idefics3",
    "Exaone4_5_ForConditionalGeneration": "cov-exaone4-5",
    "LlavaNextForConditionalGeneration": "cov-llava-next",
    "NemotronForCausalLM": "cov-nemotron",
    "PaliGemmaForConditionalGeneration": "cov-paligemma",
    "PhiModel": "cov-phi-model",
    "Qwen2_5OmniForConditionalGeneration": "cov-qwen2-5-omni",
    "SmolVLMForConditionalGeneration": "cov-smolvlm",
}

# Transformers-backend architectures SGLang cannot split into pipeline stages:
# models/transformers.py ``TransformersBase.pipeline_parallel`` raises ValueError("<class> does
# not support pipeline parallel yet!") at model construction when pp_size > 1 and
# ``_get_model_pp_plan`` is empty — the base model has no ``_pp_plan`` and neither its config
# nor its text config states ``base_model_pp_plan``. Read from transformers 5.19 (the version
# SGLang 0.5.23 runs with) for every architecture above, on the config of its oracle case:
# only NemotronModel has none. Architecture → the transformers base-model class in the message.
TRANSFORMERS_BACKEND_NO_PP: Mapping[str, str] = {
    "NemotronForCausalLM": "transformers.models.nemotron.modeling_nemotron.NemotronModel",
}

_INCOMPATIBLE = ("has no SGlang implementation and the Transformers implementation is not "
                 "compatible with SGLang (model_loader/utils.py: resolve_transformers_arch)")
# The oracle case (tests/oracles/sglang-0.5.23/cases.jsonl) behind each NOT_SERVED reason.
ORACLE_CASE: Mapping[str, str] = {
    "BloomForCausalLM": "cov-bloom",
    "FalconForCausalLM": "cov-falcon",
    "JambaForCausalLM": "cov-jamba",
    "MiniMaxM1ForCausalLM": "cov-minimax-m1",
    "MiniMaxM3ForCausalLM": "cov-minimax-m3",
    # and CONFIG_NOT_LOADED's gemma4_text: cov-gemma4-text
    "Zamba2ForCausalLM": "cov-zamba2-hf-arch",
}

# SGLang refuses to load these; the reason is SGLang's own (its oracle case: ORACLE_CASE).
NOT_SERVED: Mapping[str, str] = {
    "BloomForCausalLM": f"BloomForCausalLM {_INCOMPATIBLE}",
    "FalconForCausalLM": f"FalconForCausalLM {_INCOMPATIBLE}",
    "JambaForCausalLM": f"JambaForCausalLM {_INCOMPATIBLE}",
    "Zamba2ForCausalLM": f"Zamba2ForCausalLM {_INCOMPATIBLE}",
    "MiniMaxM1ForCausalLM": (
        "{sglang} has no MiniMaxM1ForCausalLM class, and the config's own class is remote "
        "code (auto_map), which only --trust-remote-code with the checkpoint's files could hand "
        "to the Transformers backend; not reproduced"),
    "MiniMaxM3ForCausalLM": (
        "{sglang} has no MiniMaxM3ForCausalLM class (only MiniMaxM3Sparse*), and its "
        "config does not load: The checkpoint you are trying to load has model type "
        "`minimax_m3` but Transformers does not recognize this architecture (transformers "
        "5.19)"),
}


# Top-level model types whose config SGLang's own config load rejects, whatever the
# architecture (model_type → SGLang's reason; oracle case cov-gemma4-text). utils/hf_transformers/
# config.py ``get_config`` copies each key of the text config onto the config unless
# ``hasattr(config, key)``; for a text-only Gemma-4 config the text config is the config
# itself, and transformers 5.19's Gemma4TextConfig is heterogeneous (``__post_init__`` gives
# every full-attention layer its own ``head_dim``, global_head_dim), so ``hasattr(config,
# "head_dim")`` raises. Inside the Gemma-4 wrapper the copy reads the wrapper's attributes and
# the load succeeds (cov-gemma4).
CONFIG_NOT_LOADED: Mapping[str, str] = {
    "gemma4_text": (
        "its config load stops at utils/hf_transformers/config.py get_config: "
        "AmbiguousGlobalPerLayerAttributeError: 'head_dim' is a per-layer attribute and may "
        "vary across layers (transformers 5.19's Gemma4TextConfig, read as a top-level "
        "config; the Gemma-4 multimodal wrapper loads)"),
}


class NotServed(ValueError):
    """SGLang 0.5.23 would not load this model (``str`` is SGLang's reason)."""


def backend(architectures: tuple[str, ...], model_type: str = "",
            release: SglangRelease | None = None) -> str:
    """"native" or "transformers" (the class SGLang's loader builds), or ``NotServed`` (also
    for a top-level ``model_type`` whose config SGLang cannot load)."""
    if model_type in CONFIG_NOT_LOADED:
        raise NotServed(CONFIG_NOT_LOADED[model_type])
    if why := unchecked_reason(model_type, release):
        raise NotServed(why)
    if not architectures:
        raise NotServed("the config names no architectures; SGLang's loader picks the model "
                        "class from them (ModelRegistry.resolve_model_cls)")
    arch = RENAMED.get(architectures[0], architectures[0])
    if arch in NATIVE_ARCHITECTURES or any(a in NATIVE_ARCHITECTURES for a in architectures):
        return "native"
    if arch in TRANSFORMERS_BACKEND:
        return "transformers"
    if arch in NOT_SERVED:
        raise NotServed(NOT_SERVED[arch].replace("{sglang}", sglang_words(release)))
    raise NotServed(
        f"{sglang_words(release)} has no model class {arch}; whether its Transformers "
        "backend serves it "
        "(resolve_transformers_arch) has not been checked against SGLang: not reproduced yet")


def pipeline_parallel_refusal(architectures: tuple[str, ...],
                              release: SglangRelease | None = None) -> str:
    """SGLang's reason not to run these architectures with pp_size > 1 ("" when it does)."""
    if not architectures or backend(architectures, release=release) != "transformers":
        return ""
    base = TRANSFORMERS_BACKEND_NO_PP.get(RENAMED.get(architectures[0], architectures[0]))
    if base is None:
        return ""
    return (f"<class '{base}'> does not support pipeline parallel yet! "
            f"({sglang_words(release)} serves "
            f"{architectures[0]} with its Transformers backend, whose "
            "TransformersBase.pipeline_parallel needs the model's pipeline plan, and "
            "transformers states none for it)")

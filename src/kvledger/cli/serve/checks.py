"""Serve-line settings that only mean something against the model: ``--dtype``,
``--quantization``, and ``--limit-mm-per-prompt`` zeros (which towers they leave).

kvledger plans a checkpoint as its config describes it. A ``--dtype`` of the same width as the
checkpoint's (bfloat16 ↔ float16) changes no byte; another width would change weights and KV
both, and is refused. A ``--quantization`` naming the checkpoint's own method is what the
engine verifies anyway (vLLM ``ModelConfig._verify_quantization`` refuses a mismatch). On an
unquantized checkpoint it is online quantization: planned for vLLM's methods kvledger sizes
(``plan/engines/vllm/online_quant.py``: the line's ``--quantization`` is passed on), refused by
name otherwise — and always for SGLang.
"""

from __future__ import annotations

from typing import Any

from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.translation import Translation

_WIDTH = {"float32": 4, "bfloat16": 2, "float16": 2}


def check_model(out: Translation) -> None:
    """Check ``out.requires`` against the model's config (read only when something is asked)."""
    if not out.requires:
        return
    from kvledger.derive import derive_model

    facts = derive_model(out.model)
    _dtype(out, facts.model_dtype)
    _quantization(out, facts.config, facts.kv_dtype_source)
    _mm_limits(out, facts.config)


def _mm_limits(out: Translation, config: dict[str, Any]) -> None:
    """``--limit-mm-per-prompt`` zeros that drop a tower (vllm_map.py): planned as
    ``--language-model-only`` where they cover every tower the model has, refused where a
    tower the zeros leave would still be built beside the dropped one."""
    dropped = out.requires.get("mm_dropped_towers")
    if dropped is None:
        return
    zero = out.requires["mm_zero"].replace(",", " and ")
    from kvledger.derive.params.towers import has_audio_tower

    if "audio" not in dropped.split(",") and has_audio_tower(config):
        out.options.pop("--language-model-only", None)
        raise ServeLineError(
            f"{out.launcher}: cannot plan this line: --limit-mm-per-prompt with {zero} at 0: "
            f"vLLM does not build the {dropped} tower (its weights leave the GPU) but keeps "
            "the audio one, which kvledger does not model per tower; set the audio limit to 0 "
            "too (the same as --language-model-only) or a non-zero limit to plan with the "
            "tower")
    out.notes.append(f"--limit-mm-per-prompt with {zero} at 0 covers every tower of this "
                     "model: planned as --language-model-only, which vLLM calls equivalent "
                     "(MultiModalConfig.language_model_only)")


def _dtype(out: Translation, model_dtype: str) -> None:
    asked = out.requires.get("dtype")
    if asked is None:
        return
    if asked == model_dtype:
        out.notes.append(f"--dtype {asked}: the checkpoint's own dtype")
    elif _WIDTH.get(asked) is not None and _WIDTH.get(asked) == _WIDTH.get(model_dtype):
        out.notes.append(f"--dtype {asked} on a {model_dtype} checkpoint: the same bytes per "
                         "element, so the same plan")
    else:
        raise ServeLineError(f"{out.launcher}: --dtype {asked} on a {model_dtype} checkpoint "
                             "changes the weights' and the KV cache's bytes, which kvledger "
                             "does not model; plan without it")


def _quantization(out: Translation, config: dict[str, Any], kv_source: str) -> None:
    asked = out.requires.get("quantization")
    if asked is None:
        return
    section = config.get("quantization_config")
    method = str(section.get("quant_method", "")) if isinstance(section, dict) else ""
    if not method and kv_source == "hf_quant_config":
        method = "modelopt"  # hf_quant_config.json is NVIDIA ModelOpt's file
    own = asked.lower().replace("-", "_")
    if method and (own == method.lower().replace("-", "_") or own.startswith(method.lower())):
        out.notes.append(f"--quantization {asked}: the checkpoint's own method")
        return
    if not method and out.engine == "vllm":
        from kvledger.plan.engines.vllm.online_quant import OnlineQuantNotModelled, online_scheme

        try:
            name = online_scheme(asked)[0]
        except OnlineQuantNotModelled as exc:
            raise ServeLineError(f"{out.launcher}: {exc}") from None
        out.options["--quantization"] = asked
        out.notes.append(f"--quantization {asked} on an unquantized checkpoint: vLLM quantizes "
                         f"its linear layers as it loads them ({name}); the weights are "
                         "estimated at that size")
        return
    has = f"a {method} checkpoint" if method else "an unquantized checkpoint"
    raise ServeLineError(f"{out.launcher}: --quantization {asked} on {has} quantizes online, "
                         "which kvledger does not model; plan without it")

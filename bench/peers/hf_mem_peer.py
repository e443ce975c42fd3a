"""hf-mem (PyPI ``hf-mem``): KV cache bytes from a config dict, offline.

hf-mem's CLI always fetches from the Hugging Face hub, so we call the two library functions its
``run.arun`` calls once it has ``config.json`` (read in hf_mem/run.py, the "experimental" KV
branch): ``safetensors.kv_cache.resolve_kv_cache_dtype`` and
``safetensors.kv_cache.compute_safetensors_kv_cache_size(config, cache_dtype, max_model_len,
batch_size)``. The steps ``arun`` takes before them (architecture check, ``text_config`` hoist,
required keys) are repeated here as hf-mem does them, so a config hf-mem would not estimate is
recorded as its refusal.

What hf-mem answers: KV bytes for ``max_model_len`` tokens × ``batch_size`` sequences of the
whole model. Asked at ``max_model_len=1``, ``batch_size=1`` that is its KV bytes per token.
It has no memory-budget input and no tensor-parallel option, so "tokens at a budget" and
"max concurrency" are not questions it answers (n/a), nor is a per-rank figure under TP.
"""

from __future__ import annotations

from typing import Any

from common import Answer, answer, refused
from hf_mem.safetensors.kv_cache import (
    compute_safetensors_kv_cache_size,
    resolve_kv_cache_dtype,
)
from hf_mem.safetensors.metadata import SafetensorsMetadata

NAME = "hf-mem"
DISTRIBUTION = "hf-mem"
METRICS = ("bytes_per_token",)  # the questions it has inputs for


def _config_as_hf_mem_sees_it(config: dict[str, Any]) -> dict[str, Any] | str:
    """The dict hf-mem hands to its KV functions, or why it would give no KV estimate."""
    archs = config.get("architectures", [])
    if not any("ForCausalLM" in a or "ForConditionalGeneration" in a for a in archs):
        return ("no KV estimate: architectures is neither ...ForCausalLM nor "
                "...ForConditionalGeneration")
    if any("ForConditionalGeneration" in a for a in archs) and "text_config" in config:
        text = dict(config["text_config"])
        if text.get("_name_or_path"):
            return (
                f"text_config names {text['_name_or_path']!r}: hf-mem would fetch that config "
                "from the hub (no offline answer)"
            )
        for key in ("dtype", "torch_dtype", "quantization_config"):
            if key in config and key not in text:
                text[key] = config[key]
        config = text
    missing = [k for k in ("hidden_size", "num_hidden_layers", "num_attention_heads")
               if k not in config]
    if missing:
        return f"no KV estimate: config lacks {', '.join(missing)}"
    return config


def ask(question: dict[str, Any]) -> Answer:
    config = _config_as_hf_mem_sees_it(dict(question["config"]))
    if isinstance(config, str):
        return refused(config)
    # Weight headers (what hf-mem fetches) are only consulted to pick an FP8 flavour when
    # quant_method is fp8 without a format; offline there are none, so that path raises.
    no_weights = SafetensorsMetadata(components={}, param_count=0, bytes_count=0)
    dtype = resolve_kv_cache_dtype(
        config=config,
        kv_cache_dtype=question["kv_cache_dtype"],
        metadata=no_weights,
        model_id=question["id"],
    )
    per_token = compute_safetensors_kv_cache_size(
        config=config, cache_dtype=dtype, max_model_len=1, batch_size=1
    )
    no_budget = "hf-mem takes no memory budget"
    if question["tensor_parallel_size"] != 1:
        return answer(
            bytes_per_token_na="hf-mem has no tensor-parallel option (whole-model bytes only)",
            kv_cache_tokens_na=no_budget, max_concurrency_na=no_budget, kv_dtype=dtype,
        )
    return answer(
        bytes_per_token=per_token,
        kv_cache_tokens_na=no_budget, max_concurrency_na=no_budget, kv_dtype=dtype,
    )

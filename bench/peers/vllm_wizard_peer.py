"""vllm-wizard (PyPI ``vllm-wizard``): KV bytes, max concurrency and max context, offline.

Its CLI can read a local directory, but ``models.metadata.load_model_metadata`` first matches
the *name* against a table of known sizes and, on a hit, replaces the config by a generic
Llama-shaped one; so we call the function that reads a real config,
``models.metadata._parse_config(config, model_id)``, then the planner's own functions from
``planning/memory.py``: ``compute_kv_cache_memory`` (KV bytes for context × concurrency,
times its default fragmentation factor 1.15), ``compute_max_concurrency_at_context`` and
``compute_max_context_at_concurrency``.

Mapping the benchmark's question onto vllm-wizard's inputs, as ``planning/planner.run_plan``
does: under TP its KV figure is the whole model's and the memory it is compared against is the
per-GPU memory × TP, so the allocatable bytes are ``kv_cache_memory_bytes × TP`` with zero
weights and zero overhead. Weight dtype stays at its default "auto" (→ bf16: it does not read
the config's dtype). Its per-token figure is whole-model, so under TP it has no per-rank
bytes per token (n/a). Concurrency is whole sequences (scored against the oracle's rounded down).
"""

from __future__ import annotations

from typing import Any

from common import Answer, answer
from vllm_wizard.models.metadata import _parse_config
from vllm_wizard.planning.memory import (
    compute_kv_cache_memory,
    compute_max_concurrency_at_context,
    compute_max_context_at_concurrency,
)
from vllm_wizard.schemas.inputs import KVCacheDType

NAME = "vllm-wizard"
DISTRIBUTION = "vllm-wizard"
METRICS = ("bytes_per_token", "kv_cache_tokens", "max_concurrency")

# vLLM's --kv-cache-dtype names → vllm-wizard's --kv-cache-dtype choices.
_KV_DTYPE = {
    "auto": KVCacheDType.AUTO, "bfloat16": KVCacheDType.BF16, "float16": KVCacheDType.FP16,
    "fp8": KVCacheDType.FP8_E4M3FN, "fp8_e4m3": KVCacheDType.FP8_E4M3FN,
    "fp8_e5m2": KVCacheDType.FP8_E5M2,
}


def ask(question: dict[str, Any]) -> Answer:
    kv_dtype = _KV_DTYPE.get(question["kv_cache_dtype"])
    if kv_dtype is None:
        why = f"vllm-wizard has no KV dtype {question['kv_cache_dtype']!r}"
        return answer(bytes_per_token_refused=why, kv_cache_tokens_refused=why,
                      max_concurrency_refused=why)
    meta = _parse_config(question["config"], question["id"])
    tp = question["tensor_parallel_size"]
    allocatable = question["kv_cache_memory_bytes"] * tp
    fields: dict[str, Any] = {"concurrency_is_integer": True}
    if tp == 1:
        fields["bytes_per_token"] = compute_kv_cache_memory(
            meta, context_len=1, concurrency=1, kv_dtype=kv_dtype
        )
    else:
        fields["bytes_per_token_na"] = "whole-model KV only (no per-rank figure under TP)"
    fields["kv_cache_tokens"] = compute_max_context_at_concurrency(
        allocatable_bytes=allocatable, weights_bytes=0, overhead_bytes=0, metadata=meta,
        concurrency=1, kv_dtype=kv_dtype,
    )
    fields["max_concurrency"] = compute_max_concurrency_at_context(
        allocatable_bytes=allocatable, weights_bytes=0, overhead_bytes=0, metadata=meta,
        context_len=question["max_model_len"], kv_dtype=kv_dtype,
    )
    return answer(**fields)

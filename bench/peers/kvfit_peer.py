"""kvfit (PyPI ``kvfit``): per-sequence cache bytes and a TP plan from a config dict, offline.

kvfit's CLI always fetches config and weight sizes from the hub (kvfit/hf.py
``fetch_model_metadata``), so we call the functions its ``cli.run`` calls after that fetch:
``cli.resolve_cache_dtype(config, requested, hf_quant_config)`` for the KV dtype,
``architectures.estimate_cache(config, context_tokens, kv_bytes, index_bytes)`` for the cache a
sequence holds (it raises ``UnsupportedArchitecture`` for what it has not modelled: failing
closed), and ``planner.plan_topologies(...)`` for how many full-context sequences fit per rank.

Mapping the benchmark's question onto kvfit's inputs:
- index dtype: as the CLI's default for the "logical" layout, the KV dtype.
- budget: a ``Hardware`` whose memory is the oracle's KV budget per worker, utilization 1.0,
  zero weights and no runtime reserve, so everything it plans with is KV budget.
- bytes per token: ``kv_per_sequence_per_rank_bytes`` of a 1-token context (per rank, as vLLM's
  ``bytes_per_block / block_size`` is).
- max concurrency: ``sequences_per_replica`` at ``max_model_len`` (kvfit answers whole
  sequences, so it is scored against the oracle's concurrency rounded down).
- tokens at the budget: kvfit does not report a token capacity (n/a).
"""

from __future__ import annotations

from typing import Any

from common import Answer, answer
from kvfit.architectures import estimate_cache
from kvfit.cli import DTYPE_BYTES, resolve_cache_dtype
from kvfit.hardware import Hardware
from kvfit.models import GIB
from kvfit.planner import plan_topologies

NAME = "kvfit"
DISTRIBUTION = "kvfit"
METRICS = ("bytes_per_token", "max_concurrency")  # the questions it has inputs for

# vLLM's --kv-cache-dtype names → kvfit's --kv-dtype names (kvfit/cli.py DTYPE_BYTES keys).
_KV_DTYPE = {
    "auto": "auto", "bfloat16": "bf16", "float16": "fp16", "fp8": "fp8",
    "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "nvfp4": "nvfp4",
}


def _plan(question: dict[str, Any], context: int, kv_dtype: str) -> Any:
    kv_bytes = DTYPE_BYTES[kv_dtype]
    cache = estimate_cache(
        question["config"], context_tokens=context, kv_bytes=kv_bytes, index_bytes=kv_bytes
    )
    tp = question["tensor_parallel_size"]
    budget = Hardware(
        id="kv-budget", label="oracle KV budget",
        memory_gib=question["kv_cache_memory_bytes"] / GIB, memory_basis="user-supplied-gib",
    )
    (layout,) = plan_topologies(
        cache, weight_bytes=0, hardware=budget, gpus=tp, utilization=1.0, tensor_parallel=tp
    )
    return layout


def ask(question: dict[str, Any]) -> Answer:
    requested = _KV_DTYPE.get(question["kv_cache_dtype"])
    if requested is None:
        return answer(
            bytes_per_token_refused=f"no kvfit KV dtype for {question['kv_cache_dtype']!r}",
            max_concurrency_refused=f"no kvfit KV dtype for {question['kv_cache_dtype']!r}",
        )
    kv_dtype, source, dtype_warnings = resolve_cache_dtype(
        question["config"], requested, question.get("hf_quant_config")
    )
    one_token = _plan(question, 1, kv_dtype)
    full = _plan(question, question["max_model_len"], kv_dtype)
    fields: dict[str, Any] = {"kv_dtype": f"{kv_dtype} ({source})",
                              "concurrency_is_integer": True, "notes": list(dtype_warnings)}
    if one_token.verdict == "unsupported":
        fields["bytes_per_token_refused"] = one_token.reason
    else:
        fields["bytes_per_token"] = one_token.kv_per_sequence_per_rank_bytes
    if full.verdict == "unsupported":
        fields["max_concurrency_refused"] = full.reason
    else:
        fields["max_concurrency"] = full.sequences_per_replica
    fields["kv_cache_tokens_na"] = "kvfit reports sequences at a context, not a token capacity"
    return answer(**fields)

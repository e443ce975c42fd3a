"""What ``fit`` proposes besides its first layout, each labelled with what it trades.

An operator holding a load does not only add GPUs. Two proposals, each an ordinary
``fit_model`` / ``plan_model`` run, so every figure is a plan's:

- **an fp8 KV cache** — half the bytes of a bfloat16 cache per token, so the same load may fit
  on fewer GPUs. Trades precision: K and V are stored in 8 bits (vLLM's ``--kv-cache-dtype
  fp8``; without calibrated scales, a scale of 1.0). Proposed only where the GPU computes in fp8
  natively — NVIDIA compute capability 8.9 or later (Ada, Hopper, Blackwell), AMD gfx942 or
  later (MI300, MI325, MI355) — and the KV cache is not already 8 bits or fewer. That GPU
  cut-off is kvledger's choice (older GPUs can store fp8 but convert on every read), not an
  engine's refusal. The model side is the engine's: a model whose layers reject an fp8 cache
  fails its plan, and no proposal is made.
- **data-parallel replicas of a dense model** — the same GPUs as the chosen tensor-parallel
  layout, split into D replicas of TP/D GPUs, each its own engine with ⌈N / D⌉ of the
  requests. Trades cache sharing: the replicas do not share a KV cache (a prefix cached on one
  is not on the others; a request cannot use another replica's free blocks), and each holds
  a whole copy of the weights. Proposed only when every replica holds its share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.plan.fit_result import FitAlternative

if TYPE_CHECKING:
    from kvledger.plan.fit_result import FitAttempt

FP8_TRADE = ("precision: K and V stored in 8 bits (fp8) instead of 16; check the model's "
             "accuracy on your task (vLLM: --kv-cache-dtype fp8)")
DP_TRADE = ("cache sharing: the replicas do not share a KV cache (a prefix cached on one is "
            "not on the others) and each holds a whole copy of the weights; requests must be "
            "spread over the replicas")

_EIGHT_BITS = ("fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4", "int8", "int4", "uint8")


def computes_fp8(compute_capability: str) -> bool:
    """True for a GPU with native fp8 arithmetic (module docstring): sm89 and later, gfx942
    and later."""
    cap = compute_capability.lower()
    if cap.startswith("sm") and cap[2:].isdigit():
        return int(cap[2:]) >= 89
    if cap.startswith("gfx"):
        return cap in ("gfx942", "gfx950")
    return False


def is_eight_bits(kv_cache_dtype: str) -> bool:
    return kv_cache_dtype.lower() in _EIGHT_BITS or kv_cache_dtype.lower().startswith("fp8")


def fp8_alternative(attempt: FitAttempt) -> FitAlternative:
    return FitAlternative(
        "fp8 KV cache", FP8_TRADE, attempt.tensor_parallel_size,
        attempt.pipeline_parallel_size, attempt.data_parallel_size, "fp8", attempt.gpus,
        attempt.max_concurrency, attempt.reason)


def dp_alternative(attempt: FitAttempt, kv_cache_dtype: str) -> FitAlternative:
    return FitAlternative(
        "data-parallel replicas", DP_TRADE, attempt.tensor_parallel_size,
        attempt.pipeline_parallel_size, attempt.data_parallel_size, kv_cache_dtype,
        attempt.gpus, attempt.max_concurrency, attempt.reason)

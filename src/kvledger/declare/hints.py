"""Turn ``InsufficientPoolBudget`` into the one fix that will work, with the numbers.

The engine around seed B computed its budget as ``total × utilization − non-KV memory``,
capped by what is physically free, and told the user one of three things:

1. only X GiB is physically free — raising utilization will not help; reduce max_num_seqs;
2. set utilization ≥ min_util, or reduce max_num_seqs;
3. even utilization 1.0 is not enough (it would need min_util).

where ``min_util = (non_kv + reserved) / total``: the utilization at which the per-request
floor would just fit. Every hint also says how many sequences fit at the current budget, since
reducing ``max_num_seqs`` is the other lever in every case.
"""

from __future__ import annotations

import math

from kvledger.declare.counts import require_int
from kvledger.declare.pools import InsufficientPoolBudget

GIB = 1 << 30


def _gib(n: int | float) -> str:
    return f"{n / GIB:.2f} GiB"


def budget_fix_hint(
    exc: InsufficientPoolBudget,
    *,
    non_kv_bytes: int,
    total_bytes: int,
    free_bytes: int,
    gpu_memory_utilization: float,
    max_num_seqs: int,
) -> str:
    """One sentence naming the fix, with the numbers that justify it."""
    require_int("non_kv_bytes", non_kv_bytes, minimum=0)
    require_int("total_bytes", total_bytes, minimum=1)
    require_int("free_bytes", free_bytes, minimum=0)
    require_int("max_num_seqs", max_num_seqs, minimum=1)
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}")
    needed = non_kv_bytes + exc.reserved_bytes
    min_util = needed / total_bytes
    per_seq = exc.reserved_bytes / max_num_seqs
    # Sequences whose floor fits while leaving at least one byte to page with.
    seqs_fit = max(0, math.ceil(exc.available_bytes / per_seq) - 1) if per_seq else max_num_seqs
    fewer = f"reduce max_num_seqs to at most {seqs_fit}" if seqs_fit else "no sequence fits"
    head = (
        f"per-request state for {max_num_seqs} sequences needs {_gib(exc.reserved_bytes)} "
        f"but the KV budget is {_gib(exc.available_bytes)}"
    )
    if free_bytes < total_bytes * gpu_memory_utilization:
        return (
            f"{head}; only {_gib(free_bytes)} is physically free — raising utilization will "
            f"not help; {fewer}"
        )
    if min_util <= 1.0:
        target = math.ceil(min_util * 100) / 100
        if target <= min_util:
            target = min(1.0, target + 0.01)
        return f"{head}; set gpu_memory_utilization >= {target:.2f} or {fewer}"
    return (
        f"{head}; even gpu_memory_utilization 1.0 is not enough (it would need "
        f"{min_util:.2f}); {fewer}"
    )

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


def model_local_fix_hint(
    declarations: list[tuple[str, str, int, int]],
    *,
    local_bytes: int,
    budget_bytes: int,
    needed_bytes: int,
    max_num_seqs: int,
    total_bytes: int | None = None,
    gpu_memory_utilization: float | None = None,
) -> str:
    """The seed's three-way fix when model-local caches leave no room for one request.

    ``declarations``: (name, rows driver, row count, bytes per row) of the caches on the stage;
    ``budget_bytes``: the KV budget before them; ``needed_bytes``: what one request needs.
    The three levers: **fewer rows** (a MAX_NUM_SEQS cache shrinks with ``max_num_seqs``; a
    FIXED one needs a smaller ``rows_fixed``), **shorter capacity** (``physical_capacity_
    positions``), **more memory** (utilization when the budget came from a GPU: the least
    that fits, or "even 1.0 is not enough").
    """
    require_int("local_bytes", local_bytes, minimum=0)
    require_int("budget_bytes", budget_bytes)
    require_int("needed_bytes", needed_bytes, minimum=0)
    require_int("max_num_seqs", max_num_seqs, minimum=1)
    room = max(0, budget_bytes - needed_bytes)  # what the declarations may take at most
    fixed = sum(count * per_row for _, rows, count, per_row in declarations if rows == "fixed")
    per_seq = sum(per_row for _, rows, _, per_row in declarations if rows != "fixed")
    fewer = []
    if per_seq:
        seqs = (room - fixed) // per_seq
        fewer.append(f"reduce max_num_seqs to at most {seqs}" if seqs >= 1 else
                     "no max_num_seqs is small enough")
    fixed_names = [name for name, rows, _, _ in declarations if rows == "fixed"]
    if fixed_names:
        fewer.append(f"declare fewer fixed rows for {', '.join(fixed_names)}")
    shorter = (f"a shorter physical_capacity_positions (the caches may take at most "
               f"{room:,} B, they take {local_bytes:,} B)")
    shortfall = local_bytes + needed_bytes - budget_bytes
    if total_bytes and gpu_memory_utilization:
        min_util = (total_bytes * gpu_memory_utilization + shortfall) / total_bytes
        if min_util <= 1.0:
            target = math.ceil(min_util * 100) / 100
            more = f"gpu_memory_utilization >= {target:.2f}"
        else:
            more = (f"more memory per GPU (even gpu_memory_utilization 1.0 is not enough: it "
                    f"would need {min_util:.2f}; a larger GPU or more tensor parallelism)")
    else:
        more = f"{shortfall:,} B more memory per GPU"
    return f"fewer rows ({' or '.join(fewer)}), {shorter}, or {more}"

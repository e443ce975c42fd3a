"""ATOM's start-up refusals, worded as ``ModelRunner.get_num_blocks`` words them.

Two ways sizing stops:

- the STATE floor leaves nothing (``plan_pools`` raises ``InsufficientPoolBudget``): ATOM
  raises ``RuntimeError(base_msg + fix_msg)`` with the minimum utilization
  ``min_util = (non_kv_overhead + reserved) / total``, rounded *up* to 0.01 for the hint;
  above 1.0 it says even 1.0 is insufficient. (Its third branch — the physical free-memory
  clamp binding — is not modelled; ``budget`` says why.)
- no STATE class and not one block fits: ``assert num_kvcache_blocks > 0`` with "Not enough
  memory for KV cache with block size(...)".

With ``--kv-cache-memory-bytes`` there is no utilization to suggest: the base message is
ATOM's, the fix is kvledger's (said so).
"""

from __future__ import annotations

import math

from kvledger.declare.pools import InsufficientPoolBudget
from kvledger.plan.budget import (
    ACTIVATION_PEAK,
    CUDA_GRAPHS,
    NON_TORCH,
    UTILIZATION,
    WEIGHTS,
    Budget,
)
from kvledger.plan.engines.atom.budget import SAFETY
from kvledger.plan.engines.atom.releases import NEWEST

GB = 1 << 30
MB = 1 << 20


class AtomRefusesToStart(ValueError):
    """ATOM stops at start-up on this plan; the message is ATOM's."""


def min_utilization(budget: Budget, reserved_bytes: int) -> float:
    if budget.total_bytes is None:
        raise ValueError("a given budget has no GPU total to scale")
    return (budget.non_kv_bytes + reserved_bytes) / budget.total_bytes


def state_floor_message(exc: InsufficientPoolBudget, budget: Budget, max_num_seqs: int) -> str:
    base = (f"Per-request cache tensor ({exc.reserved_bytes / GB:.2f}GB for {exc.entries} "
            f"slots) exceeds available KV budget ({exc.available_bytes / GB:.2f}GB)")
    if budget.total_bytes is None or budget.gpu_memory_utilization is None:
        return (f"{NEWEST.label}: {base}. kvledger: give --kv-cache-memory-bytes above "
                f"{exc.reserved_bytes:,} or reduce --max-num-seqs (currently {max_num_seqs}).")
    base += f" at --gpu-memory-utilization {budget.gpu_memory_utilization:.2f}."
    need = min_utilization(budget, exc.reserved_bytes)
    hint = math.ceil(need * 100) / 100
    if hint <= 1.0:
        fix = (f" Set --gpu-memory-utilization >= {hint:.2f} (this only zeroes out the deficit;"
               f" use a higher value for actual KV capacity) or reduce --max-num-seqs "
               f"(currently {max_num_seqs}).")
    else:
        fix = (f" Even --gpu-memory-utilization 1.0 is insufficient (would need {need:.2f}); "
               f"reduce --max-num-seqs (currently {max_num_seqs}) or free GPU memory.")
    return f"{NEWEST.label}: {base}{fix}"


def no_block_message(block_size: int, block_bytes: int, available: int, budget: Budget) -> str:
    text = (f"{NEWEST.label} refuses to start: Not enough memory for KV cache with block "
            f"size({block_size}). At least 1 block ({block_bytes / MB:.2f}MB) is required, "
            f"but available_for_kv={available / MB:.2f}MB")
    if budget.total_bytes is None:
        return text

    def gb(key: str) -> str:
        line = budget.line(key)
        return f"{(line.bytes if line else 0) / GB:.2f}GB"

    peak = sum(ln.bytes for ln in budget.lines if ln.key in (WEIGHTS, ACTIVATION_PEAK))
    return (f"{text} (budget={gb(UTILIZATION)}, peak_torch={peak / GB:.2f}GB, "
            f"non_torch={gb(NON_TORCH)}, cudagraph_est={gb(CUDA_GRAPHS)}, "
            f"safety={gb(SAFETY)})")

"""Reconcile a plan across ranks: every rank ends with the global minimum PAGE count.

Pipeline stages hold different layer counts, so the same budget buys each a different number
of pages; a request needs its pages on every stage, so the engine can only use the smallest
count (ATOM's engine all-reduces MIN over the page count; vLLM likewise takes the minimum
``num_gpu_blocks`` across workers). STATE and FIXED classes scale with requests, not with
history, and are left as planned.

A rank that never joins must not hang the others: the collective is issued asynchronously and
waited on with a bounded ``timeout`` (seconds); expiry raises :class:`ReconcileTimeout` with the
numbers. After a timeout the process group is unusable — the caller should tear it down.
The same code path runs on NCCL (the count travels on the current CUDA device there).
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from kvledger.check._torch import torch_module
from kvledger.declare.pools import PoolPlan

DEFAULT_TIMEOUT_S = 60.0


class ReconcileTimeout(TimeoutError):
    """Some rank did not join the page-count all-reduce within ``timeout_s`` seconds."""

    def __init__(self, rank: int, world_size: int, timeout_s: float, local_pages: int) -> None:
        self.rank = rank
        self.world_size = world_size
        self.timeout_s = timeout_s
        self.local_pages = local_pages
        super().__init__(
            f"rank {rank}/{world_size}: page-count all-reduce (MIN) did not complete within "
            f"{timeout_s:g} s (local pages {local_pages}); a rank never joined reconcile()"
        )


def reconcile(plan: PoolPlan, group: Any = None, *, timeout: float = DEFAULT_TIMEOUT_S) -> PoolPlan:
    """``plan.with_paged_entries(min over ranks of plan.paged_entries)``.

    ``group`` is a ``torch.distributed`` process group (default: the world). Raises
    ``ValueError`` if the plan has no PAGE class (before any communication: the other ranks
    then time out instead of hanging), ``RuntimeError`` if ``torch.distributed`` is not
    initialised, and :class:`ReconcileTimeout` after ``timeout`` seconds.
    """
    torch = torch_module()
    dist = torch.distributed
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if plan.paged_class is None:
        raise ValueError("this plan has no PAGE class: nothing to reconcile")
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("torch.distributed is not initialised; call init_process_group first")
    local = plan.paged_entries
    device = "cpu"
    if "nccl" in str(dist.get_backend(group)).lower():
        device = f"cuda:{torch.cuda.current_device()}"
    count = torch.tensor([local], dtype=torch.int64, device=device)
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    started = time.monotonic()
    work = dist.all_reduce(count, op=dist.ReduceOp.MIN, group=group, async_op=True)
    try:
        done = work.wait(timeout=timedelta(seconds=float(timeout)))
    except Exception as exc:  # gloo/nccl report expiry as RuntimeError / DistBackendError
        elapsed = time.monotonic() - started
        if elapsed < 0.9 * timeout:  # not a timeout: a peer died or the backend failed
            raise RuntimeError(
                f"rank {rank}/{world}: page-count all-reduce failed after {elapsed:.1f} s "
                f"(local pages {local}): {exc}"
            ) from exc
        raise ReconcileTimeout(rank, world, float(timeout), local) from exc
    if done is False:
        raise ReconcileTimeout(rank, world, float(timeout), local)
    return plan.with_paged_entries(int(count.item()))

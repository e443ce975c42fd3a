"""Materialize a ``PoolPlan`` into real memory: one contiguous buffer per pool, one view per
entry class.

Why one buffer per pool and not one per class: the seed's pools are what the allocator sees —
PAGE grows and shrinks with the budget, STATE with ``max_num_seqs``, FIXED with nothing — and
one allocation per pool is what lets an engine hand a pool to a kernel as a single base pointer
with per-class offsets. Why bytes (``uint8``) and shape ``(entries, entry_bytes)``: the plan is
in byte currency; reinterpreting an entry as (layers, heads, block, head_dim) of some dtype is
the consumer's business, and a byte view keeps the arithmetic checkable.

No padding is inserted between classes, so the bytes allocated equal
``plan.total_reserved_bytes`` exactly. A consumer that needs aligned entries must plan with
aligned ``entry_bytes``; silently padding here would make the plan and the memory disagree.

The pool of a class is read from ``plan.pools``; for a plan built by hand without it, the
``paged_class`` is PAGE, a class with ``entries_per_req >= 1`` is STATE and any other is FIXED
(``SubPoolSpec`` guarantees STATE has ``entries_per_req >= 1`` and FIXED has 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.check._torch import torch_module
from kvledger.declare.pools import Pool, PoolPlan
from kvledger.records import record


@record(frozen=True)
class Slot:
    """Where one class lives: ``pool`` buffer bytes ``[start, stop)``."""

    pool: Pool
    start: int
    stop: int


@record(frozen=True)
class Arena:
    buffers: Mapping[Pool, Any]  # pool → 1-D uint8 tensor
    views: Mapping[str, Any]  # class name → (entries, entry_bytes) uint8 view into its pool
    slots: Mapping[str, Slot]

    @property
    def nbytes(self) -> int:
        """Bytes actually allocated (sum of the buffers' storages)."""
        return sum(int(b.untyped_storage().nbytes()) for b in self.buffers.values())


def pool_of(plan: PoolPlan, name: str) -> Pool:
    if name in plan.pools:
        return plan.pools[name]
    # A PoolPlan built by hand without ``pools``: infer from what the seed guarantees.
    if name == plan.paged_class:
        return Pool.PAGE
    if plan.entries_per_req.get(name, 0) >= 1:
        return Pool.STATE
    return Pool.FIXED


def layout(plan: PoolPlan) -> dict[str, Slot]:
    """Byte ranges per class, classes in plan order inside each pool, no padding. Pure: the
    tests check it without a device."""
    cursor: dict[Pool, int] = {}
    slots: dict[str, Slot] = {}
    for name, entry_bytes in plan.entry_bytes.items():
        entries = plan.entries.get(name, 0)
        size = entries * entry_bytes
        reserved = plan.reserved_bytes.get(name, 0)
        if reserved != size:
            raise ValueError(
                f"plan is inconsistent for class {name!r}: reserved {reserved:,} B but "
                f"{entries} entries × {entry_bytes:,} B = {size:,} B"
            )
        pool = pool_of(plan, name)
        start = cursor.get(pool, 0)
        slots[name] = Slot(pool, start, start + size)
        cursor[pool] = start + size
    return slots


def materialize(plan: PoolPlan, device: Any = "cpu") -> Arena:
    """Allocate ``plan`` on ``device`` (``cpu``, ``meta``, ``cuda``, ``cuda:1``…).

    Memory is left uninitialised (``torch.empty``): the engine writes before it reads, and
    zero-filling a 100 GB pool would take seconds for nothing.
    """
    torch = torch_module()
    slots = layout(plan)
    sizes: dict[Pool, int] = {}
    for slot in slots.values():
        sizes[slot.pool] = max(sizes.get(slot.pool, 0), slot.stop)
    buffers = {
        pool: torch.empty(size, dtype=torch.uint8, device=device) for pool, size in sizes.items()
    }
    views = {
        name: buffers[slot.pool][slot.start : slot.stop].view(
            plan.entries.get(name, 0), plan.entry_bytes[name]
        )
        for name, slot in slots.items()
    }
    return Arena(buffers=buffers, views=views, slots=slots)

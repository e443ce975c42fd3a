"""materialize(plan, device): one contiguous buffer per pool, per-class byte views, exactly
``plan.total_reserved_bytes`` allocated, no overlap (CPU and meta)."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

from kvledger import Pool, PoolPlan, fixed_pool, page_pool, plan_pools, state_pool  # noqa: E402
from kvledger.check import materialize  # noqa: E402
from kvledger.check.arena import layout  # noqa: E402


def _plan() -> PoolPlan:
    # STATE ring: 4 seqs × 2 per request + 1 extra = 9 entries × 1,000 B = 9,000 B.
    # FIXED talker: 3 entries × 777 B = 2,331 B.
    # PAGE: (100,000 − 9,000 − 2,331) // 4,096 = 88,669 // 4,096 = 21 pages = 86,016 B.
    # total reserved: 86,016 + 9,000 + 2,331 = 97,347 B.
    return plan_pools(
        [page_pool(4096), state_pool("ring", 1000, entries_per_req=2, extra_entries=1),
         fixed_pool("talker", 777, entries=3)],
        available_bytes=100_000, max_num_seqs=4,
    )


def test_plan_numbers_by_hand() -> None:
    plan = _plan()
    assert dict(plan.entries) == {"kv": 21, "ring": 9, "talker": 3}
    assert plan.total_reserved_bytes == 97_347


def test_cpu_bytes_allocated_equal_the_plan_exactly() -> None:
    arena = materialize(_plan(), "cpu")
    assert arena.nbytes == 97_347
    assert {p: int(b.numel()) for p, b in arena.buffers.items()} == {
        Pool.PAGE: 86_016, Pool.STATE: 9_000, Pool.FIXED: 2_331,
    }
    assert tuple(arena.views["kv"].shape) == (21, 4096)
    assert tuple(arena.views["ring"].shape) == (9, 1000)
    assert tuple(arena.views["talker"].shape) == (3, 777)
    for view in arena.views.values():
        assert view.dtype == torch.uint8


def test_cpu_views_do_not_overlap() -> None:
    arena = materialize(_plan(), "cpu")
    spans = sorted(
        (int(v.data_ptr()), int(v.data_ptr()) + int(v.numel())) for v in arena.views.values()
    )
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start
    # Writing one class never shows through another: fill each with its own value in turn;
    # an overlap would leave a later value inside an earlier view.
    for i, view in enumerate(arena.views.values(), start=1):
        view.fill_(i)
    for i, view in enumerate(arena.views.values(), start=1):
        assert bool((view == i).all())


def test_classes_sharing_a_pool_are_adjacent_in_one_buffer() -> None:
    # two STATE classes: a: 2 seqs × 1 × 10 B = 20 B; b: 2 seqs × 3 × 5 B = 30 B.
    plan = plan_pools(
        [state_pool("a", 10, entries_per_req=1), state_pool("b", 5, entries_per_req=3)],
        available_bytes=1_000, max_num_seqs=2,
    )
    slots = layout(plan)
    assert (slots["a"].start, slots["a"].stop, slots["b"].start, slots["b"].stop) == (
        0, 20, 20, 50,
    )
    arena = materialize(plan, "cpu")
    (buffer,) = arena.buffers.values()
    assert int(buffer.numel()) == 50 == plan.total_reserved_bytes
    assert arena.views["b"].data_ptr() - buffer.data_ptr() == 20


def test_meta_device_allocates_the_same_bytes_without_memory() -> None:
    arena = materialize(_plan(), "meta")
    assert arena.nbytes == 97_347
    for pool, buffer in arena.buffers.items():
        assert buffer.device.type == "meta"
        spans = sorted(
            (int(v.storage_offset()), int(v.storage_offset()) + int(v.numel()))
            for name, v in arena.views.items() if arena.slots[name].pool is pool
        )
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert end <= start
        assert spans[-1][1] == int(buffer.numel())


def test_empty_plan_allocates_nothing_and_zero_pages_is_a_zero_row_view() -> None:
    assert materialize(PoolPlan.empty()).nbytes == 0
    # 1,000 B available, ring reserves 1 seq × 1 × 600 B = 600 B; 400 B left is less than
    # one 4,096 B page → 0 pages.
    plan = plan_pools([page_pool(4096), state_pool("ring", 600, entries_per_req=1)],
                      available_bytes=1_000, max_num_seqs=1)
    arena = materialize(plan)
    assert tuple(arena.views["kv"].shape) == (0, 4096)
    assert arena.nbytes == 600


def test_inconsistent_plan_is_refused() -> None:
    bad = PoolPlan(entries={"kv": 2}, entry_bytes={"kv": 100}, reserved_bytes={"kv": 150},
                   entries_per_req={"kv": 0}, paged_class="kv")
    with pytest.raises(ValueError, match="inconsistent"):
        materialize(bad)


def test_reconciled_plan_materializes_smaller() -> None:
    plan = _plan().with_paged_entries(5)  # 5 × 4,096 = 20,480 B + 9,000 + 2,331
    assert materialize(plan, "meta").nbytes == 20_480 + 9_000 + 2_331

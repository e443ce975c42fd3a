"""Protocol B: SubPoolSpec validation, merge_specs and plan_pools edge cases."""

from __future__ import annotations

import pytest

from kvledger import (
    PAGED_CLASS,
    InsufficientPoolBudget,
    Pool,
    PoolPlan,
    SubPoolSpec,
    merge_specs,
    page_pool,
    plan_pools,
    state_pool,
)
from kvledger.declare.pools import fixed_pool


def test_page_pool_is_the_kv_class() -> None:
    p = page_pool(100)
    assert (p.pool, p.name, p.entry_bytes, p.entries_per_req, p.extra_entries) == (
        Pool.PAGE, "kv", 100, 0, 0)
    assert PAGED_CLASS == "kv"


def test_state_requires_entries_per_req() -> None:
    with pytest.raises(ValueError, match="entries_per_req >= 1"):
        SubPoolSpec(Pool.STATE, "ring", 10)
    with pytest.raises(TypeError):
        state_pool("ring", 10)  # type: ignore[call-arg]


def test_page_rejects_extras() -> None:
    with pytest.raises(ValueError, match="remainder"):
        SubPoolSpec(Pool.PAGE, "kv", 10, entries_per_req=1)
    with pytest.raises(ValueError, match="remainder"):
        SubPoolSpec(Pool.PAGE, "kv", 10, extra_entries=2)


@pytest.mark.parametrize("bad", [0, -5])
def test_entry_bytes_must_be_positive(bad: int) -> None:
    with pytest.raises(ValueError, match="entry_bytes"):
        page_pool(bad)
    with pytest.raises(ValueError, match="entry_bytes"):
        state_pool("s", bad, entries_per_req=1)


def test_negative_extra_entries_rejected() -> None:
    with pytest.raises(ValueError, match="extra_entries"):
        state_pool("s", 10, entries_per_req=1, extra_entries=-1)


@pytest.mark.parametrize("bad", [True, 1.0, "1"])
def test_counts_must_be_int(bad: object) -> None:
    with pytest.raises(TypeError):
        page_pool(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        state_pool("s", 10, entries_per_req=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        plan_pools([page_pool(10)], bad, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        plan_pools([page_pool(10)], 100, bad)  # type: ignore[arg-type]


def test_max_num_seqs_zero_rejected() -> None:
    with pytest.raises(ValueError, match="max_num_seqs"):
        plan_pools([page_pool(10)], 100, 0)


def test_merge_same_name_sums_bytes() -> None:
    # An Eagle3 draft KV riding the target's block ids: 100 + 30 B per block
    merged = merge_specs([page_pool(100), page_pool(30), state_pool("ring", 7, entries_per_req=2)])
    assert merged["kv"].entry_bytes == 130
    assert merged["ring"].entry_bytes == 7


def test_merge_disagreeing_pair_raises_naming_both() -> None:
    a = state_pool("ring", 7, entries_per_req=2)
    b = state_pool("ring", 7, entries_per_req=3)
    with pytest.raises(ValueError, match="ring") as info:
        merge_specs([a, b])
    assert "entries_per_req=2" in str(info.value) and "entries_per_req=3" in str(info.value)
    with pytest.raises(ValueError):
        merge_specs([SubPoolSpec(Pool.PAGE, "x", 5), state_pool("x", 5, entries_per_req=1)])


def test_different_names_stay_separate_in_one_pool() -> None:
    plan = plan_pools([state_pool("a", 10, entries_per_req=1),
                       state_pool("b", 10, entries_per_req=1), page_pool(10)], 1000, 4)
    assert plan.entries["a"] == plan.entries["b"] == 4


def test_plan_reserves_state_then_pages_remainder() -> None:
    # STATE: 8 seqs × 2 per req + 3 extra = 19 entries × 50 B = 950 B
    # remaining = 10,000 - 950 = 9,050 → PAGE 9,050 // 300 = 30 entries (9,000 B)
    plan = plan_pools([page_pool(300), state_pool("gdn", 50, entries_per_req=2, extra_entries=3)],
                      10_000, 8)
    assert plan.entries["gdn"] == 19
    assert plan.reserved_bytes["gdn"] == 950
    assert plan.paged_entries == 30
    assert plan.reserved_bytes["kv"] == 9_000
    assert plan.total_reserved_bytes == 9_950
    assert plan.entries_per_req == {"gdn": 2, "kv": 0}
    assert plan.paged_class == "kv"
    assert plan.pools == {"gdn": Pool.STATE, "kv": Pool.PAGE}


def test_exact_zero_remainder_raises() -> None:
    # 4 seqs × 1 × 25 B = 100 B = the whole budget → nothing left to page
    with pytest.raises(InsufficientPoolBudget) as info:
        plan_pools([page_pool(10), state_pool("s", 25, entries_per_req=1)], 100, 4)
    e = info.value
    # The seed's fields: entries is the total floor entry count (an int), 4 seqs × 1.
    assert (e.reserved_bytes, e.available_bytes, e.entries) == (100, 100, 4)
    assert isinstance(e.entries, int)
    assert e.entries_by_class == {"s": 4}


def test_insufficient_budget_entries_sum_over_classes() -> None:
    # Two floor classes: 3 seqs × 2 = 6 entries of 10 B, and 3 seqs × 1 + 1 extra = 4 entries
    # of 20 B → 60 + 80 = 140 B reserved > 100 B; entries = 6 + 4 = 10.
    with pytest.raises(InsufficientPoolBudget) as info:
        plan_pools(
            [page_pool(10), state_pool("a", 10, entries_per_req=2),
             state_pool("b", 20, entries_per_req=1, extra_entries=1)],
            100, 3,
        )
    e = info.value
    assert (e.reserved_bytes, e.entries, e.entries_by_class) == (140, 10, {"a": 6, "b": 4})


def test_one_byte_left_is_enough_to_plan() -> None:
    plan = plan_pools([page_pool(10), state_pool("s", 25, entries_per_req=1)], 101, 4)
    assert plan.paged_entries == 0  # 1 // 10


def test_no_state_class_never_raises() -> None:
    assert plan_pools([page_pool(10)], 0, 4).paged_entries == 0
    assert plan_pools([page_pool(10)], 99, 4).paged_entries == 9


def test_two_page_classes_raise() -> None:
    with pytest.raises(ValueError, match="more than one PAGE"):
        plan_pools([page_pool(10), SubPoolSpec(Pool.PAGE, "draft_kv", 10)], 100, 1)


def test_fixed_pool_does_not_scale_with_sequences() -> None:
    # FIXED: 261 rows × 1,000 B = 261,000 B whatever max_num_seqs is
    for seqs in (1, 256):
        plan = plan_pools([page_pool(1_000), fixed_pool("local:mimo", 1_000, entries=261)],
                          1_000_000, seqs)
        assert plan.reserved_bytes["local:mimo"] == 261_000
        assert plan.paged_entries == (1_000_000 - 261_000) // 1_000


def test_empty_plan_reads_zero() -> None:
    e = PoolPlan.empty()
    assert e.paged_entries == 0
    assert e.total_reserved_bytes == 0
    assert dict(e.entries) == {}
    with pytest.raises(ValueError, match="no PAGE class"):
        e.with_paged_entries(3)


def test_with_paged_entries_resizes_only_page_class() -> None:
    plan = plan_pools([page_pool(300), state_pool("gdn", 50, entries_per_req=2)], 10_000, 8)
    smaller = plan.with_paged_entries(5)
    assert smaller.paged_entries == 5
    assert smaller.reserved_bytes["kv"] == 1_500  # 5 × 300
    assert smaller.entries["gdn"] == plan.entries["gdn"]
    assert smaller.reserved_bytes["gdn"] == plan.reserved_bytes["gdn"]
    assert plan.paged_entries == (10_000 - 800) // 300  # original untouched
    with pytest.raises(ValueError):
        plan.with_paged_entries(-1)


def test_state_only_plan_has_no_page_class() -> None:
    plan = plan_pools([state_pool("s", 10, entries_per_req=1)], 100, 2)
    assert plan.paged_class is None and plan.paged_entries == 0
    with pytest.raises(ValueError):
        plan.with_paged_entries(1)


def test_plan_is_immutable() -> None:
    plan = plan_pools([page_pool(10)], 100, 1)
    with pytest.raises(TypeError):
        plan.entries["kv"] = 1  # type: ignore[index]


# -- issue 10 item 5: negative budgets and absurd sizes are refused, naming the argument ------


@pytest.mark.parametrize("bad", [-1, -50])
def test_negative_budget_is_a_value_error_naming_it(bad: int) -> None:
    # It used to return an empty plan (paged_entries 0), a plausible answer to a caller's bug.
    with pytest.raises(ValueError, match="available_bytes must be >= 0"):
        plan_pools([page_pool(10)], bad, 4)
    with pytest.raises(ValueError, match="available_bytes"):
        plan_pools([page_pool(10), state_pool("s", 1, entries_per_req=1)], bad, 4)


def test_absurd_budget_is_refused() -> None:
    # 2**60 B (1 EiB) is the documented bound; one byte more is not a real memory size.
    assert plan_pools([page_pool(1 << 20)], 1 << 60, 1).paged_entries == 1 << 40
    with pytest.raises(ValueError, match=r"available_bytes must be <= .*2\*\*60"):
        plan_pools([page_pool(10)], (1 << 60) + 1, 4)
    with pytest.raises(ValueError, match="400-digit"):
        plan_pools([page_pool(10)], 10**399, 4)


@pytest.mark.parametrize("field", ["entry_bytes", "entries_per_req", "extra_entries"])
def test_absurd_spec_sizes_are_refused(field: str) -> None:
    kw = {"entry_bytes": 10, "entries_per_req": 1, "extra_entries": 0, field: (1 << 60) + 1}
    with pytest.raises(ValueError, match=field):
        SubPoolSpec(Pool.STATE, "s", **kw)


def test_absurd_max_num_seqs_is_refused() -> None:
    with pytest.raises(ValueError, match="max_num_seqs"):
        plan_pools([page_pool(10)], 100, (1 << 60) + 1)

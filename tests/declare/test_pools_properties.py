"""Protocol B properties, checked by hypothesis over random specs and budgets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kvledger import InsufficientPoolBudget, SubPoolSpec, merge_specs, page_pool, plan_pools
from kvledger.declare.pools import state_pool

states = st.lists(
    st.builds(
        lambda i, b, per, extra: state_pool(f"s{i}", b, entries_per_req=per, extra_entries=extra),
        st.integers(0, 3), st.integers(1, 10_000), st.integers(1, 4), st.integers(0, 5),
    ),
    max_size=5,
)
pages = st.lists(st.integers(1, 50_000).map(page_pool), max_size=3)
budgets = st.integers(0, 10**9)
seqs = st.integers(1, 512)


def _safe_merge(specs: list[SubPoolSpec]) -> dict[str, SubPoolSpec] | None:
    try:
        return merge_specs(specs)
    except ValueError:
        return None  # same name, different multiplicity: rejected by design


@given(states, pages, budgets, seqs)
def test_reserved_never_exceeds_available(s: list[SubPoolSpec], p: list[SubPoolSpec],
                                          avail: int, n: int) -> None:
    specs = s + p
    if _safe_merge(specs) is None:
        return
    try:
        plan = plan_pools(specs, avail, n)
    except InsufficientPoolBudget as e:
        assert e.reserved_bytes >= avail
        return
    assert plan.total_reserved_bytes <= avail


@given(states, pages, budgets, seqs)
def test_each_state_class_gets_exactly_its_floor(s: list[SubPoolSpec], p: list[SubPoolSpec],
                                                 avail: int, n: int) -> None:
    merged = _safe_merge(s + p)
    if merged is None:
        return
    try:
        plan = plan_pools(s + p, avail, n)
    except InsufficientPoolBudget:
        return
    for name, spec in merged.items():
        if spec.pool.value == "state":
            assert plan.entries[name] == n * spec.entries_per_req + spec.extra_entries
            assert plan.reserved_bytes[name] == plan.entries[name] * spec.entry_bytes


@given(states, st.integers(1, 50_000), budgets, seqs)
def test_page_count_is_maximal(s: list[SubPoolSpec], page_bytes: int, avail: int, n: int) -> None:
    specs = [*s, page_pool(page_bytes)]
    if _safe_merge(specs) is None:
        return
    try:
        plan = plan_pools(specs, avail, n)
    except InsufficientPoolBudget:
        return
    floor = plan.total_reserved_bytes - plan.reserved_bytes["kv"]
    used = floor + plan.paged_entries * page_bytes
    assert used <= avail
    assert used + page_bytes > avail  # one more entry would not fit


@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=6), st.randoms())
def test_merge_is_order_independent_in_bytes(sizes: list[int], rnd: object) -> None:
    specs = [page_pool(b) for b in sizes] + [state_pool("r", b, entries_per_req=1) for b in sizes]
    shuffled = list(specs)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    a, b = merge_specs(specs), merge_specs(shuffled)
    assert {k: v.entry_bytes for k, v in a.items()} == {k: v.entry_bytes for k, v in b.items()}
    assert a["kv"].entry_bytes == sum(sizes)

"""Seed protocol B: byte-currency pool planning.

Pools are told apart by what their size scales with:

- ``Pool.PAGE`` scales with cached history (the paged KV blocks), sized from the remainder.
- ``Pool.STATE`` scales with in-flight requests: ``max_num_seqs × entries_per_req +
  extra_entries`` entries, whatever the rows are indexed by (sliding-window ring, compressor
  ring, recurrent state).
- ``Pool.FIXED`` (kvledger's addition) scales with nothing: ``extra_entries`` entries the model
  controls, e.g. a model-local cache captured for a fixed set of batch sizes. Expressing it as
  STATE would multiply it by ``max_num_seqs``, the exact over-report protocol A warns about.

Inside a pool, entry classes are keyed by name: the same name means the same index space, so
``entry_bytes`` add (a draft model's KV riding the target's block ids). The only name defined
here is ``PAGED_CLASS = "kv"``; every other name belongs to whoever declares it.

Decisions the seed left open (each tested):
- ``entry_bytes <= 0`` is ``ValueError``: a zero-byte entry makes "how many fit" infinite.
- negative ``extra_entries`` is ``ValueError``: it would silently shrink another class's floor.
- ``bool``/``float``/``str`` where a count is expected is ``TypeError``.
- ``max_num_seqs = 0`` is rejected (``ValueError``). An engine that admits no sequence serves
  nothing; planning zero STATE rows would produce a plan that fails on the first request,
  long after the planner could have said why. Warm-up, before the budget is known, uses
  ``PoolPlan.empty()`` instead.
- a negative ``available_bytes`` is ``ValueError`` naming the argument (it used to plan an
  empty pool, a plausible-looking answer to a caller's arithmetic bug); 0 is allowed (no PAGE
  entries; any STATE floor raises ``InsufficientPoolBudget``).
- absurd sizes: any byte amount or count above ``MAX_BYTES = 2**60`` (1 EiB) is ``ValueError``
  (``kvledger.declare.counts`` says why one bound). A floor of in-range counts whose bytes
  exceed it needs no rule of its own: it exceeds any valid budget, so it is
  ``InsufficientPoolBudget`` with its numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from kvledger.declare.counts import require_int, require_text
from kvledger.declare.poolkind import Pool as Pool  # defined apart (start-up time); re-exported
from kvledger.errors import KvledgerError
from kvledger.records import field, record, replace

PAGED_CLASS = "kv"
ENGINE_SOURCE = "engine"


@record(frozen=True)
class SubPoolSpec:
    """One entry class. ``source`` says where its bytes come from (``"engine"`` or the name of
    the model-local declaration); merged classes keep every source."""

    pool: Pool
    name: str
    entry_bytes: int
    entries_per_req: int = 0
    extra_entries: int = 0
    source: str = ENGINE_SOURCE

    def __post_init__(self) -> None:
        if not isinstance(self.pool, Pool):
            try:
                object.__setattr__(self, "pool", Pool(self.pool))
            except ValueError:
                raise ValueError(
                    f"pool must be one of page, state, fixed; got {self.pool!r}"
                ) from None
        require_text("name", self.name)
        require_int("entry_bytes", self.entry_bytes)
        if self.entry_bytes <= 0:
            raise ValueError(f"{self.name}: entry_bytes must be > 0, got {self.entry_bytes}")
        require_int("entries_per_req", self.entries_per_req, minimum=0)
        require_int("extra_entries", self.extra_entries, minimum=0)
        require_text("source", self.source)
        if self.pool is Pool.PAGE and (self.entries_per_req or self.extra_entries):
            raise ValueError(
                f"{self.name}: a PAGE class is sized from the remainder; entries_per_req and "
                "extra_entries must be 0"
            )
        if self.pool is Pool.STATE and self.entries_per_req < 1:
            raise ValueError(
                f"{self.name}: a STATE class needs entries_per_req >= 1 (1 committed state, "
                "1 + num_spec with rollback slots, or a window's block count)"
            )
        if self.pool is Pool.FIXED and (self.entries_per_req or self.extra_entries < 1):
            raise ValueError(
                f"{self.name}: a FIXED class has entries_per_req 0 and extra_entries >= 1"
            )

    def floor(self, max_num_seqs: int) -> int:
        """Entries reserved before paging (0 for PAGE)."""
        if self.pool is Pool.PAGE:
            return 0
        return max_num_seqs * self.entries_per_req + self.extra_entries


def page_pool(entry_bytes: int, *, source: str = ENGINE_SOURCE) -> SubPoolSpec:
    """The PAGE class ``"kv"``: one entry is one block across all paged layers."""
    return SubPoolSpec(Pool.PAGE, PAGED_CLASS, entry_bytes, source=source)


def state_pool(
    name: str,
    entry_bytes: int,
    *,
    entries_per_req: int,
    extra_entries: int = 0,
    source: str = ENGINE_SOURCE,
) -> SubPoolSpec:
    return SubPoolSpec(Pool.STATE, name, entry_bytes, entries_per_req, extra_entries, source)


def fixed_pool(
    name: str, entry_bytes: int, *, entries: int, source: str = ENGINE_SOURCE
) -> SubPoolSpec:
    return SubPoolSpec(Pool.FIXED, name, entry_bytes, 0, entries, source)


def merge_specs(specs: Iterable[SubPoolSpec]) -> dict[str, SubPoolSpec]:
    """Same name = same index space: bytes add. A same-name pair that disagrees on pool or
    multiplicity raises ``ValueError`` naming both."""
    merged: dict[str, SubPoolSpec] = {}
    for spec in specs:
        if not isinstance(spec, SubPoolSpec):
            raise TypeError(f"expected SubPoolSpec, got {type(spec).__name__}")
        prev = merged.get(spec.name)
        if prev is None:
            merged[spec.name] = spec
            continue
        if (prev.pool, prev.entries_per_req, prev.extra_entries) != (
            spec.pool,
            spec.entries_per_req,
            spec.extra_entries,
        ):
            raise ValueError(
                f"class {spec.name!r} declared twice with different shape: {prev} vs {spec}"
            )
        sources = prev.source.split("+")
        if spec.source not in sources:
            sources.append(spec.source)
        merged[spec.name] = replace(
            prev, entry_bytes=prev.entry_bytes + spec.entry_bytes, source="+".join(sorted(sources))
        )
    return merged


class InsufficientPoolBudget(KvledgerError, RuntimeError):
    """The STATE/FIXED floor alone leaves nothing to page with.

    Carries the numbers; the caller has the context (GPU, utilization) to suggest a fix — see
    ``kvledger.declare.hints.budget_fix_hint``.

    ``entries`` is the seed's field: one int, the total entries of the floor classes (STATE,
    and kvledger's FIXED, which the seed would have declared as STATE). The per-class counts
    are under ``entries_by_class``; a dict in ``entries`` would break code written against the
    seed (``exc.entries * entry_bytes``).
    """

    def __init__(
        self,
        reserved_bytes: int,
        available_bytes: int,
        entries: int,
        *,
        entries_by_class: Mapping[str, int] | None = None,
    ):
        self.reserved_bytes = reserved_bytes
        self.available_bytes = available_bytes
        self.entries = entries
        self.entries_by_class: dict[str, int] = dict(entries_by_class or {})
        by_class = f": {self.entries_by_class}" if self.entries_by_class else ""
        super().__init__(
            f"per-request state needs {reserved_bytes:,} B but only {available_bytes:,} B are "
            f"available, leaving nothing for paged KV ({entries:,} state entries{by_class})"
        )


def _frozen(d: Mapping[str, int] | None = None) -> Mapping[str, int]:
    return MappingProxyType(dict(d or {}))


@record(frozen=True, eq=True)
class PoolPlan:
    """The outcome: per class, entries and bytes. Dicts are read-only views."""

    entries: Mapping[str, int] = field(default_factory=_frozen)
    entry_bytes: Mapping[str, int] = field(default_factory=_frozen)
    reserved_bytes: Mapping[str, int] = field(default_factory=_frozen)
    entries_per_req: Mapping[str, int] = field(default_factory=_frozen)
    paged_class: str | None = None
    # Where each class's bytes come from ("engine", or model-local declaration names).
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Model-local bytes the engine's profiling run already charged: reported, never reserved.
    already_charged_bytes: Mapping[str, int] = field(default_factory=_frozen)
    # Which pool each class lives in (PAGE, STATE or FIXED).
    pools: Mapping[str, Pool] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def empty(cls) -> PoolPlan:
        """Every count reads 0: installed before the budget is known (warm-up)."""
        return cls()

    @property
    def paged_entries(self) -> int:
        if self.paged_class is None:
            return 0
        return self.entries.get(self.paged_class, 0)

    @property
    def total_reserved_bytes(self) -> int:
        return sum(self.reserved_bytes.values())

    def with_paged_entries(self, count: int) -> PoolPlan:
        """A copy with the PAGE class resized (pipeline stages reconcile to the minimum)."""
        require_int("count", count, minimum=0)
        if self.paged_class is None:
            raise ValueError("this plan has no PAGE class to resize")
        name = self.paged_class
        entries = dict(self.entries)
        reserved = dict(self.reserved_bytes)
        entries[name] = count
        reserved[name] = count * self.entry_bytes[name]
        return replace(self, entries=_frozen(entries), reserved_bytes=_frozen(reserved))


def plan_pools(
    specs: Iterable[SubPoolSpec],
    available_bytes: int,
    max_num_seqs: int,
    *,
    already_charged: Mapping[str, int] | None = None,
) -> PoolPlan:
    """Pure planning: no device, no config, no environment.

    Merge; reserve each STATE class ``max_num_seqs × entries_per_req + extra_entries`` entries
    (FIXED: ``extra_entries``); if any such class exists and nothing remains, raise
    ``InsufficientPoolBudget``; more than one PAGE class is ``ValueError``; the PAGE class gets
    ``max(0, remaining // entry_bytes)``. ``already_charged`` (name → bytes) is recorded for
    reports and not subtracted.
    """
    require_int("available_bytes", available_bytes, minimum=0)
    require_int("max_num_seqs", max_num_seqs, minimum=1)
    merged = merge_specs(specs)
    pages = [s for s in merged.values() if s.pool is Pool.PAGE]
    if len(pages) > 1:
        raise ValueError(f"more than one PAGE class: {', '.join(s.name for s in pages)}")
    entries: dict[str, int] = {}
    reserved: dict[str, int] = {}
    per_req: dict[str, int] = {}
    for spec in merged.values():
        if spec.pool is Pool.PAGE:
            continue
        entries[spec.name] = spec.floor(max_num_seqs)
        reserved[spec.name] = entries[spec.name] * spec.entry_bytes
        per_req[spec.name] = spec.entries_per_req
    floor = sum(reserved.values())
    remaining = available_bytes - floor
    if reserved and remaining <= 0:
        raise InsufficientPoolBudget(
            floor, available_bytes, sum(entries.values()), entries_by_class=entries
        )
    paged: str | None = None
    if pages:
        page = pages[0]
        paged = page.name
        entries[paged] = max(0, remaining // page.entry_bytes)
        reserved[paged] = entries[paged] * page.entry_bytes
        per_req[paged] = 0
    charged = dict(already_charged or {})
    for name, value in charged.items():
        require_int(f"already_charged[{name!r}]", value, minimum=0)
    return PoolPlan(
        entries=_frozen(entries),
        entry_bytes=_frozen({n: s.entry_bytes for n, s in merged.items()}),
        reserved_bytes=_frozen(reserved),
        entries_per_req=_frozen(per_req),
        paged_class=paged,
        sources=MappingProxyType({n: s.source for n, s in merged.items()}),
        already_charged_bytes=_frozen(charged),
        pools=MappingProxyType({n: s.pool for n, s in merged.items()}),
    )

"""Audit: live caches measured against the model's own declarations (seed protocol A).

**Who a measured byte belongs to.** To the declaring owner that holds it: cache objects in the
owner's attributes or reachable from them (containers, submodules, plain holder objects) — but
not inside another declaring owner, whose walk owns them instead. An owner's own plain tensors
and non-persistent buffers count too (a ring kept with ``register_buffer(..., persistent=False)``);
parameters and persistent buffers are weights and never do.

**How several declarations of one owner share its measurement** (by name, then jointly):

1. A holding (one cache object, or one owner-kept tensor) whose attribute path relative to the
   owner contains a declaration's ``name`` as a whole segment belongs to that declaration
   alone: a spec named ``"cross_attention_cache"`` claims ``cache.cross_attention_cache`` of an
   ``EncoderDecoderCache``; a spec named ``"ring"`` claims ``self.ring``.
2. Every other holding of the owner goes to the owner's *unnamed* declarations (those that
   matched nothing by name in any sample), compared **jointly**: measured total vs the sum of
   their peaks, one verdict shared by the group (the row's ``group`` lists its members). Two
   specs of different lifetimes over one ``DynamicCache`` (the same geometry kept per request
   and as a working copy) cannot be told apart by bytes, so pretending to split them would be
   a guess; a joint comparison is exact about the total and honest about the split.
3. If the owner has no unnamed declaration, its remaining cache objects are ``undeclared``;
   its remaining plain tensors are ignored (nothing but a declaration makes a tensor a cache).
   A cache object holding no bytes (an unused cache, or the shell of an
   ``EncoderDecoderCache`` whose two halves are reported on their own) is never undeclared.

Rejected alternative: matching by lifetime (``scope``). Scope is diagnostic in the seed and
never observable from a tensor, so matching on it would invent a fact.

**When it is measured.** After ``run()`` returns and, with ``sample_during_run``, after the
forward of every module up to ``SAMPLE_DEPTH`` levels below the root or below an owner during
the run (forward hooks), keeping each group's peak — logical and pinned bytes each peak on
their own (a sliding-window view pins the whole prompt right after prefill, then only
``window`` positions once decoding). Caches an owner drops before returning (an INVOCATION
working copy) are seen only if they are still reachable from the owner while some hooked
module runs; one that lives only in a local variable is invisible and reads ``dead`` — a
declaration the audit cannot confirm is reported, never assumed fine.

**Verdicts at ``max_num_seqs``** (declared = ``spec.peak_bytes(max_num_seqs)``, measured on the
chosen ``basis``, logical by default): ``dead`` if nothing logical was ever measured;
``under-declared`` if measured > declared (no tolerance: any excess is memory nobody planned);
``over-declared`` if declared − measured > ``tolerance`` × declared (default 10 %); else ``ok``.
The ``run`` must drive the rows the declaration promises (``max_num_seqs`` sequences for a
MAX_NUM_SEQS spec) and fill the declared capacity; a short run reads as over-declared.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from kvledger.check.measure import Bytes, Holding, find_holdings, tally
from kvledger.check.result import (
    AuditResult,
    Basis,
    DeclarationAudit,
    UndeclaredCache,
    Verdict,
)
from kvledger.declare.collect import collect_model_local_kv_specs, unwrap_model
from kvledger.declare.counts import require_int
from kvledger.declare.model_local import ModelLocalKVSpec
from kvledger.records import field, record

DEFAULT_TOLERANCE = 0.10
# Forward hooks go on modules at most this deep below the root or below a declaring owner
# (itself, children, grandchildren): about one sample per model step. Hooking every module
# would multiply the cost by the layer count for samples that differ only inside one step.
SAMPLE_DEPTH = 2


@record()
class _Owner:
    path: str
    obj: Any
    specs: list[ModelLocalKVSpec]
    samples: list[list[Holding]] = field(default_factory=list)


def _candidates(root: Any) -> Iterator[tuple[str, Any]]:
    yield "", root
    named_modules = getattr(root, "named_modules", None)
    if callable(named_modules):
        yield from named_modules()


def _find_owners(root: Any, model: Any) -> list[_Owner]:
    """Every declaring owner (also those declaring nothing), with the specs ``collect`` found.

    Walks the same candidates in the same order as ``collect_model_local_kv_specs`` and
    de-duplicates by the bound method's ``__self__`` exactly as it does, so paths agree.
    """
    by_path: dict[str, list[ModelLocalKVSpec]] = {}
    for path, spec in collect_model_local_kv_specs(model):
        by_path.setdefault(path, []).append(spec)
    owners: list[_Owner] = []
    seen: set[int] = set()
    for path, obj in _candidates(root):
        try:
            method = getattr(obj, "model_local_kv_specs", None)
        except Exception:  # a forwarding wrapper whose attribute access fails: not an owner
            continue
        if not callable(method):
            continue
        owner = getattr(method, "__self__", obj)
        if id(owner) in seen:
            continue
        seen.add(id(owner))
        owners.append(_Owner(path, owner, by_path.get(path, [])))
    return owners


_SEGMENT = re.compile(r"[.\[\]'\"{}]+")


def _segments(path: str) -> set[str]:
    return {s for s in _SEGMENT.split(path) if s}


def _named_match(holding: Holding, names: dict[str, int]) -> int | None:
    hits = [i for n, i in names.items() if n in _segments(holding.path)]
    return hits[0] if len(hits) == 1 else None


def _pick(bytes_: Bytes, basis: Basis) -> int:
    return bytes_.pinned if basis is Basis.PINNED else bytes_.logical


def _verdict(declared: int, measured: Bytes, basis: Basis, tolerance: float) -> Verdict:
    if measured.logical == 0:
        return Verdict.DEAD
    value = _pick(measured, basis)
    if value > declared:
        return Verdict.UNDER_DECLARED
    if declared - value > tolerance * declared:
        return Verdict.OVER_DECLARED
    return Verdict.OK


def _join(owner_path: str, path: str) -> str:
    return ".".join(p for p in (owner_path, path) if p)


def _audit_owner(
    owner: _Owner, max_num_seqs: int, basis: Basis, tolerance: float
) -> tuple[list[DeclarationAudit], dict[str, tuple[Holding, Bytes]]]:
    names = {s.name: i for i, s in enumerate(owner.specs)}
    named: set[int] = set()
    for sample in owner.samples:
        for h in sample:
            hit = _named_match(h, names)
            if hit is not None:
                named.add(hit)
    unnamed = tuple(i for i in range(len(owner.specs)) if i not in named)
    groups: list[tuple[int, ...]] = [(i,) for i in sorted(named)]
    if unnamed:
        groups.append(unnamed)
    peaks: dict[tuple[int, ...], tuple[Bytes, tuple[str, ...]]] = {
        g: (Bytes(0, 0, 0), ()) for g in groups
    }
    stray: dict[str, tuple[Holding, Bytes]] = {}
    for sample in owner.samples:
        members: dict[tuple[int, ...], list[Holding]] = {g: [] for g in groups}
        for h in sample:
            hit = _named_match(h, names)
            if hit is not None and hit in named:
                members[(hit,)].append(h)
            elif unnamed:
                members[unnamed].append(h)
            elif h.is_cache and h.bytes.pinned:  # an empty shell (a parent) holds nothing
                b = h.bytes
                key = _join(owner.path, h.path)
                if key not in stray or _pick(b, basis) > _pick(stray[key][1], basis):
                    stray[key] = (h, b)
        for g, hs in members.items():
            b = tally(r for h in hs for r in h.tensors)
            old, where = peaks[g]
            if _pick(b, basis) > _pick(old, basis) or not where:
                where = tuple(_join(owner.path, h.path) for h in hs)
            # Each number is its own peak over the samples: the pinned peak (a prefill's
            # whole prompt behind a sliding-window view) need not coincide with the logical.
            peak = Bytes(
                max(old.logical, b.logical),
                max(old.pinned, b.pinned),
                max(old.bookkeeping, b.bookkeeping),
            )
            peaks[g] = (peak, where)
    rows: list[DeclarationAudit] = []
    for g in groups:
        measured, where = peaks[g]
        declared = sum(owner.specs[i].peak_bytes(max_num_seqs) for i in g)
        verdict = _verdict(declared, measured, basis, tolerance)
        for i in g:
            rows.append(
                DeclarationAudit(
                    owner_path=owner.path,
                    spec=owner.specs[i],
                    verdict=verdict,
                    declared_bytes=declared,
                    logical_bytes=measured.logical,
                    pinned_bytes=measured.pinned,
                    bookkeeping_bytes=measured.bookkeeping,
                    holdings=where,
                    group=tuple(owner.specs[j].name for j in g),
                )
            )
    order = {id(s): k for k, s in enumerate(owner.specs)}
    rows.sort(key=lambda r: order[id(r.spec)])
    return rows, stray


def _near(name: str, bases: list[str]) -> bool:
    """Within ``SAMPLE_DEPTH`` levels of the root or of a declaring owner."""
    for base in ["", *bases]:
        if base and name != base and not name.startswith(base + "."):
            continue
        rest = name[len(base):].lstrip(".")
        if not rest or rest.count(".") < SAMPLE_DEPTH:
            return True
    return False


class _Sampler:
    def __init__(self, root: Any, owners: list[_Owner]) -> None:
        self.root = root
        self.owners = owners
        self.outside: list[list[Holding]] = []
        self.count = 0

    def __call__(self, *_: Any) -> None:
        objs = [o.obj for o in self.owners]
        for owner in self.owners:
            owner.samples.append(find_holdings(owner.obj, stop=objs))
        if any(o.obj is self.root for o in self.owners):
            # The root owner's own walk already covers everything outside other owners.
            self.outside.append([])
        else:
            claimed = {h.identity for o in self.owners for h in o.samples[-1]}
            outside = find_holdings(self.root, stop=objs, own_tensors=False)
            self.outside.append(
                [h for h in outside if h.is_cache and h.identity not in claimed]
            )
        self.count += 1


def audit(
    model: Any,
    *,
    max_num_seqs: int,
    run: Callable[[], Any] | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    basis: Basis | str = Basis.LOGICAL,
    sample_during_run: bool = True,
) -> AuditResult:
    """Run ``run`` (if given), measure, and compare with the model's declarations.

    Without ``run`` the caches are measured as they stand. See the module docstring for who
    owns what, how declarations share a measurement, and what each verdict means.
    """
    require_int("max_num_seqs", max_num_seqs, minimum=1)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)):
        raise TypeError(f"tolerance must be a number, got {type(tolerance).__name__}")
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance}")
    basis = Basis(basis)
    root = unwrap_model(model)
    owners = _find_owners(root, model)
    sampler = _Sampler(root, owners)
    if run is not None:
        handles = []
        if sample_during_run:
            named_modules = getattr(root, "named_modules", None)
            if callable(named_modules):
                bases = [o.path for o in owners]
                for name, module in named_modules():
                    if not _near(name, bases):
                        continue
                    register = getattr(module, "register_forward_hook", None)
                    if callable(register):
                        handles.append(register(sampler))
        try:
            run()
        finally:
            for handle in handles:
                handle.remove()
    sampler()

    declarations: list[DeclarationAudit] = []
    undeclared: dict[str, UndeclaredCache] = {}
    for owner in owners:
        rows, stray = _audit_owner(owner, max_num_seqs, basis, tolerance)
        declarations.extend(rows)
        why = (
            "its owner declares nothing"
            if not owner.specs
            else "its owner's declarations are all claimed by name elsewhere"
        )
        for path, (h, b) in stray.items():
            _keep(undeclared, UndeclaredCache(path, h.kind, b.logical, b.pinned, why), basis)
    for sample in sampler.outside:
        for h in sample:
            b = h.bytes
            if not b.pinned:
                continue
            why = "no declaring owner holds it"
            _keep(undeclared, UndeclaredCache(h.path, h.kind, b.logical, b.pinned, why), basis)
    return AuditResult(
        max_num_seqs=max_num_seqs,
        tolerance=float(tolerance),
        basis=basis,
        samples=sampler.count,
        declarations=tuple(declarations),
        undeclared=tuple(sorted(undeclared.values(), key=lambda u: u.path)),
    )


audit_model = audit


def _keep(found: dict[str, UndeclaredCache], item: UndeclaredCache, basis: Basis) -> None:
    old = found.get(item.path)
    if old is None or _undeclared_bytes(item, basis) > _undeclared_bytes(old, basis):
        found[item.path] = item


def _undeclared_bytes(item: UndeclaredCache, basis: Basis) -> int:
    return item.pinned_bytes if basis is Basis.PINNED else item.logical_bytes

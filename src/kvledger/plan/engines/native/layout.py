"""The native layout (``--engine native``, the default): the seeds' design, with no page padding.

Every cached layer of one pipeline stage lands in exactly one entry class:

- **PAGE ``"kv"``** — full attention, MLA, sparse-attention indexers, compressed KV, MTP and
  draft layers: everything whose cache grows with history. One entry is one block of
  ``block_size`` tokens across *all* paged layers, so ``entry_bytes = block_size ×
  Σ bytes_per_token``. Layers share one block table (an indexer or a draft model's KV rides the
  target's block ids), which is why they share one class.
- **STATE ``"ring:W"`` / ``"chunk:C"``** — sliding-window and chunked-local layers: a ring per
  request. Rounding: *exact positions*, not blocks. The ring holds the ``W − 1`` positions a
  new token may look back on, plus the ``1 + num_speculative_tokens`` positions one decode step
  writes, so ``entries_per_req = min(W, max_model_len) + num_speculative_tokens`` and one entry
  is one position across every layer with that window. Why exact: a ring is addressed by
  position modulo its capacity, so it has no block granularity; rounding up to whole blocks
  would reserve up to ``block_size − 1`` dead positions per request per class, multiplied by
  ``max_num_seqs`` — the padding this layout exists to avoid. Rejected alternative:
  ``ceil((W − 1 + 1 + k) / block_size)`` blocks, which only an engine reusing a block-table
  kernel for the ring needs. Prefill chunks attend over their own fresh K/V (activation
  memory) and then write their last ``W − 1`` positions, so the chunk length does not enter.
  Capping at ``max_model_len``: no request has more positions than that.
- **STATE ``"cross"``** — cross-attention K/V over ``encoder_len`` positions, written once per
  request: ``entries_per_req = encoder_len``, one entry = one encoder position across layers.
- **STATE ``"state:<kind>"``** — recurrent layers (Mamba, GDN, KDA, lightning, short conv):
  ``1 + num_speculative_tokens`` entries per request (the committed state plus one rollback
  slot per speculative token), one entry = one state across every layer of that kind.
- model-local declarations, through ``kvledger.declare.bridge.model_local_to_pool_specs``.

Then ``plan_pools(specs, available_bytes, state_slots)``.

STATE slots: the seed engine reserved every STATE class for ``max_num_seqs`` sequences. When
memory cannot hold ``max_num_seqs`` requests of ``max_model_len`` tokens anyway, the slots
beyond those that can run only take pages away from the ones that do (256 Mamba states can
outweigh the whole budget). So, by default, floors are reserved for the most sequences whose
pages still hold that many full-length requests, at most ``max_num_seqs``; the plan says so in
a warning, and ``fit_state_slots=False`` restores the seed's rule. The cost, also stated: no
more than that many *short* requests run at once either.

Rings or pages: a ring reserves ``slots × window`` positions up front; paging the same layers
with the full-attention layers reserves nothing but pays for their whole history. Which holds
more depends on the budget, so ``plan_native`` plans every choice (each window class as a ring
or paged; at most a handful) and keeps the one that holds the most tokens, then the most
concurrency; ties keep rings. A paged window class is reported as a warning.

Numbers, as vLLM defines them so the two layouts compare: ``kv_cache_tokens`` = requests of
``max_model_len`` the pages hold × ``max_model_len`` (with no paged class: slots ×
``max_model_len``); ``max_concurrency`` = that request count, capped by the slots.

Roles: MTP layers are cached only when speculative decoding with an MTP method is on; draft
layers only when speculative decoding is on or the model *is* a draft; encoder layers cache
nothing (they run once per request, in activation memory).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence

from kvledger import records
from kvledger.declare.bridge import model_local_to_pool_specs
from kvledger.declare.model_local import ModelLocalKVSpec
from kvledger.declare.pools import (
    PAGED_CLASS,
    InsufficientPoolBudget,
    PoolPlan,
    SubPoolSpec,
    page_pool,
    plan_pools,
    state_pool,
)
from kvledger.derive.layers import Kind, LayerCache, RecurrentState, Role, ceil_div, group_layers
from kvledger.plan.request import MTP_METHODS, PlanRequest
from kvledger.records import field, record

DEFAULT_BLOCK_SIZE = 16
PAGED_KINDS = frozenset({Kind.FULL, Kind.MLA, Kind.INDEXER, Kind.COMPRESSED})
RING_KINDS = frozenset({Kind.SLIDING, Kind.CHUNKED})

ModelLocalInput = ModelLocalKVSpec | tuple[str, ModelLocalKVSpec]


@record(frozen=True)
class NativeClass:
    """One entry class and the layers whose bytes it carries (for people and for tests)."""

    name: str
    pool: str  # "page" | "state"
    entry_bytes: int
    entries_per_req: int
    layers: tuple[int, ...]
    why: str
    members: tuple[tuple[int, str], ...] = ()  # (layer index, kind): one index may hold two


@record(frozen=True)
class NativeLayout:
    block_size: int
    classes: tuple[NativeClass, ...]
    warnings: tuple[str, ...] = ()
    paged_windows: frozenset[str] = frozenset()

    def specs(self) -> list[SubPoolSpec]:
        out = []
        for c in self.classes:
            if c.pool == "page":
                out.append(page_pool(c.entry_bytes))
            else:
                out.append(state_pool(c.name, c.entry_bytes, entries_per_req=c.entries_per_req))
        return out

    @property
    def ring_names(self) -> frozenset[str]:
        return frozenset(c.name for c in self.classes if c.name.startswith(("ring:", "chunk:")))


def _is_mtp_method(method: str | None) -> bool:
    return method in MTP_METHODS


def cached_layers(
    layers: Sequence[LayerCache], request: PlanRequest
) -> tuple[list[LayerCache], list[str]]:
    """The layers that hold memory under ``request`` (role rules in the module docstring)."""
    notes: list[str] = []
    spec_on = request.num_speculative_tokens > 0
    only_draft = all(layer.role == Role.DRAFT for layer in layers)
    out: list[LayerCache] = []
    skipped_mtp = skipped_draft = skipped_encoder = 0
    for layer in layers:
        if not layer.owns_memory or layer.kind is Kind.NONE:
            continue
        if layer.role == Role.MTP and not (spec_on and _is_mtp_method(request.speculative_method)):
            skipped_mtp += 1
            continue
        if layer.role == Role.DRAFT and not (spec_on or only_draft):
            skipped_draft += 1
            continue
        if layer.role == Role.ENCODER and layer.kind is not Kind.CROSS:
            skipped_encoder += 1
            continue
        out.append(layer)
    if skipped_mtp:
        notes.append(f"{skipped_mtp} MTP layer(s) not cached: speculative decoding with an MTP "
                     "method is off")
    if skipped_draft:
        notes.append(f"{skipped_draft} draft layer(s) not cached: speculative decoding is off")
    if skipped_encoder:
        notes.append(f"{skipped_encoder} encoder layer(s) cache nothing (run once per request)")
    return out, notes


def _window(layer: LayerCache) -> tuple[str, int]:
    if layer.kind is Kind.SLIDING:
        return "ring", int(getattr(layer, "window"))  # noqa: B009 - kind guarantees the field
    return "chunk", int(getattr(layer, "chunk"))  # noqa: B009


def _range_text(indices: Iterable[int]) -> str:
    idx = sorted(indices)
    if not idx:
        return "-"
    return f"{idx[0]}" if len(idx) == 1 else f"{idx[0]}..{idx[-1]} ({len(idx)} layers)"


def native_layout(
    layers: Sequence[LayerCache],
    request: PlanRequest,
    *,
    max_model_len: int,
    block_size: int | None = None,
    paged_windows: frozenset[str] = frozenset(),
) -> NativeLayout:
    """Entry classes for one stage's (already TP-split) layers.

    ``paged_windows`` names window classes (``"ring:4096"``) to page with the full-attention
    layers instead of keeping as rings.
    """
    bs = block_size or request.block_size or DEFAULT_BLOCK_SIZE
    spec = request.num_speculative_tokens
    cached, notes = cached_layers(layers, request)
    paged_bpt = 0
    paged_idx: list[int] = []
    members: dict[str, list[tuple[int, str]]] = {}
    rings: dict[str, tuple[int, int, list[int]]] = {}  # name → (capacity, bytes/pos, layers)
    cross: dict[int, tuple[int, list[int]]] = {}  # encoder_len → (bytes/pos, layers)
    states: dict[str, tuple[int, list[int]]] = {}  # name → (bytes/request, layers)
    # Bytes are computed once per group of identical layers (a recurrent state's tensors are
    # rebuilt on each ask), then counted for each of its layers in model order.
    groups = group_layers(cached)
    group_of = [0] * len(cached)
    for number, group in enumerate(groups):
        for ordinal in group.ordinals:
            group_of[ordinal] = number
    per_token = [g.layer.bytes_per_token() for g in groups]
    per_request = [g.layer.bytes_per_request() for g in groups]
    for ordinal, layer in enumerate(cached):
        kind = layer.kind
        key = (layer.index, str(kind))
        bpt, bpr_layer = per_token[group_of[ordinal]], per_request[group_of[ordinal]]
        if kind in RING_KINDS:
            prefix, window = _window(layer)
            name = f"{prefix}:{window}"
            if name in paged_windows:
                paged_bpt += bpt
                paged_idx.append(layer.index)
                members.setdefault(PAGED_CLASS, []).append(key)
            else:
                members.setdefault(name, []).append(key)
                capacity = min(window, max_model_len) + spec
                cap, bpp, idx = rings.get(name, (capacity, 0, []))
                idx.append(layer.index)
                rings[name] = (cap, bpp + bpt, idx)
        elif kind in PAGED_KINDS:
            paged_bpt += bpt
            paged_idx.append(layer.index)
            members.setdefault(PAGED_CLASS, []).append(key)
        elif kind is Kind.CROSS:
            enc = int(getattr(layer, "encoder_len"))  # noqa: B009
            bpp, idx = cross.get(enc, (0, []))
            idx.append(layer.index)
            cross[enc] = (bpp + bpt, idx)
            members.setdefault(f"cross:{enc}", []).append(key)
            continue
        elif isinstance(layer, RecurrentState) or kind is Kind.STATE:
            name = f"state:{getattr(layer, 'state_kind', 'state')}"
            bpr, idx = states.get(name, (0, []))
            idx.append(layer.index)
            states[name] = (bpr + bpr_layer, idx)
            members.setdefault(name, []).append(key)
            continue
        else:
            raise ValueError(
                f"native layout: layer {layer.index} has cache kind {kind!s} "
                f"({type(layer).__name__}) that no native class is defined for"
            )
        # Paged / ring layers may also keep fixed per-request state (a compressor ring).
        extra = bpr_layer
        if extra:
            name = f"aux:{kind!s}"
            bpr, idx = states.get(name, (0, []))
            states[name] = (bpr + extra, [*idx, layer.index])
            members.setdefault(name, []).append(key)
    classes: list[NativeClass] = []
    if paged_bpt:
        classes.append(NativeClass(
            PAGED_CLASS, "page", bs * paged_bpt, 0, tuple(paged_idx),
            f"one block of {bs} tokens × {paged_bpt:,} B/token over layers "
            f"{_range_text(paged_idx)}", tuple(members.get(PAGED_CLASS, ())),
        ))
    for name, (cap, bpp, idx) in sorted(rings.items()):
        classes.append(NativeClass(
            name, "state", bpp, cap, tuple(idx),
            f"ring of min(window, max_model_len) + {spec} speculative = {cap} positions × "
            f"{bpp:,} B/position over layers {_range_text(idx)}", tuple(members.get(name, ())),
        ))
    for enc, (bpp, idx) in sorted(cross.items()):
        name = "cross" if len(cross) == 1 else f"cross:{enc}"
        classes.append(NativeClass(
            name, "state", bpp, enc, tuple(idx),
            f"{enc} encoder positions × {bpp:,} B/position over layers {_range_text(idx)}",
            tuple(members.get(f"cross:{enc}", ())),
        ))
    for name, (bpr, idx) in sorted(states.items()):
        classes.append(NativeClass(
            name, "state", bpr, 1 + spec, tuple(idx),
            f"1 committed + {spec} rollback state(s) × {bpr:,} B over layers "
            f"{_range_text(idx)}", tuple(members.get(name, ())),
        ))
    for name in sorted(paged_windows):
        notes.append(f"{name} layers paged with the full-attention layers: at this budget a "
                     "per-request ring would hold fewer tokens")
    return NativeLayout(bs, tuple(classes), tuple(notes), paged_windows)


@record(frozen=True)
class NativePlan:
    """One stage's native plan. ``max_num_seqs`` is the number of sequences whose STATE floors
    are reserved (``state_slots``), at most the requested ``max_num_seqs``."""

    layout: NativeLayout
    pools: PoolPlan
    available_bytes: int
    max_model_len: int
    max_num_seqs: int
    requested_max_num_seqs: int
    local_classes: tuple[SubPoolSpec, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    @property
    def block_size(self) -> int:
        return self.layout.block_size

    @property
    def num_blocks(self) -> int:
        return self.pools.paged_entries

    @property
    def has_pages(self) -> bool:
        return self.pools.paged_class is not None

    @property
    def has_state(self) -> bool:
        return any(n != self.pools.paged_class for n in self.pools.entries)

    def blocks_per_request(self, context: int) -> int:
        return ceil_div(context, self.block_size)

    def page_concurrency(self, context: int) -> float:
        """Requests of ``context`` tokens the pages alone hold (vLLM's blocks ÷ blocks per
        request; unbounded without a paged class)."""
        if not self.has_pages:
            return math.inf
        return self.num_blocks / self.blocks_per_request(context)

    def concurrency_at(self, context: int) -> float:
        """Requests of ``context`` tokens that can run: pages bound them, and so do the
        reserved STATE slots (``max_num_seqs``)."""
        return min(float(self.max_num_seqs), self.page_concurrency(context))

    @property
    def max_concurrency(self) -> float:
        return self.concurrency_at(self.max_model_len)

    @property
    def kv_cache_tokens(self) -> int:
        """vLLM's definition ("GPU KV cache size"): requests of ``max_model_len`` the pages
        hold × ``max_model_len``; with no paged class, the reserved slots × ``max_model_len``."""
        if not self.has_pages:
            return self.max_num_seqs * self.max_model_len
        return int(self.page_concurrency(self.max_model_len) * self.max_model_len)

    def with_paged_entries(self, count: int) -> NativePlan:
        return records.replace(self, pools=self.pools.with_paged_entries(count))


def _plan_one(
    layout: NativeLayout,
    available_bytes: int,
    slots: int,
    requested: int,
    max_model_len: int,
    local: Sequence[ModelLocalInput],
    already_charged: Iterable[str],
) -> NativePlan:
    bridged = model_local_to_pool_specs(local, max_num_seqs=slots,
                                        already_charged=already_charged)
    specs = [*layout.specs(), *bridged.specs]
    pools = plan_pools(specs, available_bytes, slots, already_charged=bridged.already_charged)
    return NativePlan(layout, pools, available_bytes, max_model_len, slots, requested,
                      tuple(bridged.specs), layout.warnings)


def _key(plan: NativePlan) -> tuple[int, float, int]:
    """Most tokens (vLLM's definition), then most concurrency, then most slots."""
    return (plan.kv_cache_tokens, plan.max_concurrency, plan.max_num_seqs)


def _best_slots(attempt: Callable[[int], NativePlan | None], requested: int) -> NativePlan | None:
    """STATE slots: the most sequences (≤ ``requested``) that can all run at max_model_len.

    ``min(s, pages(s) / blocks_per_request)`` rises with ``s`` until the pages no longer hold
    ``s`` requests, then falls (each slot's floor takes pages away): bisect for the largest
    ``s`` whose pages still hold ``s`` full-length requests.
    """
    top = attempt(requested)
    if top is not None and (not top.has_state or requested <= top.page_concurrency(
            top.max_model_len)):
        return top  # every requested slot can run at max_model_len: nothing to trade

    def crossing(s: int) -> bool:
        plan = attempt(s)
        return plan is not None and s <= plan.page_concurrency(plan.max_model_len)

    if not crossing(1):
        return attempt(1)  # one slot; it may not even hold one full-length request
    lo, hi = 1, requested  # crossing(lo) holds; crossing(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if crossing(mid):
            lo = mid
        else:
            hi = mid
    # lo + 1 slots cannot host one more full-length request (pages(lo + 1) hold fewer than
    # lo + 1), and its floor costs every request pages: lo is the answer.
    return attempt(lo)


def plan_native(
    layers: Sequence[LayerCache],
    request: PlanRequest,
    available_bytes: int,
    *,
    max_model_len: int,
    model_local_specs: Sequence[ModelLocalInput] = (),
    model_local_already_charged: Iterable[str] = (),
    fit_state_slots: bool = True,
) -> NativePlan:
    """Plan one stage: each ring/paged choice for its window classes, and the STATE slots.

    STATE slots: with ``fit_state_slots`` (the default), floors are reserved for the most
    sequences that can all run at ``max_model_len`` — at most ``max_num_seqs``. A slot beyond
    that could only serve shorter requests, and its floor would take pages from the requests
    that do run; the trade-off (fewer concurrent *short* requests) is reported as a warning.
    ``fit_state_slots=False`` reserves for ``max_num_seqs`` exactly, as the seed engine did.
    """
    if isinstance(max_model_len, bool) or not isinstance(max_model_len, int) or max_model_len < 1:
        raise ValueError(f"max_model_len must be a positive int, got {max_model_len!r}")
    charged = tuple(model_local_already_charged)
    requested = request.max_num_seqs
    base = native_layout(layers, request, max_model_len=max_model_len)
    windows = sorted(base.ring_names)
    best: NativePlan | None = None
    # The last failure is the all-paged layout: the smallest floor, the one a fix hint needs.
    last_error: InsufficientPoolBudget | None = None
    for r in range(len(windows) + 1):
        for paged in itertools.combinations(windows, r):
            layout = base if not paged else native_layout(
                layers, request, max_model_len=max_model_len, paged_windows=frozenset(paged))

            def attempt(slots: int, layout: NativeLayout = layout) -> NativePlan | None:
                nonlocal last_error
                try:
                    return _plan_one(layout, available_bytes, slots, requested, max_model_len,
                                     model_local_specs, charged)
                except InsufficientPoolBudget as exc:
                    if slots == requested:
                        last_error = exc
                    return None

            plan = _best_slots(attempt, requested) if fit_state_slots else attempt(requested)
            if plan is None:
                continue
            if best is None or (*_key(plan), -r) > (*_key(best), -_paged_count(best)):
                best = plan
    if best is None:
        assert last_error is not None
        raise last_error
    notes = list(best.warnings)
    if best.max_num_seqs < requested:
        notes.append(
            f"STATE floors reserved for {best.max_num_seqs} sequences, not max_num_seqs="
            f"{requested}: only {best.max_num_seqs} requests of max_model_len={max_model_len} "
            "fit, and more slots would take their pages (shorter requests are limited to "
            f"{best.max_num_seqs} concurrent too)"
        )
    if not best.pools.entries:
        notes.append("nothing to cache: no layer of this stage holds KV or state")
    elif not best.has_pages:
        notes.append("no paged class: context is not bounded by KV memory; kv_cache_tokens "
                     f"reports the reserved slots × max_model_len ({best.max_num_seqs} × "
                     f"{max_model_len:,}), num_blocks is 0")
    return records.replace(best, warnings=tuple(notes))


def _paged_count(plan: NativePlan) -> int:
    """How many window classes this plan pages (ties prefer rings)."""
    return len(plan.layout.paged_windows)

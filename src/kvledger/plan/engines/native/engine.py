"""The native layout as the API sees it (``--engine native``): kvledger's byte-exact layout.

No engine runs this layout: it is the seeds' design, planned with no page padding, for people
who build engines (``kvledger.plan.engines.native.layout`` has the rules). Here: each pipeline
stage planned on
its budget, STATE slots and page counts reconciled across stages, the result as rows.

Model-local declarations are classes of its own pools (``pools_model_local``): a FIXED one a
FIXED class, a MAX_NUM_SEQS one a STATE class reserved for the stage's STATE slots — one ledger,
as the seeds intend. Each is planned on the stage of its owning module (``PlanRequest.
model_local_stages``, default the first).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kvledger import records
from kvledger.derive.kvdtype import SERVED_FLOAT32_NOTE, served_kv_dtype
from kvledger.derive.layers import Kind, LayerCache, Role, ceil_div
from kvledger.plan.engines.base import GpuBudgetInput, Layout, LayoutInput, LayoutPlan
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PoolRow, RankResult, group_summary

if TYPE_CHECKING:
    from kvledger.declare.pools import InsufficientPoolBudget
    from kvledger.derive.layers import LayerCache, ModelFacts
    from kvledger.plan.budget import Budget
    from kvledger.plan.engines.native.layout import NativePlan
    from kvledger.source.model_source import ModelSource


def _rows(plan: NativePlan) -> tuple[PoolRow, ...]:
    p = plan.pools
    order = sorted(p.entries, key=lambda n: (n != p.paged_class, n))
    return tuple(
        PoolRow(name, p.pools[name], p.entries[name], p.entry_bytes[name],
                p.entries_per_req.get(name, 0), p.reserved_bytes[name],
                p.sources.get(name, "engine"))
        for name in order
    )


def _attach_hint(exc: InsufficientPoolBudget, budget: Budget, request: PlanRequest) -> None:
    """Give the error the one fix that works, with numbers (the CLI prints ``exc.hint``)."""
    from kvledger.declare.hints import budget_fix_hint

    seqs = request.max_num_seqs
    if budget.total_bytes is not None and budget.gpu_memory_utilization is not None:
        hint = budget_fix_hint(
            exc, non_kv_bytes=budget.non_kv_bytes, total_bytes=budget.total_bytes,
            free_bytes=budget.total_bytes, gpu_memory_utilization=budget.gpu_memory_utilization,
            max_num_seqs=seqs,
        )
    else:
        per_seq = exc.reserved_bytes / seqs
        fit = max(0, math.ceil(exc.available_bytes / per_seq) - 1) if per_seq else seqs
        hint = (
            f"per-request state for {seqs} sequences needs {exc.reserved_bytes:,} B of the "
            f"{exc.available_bytes:,} B given; reduce max_num_seqs to at most {fit}, or give "
            f"kv_cache_memory_bytes > {exc.reserved_bytes:,}"
        )
    exc.hint = hint


def _one_request_bytes(layers: Sequence[LayerCache], request: PlanRequest,
                       max_model_len: int) -> int:
    """What one ``max_model_len`` request takes on a stage with every window kept as a ring:
    its pages (``ceil(max_model_len / block_size)`` blocks) plus one slot of every STATE class.
    """
    from kvledger.plan.engines.native.layout import native_layout

    layout = native_layout(layers, request, max_model_len=max_model_len)
    return sum(c.entry_bytes * (ceil_div(max_model_len, layout.block_size) if c.pool == "page"
                                else c.entries_per_req)
               for c in layout.classes)


def _attach_local_hint(
    exc: InsufficientPoolBudget, inp: LayoutInput, request: PlanRequest, *, stage: int,
    layers: Sequence[LayerCache], local: Sequence[object], charged: Sequence[str],
    max_model_len: int,
) -> bool:
    """When the stage's model-local classes leave no room for one request, the seed's
    three-way fix (fewer rows, shorter capacity, more memory: ``declare.hints.
    model_local_fix_hint``) replaces the ``max_num_seqs`` hint, which cannot shrink a FIXED
    row count. False (nothing attached) when the declarations are not the cause: without them
    one request would fit, so the floors of too many sequences are (``_attach_hint``)."""
    from kvledger.declare.hints import model_local_fix_hint
    from kvledger.declare.model_local import ModelLocalKVSpec

    specs = [item[1] if isinstance(item, tuple) else item for item in local]
    paid = [s for s in specs if isinstance(s, ModelLocalKVSpec) and s.name not in charged]
    seqs = request.max_num_seqs
    local_bytes = sum(s.peak_bytes(seqs) for s in paid)
    budget_bytes = inp.stage_budgets[stage]
    needed = _one_request_bytes(layers, request, max_model_len)
    if not local_bytes or local_bytes + needed <= budget_bytes:
        return False
    budget = inp.budget
    exc.hint = model_local_fix_hint(
        [(s.name, str(s.rows), s.row_count(seqs), s.bytes_per_row) for s in paid],
        local_bytes=local_bytes, budget_bytes=budget_bytes, needed_bytes=needed,
        max_num_seqs=seqs, total_bytes=budget.total_bytes,
        gpu_memory_utilization=budget.gpu_memory_utilization,
    )
    return True


def _plan_stages(
    inp: LayoutInput, request: PlanRequest, max_model_len: int
) -> tuple[list[RankResult], dict[tuple[int, str], str], list[str], list[NativePlan]]:
    from kvledger.declare.pools import InsufficientPoolBudget
    from kvledger.plan.engines.native.layout import cached_layers, plan_native
    from kvledger.plan.parallel import reconcile_min, split_stages

    facts = inp.facts
    tp, pp = request.tensor_parallel_size, request.pipeline_parallel_size
    stages = split_stages(facts.layers, tp, pp)
    charged = set(request.model_local_already_charged)

    def local_on(stage: int) -> tuple[list[object], list[str]]:
        items = [item for item in inp.model_local
                 if request.stage_of((item[1] if isinstance(item, tuple) else item).name)
                 == stage]
        names = {(i[1] if isinstance(i, tuple) else i).name for i in items}
        return items, sorted(charged & names)

    def plan_all(req: PlanRequest, fit_slots: bool) -> list[NativePlan]:
        out = []
        for stage in stages:
            local, stage_charged = local_on(stage.index)
            try:
                out.append(plan_native(
                    stage.layers, req, inp.stage_budgets[stage.index],
                    max_model_len=max_model_len, model_local_specs=local,  # type: ignore[arg-type]
                    model_local_already_charged=stage_charged, fit_state_slots=fit_slots,
                ))
            except InsufficientPoolBudget as exc:
                if not _attach_local_hint(exc, inp, req, stage=stage.index,
                                          layers=stage.layers, local=local,
                                          charged=stage_charged, max_model_len=max_model_len):
                    _attach_hint(exc, inp.budget, req)
                raise
        return out

    plans = plan_all(request, True)
    # Every stage serves the same sequences: STATE slots reconcile to the fewest, and stages
    # that sized for more are planned again at that count (their spare floors become pages).
    slots = [p.max_num_seqs for p in plans if p.has_state]
    if pp > 1 and slots and len(set(slots)) > 1:
        fewest_slots = min(slots)
        again = plan_all(records.replace(request, max_num_seqs=fewest_slots), False)
        plans = [records.replace(p, requested_max_num_seqs=request.max_num_seqs)
                 for p in again]
    paged = [p.num_blocks for p in plans if p.has_pages]
    if paged and pp > 1:
        fewest = reconcile_min(paged)
        plans = [p.with_paged_entries(fewest) if p.has_pages else p for p in plans]
    classes: dict[tuple[int, str], str] = {}
    ranks: list[RankResult] = []
    warnings: list[str] = []
    for stage, plan in zip(stages, plans, strict=True):
        cached, _ = cached_layers(stage.layers, request)
        for cls in plan.layout.classes:
            for key in cls.members:
                classes.setdefault(key, cls.name)
        ranks.append(RankResult(
            stage.index, stage.layer_range, len(cached), plan.block_size, plan.num_blocks,
            plan.kv_cache_tokens, plan.max_concurrency, plan.available_bytes,
            plan.pools.total_reserved_bytes, _rows(plan), plan.warnings,
        ))
        prefix = f"stage {stage.index}: " if pp > 1 else ""
        warnings.extend(prefix + w for w in plan.warnings)
    return ranks, classes, warnings, plans


def _capacity_warnings(plans: list[NativePlan], max_model_len: int) -> list[str]:
    """Say so, with the numbers, when a stage holds no ``max_model_len`` request (issue 10:
    such plans printed ``num_blocks: 0`` and exit 0 with no word). An engine would refuse to
    start there (vLLM does); the native layout is not an engine, so it warns."""
    out: list[str] = []
    for k, plan in enumerate(plans):
        if not plan.pools.entries or not plan.has_pages:
            continue  # nothing cached; or rings only (native.py says so)
        where = f"stage {k}: " if len(plans) > 1 else ""
        page = plan.pools.entry_bytes[plan.pools.paged_class or ""]
        need = plan.blocks_per_request(max_model_len)
        if plan.num_blocks == 0:
            out.append(f"{where}0 blocks: the {plan.available_bytes:,} B budget holds no "
                       f"{page:,} B page; one {max_model_len:,}-token request needs {need:,} "
                       "(an engine would not start)")
        elif plan.concurrency_at(max_model_len) < 1:
            out.append(f"{where}no {max_model_len:,}-token request fits: {plan.num_blocks:,} "
                       f"blocks of {plan.block_size} tokens ({plan.kv_cache_tokens:,} tokens), "
                       f"one request needs {need:,} blocks (an engine would not start)")
    return out


def _not_pooled(layer: LayerCache, classes: dict[tuple[int, str], str]) -> str:
    """Why a layer that holds cache of its own is in no pool class ("" when it is in one): the
    native layout pools MTP and draft layers only when speculating with them."""
    if not layer.owns_memory or layer.kind is Kind.NONE or \
            (layer.index, str(layer.kind)) in classes:
        return ""
    if layer.role is Role.MTP:
        return "MTP layer: cached only with an MTP speculative method"
    if layer.role is Role.DRAFT:
        return "draft layer: cached only when speculating with its draft"
    return "in no pool class"


class NativeEngine(Layout):
    """kvledger's byte-exact layout (``kvledger.plan.engines.native.layout``)."""

    pools_model_local = True

    # No engine runs the native layout, so no engine states its budget: it plans on vLLM's
    # profiling budget (``kvledger.plan.budget.gpu_budget``: int(total × utilization) −
    # weights − activation peak − CUDA graphs − non-torch), the one engine-measured formula
    # kvledger reproduces to the byte, so a native plan and a vLLM plan of the same launch
    # differ only in how the KV bytes are laid out. Its default utilization is vLLM's too:
    # ``CacheConfig.gpu_memory_utilization`` = 0.92 (vllm/config/cache.py).
    DEFAULT_UTILIZATION = 0.92

    def default_utilization(self, request: PlanRequest) -> tuple[float, str]:
        """(the utilization a request that gives none plans with, whose default it is)."""
        return self.DEFAULT_UTILIZATION, "vLLM's default"

    def gpu_budget(self, inp: GpuBudgetInput) -> Budget:
        """vLLM's profiling budget at the native layout's default utilization (the class
        comment says why)."""
        from kvledger.plan.budget import Reserves, gpu_budget

        req = inp.request
        util = req.gpu_memory_utilization
        default, whose = self.default_utilization(req)
        return gpu_budget(
            inp.preset,
            gpu_memory_utilization=default if util is None else util,
            weights=inp.weights, request=req, cfg=inp.text_config,
            model_dtype=inp.facts.model_dtype,
            reserves=Reserves(req.activation_peak_bytes, req.cuda_graph_bytes,
                              req.non_torch_bytes),
            total_bytes=req.gpu_total_bytes,
            utilization_default=whose if util is None else None,
        )

    def derive(self, source: ModelSource, request: PlanRequest) -> ModelFacts:
        """As the default, except that a float32 checkpoint is served in bfloat16, as vLLM
        does (ModelConfig dtype "auto"), so its KV is bfloat16 too."""
        facts = super().derive(source, request)
        if served_kv_dtype(facts.kv_dtype, facts.kv_dtype_source, request.kv_cache_dtype):
            from kvledger.derive import derive_model
            from kvledger.derive.facts_cache import facts_for

            def served_in_bf16(source: ModelSource) -> ModelFacts:
                facts = derive_model(source, kv_cache_dtype="bfloat16")
                return records.replace(facts, notes=(*facts.notes, SERVED_FLOAT32_NOTE))

            facts = facts_for(source, "bfloat16", served_in_bf16, variant="native bf16")
        return facts

    def plan(self, inp: LayoutInput) -> LayoutPlan:
        request = inp.request
        ranks, classes, warnings, plans = _plan_stages(inp, request, inp.max_model_len)
        paged_ranks = [r for r, p in zip(ranks, plans, strict=True) if p.has_pages]
        # A stage that caches nothing (an EAGLE3 draft's first stage) bounds nothing.
        active = [r for r, p in zip(ranks, plans, strict=True) if p.pools.entries] or ranks
        live = [p for p in plans if p.pools.entries]
        slots = min(p.max_num_seqs for p in live) if live else request.max_num_seqs
        notes = [n for n in inp.facts.notes if n == SERVED_FLOAT32_NOTE]
        notes.extend(_capacity_warnings(plans, inp.max_model_len))
        return LayoutPlan(
            ranks=tuple(ranks),
            block_size=ranks[0].block_size,
            num_blocks=min((r.num_blocks for r in paged_ranks), default=0),
            kv_cache_tokens=min(r.kv_cache_tokens for r in active),
            max_concurrency=min(r.max_concurrency for r in active),
            max_model_len=inp.max_model_len,
            kv_cache_dtype=inp.facts.kv_dtype,
            layers=tuple(group_summary(inp.facts.groups, request.tensor_parallel_size, classes,
                                       lambda layer: _not_pooled(layer, classes))),
            warnings=(*warnings, *notes),
            answers={"state_slots": slots},
            model_local_seqs=slots,
        )

    def concurrency_at(self, inp: LayoutInput, context: int) -> float:
        from kvledger.declare.pools import InsufficientPoolBudget

        again = records.replace(inp.request, max_model_len=context)
        try:
            _, _, _, replanned = _plan_stages(inp, again, context)
        except InsufficientPoolBudget:
            return 0.0
        live = [p for p in replanned if p.pools.entries] or replanned
        return min(p.concurrency_at(context) for p in live)

"""The library calls behind ``kvledger plan`` and ``kvledger fit``.

``plan_model(model, request, *, gpu=None, ...) -> PlanResult`` joins derive (per-layer facts),
the budget (given, or a GPU preset minus weights and reserves), the chosen layout (native or
vLLM-exact) with tensor/pipeline/data parallelism, and the answers. ``fit_model(...)`` searches
tensor × pipeline sizes on one GPU type for the smallest that holds a workload.

Errors are exceptions that carry their numbers: ``InsufficientPoolBudget`` (with a ``hint``
attribute: the three-way fix of the seeds' engine, or its given-budget equivalent),
``BudgetTooSmall`` (every budget line), ``ValueError`` naming the option, and derive's
``UnsupportedArchitecture`` / ``ConfigError``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kvledger.derive import derive_model
from kvledger.derive.layers import ModelFacts, Role
from kvledger.derive.source import ModelSource, load_source
from kvledger.plan.budget import Budget, Reserves, given_budget
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PlanResult, PoolRow, RankResult, layer_summary
from kvledger.plan.speculative import check_speculation

# Each engine's layout, the GPU presets, the weights, the pool planner's error, the stage split
# and the answers are imported where they are used, so `kvledger plan … --engine vllm
# --kv-cache-memory-bytes N` loads neither the native layout nor the budget machinery (CLI
# start-up time is a stated target).
if TYPE_CHECKING:
    from kvledger.declare.pools import InsufficientPoolBudget
    from kvledger.plan.native import ModelLocalInput, NativePlan

DEFAULT_GPU_MEMORY_UTILIZATION = 0.9  # vLLM's default


# -- inputs ------------------------------------------------------------------------------------


def load_facts(model: Any, request: PlanRequest) -> tuple[ModelFacts, ModelSource | None]:
    if isinstance(model, ModelFacts):
        return model, None
    source = load_source(model)
    dtype = None if request.kv_cache_dtype == "auto" else request.kv_cache_dtype
    facts = derive_model(source, kv_cache_dtype=dtype)
    if request.engine == "native" and dtype is None and facts.kv_dtype == "float32" and \
            facts.kv_dtype_source not in ("quantization_config", "hf_quant_config"):
        # The native engine serves a float32 checkpoint in bfloat16, as vLLM does
        # (ModelConfig dtype "auto"), so its KV is bfloat16 too.
        facts = derive_model(source, kv_cache_dtype="bfloat16")
        facts = dataclasses.replace(facts, notes=(
            *facts.notes, "float32 checkpoint served in bfloat16: KV cache in bfloat16"))
    return facts, source


def _max_model_len(facts: ModelFacts, request: PlanRequest) -> int:
    if request.max_model_len is not None:
        return request.max_model_len
    if facts.max_position_embeddings:
        return facts.max_position_embeddings
    raise ValueError(
        f"{facts.model}: the config states no max_position_embeddings; pass max_model_len"
    )


def _budget(
    facts: ModelFacts,
    source: ModelSource | None,
    request: PlanRequest,
    gpu: str | None,
    gpu_memory_utilization: float | None,
    reserves: Reserves | None,
    total_memory_bytes: int | None,
) -> tuple[Budget, list[str]]:
    notes: list[str] = []
    if request.kv_cache_memory_bytes is not None:
        if gpu is not None:
            notes.append(f"kv_cache_memory_bytes given: the {gpu} budget (weights, reserves, "
                         "utilization) is not computed")
        return given_budget(request.kv_cache_memory_bytes), notes
    if gpu is None:
        raise ValueError("no memory budget: pass kv_cache_memory_bytes, or a gpu preset")
    from kvledger.derive.config import Config
    from kvledger.plan.budget import gpu_budget
    from kvledger.plan.gpus import gpu_preset
    from kvledger.plan.weights import model_weights

    preset = gpu_preset(gpu)
    text = Config(facts.config, model=facts.model).text().raw
    weights = model_weights(
        text,
        model_dtype=facts.model_dtype,
        directory=source.directory if source is not None else None,
        hf_quant=source.hf_quant_config if source is not None else None,
        tensor_parallel_size=request.tensor_parallel_size,
        pipeline_parallel_size=request.pipeline_parallel_size,
    )
    util = DEFAULT_GPU_MEMORY_UTILIZATION if gpu_memory_utilization is None \
        else gpu_memory_utilization
    budget = gpu_budget(preset, gpu_memory_utilization=util, weights=weights, request=request,
                        cfg=text, model_dtype=facts.model_dtype, reserves=reserves,
                        total_bytes=total_memory_bytes)
    if weights.basis != "exact":
        notes.append("weights estimated from the config's parameter count; a local model "
                     "directory with safetensors makes them exact")
    return budget, notes


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
    exc.hint = hint  # type: ignore[attr-defined]


# -- native ------------------------------------------------------------------------------------


def _rows(plan: NativePlan) -> tuple[PoolRow, ...]:
    p = plan.pools
    order = sorted(p.entries, key=lambda n: (n != p.paged_class, n))
    return tuple(
        PoolRow(name, "page" if name == p.paged_class else
                ("fixed" if name.startswith("local:") and p.entries_per_req.get(name, 0) == 0
                 else "state"),
                p.entries[name], p.entry_bytes[name], p.entries_per_req.get(name, 0),
                p.reserved_bytes[name], p.sources.get(name, "engine"))
        for name in order
    )


def _plan_native(
    facts: ModelFacts,
    request: PlanRequest,
    budget: Budget,
    max_model_len: int,
    local: Sequence[ModelLocalInput],
    charged: Iterable[str],
) -> tuple[list[RankResult], dict[tuple[int, str], str], list[str], list[NativePlan]]:
    from kvledger.declare.pools import InsufficientPoolBudget
    from kvledger.plan.native import cached_layers, plan_native
    from kvledger.plan.parallel import reconcile_min, split_stages

    tp, pp = request.tensor_parallel_size, request.pipeline_parallel_size
    stages = split_stages(facts.layers, tp, pp)

    def plan_all(req: PlanRequest, fit_slots: bool) -> list[NativePlan]:
        out = []
        for stage in stages:
            try:
                out.append(plan_native(
                    stage.layers, req, budget.available_bytes, max_model_len=max_model_len,
                    model_local_specs=local if stage.index == 0 else (),
                    model_local_already_charged=charged if stage.index == 0 else (),
                    fit_state_slots=fit_slots,
                ))
            except InsufficientPoolBudget as exc:
                _attach_hint(exc, budget, req)
                raise
        return out

    plans = plan_all(request, True)
    # Every stage serves the same sequences: STATE slots reconcile to the fewest, and stages
    # that sized for more are planned again at that count (their spare floors become pages).
    slots = [p.max_num_seqs for p in plans if p.has_state]
    if pp > 1 and slots and len(set(slots)) > 1:
        fewest_slots = min(slots)
        again = plan_all(dataclasses.replace(request, max_num_seqs=fewest_slots), False)
        plans = [dataclasses.replace(p, requested_max_num_seqs=request.max_num_seqs)
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


# -- vllm --------------------------------------------------------------------------------------


def _plan_vllm(
    facts: ModelFacts, request: PlanRequest, budget: Budget
) -> tuple[list[RankResult], Any]:
    from kvledger.plan.vllm import plan_vllm  # the vLLM layout is only imported when asked for

    plan = plan_vllm(facts, request, budget.available_bytes)
    stage_plans = list(plan.stages) or [plan]
    pp = request.pipeline_parallel_size
    decoder = [layer for layer in facts.layers if layer.role == Role.DECODER]
    ranges = [(0, len(decoder))]
    if pp > 1:
        from kvledger.plan.parallel import split_stages

        ranges = [s.layer_range for s in split_stages(decoder, 1, pp)]
    ranks = []
    for k, sp in enumerate(stage_plans):
        rows = tuple(PoolRow(**row) for row in sp.pools())
        ranks.append(RankResult(
            k, ranges[k], sum(g.num_layers for g in sp.groups), sp.block_size, sp.num_blocks,
            sp.kv_cache_tokens, sp.max_concurrency, sp.available_bytes, sp.reserved_bytes,
            rows, tuple(sp.warnings), sp.vllm_refuses_to_start,
        ))
    return ranks, plan


# -- the entry points --------------------------------------------------------------------------


def plan_model(
    model: Any,
    request: PlanRequest | None = None,
    *,
    gpu: str | None = None,
    gpu_memory_utilization: float | None = None,
    reserves: Reserves | None = None,
    total_memory_bytes: int | None = None,
    concurrency: int | None = None,
    model_local_specs: Sequence[ModelLocalInput] = (),
    model_local_already_charged: Iterable[str] = (),
) -> PlanResult:
    """Plan ``model`` (catalog id, config path, model directory, dict, or ``ModelFacts``).

    The budget is ``request.kv_cache_memory_bytes`` when set, else ``gpu`` ×
    ``gpu_memory_utilization`` (default 0.9) − weights − ``reserves`` (documented estimates
    when not given). ``concurrency`` adds the answer "max context at N concurrent requests".
    ``model_local_specs`` are model-local declarations (protocol A) planned in the same ledger,
    on the first pipeline stage; ``model_local_already_charged`` names those the engine's
    profiling already paid for.
    """
    request = request or PlanRequest()
    facts, source = load_facts(model, request)
    spec_warnings = check_speculation(facts, request)
    if request.engine == "sglang":
        if model_local_specs:
            raise ValueError("model-local declarations are planned by the native engine only")
        from kvledger.plan.sglang.engine import plan_result  # imported only when asked for

        return plan_result(facts, source, request, gpu=gpu,
                           gpu_memory_utilization=gpu_memory_utilization, reserves=reserves,
                           total_memory_bytes=total_memory_bytes, concurrency=concurrency,
                           warnings=tuple(spec_warnings))
    budget, notes = _budget(facts, source, request, gpu, gpu_memory_utilization, reserves,
                            total_memory_bytes)
    max_len = _max_model_len(facts, request)
    tp, pp, dp = (request.tensor_parallel_size, request.pipeline_parallel_size,
                  request.data_parallel_size)
    split = [layer.split(tp) if tp > 1 else layer for layer in facts.layers]
    warnings = [*notes, *spec_warnings]
    refuses: bool | None = None
    answers: dict[str, Any] = {}
    local = tuple(model_local_specs)
    if request.engine == "native":
        from kvledger.declare.pools import InsufficientPoolBudget

        charged = tuple(model_local_already_charged)
        ranks, classes, stage_warnings, plans = _plan_native(
            facts, request, budget, max_len, local, charged)
        warnings.extend(stage_warnings)
        head = ranks[0]
        paged_ranks = [r for r, p in zip(ranks, plans, strict=True) if p.has_pages]
        # A stage that caches nothing (an EAGLE3 draft's first stage) bounds nothing.
        active = [r for r, p in zip(ranks, plans, strict=True) if p.pools.entries] or ranks
        num_blocks = min((r.num_blocks for r in paged_ranks), default=0)
        block_size = head.block_size
        tokens = min(r.kv_cache_tokens for r in active)
        concurrency_now = min(r.max_concurrency for r in active)
        layers = layer_summary(split, classes)

        answers["state_slots"] = min(p.max_num_seqs for p in plans if p.pools.entries) \
            if any(p.pools.entries for p in plans) else request.max_num_seqs

        def concurrency_at(context: int) -> float:
            again = dataclasses.replace(request, max_model_len=context)
            try:
                _, _, _, replanned = _plan_native(facts, again, budget, context, local, charged)
            except InsufficientPoolBudget:
                return 0.0
            live = [p for p in replanned if p.pools.entries] or replanned
            return min(p.concurrency_at(context) for p in live)
    else:
        if local:
            raise ValueError("model-local declarations are planned by the native engine only")
        ranks, vplan = _plan_vllm(facts, request, budget)
        warnings.extend(vplan.warnings)
        num_blocks, block_size = vplan.num_blocks, vplan.block_size
        tokens, concurrency_now = vplan.kv_cache_tokens, vplan.max_concurrency
        max_len = vplan.max_model_len
        refuses = vplan.vllm_refuses_to_start
        layers = layer_summary(split)

        def concurrency_at(context: int) -> float:
            again = plan_vllm_again(facts, request, budget, context)
            return float(again)
    binding = max(ranks, key=lambda r: r.reserved_bytes)
    answers["max_concurrency_at_max_model_len"] = concurrency_now
    if concurrency is not None:
        from kvledger.plan.answers import max_context_at

        hi = max(max_len, facts.max_position_embeddings or 0)
        best = max_context_at(concurrency, concurrency_at, hi=hi)
        answers["concurrency"] = concurrency
        answers["max_context_at_concurrency"] = best
        if best == hi:
            answers["max_context_note"] = f"capped at {hi} (the longest context considered)"
        elif best is None:
            answers["max_context_note"] = (f"{concurrency} concurrent requests do not fit even "
                                           "at one token each")
    kv_dtype = facts.kv_dtype
    if request.engine == "vllm":
        kv_dtype = str(getattr(vplan.resolved, "kv_storage_dtype", kv_dtype))
    warnings.extend(n for n in facts.notes if n.startswith("float32 checkpoint served"))
    return PlanResult(
        model=facts.model, engine=request.engine, block_size=block_size, num_blocks=num_blocks,
        kv_cache_tokens=tokens, max_concurrency=concurrency_now, max_model_len=max_len,
        available_bytes=budget.available_bytes, reserved_bytes=binding.reserved_bytes,
        pools=binding.pools, layers=tuple(layers), warnings=tuple(dict.fromkeys(warnings)),
        budget=budget, ranks=tuple(ranks), tensor_parallel_size=tp, pipeline_parallel_size=pp,
        data_parallel_size=dp, max_num_seqs=request.max_num_seqs, kv_cache_dtype=kv_dtype,
        vllm_refuses_to_start=refuses, answers=answers,
    )


def plan_vllm_again(facts: ModelFacts, request: PlanRequest, budget: Budget, context: int) -> float:
    """vLLM's max concurrency if ``max_model_len`` were ``context`` (same budget)."""
    from kvledger.plan.vllm import plan_vllm

    again = dataclasses.replace(request, max_model_len=context)
    try:
        return float(plan_vllm(facts, again, budget.available_bytes).max_concurrency)
    except ValueError:
        return 0.0

"""``kvledger fit``: the first GPU layout of one GPU model that holds a load, in an operator's
order (``plan/fit_layouts.py``: TP inside a node, PP across nodes, DP × EP when asked).

Each candidate is an ordinary ``plan_model`` call; this module only walks the candidates and
says why each one did or did not hold, and what the chosen one asks of the operator (nodes,
PP inside a node, DP ranks: ``FitResult.caveats``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvledger import records
from kvledger.derive.layers import Role
from kvledger.plan.answers import PP_SIZES, TP_SIZES
from kvledger.plan.api import load_facts, plan_model
from kvledger.plan.budget import BudgetTooSmall, Reserves
from kvledger.plan.fit_layouts import DP_SIZES, GPUS_PER_NODE, Candidate, fit_layouts
from kvledger.plan.request import PlanRequest

if TYPE_CHECKING:
    from kvledger.derive.layers import ModelFacts
    from kvledger.plan.fit_result import FitResult


def fit_model(
    model: Any,
    request: PlanRequest | None = None,
    *,
    gpu: str | None = None,
    concurrency: int | None = None,
    context: int | None = None,
    gpu_memory_utilization: float | None = None,
    reserves: Reserves | None = None,
    tp_sizes: Sequence[int] = TP_SIZES,
    pp_sizes: Sequence[int] = PP_SIZES,
    gpus_per_node: int = GPUS_PER_NODE,
    max_gpus: int | None = None,
    expert_parallel: bool = False,
    dp_sizes: Sequence[int] = DP_SIZES,
    propose: bool = True,
) -> FitResult:
    """The first layout of ``gpu`` (``fit_layouts``' order) that holds ``concurrency``
    requests of ``context`` tokens.

    ``gpu``, ``concurrency`` and ``context`` default to the request's ``gpu``,
    ``concurrency`` and ``max_model_len`` (the same request ``plan_model`` takes); the other
    keywords are shorthands for request fields too. Each candidate is planned with
    ``max_model_len = context`` and ``max_num_seqs`` = its share of ``concurrency`` (all of
    it; with D data-parallel ranks, ⌈concurrency / D⌉ each: every DP rank is its own engine),
    on the GPU budget (``kv_cache_memory_bytes`` in ``request`` is ignored: the GPU is the
    question). It holds when every rank's max concurrency at ``context`` reaches its share
    and the engine would start. ``expert_parallel``: also try ``dp_sizes`` DP ranks × EP
    (a MoE model only). ``max_gpus`` caps the layouts; TP stays inside a node of
    ``gpus_per_node`` GPUs. ``propose``: also weigh an fp8 KV cache on fewer GPUs and DP
    replicas of a dense model (``plan/fit_trades.py``), each labelled with what it trades.
    """
    from kvledger.plan.fit_result import FitResult
    from kvledger.plan.gpus import gpu_preset

    request = request or PlanRequest()
    gpu = gpu if gpu is not None else request.gpu
    concurrency = concurrency if concurrency is not None else request.concurrency
    context = context if context is not None else request.max_model_len
    if gpu is None or concurrency is None or context is None:
        missing = [n for n, v in (("gpu", gpu), ("concurrency", concurrency),
                                  ("context", context)) if v is None]
        raise ValueError(f"fit needs {', '.join(missing)} (arguments or request fields)")
    for name, value in (("gpus_per_node", gpus_per_node), ("max_gpus", max_gpus)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    preset = gpu_preset(gpu)
    facts, source = load_facts(model, request)
    if expert_parallel:
        _check_moe(facts)
    decoder = len(facts.by_role(Role.DECODER))
    # An engine that will not pipeline this model (vLLM: no SupportsPP) gets no PP layout.
    from kvledger.plan.engines.base import get_layout

    no_pp = get_layout(request.engine, request.engine_release).pipeline_parallel_refusal(facts) \
        if any(pp > 1 for pp in pp_sizes) else ""
    if no_pp:
        pp_sizes = (1,)
    candidates = fit_layouts(decoder, tp_sizes, pp_sizes, gpus_per_node=gpus_per_node,
                             max_gpus=max_gpus, dp_sizes=dp_sizes if expert_parallel else ())
    attempts = []
    chosen_plan = None
    for layout in candidates:
        attempt, plan, candidate = _try(layout, source if source is not None else facts,
                                        request, preset.name, concurrency, context,
                                        gpus_per_node, gpu_memory_utilization, reserves)
        attempts.append(attempt)
        if plan is not None:
            chosen_plan = (attempt, plan, candidate)
            break
    alternatives: tuple[Any, ...] = ()
    if propose:
        alternatives = _alternatives(
            model, facts, request, preset, concurrency, context, chosen_plan,
            source if source is not None else facts, tp_sizes=tp_sizes, pp_sizes=pp_sizes,
            gpus_per_node=gpus_per_node, max_gpus=max_gpus, expert_parallel=expert_parallel,
            gpu_memory_utilization=gpu_memory_utilization, reserves=reserves)
    if chosen_plan is not None:
        attempt, plan, candidate = chosen_plan
        return FitResult(facts.model, preset.name, request.engine, concurrency, context,
                         tuple(attempts), plan, gpus_per_node=gpus_per_node,
                         max_gpus=max_gpus, request=candidate,
                         caveats=_caveats(attempt, gpus_per_node, concurrency,
                                          expert_parallel, pp_fixed=len(pp_sizes) == 1),
                         alternatives=alternatives)
    most = f"{max_gpus} GPUs" if max_gpus is not None else \
        f"{max(tp_sizes)} TP × {max(pp_sizes)} PP"
    reason = (f"no layout up to {most} of {preset.name} holds {concurrency} requests of "
              f"{context} tokens")
    if not candidates:
        reason = (f"no layout to try: TP sizes {', '.join(map(str, tp_sizes))} within "
                  f"--gpus-per-node {gpus_per_node}"
                  + (f" and --max-gpus {max_gpus}" if max_gpus is not None else ""))
    if no_pp:
        reason += f"; pipeline parallelism not tried: {no_pp}"
    return FitResult(facts.model, preset.name, request.engine, concurrency, context,
                     tuple(attempts), None, reason, gpus_per_node=gpus_per_node,
                     max_gpus=max_gpus, alternatives=alternatives)


def _alternatives(model: Any, facts: ModelFacts, request: PlanRequest, preset: Any,
                  concurrency: int, context: int, chosen: Any, planned_model: Any, *,
                  tp_sizes: Sequence[int], pp_sizes: Sequence[int], gpus_per_node: int,
                  max_gpus: int | None, expert_parallel: bool,
                  gpu_memory_utilization: float | None,
                  reserves: Reserves | None) -> tuple[Any, ...]:
    """The proposals of ``plan/fit_trades.py``: an fp8 KV cache on fewer GPUs than the chosen
    layout (or on any, when nothing fits), and DP replicas of a dense model on the chosen
    layout's GPUs."""
    from kvledger.plan.fit_trades import (
        computes_fp8,
        dp_alternative,
        fp8_alternative,
        is_eight_bits,
    )

    out: list[Any] = []
    attempt, plan = (chosen[0], chosen[1]) if chosen is not None else (None, None)
    kv_dtype = plan.kv_cache_dtype if plan is not None else request.kv_cache_dtype
    if computes_fp8(preset.compute_capability) and not is_eight_bits(kv_dtype) \
            and not is_eight_bits(request.kv_cache_dtype):
        limit = attempt.gpus - 1 if attempt is not None else max_gpus
        if limit is None or limit >= 1:
            try:
                fp8 = fit_model(model, records.replace(request, kv_cache_dtype="fp8"),
                                gpu=preset.name, concurrency=concurrency, context=context,
                                gpu_memory_utilization=gpu_memory_utilization,
                                reserves=reserves, tp_sizes=tp_sizes, pp_sizes=pp_sizes,
                                gpus_per_node=gpus_per_node, max_gpus=limit,
                                expert_parallel=expert_parallel, propose=False)
            except ValueError:  # the model or engine takes no fp8 cache: nothing to propose
                fp8 = None
            if fp8 is not None and fp8.chosen is not None:
                out.append(fp8_alternative(fp8.chosen))
    if attempt is not None and attempt.data_parallel_size == 1 and \
            attempt.pipeline_parallel_size == 1 and attempt.tensor_parallel_size > 1 and \
            not _routed_experts(facts):
        from kvledger.plan.fit_layouts import Candidate

        tp = attempt.tensor_parallel_size
        for smaller in sorted(t for t in tp_sizes if t < tp and tp % t == 0):
            layout = Candidate(smaller, 1, tp // smaller)
            tried, replica, _ = _try(layout, planned_model, request, preset.name, concurrency,
                                     context, gpus_per_node, gpu_memory_utilization, reserves)
            if replica is not None:
                out.append(dp_alternative(tried, replica.kv_cache_dtype))
                break
    return tuple(out)


def _routed_experts(facts: ModelFacts) -> int:
    from kvledger.plan.weights import WeightsError, parameter_counts

    try:
        return int(parameter_counts(facts.language_config()).get("routed_experts", 0))
    except WeightsError:
        return 0


def _check_moe(facts: ModelFacts) -> None:
    from kvledger.plan.weights import WeightsError, parameter_counts

    try:
        experts = parameter_counts(facts.language_config()).get("routed_experts", 0)
    except WeightsError:
        experts = 0
    if not experts:
        raise ValueError(f"--enable-expert-parallel: {facts.model} has no routed experts to "
                         "split (expert parallelism applies to MoE models)")


def _try(layout: Candidate, model: Any, request: PlanRequest, gpu: str, concurrency: int,
         context: int, gpus_per_node: int, gpu_memory_utilization: float | None,
         reserves: Reserves | None) -> tuple[Any, Any, PlanRequest | None]:
    """(the attempt, the plan when it holds, the request planned)."""
    from kvledger.declare.pools import InsufficientPoolBudget
    from kvledger.plan.fit_result import FitAttempt

    tp, pp, dp = (layout.tensor_parallel_size, layout.pipeline_parallel_size,
                  layout.data_parallel_size)
    share = -(-concurrency // dp)  # each DP rank's engine admits its own max_num_seqs

    def attempt(fits: bool, conc: float | None, why: str) -> FitAttempt:
        return FitAttempt(tp, pp, fits, conc, why, data_parallel_size=dp,
                          enable_expert_parallel=layout.enable_expert_parallel,
                          nodes=layout.nodes(gpus_per_node))

    try:
        candidate = records.replace(
            request, kv_cache_memory_bytes=None, max_model_len=context, max_num_seqs=share,
            tensor_parallel_size=tp, pipeline_parallel_size=pp, data_parallel_size=dp,
            enable_expert_parallel=layout.enable_expert_parallel,
            # vLLM refuses fewer batched tokens than sequences (SchedulerConfig): N
            # concurrent requests need a step of at least N tokens.
            max_num_batched_tokens=max(request.max_num_batched_tokens, share),
            gpu=gpu, concurrency=None,
            # A declaration pinned to a stage this candidate does not have is on the last.
            model_local_stages=tuple((n, min(k, pp - 1)) for n, k in request.model_local_stages),
        )
        plan = plan_model(model, candidate, gpu_memory_utilization=gpu_memory_utilization,
                          reserves=reserves)
    except BudgetTooSmall as exc:
        return attempt(False, None, (
            f"weights and reserves leave {exc.available_bytes / (1 << 30):.2f} GiB per GPU "
            "for the KV cache")), None, None
    except (InsufficientPoolBudget, ValueError) as exc:
        return attempt(False, None, getattr(exc, "hint", "") or str(exc)), None, None
    holds = plan.max_concurrency >= share and not plan.refuses_to_start
    if plan.refuses_to_start or plan.max_concurrency < 1:
        # A request never spans DP ranks: ranks that cannot each hold one hold none together,
        # so the rank's fraction is not multiplied by the ranks.
        per = f"{plan.max_concurrency:.2f} of one"
        return attempt(False, plan.max_concurrency, (
            f"one request of {context} tokens does not fit a GPU's KV cache ({per}"
            + (", on each of the DP ranks" if dp > 1 else "") + "): the engine refuses to "
            "start")), None, None
    group = plan.max_concurrency * dp
    each = f" ({dp} DP ranks × {plan.max_concurrency:.2f})" if dp > 1 else ""
    why = (f"holds {group:.2f} requests of {context} tokens{each}" if holds else
           f"only {group:.2f} requests of {context} tokens fit{each}")
    return attempt(holds, group, why), (plan if holds else None), candidate


def _caveats(chosen: Any, gpus_per_node: int, concurrency: int, expert_parallel: bool, *,
             pp_fixed: bool) -> tuple[str, ...]:
    """What the chosen layout asks of the operator beyond one GPU's plan."""
    out: list[str] = []
    if chosen.nodes > 1:
        out.append(
            f"spans {chosen.nodes} nodes of {gpus_per_node} GPUs ({chosen.gpus} GPUs): a "
            "multi-node launch (vLLM: a Ray cluster over the nodes), its pipeline stages or "
            "DP ranks talking over the inter-node network; kvledger plans the memory of each "
            "GPU, not the network's speed")
    if chosen.nodes == 1 and chosen.pipeline_parallel_size > 1 and not pp_fixed:
        hint = "" if expert_parallel else \
            "; for a MoE model, --enable-expert-parallel also searches DP × EP layouts"
        out.append("pipeline parallelism inside one node: no tensor-parallel layout of one "
                   "node holds the load (vLLM's guidance: TP within a node, PP across nodes)"
                   + hint)
    if chosen.data_parallel_size > 1:
        share = -(-concurrency // chosen.data_parallel_size)
        out.append(f"{chosen.data_parallel_size} data-parallel ranks, each its own engine and "
                   f"KV cache with max_num_seqs {share}: the {concurrency} requests must be "
                   "spread over them (vLLM's DP load balancer does)")
    return tuple(out)

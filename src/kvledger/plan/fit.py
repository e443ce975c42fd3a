"""``kvledger fit``: the smallest tensor × pipeline layout of one GPU model that holds a load.

Each candidate is an ordinary ``plan_model`` call; this module only walks the candidates in
order of GPU count and says why each one did or did not hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvledger import records
from kvledger.derive.layers import Role
from kvledger.plan.answers import PP_SIZES, TP_SIZES
from kvledger.plan.api import load_facts, plan_model
from kvledger.plan.budget import BudgetTooSmall, Reserves
from kvledger.plan.request import PlanRequest

if TYPE_CHECKING:
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
) -> FitResult:
    """The smallest TP×PP of ``gpu`` that holds ``concurrency`` requests of ``context`` tokens.

    ``gpu``, ``concurrency`` and ``context`` default to the request's ``gpu``,
    ``concurrency`` and ``max_model_len`` (the same request ``plan_model`` takes); the other
    keywords are shorthands for request fields too. Each candidate is planned with
    ``max_model_len = context`` and ``max_num_seqs = concurrency`` (STATE floors and
    MAX_NUM_SEQS model-local rows for exactly the requests asked for), on the GPU budget
    (``kv_cache_memory_bytes`` in ``request`` is ignored: the GPU is the question). It holds
    when its max concurrency at ``context`` is at least ``concurrency`` and the engine would
    start.
    """
    from kvledger.declare.pools import InsufficientPoolBudget
    from kvledger.plan.answers import fit_candidates
    from kvledger.plan.engines.base import get_layout
    from kvledger.plan.fit_result import FitAttempt, FitResult
    from kvledger.plan.gpus import gpu_preset

    request = request or PlanRequest()
    gpu = gpu if gpu is not None else request.gpu
    concurrency = concurrency if concurrency is not None else request.concurrency
    context = context if context is not None else request.max_model_len
    if gpu is None or concurrency is None or context is None:
        missing = [n for n, v in (("gpu", gpu), ("concurrency", concurrency),
                                  ("context", context)) if v is None]
        raise ValueError(f"fit needs {', '.join(missing)} (arguments or request fields)")
    preset = gpu_preset(gpu)
    facts, source = load_facts(model, request)
    decoder = len(facts.by_role(Role.DECODER))
    # An engine that will not pipeline this model (vLLM: no SupportsPP) gets no PP layout.
    no_pp = get_layout(request.engine).pipeline_parallel_refusal(facts) \
        if any(pp > 1 for pp in pp_sizes) else ""
    if no_pp:
        pp_sizes = (1,)
    attempts: list[FitAttempt] = []
    for tp, pp in fit_candidates(decoder, tp_sizes, pp_sizes):
        try:
            candidate = records.replace(
                request, kv_cache_memory_bytes=None, max_model_len=context,
                max_num_seqs=concurrency, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                # vLLM refuses fewer batched tokens than sequences (SchedulerConfig): N
                # concurrent requests need a step of at least N tokens.
                max_num_batched_tokens=max(request.max_num_batched_tokens, concurrency),
                data_parallel_size=1, gpu=preset.name, concurrency=None,
                # A declaration pinned to a stage this candidate does not have is on the last.
                model_local_stages=tuple((n, min(k, pp - 1))
                                         for n, k in request.model_local_stages),
            )
            plan = plan_model(
                source if source is not None else facts, candidate,
                gpu_memory_utilization=gpu_memory_utilization, reserves=reserves,
            )
        except BudgetTooSmall as exc:
            attempts.append(FitAttempt(tp, pp, False, None, (
                f"weights and reserves leave {exc.available_bytes / (1 << 30):.2f} GiB per GPU "
                "for the KV cache")))
            continue
        except (InsufficientPoolBudget, ValueError) as exc:
            attempts.append(FitAttempt(tp, pp, False, None, getattr(exc, "hint", "") or str(exc)))
            continue
        holds = plan.max_concurrency >= concurrency and not plan.refuses_to_start
        why = (f"holds {plan.max_concurrency:.2f} requests of {context} tokens" if holds else
               f"only {plan.max_concurrency:.2f} requests of {context} tokens fit")
        attempts.append(FitAttempt(tp, pp, holds, plan.max_concurrency, why))
        if holds:
            return FitResult(facts.model, preset.name, request.engine, concurrency, context,
                             tuple(attempts), plan)
    reason = (f"no layout up to {max(tp_sizes)} TP × {max(pp_sizes)} PP of {preset.name} holds "
              f"{concurrency} requests of {context} tokens")
    if no_pp:
        reason += f"; pipeline parallelism not tried: {no_pp}"
    return FitResult(facts.model, preset.name, request.engine, concurrency, context,
                     tuple(attempts), None, reason)

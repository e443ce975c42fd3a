"""``kvledger fit``: the smallest tensor × pipeline layout of one GPU model that holds a load.

Each candidate is an ordinary ``plan_model`` call; this module only walks the candidates in
order of GPU count and says why each one did or did not hold.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvledger.derive.layers import Role
from kvledger.plan.api import load_facts, plan_model
from kvledger.plan.budget import BudgetTooSmall, Reserves
from kvledger.plan.request import PlanRequest

if TYPE_CHECKING:
    from kvledger.plan.fit_result import FitResult


def fit_model(
    model: Any,
    request: PlanRequest | None = None,
    *,
    gpu: str,
    concurrency: int,
    context: int,
    gpu_memory_utilization: float | None = None,
    reserves: Reserves | None = None,
    tp_sizes: Sequence[int] = (1, 2, 4, 8),
    pp_sizes: Sequence[int] = (1, 2, 4, 8, 16),
) -> FitResult:
    """The smallest TP×PP of ``gpu`` that holds ``concurrency`` requests of ``context`` tokens.

    Each candidate is planned with ``max_model_len = context`` and ``max_num_seqs =
    concurrency`` (STATE floors reserved for exactly the requests asked for), on the GPU
    budget (``kv_cache_memory_bytes`` in ``request`` is ignored: the GPU is the question).
    It holds when its max concurrency at ``context`` is at least ``concurrency`` and, for the
    vLLM engine, vLLM would start.
    """
    from kvledger.declare.pools import InsufficientPoolBudget
    from kvledger.plan.answers import fit_candidates
    from kvledger.plan.fit_result import FitAttempt, FitResult
    from kvledger.plan.gpus import gpu_preset

    request = request or PlanRequest()
    preset = gpu_preset(gpu)
    facts, source = load_facts(model, request)
    decoder = len(facts.by_role(Role.DECODER))
    attempts: list[FitAttempt] = []
    for tp, pp in fit_candidates(decoder, tp_sizes, pp_sizes):
        try:
            candidate = dataclasses.replace(
                request, kv_cache_memory_bytes=None, max_model_len=context,
                max_num_seqs=concurrency, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                data_parallel_size=1,
            )
            plan = plan_model(
                source if source is not None else facts, candidate, gpu=preset.name,
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
        holds = plan.max_concurrency >= concurrency and not plan.vllm_refuses_to_start
        why = (f"holds {plan.max_concurrency:.2f} requests of {context} tokens" if holds else
               f"only {plan.max_concurrency:.2f} requests of {context} tokens fit")
        attempts.append(FitAttempt(tp, pp, holds, plan.max_concurrency, why))
        if holds:
            return FitResult(facts.model, preset.name, request.engine, concurrency, context,
                             tuple(attempts), plan)
    reason = (f"no layout up to {max(tp_sizes)} TP × {max(pp_sizes)} PP of {preset.name} holds "
              f"{concurrency} requests of {context} tokens")
    return FitResult(facts.model, preset.name, request.engine, concurrency, context,
                     tuple(attempts), None, reason)

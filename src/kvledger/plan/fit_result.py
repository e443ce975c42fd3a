"""What ``fit_model`` returns: every layout tried, and the first that holds.

Kept apart from ``kvledger.plan.result`` so ``kvledger plan`` does not build these classes at
start-up; ``kvledger.plan.result`` still exports both names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvledger.records import record

if TYPE_CHECKING:
    from kvledger.plan.request import PlanRequest
    from kvledger.plan.result import PlanResult


@record(frozen=True)
class FitAttempt:
    tensor_parallel_size: int
    pipeline_parallel_size: int
    fits: bool
    max_concurrency: float | None  # over the whole layout (every DP rank's together)
    reason: str
    data_parallel_size: int = 1
    enable_expert_parallel: bool = False
    nodes: int = 1  # nodes of FitResult.gpus_per_node GPUs the layout fills

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.data_parallel_size

    def to_json(self) -> dict[str, Any]:
        return {
            "tensor_parallel_size": self.tensor_parallel_size,
            "pipeline_parallel_size": self.pipeline_parallel_size,
            "data_parallel_size": self.data_parallel_size,
            "enable_expert_parallel": self.enable_expert_parallel,
            "gpus": self.gpus,
            "nodes": self.nodes,
            "fits": self.fits,
            "max_concurrency": self.max_concurrency,
            "reason": self.reason,
        }


@record(frozen=True)
class FitAlternative:
    """A layout ``fit`` proposes beside its answer, and what it trades for it
    (``plan/fit_trades.py``)."""

    label: str  # "fp8 KV cache", "data-parallel replicas"
    trades: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    kv_cache_dtype: str
    gpus: int
    max_concurrency: float | None  # the whole layout's, as the attempt says it
    reason: str  # the attempt's words

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label, "trades": self.trades,
            "tensor_parallel_size": self.tensor_parallel_size,
            "pipeline_parallel_size": self.pipeline_parallel_size,
            "data_parallel_size": self.data_parallel_size,
            "kv_cache_dtype": self.kv_cache_dtype, "gpus": self.gpus,
            "max_concurrency": self.max_concurrency, "reason": self.reason,
        }


@record(frozen=True)
class FitResult:
    model: str
    gpu: str
    engine: str
    concurrency: int
    context: int
    attempts: tuple[FitAttempt, ...]
    plan: PlanResult | None  # one GPU of the first layout that holds it (per DP rank), or None
    reason: str = ""  # why nothing fits, when plan is None
    gpus_per_node: int = 8
    max_gpus: int | None = None
    # What the chosen layout asks of the operator: nodes, PP inside a node, DP ranks.
    caveats: tuple[str, ...] = ()
    # The request the chosen layout was planned with (its serve line is written from it).
    request: PlanRequest | None = None
    # Layouts proposed beside the answer, each with what it trades (plan/fit_trades.py).
    alternatives: tuple[FitAlternative, ...] = ()

    @property
    def fits(self) -> bool:
        return self.plan is not None

    @property
    def chosen(self) -> FitAttempt | None:
        return next((a for a in self.attempts if a.fits), None) if self.fits else None

    def to_json(self) -> dict[str, Any]:
        chosen = None
        picked = self.chosen
        if picked is not None:
            chosen = {
                "tensor_parallel_size": picked.tensor_parallel_size,
                "pipeline_parallel_size": picked.pipeline_parallel_size,
                "data_parallel_size": picked.data_parallel_size,
                "enable_expert_parallel": picked.enable_expert_parallel,
                "gpus": picked.gpus,
                "nodes": picked.nodes,
                "spans_nodes": picked.nodes > 1,
                "max_concurrency": picked.max_concurrency,
            }
        return {
            "model": self.model,
            "gpu": self.gpu,
            "engine": self.engine,
            "concurrency": self.concurrency,
            "context": self.context,
            "gpus_per_node": self.gpus_per_node,
            "max_gpus": self.max_gpus,
            "fits": self.fits,
            "chosen": chosen,
            "caveats": list(self.caveats),
            "reason": self.reason,
            "attempts": [a.to_json() for a in self.attempts],
            "plan": self.plan.to_json() if self.plan is not None else None,
            "alternatives": [a.to_json() for a in self.alternatives],
        }

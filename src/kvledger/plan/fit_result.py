"""What ``fit_model`` returns: every TP × PP layout tried, and the smallest that holds.

Kept apart from ``kvledger.plan.result`` so ``kvledger plan`` does not build these classes at
start-up; ``kvledger.plan.result`` still exports both names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvledger.records import record

if TYPE_CHECKING:
    from kvledger.plan.result import PlanResult


@record(frozen=True)
class FitAttempt:
    tensor_parallel_size: int
    pipeline_parallel_size: int
    fits: bool
    max_concurrency: float | None
    reason: str

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size

    def to_json(self) -> dict[str, Any]:
        return {
            "tensor_parallel_size": self.tensor_parallel_size,
            "pipeline_parallel_size": self.pipeline_parallel_size,
            "gpus": self.gpus,
            "fits": self.fits,
            "max_concurrency": self.max_concurrency,
            "reason": self.reason,
        }


@record(frozen=True)
class FitResult:
    model: str
    gpu: str
    engine: str
    concurrency: int
    context: int
    attempts: tuple[FitAttempt, ...]
    plan: PlanResult | None  # the smallest layout that holds it, or None
    reason: str = ""  # why nothing fits, when plan is None

    @property
    def fits(self) -> bool:
        return self.plan is not None

    def to_json(self) -> dict[str, Any]:
        chosen = None
        if self.plan is not None:
            chosen = {
                "tensor_parallel_size": self.plan.tensor_parallel_size,
                "pipeline_parallel_size": self.plan.pipeline_parallel_size,
                "gpus": self.plan.tensor_parallel_size * self.plan.pipeline_parallel_size,
            }
        return {
            "model": self.model,
            "gpu": self.gpu,
            "engine": self.engine,
            "concurrency": self.concurrency,
            "context": self.context,
            "fits": self.fits,
            "chosen": chosen,
            "reason": self.reason,
            "attempts": [a.to_json() for a in self.attempts],
            "plan": self.plan.to_json() if self.plan is not None else None,
        }

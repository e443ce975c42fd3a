"""Planning: layouts (native, vLLM-exact), budgets, parallelism, answers.

Names are exported lazily (PEP 562): ``import kvledger.plan.request`` — which the CLI does on
every start — must not pull in every layout, family and budget module.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

_EXPORTS: dict[str, str] = {
    "PlanRequest": "kvledger.plan.request",
    "plan_model": "kvledger.plan.api",
    "fit_model": "kvledger.plan.fit",
    "PlanResult": "kvledger.plan.result",
    "FitResult": "kvledger.plan.fit_result",
    "RankResult": "kvledger.plan.result",
    "PoolRow": "kvledger.plan.result",
    "plan_native": "kvledger.plan.engines.native.layout",
    "native_layout": "kvledger.plan.engines.native.layout",
    "NativePlan": "kvledger.plan.engines.native.layout",
    "Budget": "kvledger.plan.budget",
    "BudgetLine": "kvledger.plan.budget",
    "BudgetTooSmall": "kvledger.plan.budget",
    "Reserves": "kvledger.plan.budget",
    "given_budget": "kvledger.plan.budget",
    "gpu_budget": "kvledger.plan.budget",
    "GpuPreset": "kvledger.plan.gpus",
    "gpu_preset": "kvledger.plan.gpus",
    "gpu_names": "kvledger.plan.gpus",
    "model_weights": "kvledger.plan.weights",
    "pp_partition": "kvledger.plan.parallel",
    "split_stages": "kvledger.plan.parallel",
    "max_context_at": "kvledger.plan.answers",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kvledger.plan' has no attribute {name!r}")
    __import__(module)  # not importlib.import_module: importing importlib costs start-up
    value = getattr(sys.modules[module], name)
    globals()[name] = value
    return value

"""kvledger: every byte of attention-cache memory, declared, planned and checked.

The top level offers what a first script needs — ``plan_model`` and ``PlanRequest`` (planning,
``kvledger.plan``; ``plan_omni`` for a vLLM-Omni deployment), ``derive_model`` (per-layer
facts from a config, ``kvledger.derive``), the root of every error ``KvledgerError`` and the
budget's ``BudgetTooSmall`` — and the two seed protocols (``kvledger.declare``). Checking live
caches (torch) lives in ``kvledger.check``. Every name is imported on demand, so
``import kvledger`` stays light.
"""

from kvledger.version import __version__

# Not `from typing import TYPE_CHECKING`: typing alone costs ~15 ms at start-up here, and
# mypy honours a module-level constant of that name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from kvledger.declare import (
        PAGED_CLASS,
        HasModelLocalKV,
        InsufficientPoolBudget,
        KVDType,
        ModelLocalKVScope,
        ModelLocalKVSpec,
        ModelLocalPoolSpecs,
        Pool,
        PoolPlan,
        RowDriver,
        SubPoolSpec,
        budget_fix_hint,
        collect_model_local_kv_specs,
        fixed_pool,
        known_dtypes,
        merge_specs,
        model_local_to_pool_specs,
        page_pool,
        plan_pools,
        resolve_dtype,
        spec_from_hf_config,
        state_pool,
    )
    from kvledger.derive import derive_model
    from kvledger.errors import KvledgerError
    from kvledger.plan.api import plan_model
    from kvledger.plan.budget import BudgetTooSmall
    from kvledger.plan.omni import plan_omni
    from kvledger.plan.request import PlanRequest

__all__ = [
    "PAGED_CLASS",
    "BudgetTooSmall",
    "HasModelLocalKV",
    "InsufficientPoolBudget",
    "KVDType",
    "KvledgerError",
    "ModelLocalKVScope",
    "ModelLocalKVSpec",
    "ModelLocalPoolSpecs",
    "PlanRequest",
    "Pool",
    "PoolPlan",
    "RowDriver",
    "SubPoolSpec",
    "__version__",
    "budget_fix_hint",
    "collect_model_local_kv_specs",
    "derive_model",
    "fixed_pool",
    "known_dtypes",
    "merge_specs",
    "model_local_to_pool_specs",
    "page_pool",
    "plan_model",
    "plan_omni",
    "plan_pools",
    "resolve_dtype",
    "spec_from_hf_config",
    "state_pool",
]

# Loaded on first use (PEP 562), so `import kvledger` costs almost nothing and a CLI call that
# never touches a name never pays for it. Every public name but the version is such a name:
# the seed protocols come from kvledger.declare, the rest from the module named here.
_HOMES = {
    "BudgetTooSmall": "kvledger.plan.budget",
    "KvledgerError": "kvledger.errors",
    "PlanRequest": "kvledger.plan.request",
    "derive_model": "kvledger.derive",
    "plan_model": "kvledger.plan.api",
    "plan_omni": "kvledger.plan.omni",
}
_LAZY = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_HOMES.get(name, "kvledger.declare")), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kvledger' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])

"""kvledger: every byte of attention-cache memory, declared, planned and checked.

The top level offers the two seed protocols (see ``kvledger.declare``). Deriving facts from
configs lives in ``kvledger.derive``, planning in ``kvledger.plan``, and checking live caches
(torch) in ``kvledger.check`` — imported on demand so ``import kvledger`` stays light.
"""

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

__version__ = "0.1.0"

__all__ = [
    "PAGED_CLASS",
    "HasModelLocalKV",
    "InsufficientPoolBudget",
    "KVDType",
    "ModelLocalKVScope",
    "ModelLocalKVSpec",
    "ModelLocalPoolSpecs",
    "Pool",
    "PoolPlan",
    "RowDriver",
    "SubPoolSpec",
    "__version__",
    "budget_fix_hint",
    "collect_model_local_kv_specs",
    "fixed_pool",
    "known_dtypes",
    "merge_specs",
    "model_local_to_pool_specs",
    "page_pool",
    "plan_pools",
    "resolve_dtype",
    "spec_from_hf_config",
    "state_pool",
]

# Loaded on first use (PEP 562), so `import kvledger` costs almost nothing and a CLI call that
# never touches a name never pays for it. Every public name but the version is such a name.
_LAZY = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from kvledger import declare

        value = getattr(declare, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kvledger' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])

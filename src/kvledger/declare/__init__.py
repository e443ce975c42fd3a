"""The two seed protocols: model-local declarations (A) and byte-currency pools (B).

Names are loaded on first use (PEP 562), like ``kvledger`` and ``kvledger.plan``: importing
one submodule (``kvledger.declare.dtypes``, which every layer fact needs) runs this file, and
it must not pull in the pool planner, the bridge and the model-local protocol with it — the
vLLM layout of ``kvledger plan`` uses none of them (CLI start-up time is a stated target).
"""

# Not `from typing import TYPE_CHECKING`: see kvledger/__init__.py (mypy honours the constant).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from kvledger.declare.bridge import ModelLocalPoolSpecs, model_local_to_pool_specs
    from kvledger.declare.collect import collect_model_local_kv_specs, unwrap_model
    from kvledger.declare.dtypes import KVDType, known_dtypes, resolve_dtype
    from kvledger.declare.hints import budget_fix_hint
    from kvledger.declare.model_local import (
        HasModelLocalKV,
        ModelLocalKVScope,
        ModelLocalKVSpec,
        RowDriver,
        spec_from_hf_config,
    )
    from kvledger.declare.pools import (
        PAGED_CLASS,
        InsufficientPoolBudget,
        Pool,
        PoolPlan,
        SubPoolSpec,
        fixed_pool,
        merge_specs,
        page_pool,
        plan_pools,
        state_pool,
    )

# exported name → the submodule that defines it
_EXPORTS: dict[str, str] = {
    "ModelLocalPoolSpecs": "bridge",
    "model_local_to_pool_specs": "bridge",
    "collect_model_local_kv_specs": "collect",
    "unwrap_model": "collect",
    "KVDType": "dtypes",
    "known_dtypes": "dtypes",
    "resolve_dtype": "dtypes",
    "budget_fix_hint": "hints",
    "HasModelLocalKV": "model_local",
    "ModelLocalKVScope": "model_local",
    "ModelLocalKVSpec": "model_local",
    "RowDriver": "model_local",
    "spec_from_hf_config": "model_local",
    "PAGED_CLASS": "pools",
    "InsufficientPoolBudget": "pools",
    "Pool": "pools",
    "PoolPlan": "pools",
    "SubPoolSpec": "pools",
    "fixed_pool": "pools",
    "merge_specs": "pools",
    "page_pool": "pools",
    "plan_pools": "pools",
    "state_pool": "pools",
}
# Before names were lazy, `import kvledger.declare` bound every submodule as an attribute.
_SUBMODULES = frozenset({"bridge", "collect", "counts", "dtypes", "hints", "model_local", "pools"})


def __getattr__(name: str) -> object:
    import importlib

    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_SUBMODULES})


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
    "unwrap_model",
]

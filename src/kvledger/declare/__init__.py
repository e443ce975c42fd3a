"""The two seed protocols: model-local declarations (A) and byte-currency pools (B)."""

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

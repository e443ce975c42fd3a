"""`import kvledger` must stay light: no torch, no transformers, no rich."""

from __future__ import annotations

import subprocess
import sys


def test_import_pulls_no_heavy_modules() -> None:
    code = (
        "import sys, kvledger, kvledger.derive, kvledger.plan.request;"
        "heavy = [m for m in ('torch', 'transformers', 'rich', 'numpy') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_every_seed_name_importable_from_top_level() -> None:
    import kvledger

    for name in ("ModelLocalKVSpec", "RowDriver", "ModelLocalKVScope", "spec_from_hf_config",
                 "HasModelLocalKV", "collect_model_local_kv_specs", "Pool", "SubPoolSpec",
                 "PAGED_CLASS", "page_pool", "state_pool", "merge_specs", "PoolPlan",
                 "InsufficientPoolBudget", "plan_pools", "model_local_to_pool_specs"):
        assert hasattr(kvledger, name), name

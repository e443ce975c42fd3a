"""vLLM-Omni's own ``ModelLocalKVSpec`` / ``HasModelLocalKV`` objects (same field names as
seed A, its own classes) accepted without importing vllm-omni (``kvledger.declare.foreign``):
collected from a model tree, planned, and refused by name when they are not declarations.
Bytes are the seed's formula by hand (``tests/vllm_omni_shape.py`` states each)."""

from __future__ import annotations

import dataclasses

import pytest

import vllm_omni_shape as omni
from kvledger.declare.bridge import model_local_to_pool_specs
from kvledger.declare.collect import collect_model_local_kv_specs
from kvledger.declare.foreign import adopt_spec
from kvledger.declare.model_local import ModelLocalKVScope, ModelLocalKVSpec, RowDriver
from kvledger.plan.api import plan_model
from kvledger.plan.request import PlanRequest

LLAMA = "meta-llama/Meta-Llama-3.1-8B"  # a catalog id: runs offline


def test_a_vllm_omni_spec_becomes_kvledger_s() -> None:
    spec = adopt_spec(omni.talker_static_cache())
    assert isinstance(spec, ModelLocalKVSpec)
    assert (spec.dtype, spec.scope, spec.rows) == ("bfloat16", ModelLocalKVScope.MODEL,
                                                   RowDriver.FIXED)
    assert spec.bytes_per_row == 2 * 24 * 2 * 64 * 2048 * 2 == 25_165_824
    mimo = adopt_spec(omni.local_transformer())
    assert mimo.peak_bytes(8) == 8 * 2 * 4 * 8 * 64 * 16 * 2 == 1_048_576


def test_the_seed_s_checks_run_again() -> None:
    bad = dataclasses.replace(omni.talker_static_cache(), rows_reason=" ")
    with pytest.raises(ValueError, match="rows_reason"):
        adopt_spec(bad)
    with pytest.raises(TypeError, match="has no name, layers"):
        adopt_spec(object())


def test_collected_from_a_model_tree() -> None:
    found = collect_model_local_kv_specs(omni.build())
    assert [(path, s.name, s.peak_bytes(4)) for path, s in found] == [
        ("talker", "talker_static_cache", 25_165_824),
        ("mimo.local", "local_transformer", 4 * 131_072)]


def test_planned_inside_the_budget() -> None:
    specs = tuple(collect_model_local_kv_specs(omni.build()))
    plain = plan_model(LLAMA, PlanRequest(gpu="H100-80GB", max_model_len=8192, max_num_seqs=4))
    plan = plan_model(LLAMA, PlanRequest(gpu="H100-80GB", max_model_len=8192, max_num_seqs=4,
                                         model_local_kv=specs))
    # 25,165,824 + 4 rows × 131,072 = 25,690,112 B off the KV budget.
    assert plain.available_bytes - plan.available_bytes == 25_690_112
    # A bare foreign spec (no owner path) is taken too.
    bare = PlanRequest(model_local_kv=(omni.local_transformer(),))
    assert isinstance(bare.model_local_kv[0], ModelLocalKVSpec)
    with pytest.raises(TypeError, match="model_local_kv items"):
        PlanRequest(model_local_kv=("not a spec",))


def test_the_bridge_takes_them() -> None:
    pools = model_local_to_pool_specs([omni.talker_static_cache(), omni.local_transformer()],
                                      max_num_seqs=2)
    assert [p.name for p in pools] == ["local:talker_static_cache", "local:local_transformer"]

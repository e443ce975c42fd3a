"""plan_model / fit_model: the machine interface, the issue's acceptance, errors with numbers."""

from __future__ import annotations

import json

import pytest

from kvledger.declare.pools import InsufficientPoolBudget
from kvledger.plan.api import plan_model
from kvledger.plan.budget import BudgetTooSmall
from kvledger.plan.request import PlanRequest

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
KEYS = {"model", "engine", "block_size", "num_blocks", "kv_cache_tokens", "max_concurrency",
        "max_model_len", "available_bytes", "reserved_bytes", "pools", "layers", "warnings",
        "budget"}
POOL_KEYS = {"name", "pool", "entries", "entry_bytes", "entries_per_req", "reserved_bytes"}


def test_issue_acceptance_vllm_engine() -> None:
    # 32 layers × 2 × 8 × 128 × 2 B = 131,072 B/token; × 16 = 2 MiB per block;
    # 10 GiB / 2 MiB = 5,120 blocks = 81,920 tokens; 81,920 / 32,768 = 2.5.
    pytest.importorskip("kvledger.plan.engines.vllm")  # the vLLM layout (written in parallel)
    result = plan_model(LLAMA, PlanRequest(engine="vllm==0.33",
                                           kv_cache_memory_bytes=10737418240,
                                           max_model_len=32768))
    data = result.to_json()
    assert (data["num_blocks"], data["kv_cache_tokens"], data["max_concurrency"]) == \
        (5120, 81920, 2.5)
    assert data["vllm_refuses_to_start"] is False
    assert set(data) >= KEYS
    json.dumps(data)  # plain JSON


def test_machine_interface_keys_native() -> None:
    data = plan_model(LLAMA, PlanRequest(engine="native", kv_cache_memory_bytes=10737418240,
                                         max_model_len=32768)).to_json()
    assert set(data) >= KEYS
    assert "vllm_refuses_to_start" not in data and "ranks" not in data
    assert data["engine"] == "native" and data["block_size"] == 16
    assert (data["num_blocks"], data["kv_cache_tokens"], data["max_concurrency"]) == \
        (5120, 81920, 2.5)
    assert data["available_bytes"] == 10737418240
    assert data["reserved_bytes"] == 5120 * 2097152
    assert all(set(p) >= POOL_KEYS for p in data["pools"])
    assert data["layers"] == [{
        "kind": "full", "role": "decoder", "bytes_per_token": 4096, "bytes_per_request": 0,
        "dtype": "bfloat16", "class": "kv", "first": 0, "last": 31, "count": 32,
    }]
    assert data["budget"] == [{"key": "kv_budget",
                               "label": "KV cache memory (kv_cache_memory_bytes)",
                               "bytes": 10737418240, "basis": "given"}]


def test_gpu_budget_lines_in_json() -> None:
    data = plan_model(LLAMA, PlanRequest(engine="vllm==0.33", max_model_len=8192),
                      gpu="H100-80GB").to_json()
    labels = [line["label"] for line in data["budget"]]
    assert labels[0].startswith("GPU memory (H100-80GB")
    assert labels[-1] == "= KV cache budget per GPU"
    assert data["available_bytes"] == data["budget"][-1]["bytes"]
    assert any(line["basis"] == "estimated" for line in data["budget"])


def test_no_budget_is_an_error() -> None:
    with pytest.raises(ValueError, match="no memory budget"):
        plan_model(LLAMA, PlanRequest())


def test_weights_larger_than_gpu_is_budget_too_small() -> None:
    with pytest.raises(BudgetTooSmall):
        plan_model("meta-llama/Meta-Llama-3.1-70B", PlanRequest(max_model_len=8192), gpu="L4")


def test_insufficient_state_budget_carries_numbers_and_hint() -> None:
    # Whisper-tiny native, seed semantics is not needed here: even one request's cross K/V
    # (1,500 × 4 layers × 2 × 6 heads × 64 × 2 B = 9,216,000 B) exceeds a 1 MiB budget.
    with pytest.raises(InsufficientPoolBudget) as info:
        plan_model("openai/whisper-tiny", PlanRequest(engine="native",
                                                      kv_cache_memory_bytes=1 << 20,
                                                      max_model_len=448))
    exc = info.value
    assert exc.available_bytes == 1 << 20
    assert exc.reserved_bytes >= 9_216_000
    assert "max_num_seqs" in exc.hint  # type: ignore[attr-defined]


def test_model_local_in_the_native_ledger() -> None:
    from kvledger.declare.model_local import ModelLocalKVScope, ModelLocalKVSpec, RowDriver

    spec = ModelLocalKVSpec(name="talker", layers=24, kv_heads=2, head_dim=64, dtype="bfloat16",
                            physical_capacity_positions=2048, capacity_source="StaticCache 2048",
                            scope=ModelLocalKVScope.MODEL, rows=RowDriver.FIXED, rows_fixed=1,
                            rows_reason="calls are serialized")
    # SEEDS reference: 24 × 2 × 64 × 2048 × 2 (K, V) × 2 B = 25,165,824 B, FIXED once.
    result = plan_model(LLAMA, PlanRequest(engine="native", kv_cache_memory_bytes=1 << 30,
                                           max_model_len=8192),
                        model_local_specs=[spec])
    pools = {p.name: p for p in result.pools}
    assert pools["local:talker"].reserved_bytes == 25_165_824
    assert pools["local:talker"].pool == "fixed"
    # pages: (1,073,741,824 − 25,165,824) // 2,097,152 = 500
    assert pools["kv"].entries == 500
    (row,) = result.to_json()["model_local_kv"]
    assert (row["status"], row["peak_bytes"], row["stage"]) == ("pooled", 25_165_824, 0)


def test_fit_json_shape() -> None:
    from kvledger.plan.fit import fit_model

    data = fit_model(LLAMA, PlanRequest(), gpu="H100-80GB", concurrency=4,
                     context=8192).to_json()
    assert data["fits"] is True
    assert data["chosen"] == {"tensor_parallel_size": 1, "pipeline_parallel_size": 1,
                              "data_parallel_size": 1, "enable_expert_parallel": False,
                              "gpus": 1, "nodes": 1, "spans_nodes": False,
                              "max_concurrency": data["attempts"][0]["max_concurrency"]}
    assert data["caveats"] == [] and data["gpus_per_node"] == 8
    assert data["plan"]["max_model_len"] == 8192
    json.dumps(data)


def test_total_alone_is_a_budget() -> None:
    result = plan_model(LLAMA, PlanRequest(max_model_len=8192, gpu_total_bytes=80 << 30))
    data = result.to_json()
    assert data["budget"][0]["bytes"] == 85_899_345_920  # 80 × 2**30, as given
    assert any("assumed SM90" in w for w in data["warnings"])

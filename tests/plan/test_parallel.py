"""Tensor / pipeline / data parallelism: vLLM's stage split, per-stage pools, reconciliation."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kvledger.derive.layers import FullAttention, ModelFacts, RecurrentState, Role, StateTensor
from kvledger.plan.api import plan_model
from kvledger.plan.parallel import pp_partition, reconcile_min, split_stages
from kvledger.plan.request import PlanRequest
from kvledger.records import record

MIB = 1 << 20


def full(i: int, heads: int = 8, role: Role = Role.DECODER) -> FullAttention:
    return FullAttention(index=i, role=role, k_heads=heads, k_dim=128, v_heads=heads, v_dim=128)


@pytest.mark.parametrize(
    ("layers", "pp", "expected"),
    [
        # vLLM get_pp_indices: even split; the remainder goes one each to the stages before
        # the last, from the second-to-last backwards.
        (32, 2, [(0, 16), (16, 32)]),
        (20, 3, [(0, 7), (7, 14), (14, 20)]),  # 6,6,6 + 2 → stages -2, -3
        (61, 4, [(0, 15), (15, 30), (30, 46), (46, 61)]),  # 15 × 4 + 1 → stage -2
        (7, 4, [(0, 2), (2, 4), (4, 6), (6, 7)]),  # 1 × 4 + 3 → stages -2, -3, -4
    ],
)
def test_pp_partition_matches_vllm(layers: int, pp: int, expected: list[tuple[int, int]]) -> None:
    assert pp_partition(layers, pp) == expected


def test_pp_larger_than_layers_fails() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        pp_partition(2, 4)


def test_tp_splits_heads_and_replicates_below_tp() -> None:
    stages = split_stages([full(0, heads=8), full(1, heads=2)], 4, 1)
    heads = [layer.k_heads for layer in stages[0].layers]  # type: ignore[attr-defined]
    # 8 heads / 4 = 2 per rank; 2 heads < 4 ranks → replicated, 1 per rank.
    assert heads == [2, 1]


def test_mtp_goes_to_last_stage_and_shared_index_stays_together() -> None:
    layers = [full(0), full(1), full(2), full(3), full(4, role=Role.MTP)]
    stages = split_stages(layers, 1, 2)
    assert [layer.index for layer in stages[0].layers] == [0, 1]
    assert [layer.index for layer in stages[1].layers] == [2, 3, 4]


def test_reconcile_min() -> None:
    assert reconcile_min([5, 3, 9]) == 3
    assert reconcile_min([]) == 0


def test_tp2_pp2_plan_shows_per_stage_pools() -> None:
    # Llama-3.1-8B, TP 2, PP 2, 4 GiB per GPU, max_model_len 8,192.
    # Per rank: 8 KV heads / 2 = 4; 2 × 4 × 128 × 2 B = 2,048 B per token per layer;
    # 16 layers per stage → 32,768 B/token; block 16 → 524,288 B per entry.
    # 4 GiB / 524,288 = 8,192 blocks on each stage; reconciled minimum 8,192.
    result = plan_model("meta-llama/Meta-Llama-3.1-8B", PlanRequest(
        engine="native", kv_cache_memory_bytes=4 << 30, max_model_len=8192, tensor_parallel_size=2,
        pipeline_parallel_size=2))
    data = result.to_json()
    assert [r["layers_range"] for r in data["ranks"]] == [[0, 16], [16, 32]]
    for rank in data["ranks"]:
        assert rank["pools"] == [{"name": "kv", "pool": "page", "entries": 8192,
                                  "entry_bytes": 524288, "entries_per_req": 0,
                                  "reserved_bytes": 4 << 30, "source": "engine"}]
    assert data["num_blocks"] == 8192
    # 8,192 blocks / (8,192 / 16 = 512 per request) = 16 requests; totals over DP 1.
    assert data["max_concurrency"] == 16.0
    assert data["totals"]["gpus"] == 4


def test_uneven_stages_reconcile_to_minimum() -> None:
    # Llama-3.1-8B has 32 layers; PP 3: 32 // 3 = 10, remainder 2 → stages -2 and -3 get one
    # more: [11, 11, 10]. Entry bytes per stage (TP 1): layers × 4,096 × 16.
    # 1 GiB / (11 × 65,536) = 1,489 blocks; 1 GiB / (10 × 65,536) = 1,638 → all use 1,489.
    result = plan_model("meta-llama/Meta-Llama-3.1-8B", PlanRequest(
        engine="native", kv_cache_memory_bytes=1 << 30, max_model_len=8192,
        pipeline_parallel_size=3))
    ranks = result.to_json()["ranks"]
    assert [r["layers_range"] for r in ranks] == [[0, 11], [11, 22], [22, 32]]
    assert [r["num_blocks"] for r in ranks] == [1489, 1489, 1489]
    assert ranks[2]["pools"][0]["entry_bytes"] == 10 * 65536


def test_dp_multiplies_totals_not_per_gpu() -> None:
    one = plan_model("meta-llama/Meta-Llama-3.1-8B", PlanRequest(
        engine="native", kv_cache_memory_bytes=1 << 30, max_model_len=8192))
    four = plan_model("meta-llama/Meta-Llama-3.1-8B", PlanRequest(
        engine="native", kv_cache_memory_bytes=1 << 30, max_model_len=8192, data_parallel_size=4))
    assert four.num_blocks == one.num_blocks
    totals = four.to_json()["totals"]
    assert totals["replicas"] == 4 and totals["kv_cache_tokens"] == 4 * one.kv_cache_tokens


@record(frozen=True, kw_only=True)
class FakeState(RecurrentState):
    state_kind = "fake"
    numel: int = 1

    def tensors(self) -> Sequence[StateTensor]:
        return (StateTensor("ssm", (self.numel,), "float32"),)


def test_pp_stages_share_state_slots_then_pages() -> None:
    # Stage 0: a 100 MiB state (25 Mi fp32) + 1 full layer (64 KiB per 16-token block);
    # stage 1: a 50 MiB state + 1 full layer. 1 GiB per GPU, L = 4,096 (256 blocks/request).
    # Stage 0 alone: s ≤ (1,024 − 100 s) / 16 ⇔ s ≤ 8.8 → 8 slots, (1,024 − 800) MiB / 64 KiB
    # = 3,584 blocks. Stage 1 alone: s ≤ (1,024 − 50 s) / 16 ⇔ s ≤ 15.5 → 15 slots.
    # Both serve the same sequences: 8 slots; stage 1 at 8 slots: (1,024 − 400) MiB / 64 KiB
    # = 9,984 blocks; pages reconcile to the minimum, 3,584 → 3,584 / 256 = 14 ≥ 8 → 8 run.
    layers = (FakeState(index=0, numel=25 * MIB), full(1),
              FakeState(index=2, numel=25 * MIB // 2), full(3))
    facts = ModelFacts(model="hand", model_type="hand", architectures=(), layers=layers,
                       model_dtype="bfloat16", kv_dtype="bfloat16", kv_dtype_source="config",
                       max_position_embeddings=4096)
    result = plan_model(facts, PlanRequest(engine="native", kv_cache_memory_bytes=1 << 30,
                                           pipeline_parallel_size=2))
    ranks = result.to_json()["ranks"]
    assert [{p["name"]: p["entries"] for p in r["pools"]} for r in ranks] == [
        {"kv": 3584, "state:fake": 8}, {"kv": 3584, "state:fake": 8}]
    assert result.max_concurrency == 8.0
    assert result.answers["state_slots"] == 8

"""Issue 15: model-local declarations (seed A) inside the engine's own budget.

Expected bytes are the seed's formula worked by hand; block counts are ``available //
bytes per block`` by hand (vLLM ``get_kv_cache_config_from_groups``). Where an absolute number
depends on kvledger's estimates (weights, activation peak), the test asserts the *difference*
the declarations make, which is exact.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvledger import records
from kvledger.declare.model_local import ModelLocalKVScope, ModelLocalKVSpec, RowDriver
from kvledger.declare.pools import InsufficientPoolBudget
from kvledger.plan.api import plan_model
from kvledger.plan.model_local import ModelLocalBudgetError
from kvledger.plan.request import PlanRequest

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
# The seed's reference: Ming talker StaticCache bf16, 24 layers × 2 heads × 64 dims × 2,048
# positions × 2 (K, V) × 2 B = 25,165,824 B per row.
TALKER_ROW = 24 * 2 * 64 * 2048 * 2 * 2
# Llama-3.1-8B under vLLM: 16 tokens × 32 layers × 2 × 8 heads × 128 × 2 B = 2,097,152 B/block.
LLAMA_BLOCK = 16 * 32 * 2 * 8 * 128 * 2


def talker(rows: RowDriver = RowDriver.FIXED, positions: int = 2048, **kw: Any
           ) -> ModelLocalKVSpec:
    return ModelLocalKVSpec(
        name="talker", layers=24, kv_heads=2, head_dim=64, dtype="bfloat16",
        physical_capacity_positions=positions,
        capacity_source=f"StaticCache(max_cache_len={positions})",
        scope=ModelLocalKVScope.MODEL, rows=rows,
        rows_reason="calls are serialized" if rows is RowDriver.FIXED else "", **kw)


H100 = PlanRequest(engine="vllm==0.33", gpu="H100-80GB", max_model_len=32768)


def test_acceptance_fixed_talker_on_h100_vllm() -> None:
    assert TALKER_ROW == 25_165_824 and LLAMA_BLOCK == 2_097_152
    plain = plan_model(LLAMA, H100)
    with_talker = plan_model(LLAMA, records.replace(H100, model_local_kv=(talker(),)))
    assert with_talker.engine == "vllm"
    assert plain.available_bytes - with_talker.available_bytes == 25_165_824
    assert plain.num_blocks == plain.available_bytes // 2_097_152
    assert with_talker.num_blocks == with_talker.available_bytes // 2_097_152
    line = with_talker.budget.line("model_local_kv")
    assert line is not None and (line.bytes, line.basis) == (25_165_824, "declared")
    kv = with_talker.budget.line("kv_budget")
    assert kv is not None and kv.bytes == with_talker.available_bytes
    (row,) = with_talker.to_json()["model_local_kv"]
    assert row == {
        "name": "talker", "owner": None, "rows": "fixed", "row_count": 1,
        "bytes_per_row": 25_165_824, "peak_bytes": 25_165_824, "status": "subtracted",
        "stage": 0, "scope": "model", "capacity_positions": 2048,
        "capacity_source": "StaticCache(max_cache_len=2048)",
    }


def test_acceptance_max_num_seqs_rows_at_eight_sequences() -> None:
    request = records.replace(H100, max_num_seqs=8)
    plain = plan_model(LLAMA, request)
    per_seq = plan_model(LLAMA, records.replace(
        request, model_local_kv=(talker(RowDriver.MAX_NUM_SEQS),)))
    # 8 rows × 25,165,824 B = 201,326,592 B.
    assert plain.available_bytes - per_seq.available_bytes == 8 * 25_165_824 == 201_326_592
    assert per_seq.num_blocks == per_seq.available_bytes // 2_097_152
    assert per_seq.model_local_kv[0].row_count == 8


def test_fixed_rows_do_not_scale_with_max_num_seqs() -> None:
    a = plan_model(LLAMA, records.replace(H100, max_num_seqs=8, model_local_kv=(talker(),)))
    b = plan_model(LLAMA, records.replace(H100, max_num_seqs=8))
    assert b.available_bytes - a.available_bytes == 25_165_824


def test_already_charged_is_listed_not_subtracted() -> None:
    plain = plan_model(LLAMA, H100)
    charged = plan_model(LLAMA, records.replace(
        H100, model_local_kv=(talker(),), model_local_already_charged=("talker",)))
    assert charged.available_bytes == plain.available_bytes
    assert charged.num_blocks == plain.num_blocks
    assert charged.model_local_kv[0].status == "charged"
    line = charged.budget.line("model_local_kv")
    assert line is not None and line.bytes == 0 and "25,165,824 B already charged" in line.label


def test_given_pool_keeps_declarations_beside_it() -> None:
    # --kv-cache-memory-bytes is the engine's whole pool: the declarations do not shrink it,
    # they add to the per-GPU total.
    budget = 10 << 30
    request = PlanRequest(engine="vllm==0.33", kv_cache_memory_bytes=budget, max_model_len=32768,
                          model_local_kv=(talker(),))
    result = plan_model(LLAMA, request)
    assert result.available_bytes == budget
    assert result.num_blocks == budget // 2_097_152 == 5120
    lines = {ln.key: ln for ln in result.budget.lines}
    assert lines["model_local_kv"].bytes == 25_165_824
    assert lines["per_gpu_total"].bytes == budget + 25_165_824
    assert result.model_local_kv[0].status == "beside_pool"
    assert not any("more than" in w for w in result.warnings)  # no GPU named: nothing to exceed


def test_given_pool_over_the_gpu_warns_with_numbers() -> None:
    # H100-80GB reports 85,520,809,984 B; a pool of 85,500,000,000 B + 25,165,824 B of talker
    # = 85,525,165,824 B > the GPU.
    result = plan_model(LLAMA, PlanRequest(engine="vllm==0.33",
                                           kv_cache_memory_bytes=85_500_000_000,
                                           gpu="H100-80GB", max_model_len=32768,
                                           model_local_kv=(talker(),)))
    (warning,) = [w for w in result.warnings if "model-local" in w]
    assert "85,525,165,824 B per GPU" in warning and "85,520,809,984 B" in warning


def test_pipeline_stage_of_the_owner() -> None:
    # PP 2: 16 layers per stage; a stage block is 16 tokens × 16 layers × 4,096 B = 1,048,576 B.
    base = PlanRequest(engine="vllm==0.33",
                       gpu="H100-80GB", max_model_len=32768, pipeline_parallel_size=2)
    plain = plan_model(LLAMA, base)
    on_one = plan_model(LLAMA, records.replace(
        base, model_local_kv=(talker(),), model_local_stages={"talker": 1}))  # type: ignore[arg-type]
    avail = plain.ranks[0].available_bytes
    assert [r.available_bytes for r in on_one.ranks] == [avail, avail - 25_165_824]
    # vLLM: every stage uses the smallest count; stage 1 binds.
    assert on_one.num_blocks == (avail - 25_165_824) // 1_048_576
    assert on_one.model_local_kv[0].stage == 1
    line = on_one.budget.line("model_local_kv")
    assert line is not None and "stage 1" in line.label
    # Default: the first stage.
    first = plan_model(LLAMA, records.replace(base, model_local_kv=(talker(),)))
    assert [r.available_bytes for r in first.ranks] == [avail - 25_165_824, avail]


def test_stage_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="stage 2, but there are 2 pipeline stage"):
        PlanRequest(engine="vllm==0.33", pipeline_parallel_size=2, model_local_kv=(talker(),),
                    model_local_stages=(("talker", 2),))


def test_no_room_for_one_request_carries_numbers_and_the_three_way_hint() -> None:
    # 1,750 FIXED rows × 25,165,824 B = 44,040,192,000 B of talker; one 131,072-token request
    # needs 131,072 × 131,072 B = 17,179,869,184 B (+ one 2 MiB null block). The H100 budget
    # (~60.1 GB at vLLM 0.32's default utilization 0.92) holds the request alone but not
    # beside the caches.
    request = PlanRequest(engine="vllm==0.33",
                          gpu="H100-80GB", model_local_kv=(talker(rows_fixed=1750),))
    with pytest.raises(ModelLocalBudgetError) as info:
        plan_model(LLAMA, request)
    exc = info.value
    assert isinstance(exc, InsufficientPoolBudget)
    assert exc.reserved_bytes == 1750 * 25_165_824 == 44_040_192_000
    assert exc.needed_bytes == 17_179_869_184 + 2_097_152
    text = str(exc)
    assert "44,040,192,000 B" in text and "131,072-token request needs 17,181,966,336 B" in text
    hint = exc.hint
    assert "fewer rows" in hint and "physical_capacity_positions" in hint
    assert "gpu_memory_utilization >=" in hint


def test_caches_larger_than_the_budget_are_refused_with_even_one_is_not_enough() -> None:
    # 3,000 rows × 25,165,824 B = 75,497,472,000 B: more than the whole budget.
    request = PlanRequest(engine="vllm==0.33",
                          gpu="H100-80GB", model_local_kv=(talker(rows_fixed=3000),))
    with pytest.raises(ModelLocalBudgetError) as info:
        plan_model(LLAMA, request)
    assert info.value.reserved_bytes == 75_497_472_000
    assert "even gpu_memory_utilization 1.0 is not enough" in info.value.hint


def test_max_num_seqs_rows_hint_names_the_sequences_that_fit() -> None:
    # MAX_NUM_SEQS talker of 16,384 positions: 8 × 25,165,824 = 201,326,592 B per row, × 256
    # sequences (given: vllm serve's 1024 on an H100 would exceed the whole budget alone, the
    # test above) = 51,539,607,552 B; beside one 131,072-token request (17,181,966,336 B with
    # the null block) that exceeds the ~60.1 GB H100 budget. The hint names the largest
    # max_num_seqs k with k × 201,326,592 ≤ budget − 17,181,966,336.
    spec = talker(RowDriver.MAX_NUM_SEQS, positions=2048 * 8)
    with pytest.raises(ModelLocalBudgetError) as info:
        plan_model(LLAMA, PlanRequest(engine="vllm==0.33", gpu="H100-80GB", max_num_seqs=256,
                                      model_local_kv=(spec,)))
    exc = info.value
    assert exc.reserved_bytes == 256 * 201_326_592
    k = int(exc.hint.split("reduce max_num_seqs to at most ")[1].split(")")[0].split(" ")[0])
    room = exc.available_bytes - 17_181_966_336
    assert k * 201_326_592 <= room < (k + 1) * 201_326_592
    # ... and that many do plan.
    ok = plan_model(LLAMA, PlanRequest(engine="vllm==0.33",
                                       gpu="H100-80GB", max_num_seqs=k, model_local_kv=(spec,)))
    assert not ok.refuses_to_start


def test_fit_counts_max_num_seqs_rows_at_the_concurrency_asked() -> None:
    from kvledger.plan.fit import fit_model

    spec = talker(RowDriver.MAX_NUM_SEQS)
    result = fit_model(LLAMA, PlanRequest(engine="vllm==0.33",
                                          model_local_kv=(spec,)), gpu="H100-80GB",
                       concurrency=4, context=8192)
    assert result.fits and result.plan is not None
    (row,) = result.plan.model_local_kv
    assert (row.row_count, row.peak_bytes) == (4, 4 * 25_165_824)


def test_native_layout_pools_declarations_in_one_ledger() -> None:
    result = plan_model(LLAMA, PlanRequest(engine="native", gpu="H100-80GB",
                                           max_model_len=32768, model_local_kv=(talker(),)))
    pools = {p.name: p for p in result.pools}
    assert pools["local:talker"].reserved_bytes == 25_165_824
    assert str(pools["local:talker"].pool) == "fixed"
    assert result.model_local_kv[0].status == "pooled"
    assert result.budget.line("model_local_kv") is None  # in the pools, not the budget


def test_collected_pairs_keep_their_owner_path() -> None:
    result = plan_model(LLAMA, records.replace(
        H100, model_local_kv=(("model.talker", talker()),)))
    assert result.model_local_kv[0].owner == "model.talker"

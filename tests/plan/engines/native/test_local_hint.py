"""The native layout's refusal when model-local classes leave no room: the seed's three-way fix
for declarations (fewer rows, shorter capacity, more memory), never "reduce max_num_seqs" for a
FIXED row count that max_num_seqs cannot shrink.

Numbers are worked by hand from Llama-3.1-8B's config: 32 layers × 2 (K, V) × 8 KV heads × 128
× 2 B (bf16) = 131,072 B per token, so one 16-token block is 2,097,152 B.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvledger import records
from kvledger.cli.main import main
from kvledger.declare.model_local import ModelLocalKVScope, ModelLocalKVSpec, RowDriver
from kvledger.declare.pools import InsufficientPoolBudget
from kvledger.plan.api import plan_model
from kvledger.plan.request import PlanRequest

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
PER_POSITION = 2 * 24 * 2 * 64 * 2  # talker: K and V × 24 layers × 2 heads × 64 × bf16 = 12,288


def talker(positions: int, rows: RowDriver = RowDriver.FIXED) -> ModelLocalKVSpec:
    return ModelLocalKVSpec(
        name="talker", layers=24, kv_heads=2, head_dim=64, dtype="bfloat16",
        physical_capacity_positions=positions, capacity_source="test",
        scope=ModelLocalKVScope.MODEL,
        rows=rows, rows_reason="calls are serialized" if rows is RowDriver.FIXED else "")


def test_fixed_declaration_over_a_given_budget_gets_the_three_way_fix() -> None:
    # 2,048,000 positions × 12,288 B = 25,165,824,000 B of talker, in a 20,000,000,000 B pool.
    # One 131,072-token request needs 8,192 blocks × 2,097,152 B = 17,179,869,184 B, so the
    # caches may take at most 20,000,000,000 − 17,179,869,184 = 2,820,130,816 B, and the
    # shortfall is 25,165,824,000 + 17,179,869,184 − 20,000,000,000 = 22,345,693,184 B.
    assert PER_POSITION * 2_048_000 == 25_165_824_000
    request = PlanRequest(engine="native", kv_cache_memory_bytes=20_000_000_000,
                          model_local_kv=(talker(2_048_000),))
    with pytest.raises(InsufficientPoolBudget) as info:
        plan_model(LLAMA, request)
    hint = info.value.hint  # type: ignore[attr-defined]
    assert "max_num_seqs" not in hint  # it cannot shrink a FIXED row count
    assert hint.startswith("fewer rows (declare fewer fixed rows for talker)")
    assert "physical_capacity_positions (the caches may take at most 2,820,130,816 B, they " \
           "take 25,165,824,000 B)" in hint
    assert hint.endswith("or 22,345,693,184 B more memory per GPU")


def test_fixed_declaration_on_a_gpu_names_the_utilization_that_fits() -> None:
    # H100-80GB: 85,520,809,984 B. The plain plan's KV budget B is the pool the talker lands in
    # (its own lines are tested elsewhere). 5,000,000 positions × 12,288 B = 61,440,000,000 B,
    # more than B (~60.1 GB). One 1,024-token request: 64 blocks × 2,097,152 = 134,217,728 B.
    # Shortfall = 61,440,000,000 + 134,217,728 − B; the least utilization that fits is
    # (85,520,809,984 × 0.92 + shortfall) / 85,520,809,984, rounded up to hundredths.
    base = PlanRequest(engine="native", gpu="H100-80GB", max_model_len=1024)
    budget = plan_model(LLAMA, base).available_bytes
    local = PER_POSITION * 5_000_000
    assert local == 61_440_000_000 and local > budget
    shortfall = local + 64 * 2_097_152 - budget
    need = (85_520_809_984 * 0.92 + shortfall) / 85_520_809_984
    assert 0.93 < need <= 0.94  # so the hint must say 0.94
    with pytest.raises(InsufficientPoolBudget) as info:
        plan_model(LLAMA, records.replace(base, model_local_kv=(talker(5_000_000),)))
    hint = info.value.hint  # type: ignore[attr-defined]
    assert "max_num_seqs" not in hint
    assert "declare fewer fixed rows for talker" in hint
    assert f"at most {budget - 134_217_728:,} B, they take 61,440,000,000 B" in hint
    assert hint.endswith("or gpu_memory_utilization >= 0.94")


def test_max_num_seqs_declaration_that_no_sequence_count_fits() -> None:
    # A MAX_NUM_SEQS talker of 2,048,000 positions: 25,165,824,000 B per row; the native layout
    # already trims its STATE slots down to one, and one row alone exceeds the 20 GB pool.
    request = PlanRequest(engine="native", kv_cache_memory_bytes=20_000_000_000,
                          model_local_kv=(talker(2_048_000, RowDriver.MAX_NUM_SEQS),))
    with pytest.raises(InsufficientPoolBudget) as info:
        plan_model(LLAMA, request)
    hint = info.value.hint  # type: ignore[attr-defined]
    assert hint.startswith("fewer rows (no max_num_seqs is small enough)")
    assert "physical_capacity_positions" in hint


def test_cli_native_refusal_is_one_line_with_the_declaration_fix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    decl = tmp_path / "big.json"
    decl.write_text(json.dumps([{
        "name": "talker", "layers": 24, "kv_heads": 2, "head_dim": 64, "dtype": "bfloat16",
        "physical_capacity_positions": 2_048_000, "capacity_source": "test", "scope": "model",
        "rows": "fixed", "rows_fixed": 1, "rows_reason": "serialized"}]))
    code = main(["plan", LLAMA, "--engine", "native", "--kv-cache-memory-bytes",
                 "20000000000", "--model-local-kv", str(decl)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "hint: fewer rows (declare fewer fixed rows for talker)" in err
    assert "max-num-seqs" not in err and "22,345,693,184 B more memory" in err

"""One ledger: model-local declarations enter plan_pools beside engine classes."""

from __future__ import annotations

import pytest

from kvledger import (
    ModelLocalKVScope,
    ModelLocalKVSpec,
    Pool,
    RowDriver,
    model_local_to_pool_specs,
    page_pool,
    plan_pools,
)

# bf16 2 × 16 × 16 × 64 × 11 × 2 B = 720,896 B/row (MiMo-Audio figure), 261 captured rows
MIMO = ModelLocalKVSpec("mimo", 16, 16, 64, "bfloat16", 11, "decode loop 11",
                        ModelLocalKVScope.MODEL, RowDriver.FIXED, 261, "captured buckets")
# fp32 2 × 8 × 16 × 64 × 71 × 4 B = 4,653,056 B/row (Qwen3-TTS figure), one per sequence
TTS = ModelLocalKVSpec("tts", 8, 16, 64, "float32", 71, "window 72 - 1",
                       ModelLocalKVScope.REQUEST, RowDriver.MAX_NUM_SEQS)


def test_max_num_seqs_declaration_becomes_state_class() -> None:
    out = model_local_to_pool_specs([TTS])
    (spec,) = out.specs
    assert (spec.pool, spec.name, spec.entry_bytes, spec.entries_per_req) == (
        Pool.STATE, "local:tts", 4_653_056, 1)
    assert spec.source == "tts"


def test_fixed_declaration_becomes_fixed_reservation() -> None:
    (spec,) = model_local_to_pool_specs([MIMO]).specs
    assert spec.pool is Pool.FIXED
    assert spec.entry_bytes * spec.extra_entries == 188_153_856


def test_plan_subtracts_both_before_paging() -> None:
    seqs = 4
    budget = 10**9
    specs = [page_pool(65_536), *model_local_to_pool_specs([TTS, MIMO])]
    plan = plan_pools(specs, budget, seqs)
    # TTS: 4 × 4,653,056 = 18,612,224; MIMO: 188,153,856 (independent of max_num_seqs)
    assert plan.reserved_bytes["local:tts"] == 18_612_224
    assert plan.reserved_bytes["local:mimo"] == 188_153_856
    # pages: (1,000,000,000 − 206,766,080) // 65,536 = 12,103
    assert plan.paged_entries == 12_103
    assert plan.sources["local:tts"] == "tts" and plan.sources["kv"] == "engine"


def test_already_charged_is_kept_apart_not_reserved() -> None:
    ledger = model_local_to_pool_specs([TTS, MIMO], max_num_seqs=4, already_charged=["mimo"])
    assert [s.name for s in ledger.specs] == ["local:tts"]
    assert ledger.already_charged == {"local:mimo": 188_153_856}
    plan = plan_pools([page_pool(65_536), *ledger], 10**9, 4,
                      already_charged=ledger.already_charged)
    assert "local:mimo" not in plan.reserved_bytes
    assert plan.already_charged_bytes["local:mimo"] == 188_153_856
    # pages: (10^9 − 18,612,224) // 65,536 = 14,974
    assert plan.paged_entries == 14_974


def test_already_charged_typo_raises() -> None:
    with pytest.raises(ValueError, match="mimoo"):
        model_local_to_pool_specs([MIMO], already_charged=["mimoo"])


def test_accepts_collected_pairs() -> None:
    out = model_local_to_pool_specs([("talker.cache", TTS)])
    assert out.specs[0].name == "local:tts"


def test_rejects_non_specs() -> None:
    with pytest.raises(TypeError):
        model_local_to_pool_specs(["tts"])  # type: ignore[list-item]

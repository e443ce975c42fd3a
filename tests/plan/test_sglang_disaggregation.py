"""SGLang 0.5.23's prefill/decode roles and HiCache host pool, by hand from the source cited in
``plan/engines/sglang/disaggregation.py`` and ``hicache.py`` (engine="sglang==0.5.23").

The pool here is a given number (the SGLang layout's own plan is tested elsewhere): 413,638
tokens of 81,920 B (Llama-3.1-70B at TP 4: 2 × 80 layers × 2 KV heads × 128 × 2 B), page 1.
"""

from __future__ import annotations

import pytest

from kvledger.errors import PlanError
from kvledger.plan.engines.sglang.disaggregation import (
    METADATA_ROW_BYTES,
    SglangHostSettings,
    plan_role,
)
from kvledger.plan.engines.sglang.hicache import host_pool

POOL, CELL = 413_638, 81_920


def role(settings: SglangHostSettings, *, context: int = 32_768, running: int = 4_096,
         page: int = 1, single: bool = True) -> dict[str, object]:
    return plan_role(settings, pool_tokens=POOL, bytes_per_token=CELL, page_size=page,
                     context_len=context, max_running_requests=running,
                     single_pool=single).to_json()


def test_a_metadata_row_is_1600_bytes() -> None:
    # MetadataBuffers: 4 × (16 × 4 B) ids/cached/logprob val/idx + 2 × (128 × 4 B) top
    # logprobs + 16 × 4 B top-k p + 16 × 8 B top-k index + 16 × 4 B hidden pad + 8 × 8 B room.
    assert METADATA_ROW_BYTES == 256 + 1_024 + 64 + 128 + 64 + 64 == 1_600


def test_prefill_holds_two_metadata_rows_per_running_request_on_the_host() -> None:
    got = role(SglangHostSettings(mode="prefill", transfer_backend="nixl"))
    assert got["metadata_rows"] == 8_192  # 2 × max_running_requests 4,096
    assert got["host_bytes_per_gpu"] == 8_192 * 1_600 == 13_107_200
    assert got["gpu_bytes_per_gpu"] == 0 and got["host_pool"] is None


def test_decode_keeps_a_retraction_host_pool_of_a_fifth_of_the_device_pool() -> None:
    # ratio max(0.2, min(32,768 + 3, 413,638) / 413,638 = 0.0792) = 0.2: int(413,638 × 0.2)
    # = 82,727 tokens, + one padding page = 82,728 × 81,920 B = 6,777,077,760 B. Page-first
    # staging: min(82,728 pages, 64) × 81,920 = 5,242,880 B on the GPU.
    got = role(SglangHostSettings(mode="decode"))
    pool = got["host_pool"]
    assert isinstance(pool, dict)
    assert (pool["tokens"], pool["bytes_per_gpu"]) == (82_728, 6_777_077_760)
    assert pool["exact"] is False  # auto-sizing may lower it on a small host
    assert got["retraction_backup"] == "host_pool"
    assert got["gpu_bytes_per_gpu"] == 5_242_880
    assert got["host_bytes_per_gpu"] == 6_777_077_760 + 13_107_200


def test_small_decode_batches_reserve_extra_req_to_token_rows_on_the_gpu() -> None:
    # --max-running-requests 16 (<= 32): 2 × 16 = 32 extra rows of (32,768 + 4) int32 =
    # 32 × 32,772 × 4 = 4,194,816 B.
    got = role(SglangHostSettings(mode="decode", decode_enable_radix_cache=True), running=16)
    assert got["decode_extra_slots"] == 32
    assert got["decode_extra_slots_gpu_bytes"] == 4_194_816
    assert got["retraction_backup"] == "cpu_tensor" and got["host_pool"] is None


def test_hicache_ratio_and_size() -> None:
    # ratio 2: int(413,638 × 2) = 827,276 + 1 page = 827,277 tokens × 81,920 = 67,770,531,840 B
    by_ratio = host_pool(device_tokens=POOL, bytes_per_token=CELL, page_size=1, ratio=2.0,
                         size_gb=0, layout="layer_first")
    assert (by_ratio.tokens, by_ratio.bytes) == (827_277, 67_770_531_840)
    assert by_ratio.staging_gpu_bytes == 0  # layer_first stages nothing
    # 100 GB (decimal): 100e9 // 81,920 = 1,220,703 + 1 = 1,220,704 tokens with page 1;
    # page 64: 1,220,703 // 64 = 19,073 pages + 1 = 19,074 × 64 = 1,220,736 tokens.
    by_size = host_pool(device_tokens=POOL, bytes_per_token=CELL, page_size=1, ratio=None,
                        size_gb=100, layout="page_first")
    assert by_size.tokens == 1_220_704 and by_size.exact
    paged = host_pool(device_tokens=POOL, bytes_per_token=CELL, page_size=64, ratio=None,
                      size_gb=100, layout="page_first")
    assert paged.tokens == 1_220_736
    assert paged.staging_gpu_bytes == 64 * 64 * CELL  # the full 64-page chunk


@pytest.mark.parametrize(("settings", "named"), [
    (SglangHostSettings(mode="prefill", transfer_backend="mori"), "mori"),
    (SglangHostSettings(enable_hierarchical_cache=True, hicache_mem_layout="page_head"),
     "page_head"),
])
def test_settings_not_modelled_are_refused_by_name(settings: SglangHostSettings,
                                                   named: str) -> None:
    with pytest.raises(PlanError, match=named):
        role(settings)


def test_a_host_pool_for_a_model_with_several_pools_is_refused() -> None:
    with pytest.raises(PlanError, match="several KV pools"):
        role(SglangHostSettings(mode="decode"), single=False)

"""SGLang 0.5.23's DeepSeek-V4 pools (``DSV4PoolConfigurator``), worked by hand from the
DeepSeek-V4-Flash config and SGLang's rules as ``kvledger/plan/engines/sglang/dsv4.py`` cites them
(``model_executor/pool_configurator.py``, ``mem_cache/deepseek_v4_memory_pool.py``,
``kernels/ops/attention/dsv4/kv_layout.py``, ``arg_groups/model_overrides/deepseek_v4.py``,
``arg_groups/deepseek_v4_hook.py``). Oracle case cov-deepseek-v4 checks the default against
SGLang's own run."""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.sglang import SglangLayoutError, SglangOptions, plan_sglang
from kvledger.plan.engines.sglang.dsv4 import paged_bytes_per_token
from kvledger.plan.request import PlanRequest
from sglang_cases import catalog_config as _config

GIB = 1 << 30
REQUEST = PlanRequest(engine="sglang", max_model_len=32768)


def _facts() -> Any:
    return derive_model(_config("deepseek-ai/DeepSeek-V4-Flash"))


def test_v4_layout_pages_pad_to_576_bytes() -> None:
    # KVLayout.V4: 576 + 8 = 584 B a token. SWA page 256 tokens: 149,504 B → 260 × 576 =
    # 149,760 → 585.0 B/token; ratio 4 (64 tokens): 37,376 → 65 × 576 = 37,440 → 585.0;
    # ratio 128 (2 tokens): 1,168 → 3 × 576 = 1,728 → 864.0.
    assert paged_bytes_per_token(0) == 585.0
    assert paged_bytes_per_token(4) == 585.0
    assert paged_bytes_per_token(128) == 864.0


def test_deepseek_v4_flash_default_pools() -> None:
    # DeepSeek-V4-Flash: 43 layers, compress_ratios[:43] = 2 × 0, 21 × 4, 20 × 128;
    # head_dim 512 (nope 448 + rope 64), index_head_dim 128, sliding_window 128.
    # SWA token: 585 × 43 = 25,155 + 8 / 256 × (2·2·512·4 + 2·2·128·4 = 10,240) × 21
    # = 6,720 → 31,875 B.
    # Full token: 0.1 × 31,875 = 3,187.5 + 21 × (585 / 4 + (128 + 4) / 4 = 179.25) = 3,764.25
    # + 20 × 864 / 128 = 135 → 7,086.75 B.
    # c128 state, 256 requests: (257 × 128 + 128 + 1) = 33,025 → 33,152 rows × 2·512 × 4 B
    # × 20 layers = 2,715,811,840 B.
    # Full: (17,179,869,184 − 2,715,811,840) / 7,086.75 = 2,041,000.5 → 7,972 pages of 256
    # = 2,040,832 tokens; SWA: int(204,083.2) → 797 pages = 204,032.
    plan = plan_sglang(_facts(), REQUEST, 16 * GIB)
    assert plan.cell_bytes_per_token == 7086.75
    assert plan.kv_cache_tokens == 2040832
    assert plan.swa_tokens == 204032
    assert plan.page_size == 256
    assert plan.kv_cache_dtype == "fp8_e4m3"
    assert plan.max_running_requests == 256
    # c4 = full // 4, c128 = full // 128, c4 state = 797 pages × ring 8.
    assert plan.sglang_log_line == ("DSV4 pool sizes: full=2040832, swa=204032, c4=510208, "
                                    "c128=15944, c4_state=6376, c128_state=0")


def test_fewer_requests_shrink_the_c128_state() -> None:
    # --max-running-requests 64: (65 × 128 + 129) = 8,449 → 8,576 rows × 4,096 B × 20
    # = 702,545,920 B; (17,179,869,184 − 702,545,920) / 7,086.75 = 2,325,088.8 → 9,082 pages
    # = 2,324,992 tokens.
    plan = plan_sglang(_facts(), REQUEST, 16 * GIB,
                       options=SglangOptions(max_running_requests=64))
    assert plan.kv_cache_tokens == 2324992
    assert plan.max_running_requests == 64


def test_an_operator_swa_ratio_replaces_the_default() -> None:
    # --swa-full-tokens-ratio 0.5: full token 0.5 × 31,875 + 3,899.25 = 19,836.75 B;
    # 14,464,057,344 / 19,836.75 = 729,154.6 → 2,848 pages = 729,088; SWA int(364,544)
    # → 1,424 pages = 364,544.
    plan = plan_sglang(_facts(), REQUEST, 16 * GIB,
                       options=SglangOptions(swa_full_tokens_ratio=0.5))
    assert plan.kv_cache_tokens == 729088
    assert plan.swa_tokens == 364544


def test_max_total_tokens_lowers_both_pools() -> None:
    # calculate_pool_sizes_from_max_tokens(100,000): 390 pages = 99,840; SWA int(9,984.0)
    # → 39 pages = 9,984.
    plan = plan_sglang(_facts(), REQUEST, 16 * GIB,
                       options=SglangOptions(max_total_tokens=100000))
    assert plan.kv_cache_tokens == 99840
    assert plan.swa_tokens == 9984


def test_asked_page_size_is_overridden_with_a_warning() -> None:
    plan = plan_sglang(_facts(), PlanRequest(engine="sglang", max_model_len=32768,
                                             block_size=64), 16 * GIB)
    assert plan.page_size == 256
    assert plan.kv_cache_tokens == 2040832
    assert any("--page-size 64" in w for w in plan.warnings)


def test_what_the_v4_pool_does_not_reproduce_is_refused() -> None:
    with pytest.raises(SglangLayoutError, match="pipeline parallelism"):
        plan_sglang(_facts(), PlanRequest(engine="sglang", max_model_len=32768,
                                          pipeline_parallel_size=2), 16 * GIB)
    with pytest.raises(SglangLayoutError, match="speculative decoding"):
        plan_sglang(_facts(), PlanRequest(engine="sglang", max_model_len=32768,
                                          num_speculative_tokens=1,
                                          speculative_method="mtp"), 16 * GIB)
    with pytest.raises(SglangLayoutError, match="kv-cache-dtype bfloat16"):
        plan_sglang(_facts(), PlanRequest(engine="sglang", max_model_len=32768,
                                          kv_cache_dtype="bfloat16"), 16 * GIB)

"""HiCache's host tier on an ordinary SGLang 0.5.23 plan (``plan/engines/sglang/hicache.py``,
from ``mem_cache/pool_host/base.py HostKVCache.__init__``): ``--hicache-size`` decimal GB →
``int(size × 1e9 // bytes_per_token)`` tokens, else ``int(device tokens × --hicache-ratio)``;
then ``(tokens // page_size + 1) × page_size``; ``page_first`` stages ``min(pages, 64)``
pages on the GPU (``_WRITE_BACK_STAGING_PAGE_CHUNK``; a fixed size stages the full 64).

Llama-3.1-70B at TP 4 (catalog config: 80 layers, 8 KV heads, head_dim 128, bfloat16): a GPU
holds 2 KV heads, so a token is (128 + 128) × 2 × 80 × 2 B = 81,920 B; SGLang's page on CUDA
is 1 token. ``--max-total-tokens 100000`` fixes the device pool at 100,000 tokens. All
numbers: engine="sglang==0.5.23".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.errors import PlanError
from kvledger.plan.api import plan_model
from kvledger.plan.engines.sglang.options import SglangOptions
from kvledger.plan.request import PlanRequest

L70 = "meta-llama/Llama-3.1-70B-Instruct"
ENGINE = "sglang==0.5.23"
CONFIGS = Path(__file__).resolve().parents[4].parent / "shared" / "configs"


def plan(model: str = L70, *, tp: int = 4, context: int = 32768,
         **options: Any) -> dict[str, Any]:
    found: dict[str, Any] = plan_model(model, PlanRequest(
        engine=ENGINE, gpu="H100-80GB", tensor_parallel_size=tp, max_model_len=context,
        sglang=SglangOptions(**options))).to_json()
    return found


def test_ratio_two_by_hand() -> None:
    got = plan(max_total_tokens=100_000, enable_hierarchical_cache=True, hicache_ratio=2)
    tier = got["hicache"]
    # int(100,000 × 2) = 200,000; 200,000 // 1 + 1 = 200,001 pages of 1 token.
    assert got["kv_cache_tokens"] == 100_000
    assert (tier["tokens"], tier["bytes_per_token"]) == (200_001, 81_920)
    assert tier["bytes_per_gpu"] == 200_001 * 81_920 == 16_384_081_920
    assert tier["whole_prefixes_at_context"] == 6  # 200,001 // 32,768
    assert tier["staging_gpu_bytes"] == 64 * 81_920  # min(200,001, 64) pages of 1 token
    assert any("HiCache host tier" in w and "16,384,081,920 B" in w for w in got["warnings"])


def test_size_in_decimal_gb_by_hand() -> None:
    tier = plan(max_total_tokens=100_000, enable_hierarchical_cache=True,
                hicache_size=10)["hicache"]
    # 10e9 // 81,920 = 122,070; + 1 padding page = 122,071 tokens; 122,071 // 32,768 = 3.
    assert (tier["tokens"], tier["bytes_per_gpu"]) == (122_071, 10_000_056_320)
    assert (tier["hicache_ratio"], tier["whole_prefixes_at_context"]) == (None, 3)


def test_no_ratio_plans_the_most_sglang_uses_and_says_so() -> None:
    tier = plan(max_total_tokens=100_000, enable_hierarchical_cache=True)["hicache"]
    assert (tier["tokens"], tier["exact"]) == (200_001, False)  # ratio 2.0, lowered to fit


def test_a_ratio_without_the_switch_builds_no_tier() -> None:
    got = plan(max_total_tokens=100_000, hicache_ratio=2)
    assert "hicache" not in got
    assert any("without --enable-hierarchical-cache" in w for w in got["warnings"])


def test_a_model_with_several_pools_is_refused() -> None:
    # Qwen3-Next: full-attention layers beside a Mamba state pool.
    with pytest.raises(PlanError, match="several KV pools"):
        plan(str(CONFIGS / "Qwen--Qwen3-Next-80B-A3B-Thinking.json"), context=8192,
             enable_hierarchical_cache=True)


def test_cli_and_a_pasted_sglang_line_give_the_same_tier(
        capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--gpu", "H100-80GB", "--offline", "--json"]
    code = main(["plan", L70, "--engine", "sglang", *common, "--tensor-parallel-size", "4",
                 "--max-model-len", "32768", "--max-total-tokens", "100000",
                 "--enable-hierarchical-cache", "--hicache-ratio", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    flags = json.loads(out)["hicache"]
    code = main(["plan", *common, "--", "python", "-m", "sglang.launch_server", "--model-path",
                 L70, "--tp-size", "4", "--context-length", "32768", "--max-total-tokens",
                 "100000", "--enable-hierarchical-cache", "--hicache-ratio", "2",
                 "--hicache-write-policy", "write_through"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["hicache"] == flags
    assert flags["tokens"] == 200_001


def test_hicache_flags_are_sglang_only(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", L70, "--gpu", "H100-80GB", "--offline", "--hicache-ratio", "2"])
    assert code == 2 and "--engine sglang" in capsys.readouterr().err

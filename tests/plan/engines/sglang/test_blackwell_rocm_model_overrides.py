"""SGLang 0.5.23's per-architecture model overrides on Blackwell (B200: sm100) and ROCm
(MI300X: gfx942): the attention backend each declares (``arg_groups/model_overrides/``), the page
it then takes, and aiter's memory factor (``plan/engines/sglang/backends.py``, data in
``releases/v0_5_23.py`` ``arch_overrides``). Each case was refused by name before ("SGLang's
model override for this architecture sets its own attention backend / page size there"), so
every test below failed on the code before these rules.

No oracle case: the SGLang oracle tool (``../shared/oracles/sglang-tool/README.md``) runs
SGLang's CPU platform, where the overrides take their CPU / "other platforms" arm (triton,
torch_native) and ``get_default_attn_backend`` answers page 1; its
``--emulate-cuda-capability`` patches only ``torch.cuda.get_device_capability``, not
``get_platform().is_sm100`` / ``is_hip``, which both the overrides and the default read. The
pool arithmetic for a given page (sliding-window and state pools included) is the one the oracle
cases already check; the numbers here are worked by hand.

Budgets are given (``kv_cache_memory_bytes`` 10 GiB = 10,737,418,240 B) where tokens are
asserted, and ``mem_fraction_static`` where the fraction is, so each number is exact.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.plan.api import plan_model
from kvledger.plan.engines.sglang.options import SglangOptions
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS

GIB = 1 << 30
ENGINE = "sglang==0.5.23"
QWEN3_VL = str(CONFIGS / "Qwen--Qwen3-VL-235B-A22B-Instruct.json")


def plan(model: str, gpu: str, tp: int, *, kv_bytes: int | None = 10 * GIB,
         page: int | None = None, **sglang: Any) -> tuple[Any, dict[str, Any]]:
    request = PlanRequest(
        engine=ENGINE, gpu=gpu, tensor_parallel_size=tp, kv_cache_memory_bytes=kv_bytes,
        block_size=page, sglang=SglangOptions(**sglang) if sglang else None)
    result = plan_model(model, request)
    return result, result.engine_fields


def resolved(fields: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = fields["sglang_resolved"]
    return out


# --- gpt-oss (model_overrides/gpt_oss.py _gpt_oss_overrides) ---------------------------------

def test_gpt_oss_120b_on_b200_takes_trtllm_mha_and_64_token_pages() -> None:
    # The cookbook line `--model openai/gpt-oss-120b --tp 8` on B200: the override declares
    # trtllm_mha on is_sm100; _mla_backend_page_constraints sets page 64.
    # Hybrid SWA: 36 layers, layer_types alternate → 18 full + 18 sliding; 8 KV heads / TP 8 =
    # 1 a rank × head_dim 64 × (K + V) × 2 B (bf16) = 256 B a layer a token.
    # full cell 18 × 256 = 4,608 B; SWA cell 4,608 B; cell at swa_full_tokens_ratio 0.8:
    # 4,608 + 0.8 × 4,608 = 8,294.4 B.
    # 10,737,418,240 / 8,294.4 = 1,294,538.2 → 1,294,538 → 64-token pages: 20,227 × 64 =
    # 1,294,528 full tokens; SWA int(1,294,528 × 0.8) = 1,035,622 → 16,181 × 64 = 1,035,584.
    # max_running_requests: int(1,294,528 / 131,072 × 512) = 5,056 → clamped to 4,096.
    result, fields = plan("openai/gpt-oss-120b", "B200", 8)
    assert resolved(fields)["attention_backend"] == "trtllm_mha"
    assert result.block_size == 64
    assert fields["cell_bytes_per_token"] == pytest.approx(8_294.4)
    assert result.kv_cache_tokens == 1_294_528
    assert fields["swa_tokens"] == 1_035_584
    assert fields["max_running_requests"] == 4_096


def test_gpt_oss_120b_on_mi300x_takes_aiter_one_token_pages_and_its_factor() -> None:
    # is_hip → aiter; no aiter page rule → _page_size_default's 1: 1,294,538 tokens (above).
    result, fields = plan("openai/gpt-oss-120b", "MI300X", 8)
    assert resolved(fields)["attention_backend"] == "aiter"
    assert (result.block_size, result.kv_cache_tokens) == (1, 1_294_538)
    # handle_attention_backend_compatibility: aiter at context 131,072 > 8,192 →
    # mem_fraction_static 0.9 × 0.85 = 0.765.
    _, fields = plan("openai/gpt-oss-120b", "MI300X", 8, kv_bytes=None,
                     mem_fraction_static=0.9)
    assert resolved(fields)["mem_fraction_static"] == pytest.approx(0.765)


# --- Qwen3-VL (qwen3_vl.py, qwen3_moe.py: no backend or page of their own here) -------------

def test_qwen3_vl_235b_on_b200_takes_the_default_trtllm_mha() -> None:
    # Qwen3VLMoeForConditionalGeneration: _qwen3vl_hopper_serving_overrides needs
    # is_sm90_supported (major 9), _qwen3_moe_family_overrides sets only MoE / quantization on
    # SM100, so get_default_attn_backend's trtllm_mha (equal K/V rows) stands: page 64.
    # Cell: 94 layers × (K + V) × 1 head (4 KV heads under TP 8: replicated, 1 a rank) × 128
    # × 2 B = 48,128 B. 10,737,418,240 / 48,128 = 223,101.6 → 223,101 → 3,485 pages × 64 =
    # 223,040 tokens. max_running_requests: int(223,040 / 262,144 × 512) = 435 → 2,048.
    result, fields = plan(QWEN3_VL, "B200", 8)
    assert resolved(fields)["attention_backend"] == "trtllm_mha"
    assert result.block_size == 64
    assert fields["cell_bytes_per_token"] == 48_128
    assert result.kv_cache_tokens == 223_040
    assert fields["max_running_requests"] == 2_048
    # On MI300X the ROCm default, aiter, page 1: 223,101 tokens.
    result, fields = plan(QWEN3_VL, "MI300X", 8)
    assert resolved(fields)["attention_backend"] == "aiter"
    assert (result.block_size, result.kv_cache_tokens) == (1, 223_101)


# --- Llama-4 (llama4.py _llama4_overrides) ---------------------------------------------------

def test_llama4_scout_on_mi300x_takes_aiter_and_on_b200_trtllm_mha() -> None:
    # Chunked attention as SGLang's hybrid SWA: 48 layers, every fourth full → 12 full + 36
    # chunked; 8 KV heads / TP 8 = 1 × 128 × 2 × 2 B = 512 B a layer a token.
    # Cell: 12 × 512 + 0.8 × 36 × 512 = 6,144 + 14,745.6 = 20,889.6 B.
    # 10,737,418,240 / 20,889.6 = 514,007.4 → 514,007 tokens at page 1 (aiter on HIP).
    # max_running_requests: int(514,007 / 10,485,760 × 512) = 25 → 2,048.
    result, fields = plan("meta-llama/Llama-4-Scout-17B-16E-Instruct", "MI300X", 8)
    assert resolved(fields)["attention_backend"] == "aiter"
    assert result.block_size == 1
    assert fields["cell_bytes_per_token"] == pytest.approx(20_889.6)
    assert result.kv_cache_tokens == 514_007
    assert fields["max_running_requests"] == 2_048
    # B200: trtllm_mha, 64-token pages: 514,007 // 64 = 8,031 pages = 513,984 tokens; SWA
    # int(513,984 × 0.8) = 411,187 → 6,424 × 64 = 411,136.
    result, fields = plan("meta-llama/Llama-4-Scout-17B-16E-Instruct", "B200", 8)
    assert resolved(fields)["attention_backend"] == "trtllm_mha"
    assert (result.block_size, result.kv_cache_tokens) == (64, 513_984)
    assert fields["swa_tokens"] == 411_136


# --- Qwen3.5 / Qwen3-Next (qwen3_5.py _qwen3_5_hybrid_overrides) ------------------------------

def test_qwen35_on_b200_takes_trtllm_mha_with_page_64_replacing_a_given_page() -> None:
    # Overlap on → _mamba_radix_cache_resolution picks extra_buffer before the override →
    # trtllm_mha with page_size 64, declared (last writer wins), so --page-size 16 becomes 64.
    result, fields = plan("Qwen/Qwen3.5-397B-A17B", "B200", 8)
    assert (resolved(fields)["attention_backend"], result.block_size) == ("trtllm_mha", 64)
    assert resolved(fields)["mamba_radix_cache_strategy"] == "extra_buffer"
    result, fields = plan("Qwen/Qwen3.5-397B-A17B", "B200", 8, page=16)
    assert result.block_size == 64
    assert "--page-size 16 replaced" in resolved(fields)["page_size_source"]
    # The radix cache off: no strategy, so trtllm_mha / 64 as well.
    result, fields = plan("Qwen/Qwen3.5-397B-A17B", "B200", 8, disable_radix_cache=True,
                          disable_overlap_schedule=True)
    assert (resolved(fields)["attention_backend"], result.block_size) == ("trtllm_mha", 64)


def test_qwen35_on_b200_without_overlap_takes_triton_and_page_1() -> None:
    # --disable-overlap-schedule, page unset: no_buffer with the radix cache on → the override
    # declares triton and page_size 1 (validate_mamba_no_buffer accepts both).
    result, fields = plan("Qwen/Qwen3.5-397B-A17B", "B200", 8, disable_overlap_schedule=True)
    assert resolved(fields)["attention_backend"] == "triton"
    assert (result.block_size, resolved(fields)["mamba_radix_cache_strategy"]) == (1, "no_buffer")


def test_qwen35_on_mi300x_given_triton_skips_aiters_factor() -> None:
    # The cookbook line's `--attention-backend triton` on MI300X: no override on HIP; the given
    # backend replaces get_default_attn_backend's aiter, so mem_fraction_static stays 0.8
    # (aiter at context 262,144 > 8,192 would make it 0.8 × 0.85 = 0.68).
    _, fields = plan("Qwen/Qwen3.5-397B-A17B", "MI300X", 8, kv_bytes=None,
                     mem_fraction_static=0.8)
    assert resolved(fields)["attention_backend"] == "aiter"
    assert resolved(fields)["mem_fraction_static"] == pytest.approx(0.68)
    result, fields = plan("Qwen/Qwen3.5-397B-A17B", "MI300X", 8, kv_bytes=None,
                          mem_fraction_static=0.8, attention_backend="triton")
    assert resolved(fields)["attention_backend"] == "triton"
    assert resolved(fields)["mem_fraction_static"] == pytest.approx(0.8)
    assert result.block_size == 1


# --- Gemma-4 (gemma4.py _gemma4_overrides): triton off SM100, ROCm included -----------------

def test_gemma4_on_mi300x_takes_triton_not_aiter() -> None:
    # triton: no aiter factor, mem_fraction_static 0.9 stands (aiter would give 0.765).
    _, fields = plan("google/gemma-4-26B-A4B", "MI300X", 1, kv_bytes=None,
                     mem_fraction_static=0.9)
    assert resolved(fields)["attention_backend"] == "triton"
    assert resolved(fields)["mem_fraction_static"] == pytest.approx(0.9)

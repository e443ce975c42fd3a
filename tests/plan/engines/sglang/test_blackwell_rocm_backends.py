"""SGLang 0.5.23 on Blackwell (SM100) and ROCm (MI300X): the attention backend it picks, the page
that backend takes, and ROCm's aiter memory factor (``plan/engines/sglang/backends.py``), each
worked by hand from a catalog config. Before these rules both platforms were refused ("page
size auto on sm100", "SGLang on ROCm ... is not reproduced"), so every test below failed.

No oracle case: the SGLang oracle tool (``../shared/oracles/sglang-tool/README.md``) runs
SGLang's CPU platform, where ``get_default_attn_backend`` answers ``torch_native`` and page 1;
its ``--emulate-cuda-capability`` patches only ``torch.cuda.get_device_capability`` (which the
DSA dtype rules read), not ``get_platform().is_sm100`` / ``is_hip``, which pick the backend. The
pool arithmetic for a given page size is the one the 159 oracle cases already check.

Budgets are given (``kv_cache_memory_bytes``) where tokens are asserted, so each number is
exact; the memory-fraction tests read SGLang's own formula on the preset.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.plan.api import plan_model
from kvledger.plan.engines.sglang.model import SglangLayoutError
from kvledger.plan.engines.sglang.options import SglangOptions
from kvledger.plan.request import PlanRequest

GIB = 1 << 30
ENGINE = "sglang==0.5.23"


def plan(model: str, gpu: str, tp: int = 1, *, kv_bytes: int | None = 10 * GIB,
         page: int | None = None, kv_dtype: str = "auto", fraction: float | None = None,
         context: int | None = None, spec: int = 0) -> tuple[Any, dict[str, Any]]:
    request = PlanRequest(
        engine=ENGINE, gpu=gpu, tensor_parallel_size=tp, kv_cache_memory_bytes=kv_bytes,
        block_size=page, kv_cache_dtype=kv_dtype, max_model_len=context,
        num_speculative_tokens=spec, speculative_method="mtp" if spec else None,
        sglang=SglangOptions(mem_fraction_static=fraction) if fraction is not None else None)
    result = plan_model(model, request)
    return result, result.engine_fields


# --- Blackwell (B200: sm100) -------------------------------------------------------------

def test_minimax_m25_on_b200_takes_trtllm_mha_and_64_token_pages() -> None:
    # The cookbook line `--model-path MiniMaxAI/MiniMax-M2.5 --tp 8` on B200.
    # MHA (62 layers, 8 KV heads × 128, equal K/V) on SM100 → trtllm_mha
    # (get_default_attn_backend); page unset → 64 (_mla_backend_page_constraints).
    # Cell: 8 heads / TP 8 = 1 a rank: 62 layers × (K + V) × 1 × 128 × 2 B (float16) = 31,744 B.
    # 10 GiB = 10,737,418,240 B / 31,744 = 338,250 tokens → whole 64-token pages:
    # 338,250 // 64 = 5,285 pages = 338,240 tokens.
    # max_running_requests: 338,240 / 196,608 (context) × 512 = 880 → clamped to 2,048.
    result, fields = plan("MiniMaxAI/MiniMax-M2.5", "B200", 8)
    assert fields["sglang_resolved"]["attention_backend"] == "trtllm_mha"
    assert result.block_size == 64
    assert fields["cell_bytes_per_token"] == 31_744
    assert result.kv_cache_tokens == 338_240
    assert fields["max_running_requests"] == 2_048


def test_llama_on_b200_keeps_a_page_trtllm_mha_takes_and_changes_one_it_does_not() -> None:
    # Cell: 32 layers × 2 × 8 heads × 128 × 2 B = 131,072 B; 10 GiB / 131,072 = 81,920 tokens
    # (a whole number of 64- and 16-token pages).
    result, _ = plan("meta-llama/Llama-3.1-8B", "B200")
    assert (result.block_size, result.kv_cache_tokens) == (64, 81_920)
    # --page-size 16: trtllm_mha keeps 16 / 32 / 64 / 128.
    result, _ = plan("meta-llama/Llama-3.1-8B", "B200", page=16)
    assert result.block_size == 16
    # --page-size 8: "changing page_size from 8 to 64".
    result, fields = plan("meta-llama/Llama-3.1-8B", "B200", page=8)
    assert result.block_size == 64
    assert "--page-size 8 changed" in fields["sglang_resolved"]["page_size_source"]


def test_kimi_k2_on_b200_takes_trtllm_mla_and_64_token_pages() -> None:
    # DeepseekV3ForCausalLM (Kimi-K2's class), non-DSA MLA on SM100 → trtllm_mla
    # (model_overrides/deepseek_v2.py); page 64.
    # Cell: 61 layers × (kv_lora_rank 512 + rope 64) × 2 B = 70,272 B (MLA: not split by TP).
    # 10 GiB / 70,272 = 152,797 tokens → 152,797 // 64 = 2,387 pages = 152,768 tokens.
    # max_running_requests: 152,768 / 131,072 × 512 = 596 → 2,048.
    result, fields = plan("moonshotai/Kimi-K2-Instruct", "B200", 8)
    assert fields["sglang_resolved"]["attention_backend"] == "trtllm_mla"
    assert (result.block_size, result.kv_cache_tokens) == (64, 152_768)
    assert fields["cell_bytes_per_token"] == 70_272
    assert fields["max_running_requests"] == 2_048


@pytest.mark.parametrize(("page", "kept"), [(32, 32), (64, 64), (16, 64), (128, 64)])
def test_trtllm_mla_keeps_32_or_64(page: int, kept: int) -> None:
    # "TensorRT-LLM MLA only supports page_size of 32 or 64, changing page_size ... to 64."
    result, _ = plan("deepseek-ai/DeepSeek-V3", "B200", 8, page=page)
    assert result.block_size == kept


def test_trtllm_mla_refuses_fp8_e5m2_in_sglangs_words() -> None:
    with pytest.raises(SglangLayoutError, match="only supports kv-cache-dtype of fp8_e4m3"):
        plan("deepseek-ai/DeepSeek-V3", "B200", 8, kv_dtype="fp8_e5m2")


# --- ROCm (MI300X: gfx942) ---------------------------------------------------------------

def test_llama_on_mi300x_takes_aiter_and_one_token_pages() -> None:
    # MHA on HIP → aiter; no backend page rule → _page_size_default's 1: 10 GiB / 131,072 B =
    # 81,920 tokens, 81,920 pages; max_running_requests 81,920 / 131,072 × 512 = 320 → 2,048.
    result, fields = plan("meta-llama/Llama-3.1-8B", "MI300X")
    assert fields["sglang_resolved"]["attention_backend"] == "aiter"
    assert fields["sglang_resolved"]["platform"] == "gfx942"
    assert (result.block_size, result.kv_cache_tokens) == (1, 81_920)
    assert fields["max_running_requests"] == 2_048


def test_mla_on_mi300x_takes_aiter_only_at_16_or_128_kv_heads_a_rank() -> None:
    # get_num_kv_heads(tp) = num_key_value_heads // tp: DeepSeek-V3 128 / 8 = 16 → aiter;
    # Kimi-K2 64 / 8 = 8 → triton. Page 1 either way: 10 GiB / 70,272 B = 152,797 tokens.
    result, fields = plan("deepseek-ai/DeepSeek-V3", "MI300X", 8)
    assert fields["sglang_resolved"]["attention_backend"] == "aiter"
    assert (result.block_size, result.kv_cache_tokens) == (1, 152_797)
    _, fields = plan("moonshotai/Kimi-K2-Instruct", "MI300X", 8)
    assert fields["sglang_resolved"]["attention_backend"] == "triton"
    _, fields = plan("deepseek-ai/DeepSeek-V3", "MI300X", 4)  # 128 / 4 = 32
    assert fields["sglang_resolved"]["attention_backend"] == "triton"


def test_aiter_scales_a_given_fraction_above_8192_context() -> None:
    # handle_attention_backend_compatibility: aiter and context_len > 8192 →
    # mem_fraction_static × 0.85: 0.9 × 0.85 = 0.765 at Llama-3.1-8B's 131,072; at
    # --context-length 8192 (not above) 0.9 stands.
    _, fields = plan("meta-llama/Llama-3.1-8B", "MI300X", kv_bytes=None, fraction=0.9)
    assert fields["sglang_resolved"]["mem_fraction_static"] == pytest.approx(0.765)
    _, fields = plan("meta-llama/Llama-3.1-8B", "MI300X", kv_bytes=None, fraction=0.9,
                     context=8192)
    assert fields["sglang_resolved"]["mem_fraction_static"] == 0.9


def test_rocm_default_fraction_has_no_prefill_graph_reserve_and_the_aiter_factor() -> None:
    # MI300X: rocminfo 201,310,208 KB = 196,592 MiB (> 160 GiB): chunked 16,384, max_bs 512.
    # reserved = 512 + 16,384 × 1.5 + TP 1 × PP 1 / 8 × 1,024 + decode graphs 512 × 2
    #          = 512 + 24,576 + 128 + 1,024 = 26,240 MiB (no prefill-graph reserve: the
    #          breakable prefill graph is on by default on CUDA only, default_prefill_backend)
    # round((196,592 − 26,240) / 196,592, 3) = round(0.86652, 3) = 0.867; aiter at 131,072
    # context: × 0.85 = 0.73695.
    _, fields = plan("meta-llama/Llama-3.1-8B", "MI300X", kv_bytes=None)
    assert fields["sglang_resolved"]["mem_fraction_static"] == pytest.approx(0.73695)
    # DeepSeek-V3 TP 8: 512 + 24,576 + 1,024 + 1,024 = 27,136 → round(0.86197, 3) = 0.862;
    # aiter (16 KV heads a rank) × 0.85 = 0.7327. Kimi-K2 TP 8 (triton): 0.862 unscaled.
    _, fields = plan("deepseek-ai/DeepSeek-V3", "MI300X", 8, kv_bytes=None)
    assert fields["sglang_resolved"]["mem_fraction_static"] == pytest.approx(0.7327)
    _, fields = plan("moonshotai/Kimi-K2-Instruct", "MI300X", 8, kv_bytes=None)
    assert fields["sglang_resolved"]["mem_fraction_static"] == pytest.approx(0.862)


# --- what is not read stays refused, by name ---------------------------------------------

@pytest.mark.parametrize(("model", "gpu", "tp", "spec", "words"), [
    ("meta-llama/Llama-3.1-8B", "RTX-PRO-6000", 1, 0, "page size auto on sm120"),
    ("nvidia/Nemotron-H-56B-Base-8K", "B200", 8, 0, "model override"),
    ("deepseek-ai/DeepSeek-V3", "B200", 8, 1, "speculative decoding on sm100"),
])
def test_unread_combinations_are_refused_by_name(model: str, gpu: str, tp: int, spec: int,
                                                 words: str) -> None:
    with pytest.raises(SglangLayoutError, match=words):
        plan(model, gpu, tp, spec=spec)

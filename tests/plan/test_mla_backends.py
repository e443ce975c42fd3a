"""The dense MLA backend each GPU's capability picks, and the ``--block-size auto`` that follows.

Expected values are read from vLLM 0.33's source (``platforms/cuda.py
_get_backend_priorities`` and each backend's ``supported_kv_cache_dtypes`` /
``get_supported_kernel_block_sizes`` / ``supports_compute_capability`` under
``v1/attention/backends/mla/``; see ``mla_backends.py``). SM100 and SM80 are also confirmed by
the 0.33 oracle (``tests/oracles/vllm-0.33/vllm-0.33-new-behaviour.jsonl``, DeepSeek-V2-Lite:
block 32 and 8,630 blocks on SM100, 16 and 17,260 on SM80). The SM90 fp8 row (FlashMLA, 64)
cannot be: the CPU oracle has no FlashMLA kernel and falls back to TRITON_MLA (16) there, so
that row is checked against the source only.
"""

from __future__ import annotations

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.errors import VllmRefusesToStart
from kvledger.plan.engines.vllm.mla_backends import choose
from kvledger.plan.request import PlanRequest

# DeepSeek-R1 / V2 dimensions (qk_nope 128, qk_rope 64, v 128).
R1 = {"qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}


@pytest.mark.parametrize(("cap", "dtype", "name", "auto_block"), [
    ((9, 0), "auto", "FLASH_ATTN_MLA", 16),   # MultipleOf(16) takes 16
    ((9, 0), "fp8", "FLASHMLA", 64),          # FA-MLA lists no fp8; FlashMLA is exactly [64]
    ((10, 0), "auto", "FLASHINFER_MLA", 32),  # [32, 64]: 16 not taken, smallest is 32
    ((10, 0), "fp8", "FLASHINFER_MLA", 32),
    ((8, 0), "auto", "TRITON_MLA", 16),       # FA-MLA SM90 only, FlashMLA dense Hopper only
    ((8, 9), "fp8", "TRITON_MLA", 16),
    ((12, 0), "auto", "TRITON_MLA", 16),      # SM12x's list is TRITON_MLA alone
])
def test_backend_and_auto_block(cap: tuple[int, int], dtype: str, name: str,
                                auto_block: int) -> None:
    backend = choose(cap, dtype, R1, None)
    assert backend is not None
    assert (backend.name, backend.preferred_block()) == (name, auto_block)


def test_flashinfer_mla_needs_its_qk_nope_head_dim() -> None:
    # FlashInferMLABackend.supports_combination: qk_nope_head_dim in [64, 128, 192]; 96 is
    # not, TOKENSPEED_MLA wants R1 dims (and fp8), so CUTLASS_MLA ([128]) is next.
    odd = {**R1, "qk_nope_head_dim": 96}
    backend = choose((10, 0), "auto", odd, None)
    assert backend is not None and (backend.name, backend.preferred_block()) == (
        "CUTLASS_MLA", 128)


def test_a_user_block_the_first_backends_refuse_falls_to_triton() -> None:
    # --block-size 16 on SM100: FLASHINFER_MLA [32, 64] and CUTLASS_MLA [128] refuse it.
    backend = choose((10, 0), "auto", R1, 16)
    assert backend is not None and backend.name == "TRITON_MLA"
    # 8 is no multiple of 16: no backend at all.
    assert choose((10, 0), "auto", R1, 8) is None


def _dsv2_lite() -> dict[str, object]:
    # DeepSeek-V2-Lite's cache-shaping values (its config.json): 27 layers, MLA with
    # kv_lora_rank 512 + qk_rope_head_dim 64 = 576 elements a token a layer.
    return {
        "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
        "num_hidden_layers": 27, "hidden_size": 2048, "num_attention_heads": 16,
        "num_key_value_heads": 16, "kv_lora_rank": 512, "q_lora_rank": None,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "max_position_embeddings": 163840, "torch_dtype": "bfloat16", "vocab_size": 102400,
        "intermediate_size": 10944, "moe_intermediate_size": 1408, "n_routed_experts": 64,
        "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
        "moe_layer_freq": 1, "rope_theta": 10000,
    }


@pytest.mark.parametrize(("gpu", "block", "blocks"), [
    # A page a block: block × 576 × 2 B × 27 layers. 8 GiB = 8,589,934,592 B.
    # SM90: 16 × 31,104 = 497,664 B a block → 17,260 blocks (276,160 tokens).
    (None, 16, 17_260),
    # SM100: 32 × 31,104 = 995,328 B a block → 8,630 blocks (the same 276,160 tokens).
    ("B200", 32, 8_630),
    ("A100-80GB", 16, 17_260),
])
def test_plan_follows_the_gpu(gpu: str | None, block: int, blocks: int) -> None:
    facts = derive_model(_dsv2_lite())
    plan = plan_vllm(facts, PlanRequest(engine="vllm==0.33", gpu=gpu, max_model_len=32768,
                                        kv_cache_memory_bytes=8 * 2**30), 8 * 2**30)
    assert (plan.block_size, plan.num_blocks, plan.kv_cache_tokens) == (block, blocks, 276_160)


def test_no_mla_backend_takes_the_block_size() -> None:
    facts = derive_model(_dsv2_lite())
    # vLLM's words (startup.check_block_size): no backend splits 8 into kernel blocks.
    with pytest.raises(VllmRefusesToStart, match="No valid attention backend found for cuda "
                                                 "with block_size=8"):
        plan_vllm(facts, PlanRequest(engine="vllm==0.33", gpu="B200", max_model_len=32768,
                                     block_size=8, kv_cache_memory_bytes=8 * 2**30),
                  8 * 2**30)

"""DeepSeek-V4's fp8 checkpoints hold MXFP4 experts (vLLM 0.33 models/deepseek_v4/
quant_config.py ``DeepseekV4FP8Config``: ``expert_dtype`` "fp4", the default, or "fp8")."""

from __future__ import annotations

from typing import Any

from kvledger.plan.weights import estimate_weights

# The tiny DeepSeek-V4 of tests/derive/test_params_encdec_draft.py (9,267 parameters: routed
# experts 2,304; attention 3,540 and shared experts 1,152 quantized; 2,271 left dense), with
# the fp8 block quantization the real checkpoints state.
TINY: dict[str, Any] = {
    "model_type": "deepseek_v4", "architectures": ["DeepseekV4ForCausalLM"],
    "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 2,
    "num_key_value_heads": 1, "head_dim": 8, "qk_rope_head_dim": 4, "q_lora_rank": 4,
    "o_lora_rank": 4, "o_groups": 2, "compress_ratios": [0, 4, 128], "index_n_heads": 2,
    "index_head_dim": 4, "index_topk": 4, "hc_mult": 2, "n_routed_experts": 2,
    "n_shared_experts": 1, "num_experts_per_tok": 1, "moe_intermediate_size": 8,
    "vocab_size": 10, "tie_word_embeddings": False, "num_nextn_predict_layers": 0,
    "sliding_window": 8, "max_position_embeddings": 64, "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128],
                            "fmt": "e4m3", "scale_fmt": "ue8m0"},
}


def test_experts_are_mxfp4_in_an_fp8_checkpoint() -> None:
    # Routed experts 2,304 × 4.25 bits (4 bits + one ue8m0 scale per 32) = 9,792 bits;
    # fp8 linears 4,692 × (8 + 32 / (128 × 128)) = 37,545.1640625 bits; dense 2,271 × 16 =
    # 36,336 bits. Total 83,673.1640625 bits → 10,460 B (rounded up).
    est = estimate_weights(TINY, "bfloat16", stored=True)
    assert est.bytes == 10_460
    assert est.by_dtype is not None and est.by_dtype["mxfp4"] == 9_792 // 8
    assert "routed_experts at mxfp4" in est.how


def test_expert_dtype_fp8_keeps_them_fp8() -> None:
    # Flash-Base: expert_dtype "fp8" — experts at fp8 like the other linears:
    # (4,692 + 2,304) × 8.001953125 = 55,981.662109375 bits + 36,336 = 92,317.66 → 11,540 B.
    est = estimate_weights({**TINY, "expert_dtype": "fp8"}, "bfloat16", stored=True)
    assert est.bytes == 11_540
    assert est.by_dtype is not None and "mxfp4" not in est.by_dtype

"""ModelOpt's per-layer exclude_modules (plan/modelopt_exclude.py): the share of each linear
category an NVFP4 checkpoint keeps in the model dtype, layer by layer, worked by hand."""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.derive.params import count_parameters
from kvledger.plan.weights import WeightsError, estimate_weights

# A small DeepSeek-V3 (MLA, q_lora_rank) with dense layers first, then MoE layers. One layer's
# attention as vLLM deepseek_v2.py builds it: fused_qkv_a_proj 64·16 + 64·(8 + 2) = 1,664,
# q_b_proj 16·2·(4 + 2) = 192, kv_b_proj 8·2·(4 + 4) = 128, o_proj 2·4·64 = 512 → 2,496.
# A dense MLP 3·64·32 = 6,144; a MoE layer's shared expert 3·64·8 = 1,536.
ATTN_LAYER = 2_496


def _config(layers: int, dense: int) -> dict[str, Any]:
    return {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"],
            "hidden_size": 64, "num_hidden_layers": layers, "num_attention_heads": 2,
            "num_key_value_heads": 2, "q_lora_rank": 16, "kv_lora_rank": 8,
            "qk_nope_head_dim": 4, "qk_rope_head_dim": 2, "v_head_dim": 4,
            "intermediate_size": 32, "moe_intermediate_size": 8, "n_routed_experts": 2,
            "n_shared_experts": 1, "num_experts_per_tok": 1, "first_k_dense_replace": dense,
            "num_nextn_predict_layers": 0, "vocab_size": 10, "tie_word_embeddings": False,
            "torch_dtype": "bfloat16"}


def _nvfp4(exclude: list[str]) -> dict[str, Any]:
    return {"producer": {"name": "modelopt"},
            "quantization": {"quant_algo": "NVFP4", "exclude_modules": exclude}}


def _stored(cfg: dict[str, Any], exclude: list[str]) -> int:
    return estimate_weights(cfg, "bfloat16", _nvfp4(exclude), stored=True).bytes


def test_the_attention_count_is_the_modules_summed() -> None:
    assert count_parameters(_config(2, 1)).categories["attn"] == 2 * ATTN_LAYER


def test_excluded_projections_of_one_layer_stay_16_bit() -> None:
    # Layer 0's q_a / kv_a (one fused module: every shard listed), q_b and kv_b stay in
    # bfloat16, its o_proj is quantized: 1,664 + 192 + 128 = 1,984; layer 1's shared expert
    # (a wildcard) 1,536. (1,984 + 1,536) · (16 − 4.5) bits = 40,480 bits = 5,060 B more than
    # with only lm_head excluded.
    cfg = _config(2, 1)
    exclude = ["lm_head", "model.layers.0.self_attn.q_a_proj",
               "model.layers.0.self_attn.kv_a_proj_with_mqa", "model.layers.0.self_attn.q_b_proj",
               "model.layers.0.self_attn.kv_b_proj", "model.layers.1.mlp.shared_experts*"]
    assert _stored(cfg, exclude) - _stored(cfg, ["lm_head"]) == 5_060


def test_a_whole_dense_layer_excluded_leaves_the_experts_quantized() -> None:
    # Layers 0 and 1 dense, layer 2 MoE; "model.layers.1.*" keeps layer 1's attention and
    # dense MLP: (2,496 + 6,144) · 11.5 bits = 99,360 bits = 12,420 B. (A probe of layer 1's
    # experts read that pattern as "every expert unquantized".)
    cfg = _config(3, 2)
    assert _stored(cfg, ["lm_head", "model.layers.1.*"]) - _stored(cfg, ["lm_head"]) == 12_420


def test_a_family_not_named_keeps_the_probe_rule_and_warns() -> None:
    cfg = {**_config(2, 1), "model_type": "minimax_m2", "architectures": ["MiniMaxM2ForCausalLM"]}
    est = estimate_weights(cfg, "bfloat16", _nvfp4(["model.layers.0.self_attn*"]), stored=True)
    assert any("layer by layer" in w for w in est.warnings), est.warnings


def test_an_excluded_mtp_layer_stays_16_bit_with_its_eh_proj() -> None:
    # One MTP layer (index 2, a MoE layer) excluded whole ("model.layers.2*"): its attention
    # 2,496, its eh_proj 2·64·64 = 8,192 (deepseek_mtp.py: a plain nn.Linear, never
    # quantized), its experts 2·1,536 = 3,072 and shared expert 1,536 stay in bfloat16. The
    # eh_proj is 16-bit either way; against the lm_head-only list (which quantizes it with
    # the rest): (2,496 + 8,192 + 3,072 + 1,536) · 11.5 bits = 175,904 bits = 21,988 B.
    cfg = {**_config(2, 1), "num_nextn_predict_layers": 1}
    assert count_parameters(cfg).mtp["attn"] == ATTN_LAYER + 8_192
    assert _stored(cfg, ["lm_head", "model.layers.2*"]) - _stored(cfg, ["lm_head"]) == 21_988


def test_a_flat_modelopt_block_in_config_json_is_read_like_hf_quant_config() -> None:
    # nvidia's newer exports write ModelOpt into config.json (quant_method "modelopt",
    # quant_algo, ignore); vLLM modelopt.py from_config reads that flat block the same way.
    cfg = _config(2, 1)
    exclude = ["lm_head", "model.layers.1.mlp.shared_experts*"]
    flat = {**cfg, "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4",
                                           "producer": {"name": "modelopt"}, "ignore": exclude}}
    assert estimate_weights(flat, "bfloat16", stored=True).bytes == _stored(cfg, exclude)
    mixed = {**cfg, "quantization_config": {"quant_method": "modelopt",
                                            "quant_algo": "MIXED_PRECISION"}}
    with pytest.raises(WeightsError, match="MIXED_PRECISION"):
        estimate_weights(mixed, "bfloat16", stored=True)

"""``derive/params/`` against parameter counts worked by hand from the configs' values.

Every expected number below is arithmetic on the config shown (comments), never a value the
code under test produced.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.derive.errors import ConfigError
from kvledger.derive.params import count_parameters, moe_layers, nas_intermediate_size
from kvledger.plan.weights import estimate_weights
from kvledger.source.resolve import load_source

# Jamba-1.5-Mini's shape (ai21labs/AI21-Jamba-1.5-Mini config.json): 32 layers, attention
# every 8th from 4, experts every 2nd from 1 (16 experts, top-2), Mamba elsewhere.
JAMBA_MINI: dict[str, Any] = {
    "model_type": "jamba", "architectures": ["JambaForCausalLM"], "hidden_size": 4096,
    "num_hidden_layers": 32, "attn_layer_period": 8, "attn_layer_offset": 4,
    "expert_layer_period": 2, "expert_layer_offset": 1, "num_experts": 16,
    "num_experts_per_tok": 2, "intermediate_size": 14336, "vocab_size": 65536,
    "num_attention_heads": 32, "num_key_value_heads": 8, "mamba_d_state": 16,
    "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": 256, "mamba_conv_bias": True,
    "mamba_proj_bias": False, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}


def test_jamba_mini_by_hand() -> None:
    # embed = lm_head = 65,536 × 4,096 = 268,435,456 each → 536,870,912.
    # Attention layers: i % 8 == 4 → 4, 12, 20, 28 (4 layers), each
    #   q 4,096 × 32 × 128 + k, v 2 × 4,096 × 8 × 128 + o 32 × 128 × 4,096
    #   = 16,777,216 + 8,388,608 + 16,777,216 = 41,943,040 → × 4 = 167,772,160.
    # Mamba layers: the other 28, d_inner = 2 × 4,096 = 8,192, each
    #   in_proj 4,096 × 16,384 = 67,108,864; x_proj 8,192 × (256 + 2 × 16) = 2,359,296;
    #   dt_proj 256 × 8,192 = 2,097,152 (+ bias 8,192); out_proj 8,192 × 4,096 = 33,554,432;
    #   conv1d 8,192 × 4 = 32,768 (+ bias 8,192); A_log 8,192 × 16 = 131,072; D 8,192;
    #   dt / B / C RMSNorms 256 + 16 + 16 = 288
    #   = 105,119,744 + 188,704 = 105,308,448 → × 28 = 2,948,636,544.
    # MoE layers: i % 2 == 1 (16 layers), 16 experts × 3 × 4,096 × 14,336 = 2,818,572,288
    #   + router 4,096 × 16 = 65,536 → 2,818,637,824 × 16 = 45,098,205,184.
    # Dense MLP layers: the other 16, 3 × 4,096 × 14,336 = 176,160,768 → 2,818,572,288.
    # Norms: 2 × 32 × 4,096 + 4,096 = 266,240.
    # Total 536,870,912 + 167,772,160 + 2,948,636,544 + 45,098,205,184 + 2,818,572,288
    #   + 266,240 = 51,570,323,328 (AI21: "52B total"; the estimate it replaces said 92.08B).
    p = count_parameters(JAMBA_MINI)
    assert p.categories["routed_experts"] == 16 * 2_818_572_288
    assert p.categories["router"] == 16 * 65_536
    assert p.categories["dense_mlp"] == 2_818_572_288
    assert p.categories["embed"] == p.categories["lm_head"] == 268_435_456
    assert p.total == 51_570_323_328
    assert p.warnings == ()
    assert moe_layers_of(JAMBA_MINI)[:4] == [False, True, False, True]


def moe_layers_of(cfg: dict[str, Any]) -> list[bool]:
    from kvledger.derive.config import Config

    return moe_layers(Config(cfg, model="t"), cfg["num_hidden_layers"])


@pytest.mark.parametrize(("mult", "width"), [
    # int(2 × mult × 8,192 / 3), rounded up to a multiple of 256 (DeciLM _find_multiple)
    (5.25, 28672),    # 28,672.0 → 28,672 (112 × 256)
    (2.625, 14336),   # 14,336.0 → 14,336
    (1.3125, 7168),   # 7,168.0 → 7,168
    (1.0, 5632),      # 5,461.33 → 5,461 → 5,632 (22 × 256)
    (0.5, 2816),      # 2,730.67 → 2,730 → 2,816 (11 × 256)
    (3.28125, 17920),  # 17,920.0 → 17,920 (70 × 256)
])
def test_nas_ffn_width(mult: float, width: int) -> None:
    assert nas_intermediate_size(mult, 8192) == width


def test_nemotron_super_49b_block_configs_by_hand() -> None:
    # The catalog's config (nvidia/Llama-3_3-Nemotron-Super-49B-v1): hidden 8,192, 64 heads ×
    # 128, vocab 128,256 untied, 80 blocks. Its block_configs: 49 blocks with attention
    # (n_heads_in_group 8 → 8 KV heads), 31 with no_op attention; FFN widths (ffn_mult):
    # 49 × 5.25, 6 × 2.625, 10 × 1.3125, 8 × 1.0, 6 × 0.5, 1 × 3.28125 (checked below).
    cfg = load_source("nvidia/Llama-3_3-Nemotron-Super-49B-v1").config
    blocks = cfg["block_configs"]
    assert sum(1 for b in blocks if not b["attention"]["no_op"]) == 49
    mults = sorted(b["ffn"]["ffn_mult"] for b in blocks)
    assert [mults.count(m) for m in (5.25, 2.625, 1.3125, 1.0, 0.5, 3.28125)] == \
        [49, 6, 10, 8, 6, 1]
    # Attention: 8,192 × (64 + 2 × 8) × 128 + 64 × 128 × 8,192 = 83,886,080 + 67,108,864
    #   = 150,994,944 × 49 = 7,398,752,256.
    # MLPs, 3 × 8,192 × width: 28,672 → 704,643,072 × 49 = 34,527,510,528;
    #   14,336 → 352,321,536 × 6 = 2,113,929,216; 7,168 → 176,160,768 × 10 = 1,761,607,680;
    #   5,632 → 138,412,032 × 8 = 1,107,296,256; 2,816 → 69,206,016 × 6 = 415,236,096;
    #   17,920 → 440,401,920 × 1 = 440,401,920; sum 40,365,981,696.
    # Embeddings + head: 2 × 128,256 × 8,192 = 2,101,346,304.
    # Norms: one before each present sub-block, 49 + 80 = 129, and the final: 130 × 8,192
    #   = 1,064,960.
    # Total 7,398,752,256 + 40,365,981,696 + 2,101,346,304 + 1,064,960 = 49,867,145,216
    # (NVIDIA: 49.9B; the estimate it replaces said 88.00B).
    p = count_parameters(cfg)
    assert p.categories["attn"] == 7_398_752_256
    assert p.categories["dense_mlp"] == 40_365_981_696
    assert p.total == 49_867_145_216
    # bf16 on the GPUs: 2 × 49,867,145,216 = 99,734,290,432 B.
    assert estimate_weights(cfg, "bfloat16").bytes == 99_734_290_432


def test_nas_linear_replacements_by_hand() -> None:
    # Two blocks, hidden 16, 2 heads: block 0 attention replaced by one 16 × 16 linear
    # (256), FFN a 16 × 16 linear (256); block 1 no-op attention, FFN ffn_mult 3 →
    # int(2 × 3 × 16 / 3) = 32 → 256 (rounded up to 256): 3 × 16 × 256 = 12,288.
    # Norms: three present sub-blocks + final = 4 × 16 = 64. Embeddings 2 × 10 × 16 = 320.
    # Total 256 + 256 + 12,288 + 64 + 320 = 13,184.
    cfg = {"model_type": "nemotron-nas", "hidden_size": 16, "num_hidden_layers": 2,
           "num_attention_heads": 2, "vocab_size": 10, "tie_word_embeddings": False,
           "block_configs": [
               {"attention": {"replace_with_linear": True},
                "ffn": {"replace_with_linear": True}},
               {"attention": {"no_op": True}, "ffn": {"ffn_mult": 3}}]}
    assert count_parameters(cfg).total == 13_184


DEEPSEEK_TINY: dict[str, Any] = {
    "model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"],
    "hidden_size": 64, "num_hidden_layers": 3, "first_k_dense_replace": 1,
    "vocab_size": 100, "num_attention_heads": 4, "num_key_value_heads": 4,
    "q_lora_rank": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4,
    "v_head_dim": 8, "n_routed_experts": 4, "moe_intermediate_size": 16,
    "n_shared_experts": 1, "intermediate_size": 128, "topk_method": "noaux_tc",
    "num_experts_per_tok": 2, "num_nextn_predict_layers": 1, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def test_deepseek_v3_like_mla_moe_with_mtp_apart() -> None:
    # embed = lm_head = 100 × 64 = 6,400 each.
    # MLA per layer: q_a 64 × 32 = 2,048; q_b 32 × 4 × (8 + 4) = 1,536; kv_a 64 × (16 + 4)
    #   = 1,280; kv_b 16 × 4 × (8 + 8) = 1,024; o 4 × 8 × 64 = 2,048 → 7,936 linear;
    #   q_a / kv_a RMSNorms 32 + 16 = 48; the layer's two RMSNorms 128.
    # Layer 0 dense: 3 × 64 × 128 = 24,576. Layers 1-2 MoE: experts 4 × 3 × 64 × 16 = 12,288,
    #   shared 3 × 64 × 16 = 3,072, router 64 × 4 = 256, e_score_correction_bias 4 → 15,620.
    # Decoder: 12,800 + 3 × (7,936 + 48 + 128) + 24,576 + 2 × 15,620 + final norm 64
    #   = 12,800 + 24,336 + 24,576 + 31,240 + 64 = 93,016.
    # MTP layer (an MoE layer): 7,936 + 48 + 128 + 15,620 = 23,732; eh_proj 2 × 64 × 64
    #   = 8,192; enorm, hnorm, shared_head norm 3 × 64 = 192; its own embed_tokens and
    #   shared_head.head copies 2 × 6,400 = 12,800 → 44,916.
    p = count_parameters(DEEPSEEK_TINY)
    assert p.decoder == 93_016
    assert p.mtp_layers == 1 and p.mtp_total == 44_916
    assert p.categories["shared_experts"] == 2 * 3_072
    # Served (bf16): without MTP 93,016 × 2 = 186,032 B; speculating with MTP vLLM shares
    # the embedding and head: (93,016 + 44,916 - 12,800) × 2 = 250,264 B; stored: all of it,
    # (93,016 + 44,916) × 2 = 275,864 B.
    assert estimate_weights(DEEPSEEK_TINY, "bfloat16").bytes == 186_032
    assert estimate_weights(DEEPSEEK_TINY, "bfloat16", speculative_mtp=True).bytes == 250_264
    assert estimate_weights(DEEPSEEK_TINY, "bfloat16", stored=True).bytes == 275_864


def test_deepseek_v3_fp8_blocks_by_hand() -> None:
    # fp8 with 128 × 128 blocks: linears at 8 + 32 / 16,384 bits; embeddings, head, norms,
    # router and bias at bf16. Linear (decoder): attention 3 × 7,936 = 23,808, dense MLP
    # 24,576, experts 2 × 12,288 = 24,576, shared 2 × 3,072 = 6,144 → 79,104 parameters;
    # the rest 93,016 - 79,104 = 13,912 at 16 bits.
    # bits = 79,104 × (8 + 1 / 512) + 13,912 × 16 = 632,832 + 154.5 + 222,592
    #   = 855,578.5 → 106,947.3 B → 106,948 B (rounded up).
    cfg = {**DEEPSEEK_TINY, "quantization_config": {"quant_method": "fp8",
                                                    "weight_block_size": [128, 128]}}
    assert estimate_weights(cfg, "bfloat16").bytes == 106_948


def test_small_dense_gqa_with_tied_embeddings() -> None:
    # hidden 64, 2 layers, 4 heads × 16, 2 KV heads, MLP 128, vocab 100, tied:
    # embed 100 × 64 = 6,400 and no head; attention 64 × (64 + 2 × 32) + 64 × 64 = 12,288;
    # MLP 3 × 64 × 128 = 24,576; norms 2 × 64 = 128 → 36,992 a layer × 2 = 73,984;
    # final norm 64. Total 6,400 + 73,984 + 64 = 80,448; × 2 B = 160,896 B.
    cfg = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
           "intermediate_size": 128, "vocab_size": 100, "tie_word_embeddings": True}
    p = count_parameters(cfg)
    assert p.categories["lm_head"] == 0
    assert p.total == 80_448
    assert estimate_weights(cfg, "bfloat16").bytes == 160_896
    # Untied, the head adds 6,400 more.
    assert count_parameters({**cfg, "tie_word_embeddings": False}).total == 86_848


def test_qwen2_qkv_bias_and_qwen3_qk_norm() -> None:
    # The same shape as Qwen2 (q/k/v biases: 64 + 2 × 32 = 128 a layer → 256) and as Qwen3
    # (per-head q/k RMSNorms: 2 × 16 = 32 a layer → 64). Both tied here.
    base = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128,
            "vocab_size": 100, "tie_word_embeddings": True}
    assert count_parameters({**base, "model_type": "qwen2"}).total == 80_448 + 256
    assert count_parameters({**base, "model_type": "qwen3"}).total == 80_448 + 64


def test_gemma3_text_ties_by_its_class_default() -> None:
    # Gemma3TextConfig ties the embeddings when the file says nothing: no head counted.
    cfg = {"model_type": "gemma3_text", "hidden_size": 64, "num_hidden_layers": 1,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
           "intermediate_size": 128, "vocab_size": 100}
    assert count_parameters(cfg).categories["lm_head"] == 0


def test_qwen_moe_sparse_step_and_mlp_only_layers() -> None:
    # decoder_sparse_step 2: layers 1 and 3 sparse; mlp_only_layers [3] makes 3 dense again.
    cfg = {"model_type": "qwen3_moe", "decoder_sparse_step": 2, "mlp_only_layers": [3]}
    assert moe_layers_of({**cfg, "num_hidden_layers": 4}) == [False, True, False, False]
    # DeepSeek-V2: first_k_dense_replace 1, moe_layer_freq 2 → layers 2 only (of 0-3).
    ds = {"first_k_dense_replace": 1, "moe_layer_freq": 2, "num_hidden_layers": 4}
    assert moe_layers_of(ds) == [False, False, True, False]


def test_wrong_types_are_refused_not_skipped() -> None:
    with pytest.raises(ConfigError, match="n_routed_experts"):
        count_parameters({**DEEPSEEK_TINY, "n_routed_experts": "4"})


def test_unmodelled_layouts_say_so() -> None:
    # MiniMax-M3's layer layout has no formula here: the count says so, with the error it
    # may make.
    cfg = load_source("MiniMaxAI/MiniMax-M3").config
    p = count_parameters(cfg)
    assert any("no exact weight formula" in w and "%" in w for w in p.warnings)
    # Whisper's encoder is counted now (test_params_encdec_draft.py): no warning left.
    assert count_parameters(load_source("openai/whisper-tiny").config).warnings == ()


def test_minimax_lightning_attention_by_hand() -> None:
    # Two layers, attn_type_list [0, 1]: hidden 16, 2 heads × 8, 1 KV head, 2 experts of 32.
    # Lightning layer: qkv 16 × 3 × 16 = 768, output_gate 16 × 16 = 256, out 16 × 16 = 256,
    #   its norm 16 → 1,280 + 16. Softmax layer: q 16 × 16 + k, v 2 × 16 × 8 + o 16 × 16
    #   = 256 + 256 + 256 = 768. Each layer: experts 2 × 3 × 16 × 32 = 3,072, router 32, two
    #   norms 32. Embeddings 2 × 10 × 16 = 320, final norm 16.
    # Total 1,296 + 768 + 2 × (3,072 + 32 + 32) + 320 + 16 = 8,672.
    cfg = {"model_type": "minimax_m1", "hidden_size": 16, "num_hidden_layers": 2,
           "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8,
           "intermediate_size": 32, "num_local_experts": 2, "vocab_size": 10,
           "attn_type_list": [0, 1], "tie_word_embeddings": False}
    p = count_parameters(cfg)
    assert p.total == 8_672 and p.warnings == ()


def test_a_tower_without_sizes_is_named_with_its_likely_size() -> None:
    cfg = {"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"],
           "text_config": {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1,
                           "num_attention_heads": 4, "vocab_size": 10,
                           "intermediate_size": 128},
           "vision_config": {"model_type": "mystery_vision"}}
    p = count_parameters(cfg)
    assert p.towers == 0
    assert any("not counted" in w and "0.3" in w for w in p.warnings)


def test_implausible_sizes_are_refused_not_printed() -> None:
    # A tower config is guarded here (derive guards the text config only): a merge size of
    # 2 × 10^9 is refused, as is a count that multiplies out beyond 2^50 parameters, a NAS
    # block that is no object, and per-layer widths that do not match the layer count.
    wrapper = {"model_type": "qwen2_vl", "architectures": ["Qwen2VLForConditionalGeneration"],
               "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
               "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 10,
               "vision_config": {"spatial_merge_size": 2_000_000_000}}
    with pytest.raises(ConfigError, match="spatial_merge_size"):
        count_parameters(wrapper)
    huge = {"model_type": "llama", "hidden_size": 1 << 20, "num_hidden_layers": 1 << 12,
            "num_attention_heads": 1 << 10, "intermediate_size": 1 << 22, "vocab_size": 10}
    with pytest.raises(ConfigError, match="parameters"):
        count_parameters(huge)
    nas = {"model_type": "nemotron-nas", "hidden_size": 16, "num_hidden_layers": 1,
           "num_attention_heads": 2, "vocab_size": 10, "block_configs": [{"ffn": 1e30}]}
    with pytest.raises(ConfigError, match="block_configs"):
        count_parameters(nas)
    with pytest.raises(ConfigError, match="widths"):
        count_parameters({**huge, "hidden_size": 8, "num_hidden_layers": 2,
                          "num_attention_heads": 2, "intermediate_size": [16]})


# A small Gemma 4 text config (the E-models' keys, made-up sizes): 4 layers, the last 2
# reading earlier layers' caches (num_kv_shared_layers 2).
GEMMA4_TINY: dict[str, Any] = {
    "model_type": "gemma4_text", "architectures": ["Gemma4ForCausalLM"], "hidden_size": 64,
    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 1,
    "head_dim": 16, "global_head_dim": 32, "intermediate_size": 128, "vocab_size": 100,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention",
                    "full_attention"], "num_kv_shared_layers": 2, "use_double_wide_mlp": False,
    "hidden_size_per_layer_input": 0, "vocab_size_per_layer_input": 100,
    "tie_word_embeddings": True, "sliding_window": 32, "torch_dtype": "bfloat16",
}


def test_gemma4_double_wide_mlp_only_on_kv_shared_layers() -> None:
    # vLLM gemma4.py Gemma4DecoderLayer: the MLP is 2 × intermediate_size wide only where
    # layer_idx >= num_hidden_layers - num_kv_shared_layers = 2: layers 2 and 3 gain
    # 3 × 64 × 128 each = 2 × 24,576 = 49,152 parameters (not all four layers: 98,304).
    narrow = count_parameters(GEMMA4_TINY).decoder
    wide = count_parameters({**GEMMA4_TINY, "use_double_wide_mlp": True}).decoder
    assert wide - narrow == 49_152


def test_gemma4_per_layer_embeddings() -> None:
    # vLLM gemma4.py with hidden_size_per_layer_input = 8 (ple), 4 layers, hidden 64:
    # embed_tokens_per_layer 100 × (4 × 8) = 3,200; per_layer_model_projection 64 × 32 =
    # 2,048; per_layer_projection_norm 8; per layer per_layer_input_gate 64 × 8 = 512,
    # per_layer_projection 8 × 64 = 512, post_per_layer_input_norm 64 → 4 × 1,088 = 4,352.
    # 3,200 + 2,048 + 8 + 4,352 = 9,608.
    plain = count_parameters(GEMMA4_TINY).decoder
    ple = count_parameters({**GEMMA4_TINY, "hidden_size_per_layer_input": 8}).decoder
    assert ple - plain == 9_608

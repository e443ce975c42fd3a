"""Whisper (encoder-decoder) and EAGLE-3 drafts counted exactly, against arithmetic by hand
on the configs shown (never a value the code under test produced)."""

from __future__ import annotations

from typing import Any

from kvledger.derive.params import count_parameters

# openai/whisper-tiny's config.json (the sizes only; ../shared/configs/openai--whisper-tiny.json).
WHISPER_TINY: dict[str, Any] = {
    "model_type": "whisper", "architectures": ["WhisperForConditionalGeneration"],
    "d_model": 384, "encoder_layers": 4, "decoder_layers": 4, "encoder_attention_heads": 6,
    "decoder_attention_heads": 6, "encoder_ffn_dim": 1536, "decoder_ffn_dim": 1536,
    "num_mel_bins": 80, "max_source_positions": 1500, "max_target_positions": 448,
    "vocab_size": 51865, "num_hidden_layers": 4, "is_encoder_decoder": True,
}


def test_whisper_tiny_by_hand() -> None:
    # d = 384, ffn = 1,536.
    # Encoder: conv1 80 × 384 × 3 + 384 = 92,544; conv2 384 × 384 × 3 + 384 = 442,752;
    #   positions 1,500 × 384 = 576,000; per layer: q/k/v/out 4 × 384² = 589,824 + biases on
    #   q, v, out 3 × 384 = 1,152; fc1 + fc2 2 × 384 × 1,536 = 1,179,648 + biases 1,536 + 384;
    #   two LayerNorms 4 × 384 = 1,536 → 1,774,080 × 4 = 7,096,320; final LayerNorm 768.
    #   = 92,544 + 442,752 + 576,000 + 7,096,320 + 768 = 8,208,384.
    # Decoder: embed_tokens 51,865 × 384 = 19,916,160 (proj_out tied); positions 448 × 384 =
    #   172,032; per layer: self + cross attention 2 × (589,824 + 1,152) = 1,181,952, MLP
    #   1,179,648 + 1,920, three LayerNorms 2,304 → 2,365,824 × 4 = 9,463,296; final 768.
    #   = 19,916,160 + 172,032 + 9,463,296 + 768 = 29,552,256.
    # Total 37,760,640 (the whisper-tiny model card's "39 M" rounds the same checkpoint; its
    # fp32 model.safetensors holds 37,760,640 × 4 = 151,042,560 B of tensors).
    p = count_parameters(WHISPER_TINY)
    assert p.towers == 8_208_384  # the audio encoder, the model's tower
    assert p.decoder == 29_552_256
    assert p.categories["embed"] == 19_916_160
    assert p.categories["lm_head"] == 0
    assert p.categories["attn"] == 4 * 2 * 589_824
    assert p.total == 37_760_640
    assert p.warnings == ()


# sgl-project SpecForge's Llama-3-8B EAGLE-3 draft (../shared/configs/
# sgl-project--SpecForge-llama3-8B-eagle3.json).
EAGLE3_LLAMA3_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
    "num_hidden_layers": 1, "vocab_size": 128256, "draft_vocab_size": 32000,
    "tie_word_embeddings": False, "rms_norm_eps": 1e-05, "torch_dtype": "float16",
}


def test_eagle3_llama3_8b_draft_by_hand() -> None:
    # One layer, hidden 4,096, 32 heads × 128, 8 KV heads:
    #   qkv_proj reads 2 × 4,096 = 8,192: 8,192 × (32 + 2 × 8) × 128 = 50,331,648;
    #   o_proj 4,096 × 4,096 = 16,777,216; MLP 3 × 4,096 × 14,336 = 176,160,768;
    #   input_layernorm, hidden_norm, post_attention_layernorm 3 × 4,096 = 12,288.
    # fc: 3 aux hidden states × 4,096 → 4,096: 50,331,648. Final norm 4,096.
    # lm_head over the draft vocabulary: 32,000 × 4,096 = 131,072,000.
    # embed_tokens 128,256 × 4,096 = 525,336,576.
    # Total 50,331,648 + 16,777,216 + 176,160,768 + 12,288 + 50,331,648 + 4,096
    #   + 131,072,000 + 525,336,576 = 950,026,240 (424,689,664 without the embedding).
    p = count_parameters(EAGLE3_LLAMA3_8B)
    assert p.categories["lm_head"] == 131_072_000
    assert p.categories["embed"] == 525_336_576
    assert p.categories["attn"] == 50_331_648 + 16_777_216 + 50_331_648
    assert p.total == 950_026_240
    # The embedding's doubt is stated with its size, never silent.
    assert len(p.warnings) == 1 and "525,336,576" in p.warnings[0]


def test_eagle3_with_its_aux_layers_listed() -> None:
    # SpecForge's DeepSeek-V3 draft: hidden 7,168, 56 heads × 128, 8 KV heads, inter 40,960,
    # three aux layers listed (eagle_aux_hidden_state_layer_ids [1, 29, 57]).
    #   qkv 14,336 × (56 + 16) × 128 = 132,120,576; o 7,168 × 7,168 = 51,380,224;
    #   MLP 3 × 7,168 × 40,960 = 880,803,840; norms 3 × 7,168 = 21,504;
    #   fc 3 × 7,168 × 7,168 = 154,140,672; norm 7,168; lm_head 32,000 × 7,168 = 229,376,000;
    #   embed 129,280 × 7,168 = 926,679,040.
    #   Total 2,374,529,024.
    cfg = {**EAGLE3_LLAMA3_8B, "hidden_size": 7168, "intermediate_size": 40960,
           "num_attention_heads": 56, "vocab_size": 129280,
           "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 29, 57],
                            "use_aux_hidden_state": True}}
    assert count_parameters(cfg).total == 2_374_529_024


# ../shared/configs/meta-llama--Llama-3.2-Vision-mllama-4layer-TEST.json, its sizes.
MLLAMA_TEST: dict[str, Any] = {
    "architectures": ["MllamaForConditionalGeneration"], "model_type": "mllama",
    "text_config": {
        "model_type": "mllama_text_model", "cross_attention_layers": [2], "hidden_size": 8192,
        "intermediate_size": 28672, "num_attention_heads": 64, "num_key_value_heads": 8,
        "num_hidden_layers": 4, "vocab_size": 128256, "tie_word_embeddings": False,
        "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "torch_dtype": "bfloat16"},
    "vision_config": {
        "model_type": "mllama_vision_model", "attention_heads": 16, "hidden_size": 1280,
        "image_size": 560, "intermediate_size": 5120, "max_num_tiles": 4, "num_channels": 3,
        "num_global_layers": 8, "num_hidden_layers": 32, "patch_size": 14,
        "supported_aspect_ratios": [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [3, 1],
                                    [4, 1]],
        "vision_output_dim": 7680},
}


def test_mllama_text_and_vision_by_hand() -> None:
    # Text: 4 layers (cross-attention at 2), hidden 8,192, 64 heads × 128, 8 KV heads, inter
    #   28,672, vocab 128,256. embed (128,256 + 8) × 8,192 = 1,050,738,688; lm_head 128,256 ×
    #   8,192 = 1,050,673,152; attention per layer q 67,108,864 + k, v 16,777,216 + o
    #   67,108,864 = 150,994,944 × 4 = 603,979,776; MLP 3 × 8,192 × 28,672 = 704,643,072 × 4
    #   = 2,818,572,288; norms 2 × 8,192 × 4 = 65,536; the cross layer's q/k norms 2 × 128 and
    #   two gates = 258; final norm 8,192. = 5,524,037,890.
    # Vision: patch 3 × 14² × 1,280 = 752,640, class 1,280; positions (560 / 14)² + 1 = 1,601:
    #   gate 1 + 1,601 × 1,280 = 2,049,281, tile table 9 × 4 × 1,601 × 1,280 = 73,774,080;
    #   pre/post tile tables 2 × (9 × 4 × 1,280 + 1) = 92,162; pre/post LayerNorms 5,120;
    #   a layer 4 × 1,280² + 2 × 1,280 × 5,120 + 5,120 + 1,280 + 4 × 1,280 = 19,672,320:
    #   × 32 = 629,514,240, the 8 gated ones (+2 each) 157,378,576; projector 7,680 × 8,192
    #   + 8,192 = 62,922,752. = 926,490,131.
    p = count_parameters(MLLAMA_TEST)
    assert p.decoder == 5_524_037_890
    assert p.towers == 926_490_131
    assert p.total == 5_524_037_890 + 926_490_131
    assert p.warnings == ()


# arcee-ai/Trinity-Nano-Preview's sizes (../shared/configs/arcee-ai--Trinity-Nano-Preview.neuronx
# .json).
TRINITY_NANO: dict[str, Any] = {
    "architectures": ["AfmoeForCausalLM"], "model_type": "afmoe", "hidden_size": 1024,
    "num_hidden_layers": 56, "num_dense_layers": 2, "num_attention_heads": 8,
    "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 3072,
    "moe_intermediate_size": 256, "num_experts": 128, "num_experts_per_tok": 8,
    "num_shared_experts": 1, "vocab_size": 200192, "tie_word_embeddings": False,
    "global_attn_every_n_layers": 4, "sliding_window": 2048, "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05, "dtype": "bfloat16",
}


def test_afmoe_trinity_nano_by_hand() -> None:
    # embed + lm_head 2 × 200,192 × 1,024 = 409,993,216.
    # Per layer (56): qkv 1,024 × (8 + 2 × 2) × 128 = 1,572,864, o 1,024 × 1,024 = 1,048,576,
    #   the output gate 1,024 × 1,024 = 1,048,576 → 3,670,016 × 56 = 205,520,896; q/k norms
    #   2 × 128 + four norms 4 × 1,024 = 4,352 × 56 = 243,712.
    # Dense layers (2): 3 × 1,024 × 3,072 = 9,437,184 × 2 = 18,874,368.
    # MoE layers (54): experts 128 × 3 × 1,024 × 256 = 100,663,296, shared 3 × 1,024 × 256 =
    #   786,432, router 1,024 × 128 = 131,072, expert_bias 128 → 101,580,928 × 54 =
    #   5,485,370,112. Final norm 1,024.
    # Total 6,120,003,328 (Arcee: "6B total").
    p = count_parameters(TRINITY_NANO)
    assert p.categories["routed_experts"] == 54 * 100_663_296
    assert p.categories["shared_experts"] == 54 * 786_432
    assert p.categories["dense_mlp"] == 18_874_368
    assert p.total == 6_120_003_328
    assert p.warnings == ()


def test_qwen3_5_moe_has_qk_norms_and_the_shared_expert_gate() -> None:
    # qwen3_5.py builds Qwen3NextAttention (q_norm / k_norm) and Qwen3NextSparseMoeBlock
    # (shared_expert_gate) — missed before, the checked REAP checkpoint's decoder came out
    # 87,040 parameters low. Two layers, hidden 16:
    #   embed + lm_head 2 × 10 × 16 = 320;
    #   layer 0, Gated DeltaNet (1 key head × 4, 2 value heads × 4): in_proj_qkvz 16 × (8 + 16)
    #   = 384, in_proj_ba 16 × 4 = 64, out_proj 8 × 16 = 128 → 576; conv 16 channels × 4 = 64,
    #   dt_bias + A_log 4, norm 4 → 72;
    #   layer 1, gated attention (2 heads × 8, 1 KV head): q+gate 16 × 32 = 512, k, v 16 × 16 =
    #   256, o 16 × 16 = 256 → 1,024; q/k norms 2 × 8 = 16;
    #   every layer: two norms 32, experts 2 × 3 × 16 × 8 = 768, router 16 × 2 = 32, shared
    #   expert 3 × 16 × 8 = 384 + its gate 16 → 1,232 × 2 = 2,464; final norm 16.
    #   Total 320 + 576 + 72 + 1,024 + 16 + 2,464 + 16 = 4,488.
    cfg = {"model_type": "qwen3_5_moe_text", "architectures": ["Qwen3_5MoeForCausalLM"],
           "hidden_size": 16, "num_hidden_layers": 2,
           "layer_types": ["linear_attention", "full_attention"], "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 8, "linear_num_key_heads": 1,
           "linear_key_head_dim": 4, "linear_num_value_heads": 2, "linear_value_head_dim": 4,
           "linear_conv_kernel_dim": 4, "num_experts": 2, "num_experts_per_tok": 1,
           "moe_intermediate_size": 8, "shared_expert_intermediate_size": 8,
           "vocab_size": 10, "tie_word_embeddings": False, "mtp_num_hidden_layers": 0,
           "attn_output_gate": True, "full_attention_interval": 2}
    p = count_parameters(cfg)
    assert p.categories["shared_experts"] == 2 * (384 + 16)
    assert p.total == 4_488


def test_mimo_qwen2_biases_and_its_mtp_layer() -> None:
    # MiMo-7B's sizes (XiaomiMiMo/MiMo-7B-Base config.json): hidden 4,096, 36 layers, 32 heads ×
    # 128, 8 KV heads, inter 11,008, vocab 151,680, untied, attention_bias, 1 MTP layer.
    # mimo.py is Qwen2's model: q/k/v biases, none on o_proj.
    #   embed + lm_head 2 × 151,680 × 4,096 = 1,242,562,560;
    #   a layer: q 16,777,216 + k, v 8,388,608 + o 16,777,216 = 41,943,040, biases 4,096 +
    #   2 × 1,024 = 6,144, MLP 3 × 4,096 × 11,008 = 135,266,304, norms 8,192 → 177,223,680;
    #   × 36 = 6,380,052,480; final norm 4,096 → decoder 7,622,619,136.
    # MTP (mimo_mtp.py): one such layer + input_proj 2 × 4,096 × 4,096 = 33,554,432 + token /
    #   hidden / final norms 12,288 = 210,790,400.
    # Total 7,833,409,536 (a real MiMo fine-tune's bf16 index states 15,666,819,072 B = × 2).
    cfg = {"architectures": ["MiMoForCausalLM"], "model_type": "mimo", "hidden_size": 4096,
           "intermediate_size": 11008, "num_attention_heads": 32, "head_dim": 128,
           "num_hidden_layers": 36, "num_key_value_heads": 8, "vocab_size": 151680,
           "tie_word_embeddings": False, "attention_bias": True, "num_nextn_predict_layers": 1,
           "torch_dtype": "bfloat16", "max_position_embeddings": 32768}
    p = count_parameters(cfg)
    assert p.decoder == 7_622_619_136
    assert p.mtp_total == 210_790_400
    assert not any("MTP" in w or "biases and norms not checked" in w for w in p.warnings)


def test_kimi_k3_latent_moe_experts_by_hand() -> None:
    # The bundled Kimi-K3 config: 93 layers, first_k_dense_replace 1 (layers 1-92 MoE), 896
    # experts of moe_intermediate_size 3,072 working at routed_expert_hidden_size 3,584
    # (models/kimi_k3 KimiMoE: latent MoE), hidden 7,168.
    #   per MoE layer: experts 896 × 3 × 3,584 × 3,072 = 29,595,009,024, routed_expert_down_proj
    #   + routed_expert_up_proj 2 × 7,168 × 3,584 = 51,380,224 → 29,646,389,248;
    #   × 92 = 2,727,467,810,816 (at hidden 7,168 the experts alone would be twice that).
    # Shared experts stay at hidden: 3 × 7,168 × (2 × 3,072) × 92 = 12,155,092,992.
    from kvledger.source.resolve import load_source

    p = count_parameters(load_source("moonshotai/Kimi-K3").config)
    assert p.categories["routed_experts"] == 2_727_467_810_816
    assert p.categories["shared_experts"] == 12_155_092_992
    assert any("likely error under 1 %" in w for w in p.warnings)


def test_glm5_next_layers_count_as_mla_not_as_zero_width_gqa() -> None:
    # GLM-5.3-Flash (bundled): head_dim 0, so a GQA count gave no attention at all. As MLA
    # (deepseek_v2.py's shapes; hidden 4,096, 64 heads, q_lora 1,536, kv_lora 512, nope 256,
    # rope 0, v 256; DSA indexer 32 heads × 128) a layer is
    #   q_a 4,096 × 1,536 = 6,291,456; q_b 1,536 × 64 × 256 = 25,165,824;
    #   kv_a 4,096 × 512 = 2,097,152; kv_b 512 × 64 × (256 + 256) = 16,777,216;
    #   o 64 × 256 × 4,096 = 67,108,864; indexer wq_b 1,536 × 32 × 128 = 6,291,456 and wk
    #   4,096 × 128 = 524,288 → 124,256,256; × 45 layers = 5,591,531,520.
    from kvledger.source.resolve import load_source

    p = count_parameters(load_source("zai-org/GLM-5.3-Flash").config)
    assert p.categories["attn"] == 45 * 124_256_256
    assert any("(kda:glm)" in w and "likely error under 2 %" in w for w in p.warnings)


def test_deepseek_v4_layers_by_hand() -> None:
    # models/deepseek_v4 shapes on a tiny config: hidden 16, 2 heads × 8 (one KV head),
    # q_lora 4, o_lora 4 in 2 groups, compress_ratios [0, 4, 128], indexer 2 heads × 4,
    # hc_mult 2, 2 experts of 8 and one shared, vocab 10, untied.
    #   embed + lm_head 2 × 10 × 16 = 320.
    #   Every layer: fused_wqa_wkv 16 × (4 + 8) = 192, wq_b 4 × 2 × 8 = 64, wo_a 16 × 4 = 64,
    #   wo_b 2 × 4 × 16 = 128 → 448; q_norm 4, kv_norm 8, sinks 2, two norms 32 → 46;
    #   hyper-connections 2 × ((2 + 2) × 2 × 2 × 16 + 8 + 3) = 534; MoE experts 2 × 3 × 16 × 8
    #   = 768, router 32, shared 3 × 16 × 8 = 384 → 1,184. A layer: 2,212.
    #   Layer 1 (ratio 4): compressor ape 4 × 2 × 8 = 64 + fused_wkv_wgate 16 × 2 × 2 × 8 = 512
    #   + norm 8 = 584; indexer wq_b 4 × 2 × 4 = 32, its compressor 4 × 2 × 4 + 16 × 16 + 4 =
    #   292, weights_proj 16 × 2 = 32 → 3,152.
    #   Layer 2 (ratio 128): compressor 128 × 8 + 16 × 2 × 8 + 8 = 1,288 → 3,500.
    #   Final norm 16, hc_head 2 × 2 × 16 + 2 + 1 = 67.
    #   Total 320 + 2,212 + 3,152 + 3,500 + 16 + 67 = 9,267.
    cfg = {"model_type": "deepseek_v4", "architectures": ["DeepseekV4ForCausalLM"],
           "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 8, "qk_rope_head_dim": 4, "q_lora_rank": 4,
           "o_lora_rank": 4, "o_groups": 2, "compress_ratios": [0, 4, 128],
           "index_n_heads": 2, "index_head_dim": 4, "index_topk": 4, "hc_mult": 2,
           "n_routed_experts": 2, "n_shared_experts": 1, "num_experts_per_tok": 1,
           "moe_intermediate_size": 8, "vocab_size": 10, "tie_word_embeddings": False,
           "num_nextn_predict_layers": 0, "sliding_window": 8,
           "max_position_embeddings": 64}
    assert count_parameters(cfg).total == 9_267


def test_minimax_m3_dense_width_and_its_seven_mtp_modules() -> None:
    # The bundled MiniMax-M3 config: first_k_dense_replace 3, dense_intermediate_size 12,288
    # (models/minimax_m3 MiniMaxM3DecoderLayer sizes a dense layer's MLP by it), hidden 6,144:
    #   dense MLPs 3 × 3 × 6,144 × 12,288 = 679,477,248.
    # num_mtp_modules 7 (MiniMaxM3MultiTokenPredictor builds that many), beside
    # num_nextn_predict_layers 1.
    from kvledger.source.resolve import load_source

    p = count_parameters(load_source("MiniMaxAI/MiniMax-M3").config)
    assert p.categories["dense_mlp"] == 679_477_248
    assert p.mtp_layers == 7

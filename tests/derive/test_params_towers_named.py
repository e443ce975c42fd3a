"""Towers counted from the modules that build them (derive/params/towers_named.py), worked by
hand from the configs stated here. The real checkpoints each was checked against are in the
README's off-repo weights table (none is committed)."""

from __future__ import annotations

from typing import Any

from kvledger.derive.params import count_parameters, towers

# DeepSeek-OCR's SAM ViT-B (vLLM deepencoder.py build_sam_vit_b; sizes fixed in the code):
#   patch 3·16·16·768 + 768 = 590,592; positions 64·64·768 = 3,145,728;
#   a block: norms 4·768 = 3,072, qkv 768·2,304 + 2,304 = 1,771,776, proj 768² + 768 = 590,592,
#   MLP 768·3,072 + 3,072 + 3,072·768 + 768 = 4,722,432 → 7,087,872; 12 blocks 85,054,464;
#   relative positions 8 · 2·27·64 + 4 · 2·127·64 = 92,672;
#   neck 768·256 + 512 + 9·256² + 512 = 787,456; net_2 9·256·512 = 1,179,648;
#   net_3 9·512·1,024 = 4,718,592 (OCR-2: 9·512·896 = 4,128,768).
#   SAM = 95,569,152 (OCR-2: 94,979,328).
SAM_1024 = 95_569_152
SAM_896 = 94_979_328
# CLIP-L (deepseek_ocr.py's CLIPVisionConfig): class 1,024 + patch 3·14·14·1,024 = 602,112 +
#   257 positions · 1,024 = 263,168 + pre-LayerNorm 2,048 = 868,352; a layer: norms 4,096,
#   qkv 3·1,024² + 3,072, out 1,024² + 1,024, fc1 1,024·4,096 + 4,096, fc2 4,096·1,024 + 1,024
#   = 12,596,224; 24 layers 302,309,376. CLIP = 303,177,728.
CLIP_L = 303_177_728
# OCR-2's Qwen2 encoder (deepencoder2.py): a layer q 896² + 896, k/v 2·(896·128 + 128),
#   o 896², MLP 3·896·4,864, norms 2·896 = 14,912,384; 24 layers 357,897,216 + final norm 896
#   + queries (144 + 256)·896 = 358,400 → 358,256,512.
QWEN2_ENCODER = 358_256_512


def _ocr(arch: str, projector: dict[str, Any]) -> dict[str, Any]:
    return {"model_type": "DeepseekOCR", "architectures": [arch],
            "projector_config": projector, "vision_config": {"model_type": "vision"}}


def test_deepseek_ocr_sam_clip_projector_and_two_vectors() -> None:
    # + linear projector 2,048·1,280 + 1,280 = 2,622,720 + image_newline and view_seperator
    # 2·1,280: 95,569,152 + 303,177,728 + 2,622,720 + 2,560 = 401,372,160 (the real
    # DeepSeek-OCR checkpoint's tower, its int64 position_ids buffer apart).
    cfg = _ocr("DeepseekOCRForCausalLM",
               {"projector_type": "linear", "input_dim": 2048, "n_embed": 1280})
    n, warnings = towers(cfg, 1280)
    assert n == SAM_1024 + CLIP_L + 2_622_720 + 2_560 == 401_372_160
    assert warnings == []


def test_deepseek_ocr2_qwen2_encoder_and_mlp_projector() -> None:
    # downsample_mlp_gelu, input 8, n_embed 16, depth 3, ratio 2, downsample 2: Linear(32, 32)
    # + 32 = 1,056; one more Linear(32, 32) + 32 = 1,056; Linear(32, 16) + 16 = 528 → 2,640;
    # view_seperator 16. 94,979,328 + 358,256,512 + 2,640 + 16 = 453,238,496.
    cfg = _ocr("DeepseekOCR2ForCausalLM",
               {"projector_type": "downsample_mlp_gelu", "input_dim": 8, "n_embed": 16,
                "depth": 3, "mlp_ratio": 2, "downsample_ratio": 2})
    n, _ = towers(cfg, 1280)
    assert n == SAM_896 + QWEN2_ENCODER + 2_640 + 16 == 453_238_496


# A small encoder layer shared below (h 64, MLP 128, LayerNorms, biases): attention
# 4·64² + 4·64 = 16,640; MLP 2·64·128 + 128 + 64 = 16,576; norms 2·2·64 = 256 → 33,472.
LAYER = 33_472
SMALL = {"hidden_size": 64, "num_hidden_layers": 1, "intermediate_size": 128, "patch_size": 14}


def test_minicpmv_resampler_replaces_the_llava_projector() -> None:
    # SigLIP: patch 3·14·14·64 + 64 = 37,696; (28/14)² = 4 positions · 64 = 256; the layer
    # 33,472; post-LayerNorm 128 → 71,552. Resampler, e = 256: query 4·256 = 1,024; kv_proj
    # 64·256 = 16,384; in_proj 3·256² + 768 = 197,376; out_proj 256² + 256 = 65,792; three
    # LayerNorms 1,536; proj 256² = 65,536 → 347,648. Total 419,200.
    cfg = {"model_type": "minicpmv", "version": 2.6, "query_num": 4,
           "vision_config": {"model_type": "siglip_vision_model", "image_size": 28, **SMALL}}
    n, warnings = towers(cfg, 256)
    assert n == 71_552 + 347_648 == 419_200
    assert warnings == []
    gene = {**cfg, "use_gene_module": True, "gene_config": {"dim_model": 512}}
    assert "gene module" in towers(gene, 256)[1][0]


def test_minicpmv_version_gives_its_language_models_biases() -> None:
    # 2.6 is Qwen2 (vLLM minicpmv.py MiniCPMV2_6.init_llm): q/k/v biases 256 + 2·(2·64) = 512
    # more in one layer than 2.5 (Llama).
    base = {"model_type": "minicpmv", "hidden_size": 256, "num_hidden_layers": 1,
            "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512,
            "vocab_size": 100, "query_num": 4}
    v26 = count_parameters({**base, "version": 2.6}).categories["other"]
    v25 = count_parameters({**base, "version": 2.5}).categories["other"]
    assert v26 - v25 == 512


def test_rice_vit() -> None:
    # patch 3·14·14·64 = 37,632 (no bias); class_embedding 64; class_pos_emb (64/4)/2 = 8;
    # pre-LayerNorm 128; the layer 33,472; merger LayerNorm 128, Linear(256, 256) + 256 =
    # 65,792, Linear(256, 96) + 96 = 24,672. Total 161,896.
    cfg = {"vision_config": {"model_type": "rice_vit", "depth": 1, "num_heads": 4,
                             "spatial_merge_size": 2, "text_hidden_size": 96, **SMALL}}
    assert towers(cfg, 4096)[0] == 161_896


def test_moonvit_with_locateanything_and_kimi_vl_projectors() -> None:
    # patch 37,632 + 64 = 37,696; position table 4·4·64 = 1,024; the layer 33,472; final
    # LayerNorm 128 → 72,320. LocateAnything mlp1: LayerNorm(256) 512, Linear(256, 96) + 96 =
    # 24,672, Linear(96, 96) + 96 = 9,312 → 106,816. Kimi-VL: LayerNorm(64) 128,
    # Linear(256, 256) + 256 = 65,792, Linear(256, 96) + 96 = 24,672 → 162,912.
    v = {"model_type": "moonvit", "init_pos_emb_height": 4, "init_pos_emb_width": 4,
         "merge_kernel_size": [2, 2], **SMALL}
    assert towers({"model_type": "locateanything", "vision_config": v}, 96)[0] == 106_816
    assert towers({"model_type": "kimi_vl", "vision_config": v}, 96)[0] == 162_912


def test_videollama3_encoder_and_projector() -> None:
    # patch 37,696; the layer 33,472; post-LayerNorm 128; mlp2x_gelu Linear(64, 96) + 96 =
    # 6,240 and Linear(96, 96) + 96 = 9,312. Total 86,848.
    cfg = {"model_type": "videollama3_qwen2", "mm_projector_type": "mlp2x_gelu",
           "vision_encoder_config": {"model_type": "videollama3_vision_encoder", **SMALL}}
    assert towers(cfg, 96)[0] == 86_848


def test_locateanything_names_its_stored_lm_head() -> None:
    cfg = {"model_type": "locateanything",
           "text_config": {"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 1,
                           "num_attention_heads": 4, "num_key_value_heads": 2,
                           "intermediate_size": 128, "vocab_size": 10,
                           "tie_word_embeddings": True},
           "vision_config": {"model_type": "moonvit", **SMALL}}
    p = count_parameters(cfg)
    assert p.categories["lm_head"] == 0
    # vocab × hidden = 10·64 = 640.
    assert any("higher by 640 parameters" in w for w in p.warnings), p.warnings


def test_qwen3_vl_vision_with_deepstack_mergers() -> None:
    # Qwen3-VL-8B's vision_config (../shared/configs/Qwen--Qwen3-VL-8B-Instruct.json values):
    # patch 3·2·16·16·1,152 + 1,152 = 1,770,624; positions 2,304·1,152 = 2,654,208;
    # a block 4·1,152² + 4·1,152 + 2·1,152·4,304 + 4,304 + 1,152 + 4·1,152 = 15,239,504,
    # 27 blocks 411,466,608; merger 2·1,152 + (4,608² + 4,608) + (4,608·4,096 + 4,096) =
    # 40,119,040; three deepstack mergers (LayerNorm over 4,608) 3 · 40,125,952 = 120,377,856.
    # Total 576,388,336.
    v = {"model_type": "qwen3_vl", "deepstack_visual_indexes": [8, 16, 24], "depth": 27,
         "hidden_size": 1152, "in_channels": 3, "intermediate_size": 4304, "num_heads": 16,
         "num_position_embeddings": 2304, "out_hidden_size": 4096, "patch_size": 16,
         "spatial_merge_size": 2, "temporal_patch_size": 2}
    n, warnings = towers({"model_type": "qwen3_vl", "vision_config": v}, 4096)
    assert n == 576_388_336
    assert warnings == []

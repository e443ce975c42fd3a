"""Budget lines, GPU presets and weights: hand-worked from the config's own numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvledger.plan.budget import (
    BudgetTooSmall,
    Reserves,
    estimate_activation_peak,
    given_budget,
    gpu_budget,
)
from kvledger.plan.gpus import GPUS, gpu_preset
from kvledger.plan.request import PlanRequest
from kvledger.plan.weights import (
    Weights,
    WeightsError,
    estimate_total_bytes,
    model_weights,
    parameter_counts,
    safetensors_total_bytes,
)
from oracle_cases import CONFIGS
from plan.tiny_safetensors import write_safetensors

MIB = 1 << 20
GIB = 1 << 30

LLAMA_8B = {
    "hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 128256,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}


def test_every_issue_preset_exists_with_a_source() -> None:
    names = ("H100-80GB", "H100-94GB", "H200", "B200", "B300", "GB200", "A100-40GB", "A100-80GB",
             "L40S", "L4", "A10G", "RTX-4090", "RTX-5090", "MI300X", "MI325X", "MI355X")
    for name in names:
        preset = gpu_preset(name)
        assert preset.source and preset.basis in ("exact", "estimated")
    assert set(names) <= set(GPUS)
    # nvidia-smi 81,559 MiB = 85,520,809,984 B (the H100 total NVML reports).
    assert gpu_preset("h100-80gb").total_bytes == 85_520_809_984
    assert gpu_preset("H200").total_bytes == 143771 * MIB


def test_unknown_gpu_lists_known() -> None:
    with pytest.raises(ValueError, match="H100-80GB"):
        gpu_preset("TPU-v5")


def test_given_budget_is_one_given_line() -> None:
    budget = given_budget(10737418240)
    assert budget.available_bytes == 10737418240
    assert budget.as_lines() == [("KV cache memory (kv_cache_memory_bytes)", 10737418240,
                                  "given")]
    with pytest.raises(ValueError):
        given_budget(0)


def test_llama_8b_parameter_count_by_hand() -> None:
    # embed 128,256 × 4,096 = 525,336,576; lm_head the same (untied);
    # attention per layer: 4,096 × (32 + 2 × 8) × 128 + 32 × 128 × 4,096 = 41,943,040;
    # MLP per layer: 3 × 4,096 × 14,336 = 176,160,768; × 32 layers.
    counts = parameter_counts(LLAMA_8B)
    assert counts["embed"] == counts["lm_head"] == 525_336_576
    assert counts["attn"] == 32 * 41_943_040
    assert counts["dense_mlp"] == 32 * 176_160_768
    # norms: two RMSNorms a layer and the final one, (2 × 32 + 1) × 4,096 = 266,240.
    # total 2 × 525,336,576 + 32 × 218,103,808 + 266,240 = 8,030,261,248 params (the real
    # checkpoint's count) × 2 B = 16,060,522,496 B
    assert counts["other"] == 266_240
    total, how = estimate_total_bytes(LLAMA_8B, "bfloat16")
    assert total == 16_060_522_496
    assert "8.03B" in how


def test_fp8_weights_at_storage_size() -> None:
    # fp8 block-quantized linears: 8 bits + one fp32 scale per 128 × 128 = 8 + 32/16,384 bits.
    cfg = dict(LLAMA_8B, quantization_config={"quant_method": "fp8",
                                              "weight_block_size": [128, 128]})
    total, _ = estimate_total_bytes(cfg, "bfloat16")
    linear = 32 * (41_943_040 + 176_160_768)
    norms = 266_240  # (2 × 32 + 1) × 4,096 RMSNorm weights, left at bf16
    expected_bits = (2 * 525_336_576 + norms) * 16 + linear * (8 + 32 / 16384)
    assert abs(total - expected_bits / 8) <= 1  # rounded up to a whole byte


def test_nvfp4_hf_quant_config_excludes_lm_head() -> None:
    # NVFP4 = 4 bits + one fp8 scale per 16 = 4.5 bits on linears; lm_head excluded → bf16.
    quant = {"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}}
    total, how = estimate_total_bytes(LLAMA_8B, "bfloat16", quant)
    linear = 32 * (41_943_040 + 176_160_768)
    norms = 266_240  # (2 × 32 + 1) × 4,096 RMSNorm weights, left at bf16
    assert abs(total - ((2 * 525_336_576 + norms) * 2 + linear * 4.5 / 8)) < 2
    assert "NVFP4" in how


def test_block_without_quant_method_is_unquantized() -> None:
    # vLLM 0.32 reads a quantization_config that states no quant_method (and that ModelOpt did
    # not write) as no quantization (derive/quant.py states_no_method): FastDeploy's Paddle
    # block (ERNIE-4.5's test config) leaves every weight at bf16, 16,060,522,496 B as above.
    cfg = dict(LLAMA_8B, quantization_config={"dense_quant_type": "wint8",
                                              "moe_quant_type": "w4a8",
                                              "kv_cache_quant_type": "int8"})
    total, how = estimate_total_bytes(cfg, "bfloat16")
    assert total == 16_060_522_496
    assert "8.03B" in how


def test_unknown_quant_method_fails_closed() -> None:
    cfg = dict(LLAMA_8B, quantization_config={"quant_method": "mystery"})
    with pytest.raises(WeightsError, match="mystery"):
        estimate_total_bytes(cfg, "bfloat16")


def test_safetensors_headers_exact(tmp_path: Path) -> None:
    # 4 × 8 BF16 = 64 B; 10 F32 = 40 B; 3 × 3 F8 = 9 B → 113 B stored. Served in bfloat16
    # the F32 tensor (not a scale) is cast: 10 × 2 = 20 B → 64 + 20 + 9 = 93 B on the GPU.
    write_safetensors(tmp_path / "a.safetensors", {"w": ("BF16", [4, 8]), "b": ("F32", [10])})
    write_safetensors(tmp_path / "b.safetensors", {"q": ("F8_E4M3", [3, 3])})
    found = safetensors_total_bytes(tmp_path)
    assert found is not None and found[0] == 113
    weights = model_weights(LLAMA_8B, model_dtype="bfloat16", directory=tmp_path)
    assert (weights.total_bytes, weights.stored_bytes, weights.basis) == (93, 113, "exact")


def test_safetensors_index_total_size(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 16060522496}, "weight_map": {}}))
    weights = model_weights(LLAMA_8B, model_dtype="bfloat16", directory=tmp_path,
                            tensor_parallel_size=2, pipeline_parallel_size=2)
    # per GPU: ceil(16,060,522,496 / 4) = 4,015,130,624, an even split (estimated)
    assert weights.total_bytes == 16060522496 and weights.basis == "exact"
    assert weights.per_rank_bytes == 4_015_130_624 and weights.per_rank_basis == "estimated"


def test_gpu_budget_lines_by_hand() -> None:
    # H100-80GB: 85,520,809,984 B × 0.9 = int(76,968,728,985.6) = 76,968,728,985
    # − weights 16,060,522,496 − activation 1,000,000,000 − graphs 500,000,000
    # − non-torch 250,000,000 (all given) = 59,158,206,489
    weights = Weights(16060522496, 16060522496, "exact", "exact", "given for the test")
    budget = gpu_budget(
        gpu_preset("H100-80GB"), gpu_memory_utilization=0.9, weights=weights,
        request=PlanRequest(), cfg=LLAMA_8B, model_dtype="bfloat16",
        reserves=Reserves(activation_peak_bytes=1_000_000_000, cuda_graph_bytes=500_000_000,
                          non_torch_bytes=250_000_000),
    )
    assert budget.available_bytes == 59_158_206_489
    lines = budget.as_lines()
    assert [b for _, b, _ in lines] == [85_520_809_984, 76_968_728_985, 16_060_522_496,
                                        1_000_000_000, 500_000_000, 250_000_000,
                                        59_158_206_489]
    assert lines[-1][2] == "exact"  # every input exact or given
    assert budget.non_kv_bytes == 16_060_522_496 + 1_750_000_000


def test_default_reserves_are_labelled_estimated() -> None:
    weights = Weights(1, 1, "exact", "exact", "")
    budget = gpu_budget(gpu_preset("H200"), gpu_memory_utilization=0.9, weights=weights,
                        request=PlanRequest(), cfg=LLAMA_8B, model_dtype="bfloat16")
    basis = {label.split(" (")[0]: b for label, _, b in budget.as_lines()}
    assert basis["− activation peak"] == "estimated"
    assert basis["− CUDA graphs"] == "estimated"
    assert budget.as_lines()[-1][2] == "estimated"


def test_activation_estimate_by_hand() -> None:
    # 8,192 tokens × (2 × 14,336 + 4 × 4,096) × 2 B = 738,197,504 B (TP 1)
    # + logits min(256, 8,192) × 128,256 × 4 B = 131,334,144 B
    assert estimate_activation_peak(LLAMA_8B, PlanRequest(), "bfloat16") == \
        738_197_504 + 131_334_144


def test_budget_too_small_carries_lines() -> None:
    weights = Weights(200 * GIB, 200 * GIB, "estimated", "estimated", "too big")
    with pytest.raises(BudgetTooSmall) as info:
        gpu_budget(gpu_preset("L4"), gpu_memory_utilization=0.9, weights=weights,
                   request=PlanRequest(), cfg=LLAMA_8B, model_dtype="bfloat16")
    assert info.value.available_bytes < 0
    assert "GiB" in str(info.value) and len(info.value.lines) == 7


def test_hybrid_pattern_counts_one_mixer_per_layer() -> None:
    # "M*-": hidden 64, vocab 100 (untied), relu² MLP of 256, Mamba2 with 4 heads × 16 = 64
    # inner, 2 groups × state 8, attention 4 heads / 2 KV heads × head_dim 16.
    cfg = {"hidden_size": 64, "num_hidden_layers": 3, "vocab_size": 100,
           "hybrid_override_pattern": "M*-", "mlp_hidden_act": "relu2", "intermediate_size": 256,
           "mamba_num_heads": 4, "mamba_head_dim": 16, "n_groups": 2, "ssm_state_size": 8,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16}
    counts = parameter_counts(cfg)
    # Mamba: in_proj 64 × (2 × 64 + 2 × 2 × 8 + 4) = 64 × 164 = 10,496; out_proj 64 × 64 = 4,096
    # attention: 64 × (4 + 2 × 2) × 16 + 4 × 16 × 64 = 8,192 + 4,096 = 12,288
    assert counts["attn"] == 10_496 + 4_096 + 12_288
    # MLP: relu² has up and down only: 2 × 64 × 256 = 32,768
    assert counts["dense_mlp"] == 32_768
    assert counts["embed"] == counts["lm_head"] == 6_400


def test_float32_checkpoint_weights_at_serving_dtype() -> None:
    # A config stating float32 (or nothing) is served in bfloat16: 2 B per parameter.
    fp32 = dict(LLAMA_8B, torch_dtype="float32")
    total, how = estimate_total_bytes(fp32, "float32")
    assert total == 16_060_522_496 and "bfloat16" in how


def test_sparse_multimodal_text_config_weights_take_the_class_defaults() -> None:
    # llava-1.5-7b's text_config states only vocab_size 32064 (and its max length): LlavaConfig
    # builds it with LlamaConfig (transformers 5.19), which fills hidden 4096, 32 layers, 32
    # heads (32 KV heads), intermediate_size 11008 — derive reads the same defaults
    # (derive/model_types.py, the llava row's text_defaults). By hand:
    # embed = lm_head = 32,064 × 4,096 = 131,334,144 (untied);
    # attention per layer: 4,096 × (32 + 2 × 32) × 128 + 32 × 128 × 4,096 = 67,108,864;
    # MLP per layer: 3 × 4,096 × 11,008 = 135,266,304; × 32 layers = 6,476,005,376;
    # norms (2 × 32 + 1) × 4,096 = 266,240 → 6,738,939,904 text parameters (Vicuna-7B's).
    # The CLIP ViT-L/14-336 tower vLLM builds beside it (clip.py): patch conv 3 × 14² × 1,024
    # = 602,112 (no bias), class embedding 1,024, positions (336 / 14)² + 1 = 577 × 1,024 =
    # 590,848, pre-LayerNorm 2,048; a layer: q/k/v/o 4 × 1,024² + 4 × 1,024 = 4,198,400, MLP
    # 2 × 1,024 × 4,096 + 4,096 + 1,024 = 8,393,728, two LayerNorms 4,096 → 12,596,224.
    # vision_feature_layer -2: vLLM builds 23 of the 24 layers and no post-LayerNorm
    # (llava.py), 23 × 12,596,224 = 289,713,152. Projector 1,024 × 4,096 + 4,096 + 4,096² +
    # 4,096 = 20,979,712. Tower 602,112 + 1,024 + 590,848 + 2,048 + 289,713,152 + 20,979,712 =
    # 311,888,896. Total 6,738,939,904 + 311,888,896 = 7,050,828,800 × 2 B (float16)
    # = 14,101,657,600 B.
    from kvledger.plan.api import plan_model

    path = CONFIGS / "llava-hf--llava-1.5-7b-hf.json"
    result = plan_model(str(path), PlanRequest(gpu="H100-80GB", max_model_len=4096))
    [weights] = [line for line in result.to_json()["budget"] if line["key"] == "weights"]
    assert weights["bytes"] == 14_101_657_600
    assert weights["basis"] == "estimated"

"""Quantized weights as stored, over the architecture's count (plan/weights.py
``estimate_weights``), worked by hand."""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.plan.weights import WeightsError, estimate_weights

# hidden 128, one layer, 4 heads × 32 (2 KV heads), MLP 256, vocab 100, untied:
# embed = head = 100 × 128 = 12,800; attention 128 × (128 + 2 × 64) + 128 × 128 = 49,152;
# MLP 3 × 128 × 256 = 98,304; norms 2 × 128 + 128 = 384.
# Linear 49,152 + 98,304 = 147,456; the rest 25,600 + 384 = 25,984 at bf16.
TINY: dict[str, Any] = {"model_type": "llama", "hidden_size": 128, "num_hidden_layers": 1,
                        "num_attention_heads": 4, "num_key_value_heads": 2,
                        "intermediate_size": 256, "vocab_size": 100,
                        "tie_word_embeddings": False, "torch_dtype": "float16"}


@pytest.mark.parametrize("method", ["awq", "gptq"])
def test_int4_group_128(method: str) -> None:
    # qweight 4 bits + per group of 128 one fp16 scale and one packed 4-bit zero:
    # 4 + (16 + 4) / 128 = 4.15625 bits → 147,456 × 4.15625 = 612,864 bits;
    # rest 25,984 × 16 = 415,744 bits; 1,028,608 bits = 128,576 B.
    key = "w_bit" if method == "awq" else "bits"
    qc = {"quant_method": method, key: 4, "group_size": 128}
    cfg = {**TINY, "quantization_config": qc}
    est = estimate_weights(cfg, "float16")
    assert est.bytes == 128_576
    assert f"{method} 4-bit" in est.how
    # Stored the same way (the checkpoint holds what vLLM loads).
    assert estimate_weights(cfg, "float16", stored=True).bytes == 128_576


def test_modules_to_not_convert_stay_dense() -> None:
    # AWQ with the MLP left unquantized: attention 49,152 at 4.15625 bits = 204,288 bits;
    # MLP 98,304 and the rest 25,984 at 16 bits = 1,988,608 bits; 2,192,896 bits = 274,112 B.
    qc = {"quant_method": "awq", "w_bit": 4, "group_size": 128,
          "modules_to_not_convert": ["mlp"]}
    assert estimate_weights({**TINY, "quantization_config": qc}, "float16").bytes == 274_112


def test_nvfp4_compressed_tensors() -> None:
    # compressed-tensors NVFP4: 4 bits + one fp8 scale per 16 = 4.5 bits on the linears:
    # 147,456 × 4.5 = 663,552 bits + 415,744 = 1,079,296 bits = 134,912 B.
    qc = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 4, "group_size": 16, "scale_dtype": "float8_e4m3fn"}}}}
    assert estimate_weights({**TINY, "quantization_config": qc}, "float16").bytes == 134_912


def test_awq_without_bits_is_refused() -> None:
    with pytest.raises(WeightsError, match="w_bit"):
        estimate_weights({**TINY, "quantization_config": {"quant_method": "awq"}}, "float16")


def test_mlx_quantization_block_is_refused() -> None:
    # MLX writes "quantization" {bits, group_size, mode} and the same block again as a
    # quantization_config without quant_method (Arp1tMoga/fast_qwen @0d831f79: a 4-bit MLX
    # qwen3_5 27B whose index holds 20,444,027,360 B, counted at 16 bits as 55,476,125,408 B).
    # vLLM reads such a quantization_config as none: the estimate refuses rather than
    # sizing packed weights as dense ones.
    block = {"bits": 4, "group_size": 32, "mode": "affine"}
    cfg = {**TINY, "quantization": block, "quantization_config": block}
    with pytest.raises(WeightsError, match="MLX"):
        estimate_weights(cfg, "float16", stored=True)
    # A "quantization" key that is no MLX block (no bits / group_size) changes nothing.
    plain = {**TINY, "quantization": {"note": "none"}}
    assert estimate_weights(plain, "float16").bytes == estimate_weights(TINY, "float16").bytes

"""Where vLLM 0.33 finds a checkpoint's quantization block (transformers_utils/
model_arch_config_convertor.py ``get_quantization_config``): the config's
``quantization_config``, else ``compression_config``, else the same in ``text_config`` —
Kimi-K2.5 states its INT4 experts there. Worked by hand on one tiny layer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.plan.weights import WeightsError, estimate_weights

# hidden 128, one layer, 4 heads × 32 (2 KV heads), MLP 256, vocab 100, untied (as in
# tests/plan/test_params_quant.py): linear 147,456 parameters, the rest 25,984 at 16 bits.
TINY: dict[str, Any] = {"model_type": "llama", "hidden_size": 128, "num_hidden_layers": 1,
                        "num_attention_heads": 4, "num_key_value_heads": 2,
                        "intermediate_size": 256, "vocab_size": 100,
                        "tie_word_embeddings": False, "torch_dtype": "float16"}
# compressed-tensors INT4, group 16, fp8 scales: 4 + 8 / 16 = 4.5 bits on the linears:
# 147,456 × 4.5 = 663,552 bits + 25,984 × 16 = 415,744 bits → 1,079,296 bits = 134,912 B.
# Read as unquantized (main's answer for the nested block) it is 173,440 × 2 = 346,880 B.
INT4: dict[str, Any] = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {
    "weights": {"num_bits": 4, "group_size": 16, "scale_dtype": "float8_e4m3fn"}}}}


def test_quantization_config_inside_text_config() -> None:
    cfg = {"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"],
           "text_config": {**TINY, "quantization_config": INT4}}
    assert estimate_weights(cfg, "float16").bytes == 134_912


def test_compression_config_key() -> None:
    assert estimate_weights({**TINY, "compression_config": INT4}, "float16").bytes == 134_912


def test_modelopt_mixed_precision_layer_by_layer() -> None:
    # vLLM 0.33 ModelOptMixedPrecisionConfig: each module at the quant_algo quantized_layers
    # names for it, an unlisted one unquantized. Two TINY layers (attention 49,152, MLP
    # 98,304 each): layer 0's attention FP8 (8 bits) and MLP NVFP4 (4.5 bits), layer 1 left
    # in float16. attention 49,152 × (8 + 16) = 1,179,648 bits; MLP 98,304 × (4.5 + 16) =
    # 2,015,232 bits; embed + head 25,600 and norms 2 × 2 × 128 + 128 = 640 at 16 bits =
    # 419,840 bits. 3,614,720 bits = 451,840 B.
    cfg = {**TINY, "num_hidden_layers": 2}
    layers = {f"model.layers.0.self_attn.{p}_proj": {"quant_algo": "FP8"} for p in "qkvo"}
    layers.update({f"model.layers.0.mlp.{p}_proj": {"quant_algo": "NVFP4", "group_size": 16}
                   for p in ("gate", "up", "down")})
    hf_quant = {"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": layers}}
    assert estimate_weights(cfg, "float16", hf_quant).bytes == 451_840
    # The same block as config.json's own quantization_config (producer modelopt).
    inline = {**cfg, "quantization_config": {"quant_method": "modelopt",
                                             "quant_algo": "MIXED_PRECISION",
                                             "quantized_layers": layers}}
    assert estimate_weights(inline, "float16").bytes == 451_840


def test_modelopt_mixed_precision_without_layers_is_vllms_refusal() -> None:
    hf_quant = {"quantization": {"quant_algo": "MIXED_PRECISION"}}
    with pytest.raises(WeightsError, match="non-empty 'quantized_layers'"):
        estimate_weights(TINY, "float16", hf_quant)


def test_mixed_precision_checkpoint_plans_on_vllm_033_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A Llama-shaped 2-layer checkpoint whose hf_quant_config.json lists layer 0's attention
    # at FP8. attention a layer 4,096² + 2 × 4,096 × 1,024 + 4,096² = 41,943,040 at 8 + 16
    # bits = 1,006,632,960 bits; MLP 2 × 3 × 4,096 × 14,336 at 16 = 5,637,144,576 bits;
    # embed + head 2 × 128,256 × 4,096 at 16 = 16,810,770,432 bits; norms 5 × 4,096 at 16 =
    # 327,680 bits. 23,454,875,648 bits = 2,931,859,456 B.
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
           "hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16",
           "max_position_embeddings": 8192}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    layers = {f"model.layers.0.self_attn.{p}_proj": {"quant_algo": "FP8"} for p in "qkvo"}
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({
        "producer": {"name": "modelopt"},
        "quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": layers}}))
    code = main(["plan", str(tmp_path), "--gpu", "H100-80GB", "--engine", "vllm==0.33",
                 "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    weights = [row for row in json.loads(out)["budget"] if row["key"] == "weights"]
    assert weights[0]["bytes"] == 2_931_859_456
    # vllm==0.32's _normalize_quantization_config raises for it.
    code = main(["plan", str(tmp_path), "--gpu", "H100-80GB", "--engine", "vllm==0.32"])
    _, err = capsys.readouterr()
    assert code == 2 and "Unknown ModelOpt quant algo: MIXED_PRECISION" in err

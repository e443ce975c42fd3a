"""Where vLLM 0.33 finds a checkpoint's quantization block (transformers_utils/
model_arch_config_convertor.py ``get_quantization_config``): the config's
``quantization_config``, else ``compression_config``, else the same in ``text_config`` —
Kimi-K2.5 states its INT4 experts there. Worked by hand on one tiny layer."""

from __future__ import annotations

from typing import Any

from kvledger.plan.weights import estimate_weights

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

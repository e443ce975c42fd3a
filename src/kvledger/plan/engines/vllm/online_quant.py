"""Online quantization: ``--quantization METHOD`` on an unquantized checkpoint.

vLLM resolves it in model_executor/model_loader/weight_utils.py ``get_quant_config``: with no
quantization config in the checkpoint, ``fp8`` is the deprecated name of ``fp8_per_tensor``
(it warns so), and the shorthands of config/quantization.py ``_ONLINE_SHORTHANDS`` build an
``OnlineQuantizationConfig`` (layers/quantization/online/base.py). Its ``get_quant_method``
quantizes every ``LinearBase`` (attention and MLP projections, shared experts) with the
``linear`` spec and ``RoutedExperts`` with the ``moe`` spec; the embedding, the LM head
(``ParallelLMHead`` is no ``LinearBase``), norms and biases stay in the model dtype. The
weights are loaded on the meta device and quantized one layer at a time
(online/fp8.py ``OnlineLinearBase``), so no full-precision copy stays on the GPU.

Storage per weight (online/fp8.py):

- ``fp8_per_tensor`` (and ``fp8``): ``Fp8PerTensorOnlineLinearMethod`` stores the weight as
  float8 (1 byte) and one float32 ``weight_scale`` per layer (per expert in
  ``Fp8PerTensorOnlineMoEMethod``): 8 bits a weight, the scales (4 bytes a layer) not counted;
- ``fp8_per_block``: ``Fp8PerBlockOnlineLinearMethod`` (``weight_block_size`` [128, 128],
  ``per_block_cast_to_fp8``): float8 and one float32 ``weight_scale_inv`` per 128 × 128 block:
  8 + 32 / 16,384 bits.

The other shorthands (fp8_per_channel, mxfp8, mxfp4, int8_per_channel_weight_only,
nvfp4_per_token, online) are refused by name. Router gates stay in the model dtype here:
most MoE classes build their ``GateLinear`` without the quantization config (deepseek_v2.py,
mixtral.py, glm4_moe.py, gpt_oss.py, qwen2_moe.py); qwen3_moe.py passes it, so there the
estimate over-counts hidden × experts bytes a layer (Qwen3-30B-A3B: 2048 × 128 × 48 layers =
12.6 MB of 30 GB). The vision / audio towers of a multimodal model are refused (whether their
linear layers are quantized depends on the model class). The same in vLLM 0.32.0
(config/quantization.py and online/fp8.py compared).
"""

from __future__ import annotations

from kvledger.errors import PlanError

LINEAR = frozenset({"attn", "dense_mlp", "shared_experts", "routed_experts"})

# --quantization name → (name shown, bits per quantized weight incl. scales).
ONLINE = {
    "fp8": ("online fp8_per_tensor", 8.0),
    "fp8_per_tensor": ("online fp8_per_tensor", 8.0),
    "fp8_per_block": ("online fp8_per_block", 8.0 + 32 / (128 * 128)),
}
NOT_MODELLED = ("fp8_per_channel", "mxfp8", "mxfp4", "int8_per_channel_weight_only",
                "nvfp4_per_token", "online")


class OnlineQuantNotModelled(PlanError):
    """An online method (or a model) kvledger does not size; names it."""


def online_scheme(method: str) -> tuple[str, float, frozenset[str]]:
    """(name, bits per weight, parameter categories quantized) for ``--quantization method``
    on an unquantized checkpoint."""
    found = ONLINE.get(method)
    if found is None:
        known = ", ".join(ONLINE)
        what = "an online method kvledger does not size" if method in NOT_MODELLED else \
            "not an online quantization method"
        raise OnlineQuantNotModelled(f"--quantization {method} on an unquantized checkpoint: "
                                     f"{what} (kvledger sizes {known})")
    return found[0], found[1], LINEAR

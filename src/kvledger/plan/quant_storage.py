"""How a quantized checkpoint stores its linear weights, as vLLM reads its config: the
scheme (ModelOpt, fp8 blocks, fbgemm_fp8, MXFP4, compressed-tensors, AWQ / GPTQ), its bits per
weight with the scales, which parameter categories it quantizes, and the share per category a
per-layer exclusion list keeps in the model dtype. ``weights.py`` sizes the weights from it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Any

from kvledger.derive.params import ALIASES
from kvledger.derive.quant import states_no_method


class WeightsError(ValueError):
    """The weights cannot be sized without guessing (names what is missing)."""



# Representative module names per parameter category, matched against a checkpoint's
# exclude / ignore patterns to decide which categories are quantized.
_PROBES = {
    "embed": "model.embed_tokens",
    "lm_head": "lm_head",
    "attn": "model.layers.1.self_attn.q_proj",
    "dense_mlp": "model.layers.1.mlp.gate_proj",
    "shared_experts": "model.layers.1.mlp.shared_experts.gate_proj",
    "routed_experts": "model.layers.1.mlp.experts.0.gate_proj",
    "router": "model.layers.1.mlp.router",
}


def config_count(cfg: Mapping[str, Any], *keys: str, default: int = 0) -> int:
    """The first of ``keys`` the config states, checked as derive checks it
    (``derive/limits.py``); ``default`` when none is stated.

    Why not skip a value of the wrong type: a string ``n_routed_experts`` skipped as "no
    experts" sized DeepSeek-V3 as a 37 B model instead of 671 B, with exit 0.
    """
    from kvledger.derive.limits import checked_count

    for key in keys:
        value = cfg.get(key)
        if value is not None:
            try:
                return checked_count(value, key, where="config")
            except ValueError as exc:
                raise WeightsError(f"cannot estimate weights: {exc}") from None
    return default



def _matches(patterns: Iterable[str], name: str) -> bool:
    for pattern in patterns:
        if pattern.startswith("re:"):
            if re.search(pattern[3:], name):
                return True
        elif fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(name, pattern + ".*") or \
                pattern == name or name.endswith("." + pattern):
            return True
    return False


def quantization_config(cfg: Mapping[str, Any]) -> Any:
    """The quantization block vLLM reads, where vLLM 0.33 looks for it
    (``transformers_utils/model_arch_config_convertor.py`` ``get_quantization_config``): the
    config's ``quantization_config``, else its ``compression_config`` (compressed-tensors),
    else the same two in its ``text_config`` ("Check the text config as well for multi-modal
    models": Kimi-K2.5 states its INT4 experts there)."""
    for where in (cfg, cfg.get("text_config")):
        if not isinstance(where, Mapping):
            continue
        for key in ("quantization_config", "compression_config"):
            if where.get(key) is not None:
                return where[key]
    return None


def routed_experts_scheme(cfg: Mapping[str, Any], model_type: str,
                   scheme: tuple[str, float, frozenset[str]] | None) -> tuple[str, float] | None:
    """The routed experts' own storage where a checkpoint quantizes them apart: DeepSeek-V4's
    fp8 checkpoints hold MXFP4 experts (4 bits and one ue8m0 scale per 32: 4.25 bits) unless
    ``expert_dtype`` is "fp8" (vLLM 0.33 models/deepseek_v4/quant_config.py
    ``DeepseekV4FP8Config``: ``expert_dtype`` defaults to "fp4")."""
    if model_type != "deepseek_v4" or scheme is None or scheme[0] != "fp8":
        return None
    from kvledger.derive.config import Config

    if str(Config(cfg, model="config").text().get("expert_dtype") or "fp4") != "fp4":
        return None
    return "mxfp4", 4.25


def quant_scheme(
    cfg: Mapping[str, Any], hf_quant: Mapping[str, Any] | None
) -> tuple[str, float, frozenset[str]] | None:
    """(name, bits per weight incl. scales, categories quantized) or None when unquantized."""
    linear = frozenset({"attn", "dense_mlp", "shared_experts", "routed_experts"})
    if hf_quant:
        q = hf_quant.get("quantization") or {}
        algo = str(q.get("quant_algo") or "").upper()
        excluded = [str(p) for p in q.get("exclude_modules") or ()]
        bits = {"FP8": 8.0, "NVFP4": 4.5, "W4A8_AWQ": 4.25}.get(algo)
        if algo == "MIXED_PRECISION":
            # Sized layer by layer (mixed_bits); the categories listed are decided there.
            return "modelopt MIXED_PRECISION", 0.0, frozenset()
        if bits is None:
            raise WeightsError(f"ModelOpt quant_algo {algo!r} (hf_quant_config.json, or "
                               "config.json's quantization_config) has no known storage size")
        cats = frozenset(c for c in linear if not _matches(excluded, _PROBES[c]))
        return f"modelopt {algo}", bits, cats
    qc = quantization_config(cfg)
    mlx = cfg.get("quantization")
    if isinstance(mlx, Mapping) and "bits" in mlx and "group_size" in mlx and \
            (qc is None or (isinstance(qc, Mapping) and states_no_method(qc))):
        # MLX writes its affine quantization as a top-level "quantization" block (bits,
        # group_size, per-module overrides), and the same again as a quantization_config
        # without quant_method; vLLM reads only quantization_config / compression_config
        # (transformers_utils/model_arch_config_convertor.py _normalize_quantization_config),
        # and one without a method as none (``states_no_method``): it would take the packed
        # weights as dense ones.
        raise WeightsError(
            f"the config's top-level quantization block (bits {mlx.get('bits')!r}, group_size "
            f"{mlx.get('group_size')!r}) is MLX's: an MLX checkpoint, which vLLM does not "
            "load; its weights are not estimated (counted at 16 bits they would be 2-3 times "
            "too large); pass --kv-cache-memory-bytes")
    if not isinstance(qc, Mapping) or states_no_method(qc):
        return None  # states_no_method: vLLM loads such a checkpoint unquantized
    method = str(qc.get("quant_method") or "")
    if method == "fp8":
        block = qc.get("weight_block_size") or [128, 128]
        if not (isinstance(block, list) and len(block) == 2 and all(
                isinstance(b, int) and not isinstance(b, bool) and 0 < b <= 1 << 20
                for b in block)):
            raise WeightsError("quantization_config.weight_block_size must be two positive "
                               f"integers, got {block!r}")
        scale_bits = 32 / (block[0] * block[1])
        ignored = [str(p) for p in qc.get("modules_to_not_convert") or qc.get("ignore") or ()]
        cats = frozenset(c for c in linear if not _matches(ignored, _PROBES[c]))
        return "fp8", 8.0 + scale_bits, cats
    if method == "fbgemm_fp8":
        # vLLM 0.34 fbgemm_fp8.py FBGEMMFp8LinearMethod.create_weights: an fp8 weight and one
        # float32 scale per output row (ChannelQuantScaleParameter, (out, 1)): 8 + 32 /
        # in_features bits a weight, taken at the hidden size (the down projection's longer
        # rows carry less: under 0.002 bit a weight either way). Skipped modules are matched
        # exactly (is_layer_skipped on modules_to_not_convert): per layer, in _shares.
        from kvledger.derive.config import Config

        hidden = config_count(Config(cfg, model="config").text().raw, "hidden_size")
        if not hidden:
            raise WeightsError("fbgemm_fp8 checkpoint without hidden_size: the per-row scales' "
                               "share of the weights cannot be sized")
        return "fbgemm_fp8", 8.0 + 32 / hidden, linear
    if method == "mxfp4":
        ignored = [str(p) for p in qc.get("modules_to_not_convert") or ()]
        cats = frozenset(c for c in linear if not _matches(ignored, _PROBES[c]))
        return "mxfp4", 4.25, cats
    if method == "compressed-tensors":
        groups = qc.get("config_groups") or {}
        group = next(iter(groups.values()), None) if isinstance(groups, Mapping) else None
        weights = (group or {}).get("weights") or {}
        num_bits = weights.get("num_bits")
        if isinstance(num_bits, bool) or not isinstance(num_bits, int) or not 0 < num_bits <= 64:
            raise WeightsError("compressed-tensors config has no weights.num_bits in 1..64, "
                               f"got {num_bits!r}")
        size = weights.get("group_size")
        scale = str(weights.get("scale_dtype") or "")
        scale_bits = 8 if "int8" in scale or "uint8" in scale or "float8" in scale else 16
        bits = num_bits + (scale_bits / size if isinstance(size, int) and size > 0 else 0.0)
        ignored = [str(p) for p in qc.get("ignore") or ()]
        cats = frozenset(c for c in linear if not _matches(ignored, _PROBES[c]))
        return f"compressed-tensors {num_bits}-bit", bits, cats
    if method in ("awq", "gptq"):
        # Packed int4/int8 (vLLM awq.py / gptq.py): qweight holds ``bits`` per weight, and per
        # group of ``group_size`` input rows one float16 scale and one packed zero point per
        # output column: bits + (16 + bits) / group_size. (GPTQ's g_idx, one int32 per input
        # row, adds 32 / out_features bits: under 0.01 bit, not counted.)
        bits_value = qc.get("bits", qc.get("w_bit"))
        if isinstance(bits_value, bool) or not isinstance(bits_value, int) or \
                not 0 < bits_value <= 16:
            raise WeightsError(f"{method} quantization_config has no bits / w_bit in 1..16, "
                               f"got {bits_value!r}")
        size = qc.get("group_size", qc.get("q_group_size"))
        group_bits = (16 + bits_value) / size if isinstance(size, int) and size > 0 else 0.0
        # vLLM awq.py is_layer_skipped_awq: a module stays dense when any listed name is a
        # substring of its prefix ("mlp" keeps every MLP dense).
        ignored = [str(p) for p in qc.get("modules_to_not_convert") or ()]
        cats = frozenset(c for c in linear if not any(p in _PROBES[c] for p in ignored))
        return f"{method} {bits_value}-bit", bits_value + group_bits, cats
    raise WeightsError(
        f"quantization_config.quant_method {method!r} has no known storage size; pass "
        "--kv-cache-memory-bytes, or a model directory with safetensors for exact weights"
    )


_MODELOPT_METHODS = frozenset({"modelopt", "modelopt_fp4"})


def flat_modelopt(cfg: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A config.json's own ModelOpt block (``quant_method`` "modelopt" / "modelopt_fp4", or
    ``producer.name`` "modelopt"), laid out as ``hf_quant_config.json`` is: vLLM 0.33
    modelopt.py ``ModelOptQuantConfigBase.from_config`` reads such a flat block's
    ``quant_algo`` and its ``ignore`` (else ``exclude_modules``) list."""
    qc = quantization_config(cfg)
    if not isinstance(qc, Mapping) or "quant_algo" not in qc or "quantization" in qc:
        return None
    producer = qc.get("producer")
    by_modelopt = isinstance(producer, Mapping) and producer.get("name") == "modelopt"
    if str(qc.get("quant_method") or "") not in _MODELOPT_METHODS and not by_modelopt:
        return None
    excluded = qc.get("ignore", qc.get("exclude_modules")) or []
    flat: dict[str, Any] = {"quant_algo": qc["quant_algo"],
                            "exclude_modules": list(excluded) if isinstance(excluded, list)
                            else []}
    if isinstance(qc.get("quantized_layers"), Mapping):
        flat["quantized_layers"] = qc["quantized_layers"]
    return {"quantization": flat}


# Bits per weight of each ModelOpt linear algo vLLM 0.33 takes in a MIXED_PRECISION
# checkpoint (model_executor/layers/quantization/modelopt.py LINEAR_ALGOS and the routed
# experts' methods): FP8 per tensor or per channel 8; FP8 128 × 128 blocks 8 + 32 / 16,384;
# NVFP4 (W4A4 or W4A16) 4 + one fp8 scale per group of 16: 4.5; MXFP8 8 + one e8m0 scale
# per 32: 8.25.
_MIXED_ALGO_BITS = {
    "FP8": 8.0, "FP8_PER_CHANNEL_PER_TOKEN": 8.0, "FP8_PB_WO": 8.0 + 32 / 16384,
    "FP8_BLOCK_SCALES": 8.0 + 32 / 16384, "NVFP4": 4.5, "W4A16_NVFP4": 4.5, "MXFP8": 8.25,
}
# Where each category's modules sit in decoder layer {i} (HF names, as quantized_layers
# lists them).
_MIXED_MODULES = {
    "attn": ("self_attn.",),
    "dense_mlp": ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "mlp.gate_up_proj"),
    "shared_experts": ("mlp.shared_experts.", "mlp.shared_expert."),
    "routed_experts": ("mlp.experts", "block_sparse_moe.experts"),
}


def mixed_bits(cfg: Mapping[str, Any], hf_quant: Mapping[str, Any] | None,
                dense_bits: int) -> dict[str, float]:
    """Per linear category, the mean bits per weight of a ModelOpt MIXED_PRECISION checkpoint:
    each decoder layer's module at the algo ``quantized_layers`` names for it, or the dense
    dtype where it names none (vLLM 0.33 ``ModelOptMixedPrecisionConfig._resolve_quant_algo``:
    a direct key, else a key under the module; an unlisted layer is left unquantized).
    Layers of a category are taken as equal in size (true of uniform decoders); attention is
    in every layer, the dense MLP in the non-MoE ones, the experts in the MoE ones."""
    from kvledger.derive.config import Config
    from kvledger.derive.params import moe_layers

    q = (hf_quant or {}).get("quantization") or {}
    listed = q.get("quantized_layers") if isinstance(q, Mapping) else None
    if not isinstance(listed, Mapping) or not listed:
        # ModelOptMixedPrecisionConfig._from_config raises the same.
        raise WeightsError("MIXED_PRECISION quant_algo requires a non-empty 'quantized_layers' "
                           "mapping in the quantization config (vLLM refuses it too)")
    algos: dict[str, str] = {}
    for key, info in listed.items():
        name = str(key)
        for wrapped in ("model.language_model.", "language_model.model."):
            if name.startswith(wrapped):
                name = "model." + name[len(wrapped):]
        algo = str((info or {}).get("quant_algo") or "").upper() \
            if isinstance(info, Mapping) else ""
        if algo not in _MIXED_ALGO_BITS:
            raise WeightsError(f"MIXED_PRECISION quantized_layers {key}: quant_algo {algo!r} "
                               "has no known storage size")
        algos[name] = algo
    text = Config(cfg, model="config").text()
    layers = config_count(text.raw, "num_hidden_layers") or 0
    experts = config_count(text.raw, *ALIASES["experts"])
    moe = moe_layers(text, layers) if layers and experts else [False] * layers
    out: dict[str, float] = {}
    for category, parts in _MIXED_MODULES.items():
        holders = [i for i in range(layers) if category == "attn"
                   or (category == "dense_mlp") != bool(moe[i])]
        if not holders:
            continue
        total = 0.0
        for i in holders:
            base = f"model.layers.{i}."
            found = next((a for k, a in algos.items() if k.startswith(base) and
                          any(k[len(base):].startswith(part) for part in parts)), None)
            total += _MIXED_ALGO_BITS[found] if found else dense_bits
        out[category] = total / len(holders)
    head = algos.get("lm_head")
    if head:
        out["lm_head"] = _MIXED_ALGO_BITS[head]
    return out


def per_layer_excludes(hf_quant: Mapping[str, Any]) -> bool:
    q = hf_quant.get("quantization") or {}
    return isinstance(q, Mapping) and any("layers." in str(p)
                                          for p in q.get("exclude_modules") or ())


def modelopt_shares(cfg: Mapping[str, Any], hf_quant: Mapping[str, Any],
                     mtp_layers: int) -> Mapping[str, float] | None:
    """Per linear category, the share a ModelOpt checkpoint's per-layer ``exclude_modules``
    keep unquantized (``_layer_shares``)."""
    q = hf_quant.get("quantization") or {}
    patterns = [str(p) for p in (q.get("exclude_modules") or ())] if isinstance(q, Mapping) \
        else []
    return _layer_shares(cfg, patterns, mtp_layers)


def fbgemm_shares(cfg: Mapping[str, Any], mtp_layers: int) -> Mapping[str, float] | None:
    """``fbgemm_fp8``'s ``modules_to_not_convert`` (full module names, layer by layer: Meta's
    Llama-3.1-405B-FP8 keeps its first and last layers' MLPs and its first layer's attention in
    bf16), read as ModelOpt's list is (``_layer_shares``)."""
    qc = quantization_config(cfg)
    patterns = [str(p) for p in (qc.get("modules_to_not_convert") or ())] \
        if isinstance(qc, Mapping) else []
    return _layer_shares(cfg, patterns, mtp_layers)


def _layer_shares(cfg: Mapping[str, Any], patterns: list[str],
                  mtp_layers: int) -> Mapping[str, float] | None:
    """Per linear category, the share ``patterns`` (a checkpoint's per-layer exclusion list)
    keep unquantized (``modelopt_exclude.excluded_shares``), over the decoder layers and the
    ``mtp_layers`` counted (DeepSeek's and GLM's MTP layers are MoE layers numbered after the
    decoder's); None where the category probes decide."""
    from kvledger.derive.config import Config
    from kvledger.derive.params import moe_layers
    from kvledger.plan.modelopt_exclude import excluded_shares

    text = Config(cfg, model="config").text()
    layers = config_count(text.raw, "num_hidden_layers")
    if not patterns or not layers:
        return None
    experts = config_count(text.raw, *ALIASES["experts"])
    moe = [*moe_layers(text, layers), *([bool(experts)] * mtp_layers)]
    return excluded_shares(text, str(text.model_type or ""), patterns, moe, experts, layers)

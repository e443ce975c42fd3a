"""Model weight bytes: exact from safetensors headers when the checkpoint's are at hand,
else estimated from the config's parameter count at the checkpoint's storage size.

Exact path: the tensor bytes per dtype of every safetensors header, read by
``kvledger.source`` (locally, or from the Hub by range requests; a malformed header is
refused, never summed). Only headers are read, never weights. Those are the *stored* bytes;
the budget counts the bytes on the GPU, at the dtype the engine serves in
(``serving_dtype``): vLLM creates every ordinary parameter in the model dtype and copies the
checkpoint's tensor into it (a cast), so a float32 checkpoint served in bfloat16 holds half its
stored bytes. Rules, from vLLM 0.32.0's source:

- floating tensors (F16, BF16, F32, F64) count at the serving dtype's size;
- quantized tensors (8-bit and smaller floats, packed integers: ``headers.QUANTIZED_DTYPES``)
  count as stored: the quantization method creates their parameters in the stored type
  (``fp8.py`` ``create_fp8_weight_parameter``: float8_e4m3fn; ``modelopt.py`` NVFP4: uint8
  packed pairs);
- in a quantized checkpoint, floating companions of the quantized weights (scales, zero points,
  group indices: ``headers.is_quant_aux``) count as stored: vLLM registers fp8 and ModelOpt
  scales as float32 parameters (``fp8_utils.create_fp8_scale_parameter`` and
  ``create_fp8_input_scale``; ``modelopt.py`` ``weight_scale_2`` / ``input_scale``), the NVFP4
  block scales as float8_e4m3fn, and GPTQ/AWQ/compressed-tensors group scales in the model
  dtype — the dtypes those checkpoints store them in. **A guess** where a checkpoint stores a
  scale in another dtype than the method's parameter (a BF16 block scale would be loaded into a
  float32 parameter and counted here at half its size), and for the few model parameters vLLM
  keeps in float32 whatever the model dtype (DeepSeek's ``e_score_correction_bias``, Mamba2's
  ``A``): counted at the serving dtype, a few kilobytes per layer at most.

An index's ``metadata.total_size`` without the shards has no split by dtype: it is counted as
stored, and the label says so.

Estimated path (labelled so everywhere it is shown): the parameters the architecture holds,
counted from the config by ``derive/params/`` (embeddings and head, attention as each family
builds it, MLPs and experts, norms and biases, SSM / linear-attention mixers, MTP layers and
vision / audio towers apart; a warning where a family's count is not exact), each category
stored at the element size the quantization config gives it: fp8 ≈ 8 bits (+ one fp32 scale
per 128×128 block), nvfp4 = 4 bits + one fp8 scale per 16 = 4.5 bits, mxfp4 = 4 bits + one
8-bit scale per 32 = 4.25 bits, AWQ / GPTQ = bits + (16 + bits) / group_size; norms, biases
and towers stay at the dense dtype. An unrecognised quantization method raises rather than
guessing 16 bits. ``estimate_weights(..., stored=True)`` is what the checkpoint's safetensors
hold (the config's own dtype, MTP layers included); the default is what vLLM holds.

Per rank: tensor parallelism and pipeline stages split the weights; the per-GPU share is the
total divided evenly (``ceil(total / (tp × pp))``), an estimate even when the total is exact
(embeddings and the LM head sit on the first and last stage). Where an engine divides a MoE
model's experts over other GPUs than the TP group (``WeightSplit``: vLLM's experts over DP × TP
with data or expert parallelism, ``plan/engines/vllm/experts.py``), ``split_per_rank`` divides
the routed and shared experts' estimated bytes by their own rank counts and the rest by TP.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.params import ALIASES
from kvledger.derive.quant import states_no_method
from kvledger.records import record

if TYPE_CHECKING:
    from pathlib import Path

    from kvledger.derive.params import Parameters
    from kvledger.source.headers import SafetensorsTotals

EXACT = "exact"
ESTIMATED = "estimated"

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


@record(frozen=True)
class Weights:
    total_bytes: int  # on the GPUs, at the serving dtype
    per_rank_bytes: int
    basis: str  # EXACT or ESTIMATED (of the total)
    per_rank_basis: str
    detail: str
    stored_bytes: int | None = None  # the checkpoint's own bytes, when its headers were read
    # Where the estimate is not exact: what the count could not model, with the likely error
    # (derive/params/). Empty for exact totals and for architectures counted exactly.
    warnings: tuple[str, ...] = ()
    parameters: int | None = None  # the parameters an estimate counted
    # Where an engine divides the experts otherwise than by TP (``WeightSplit``): the per-GPU
    # bytes of each part (``split_per_rank``). None: every part is divided by TP × PP.
    split: Mapping[str, Any] | None = None


@record(frozen=True)
class WeightSplit:
    """Inside one pipeline stage, over how many GPUs an engine divides a part of the weights,
    where that is not the tensor-parallel group (``Layout.weight_split``: vLLM's experts with
    data parallelism, SGLang's attention under DP attention). ``ranks``: parameter category
    (``derive/params.py`` CATEGORIES) → GPUs; every other part is divided by TP."""

    ranks: Mapping[str, int]
    basis: str  # the engine's rule, cited
    expert_parallel: bool = False  # whole experts per GPU (EP) or a TP slice of every expert


class WeightsError(ValueError):
    """The weights cannot be sized without guessing (names what is missing)."""


# -- the serving dtype --------------------------------------------------------------------------

# Bytes per element of the floating dtypes an engine casts (safetensors names).
_FLOAT_WIDTH = {"F16": 2, "BF16": 2, "F32": 4, "F64": 8}


def serving_dtype(model_dtype: str) -> str:
    """The core's default serving dtype for weights when no layout states one
    (``Layout.serving_dtype``, which an engine overrides with its own ``--dtype auto`` rule):
    a 16-bit float checkpoint as stored, any other (float32, unstated) in bfloat16.
    """
    name = resolve_dtype(model_dtype).name
    return name if name in ("bfloat16", "float16") else "bfloat16"


def served_bytes(totals: SafetensorsTotals, serving: str) -> int:
    """A checkpoint's bytes on the GPU at ``serving`` (module docstring: floating tensors
    cast, quantized ones and, in a quantized checkpoint, their floating companions as stored).
    """
    width = resolve_dtype(serving).nbytes(1)
    keep_aux = totals.quantized
    out = 0
    for dtype, size in totals.by_dtype.items():
        stored_width = _FLOAT_WIDTH.get(dtype)
        if stored_width is None:
            out += size
            continue
        kept = totals.aux_by_dtype.get(dtype, 0) if keep_aux else 0
        out += kept + (size - kept) // stored_width * width
    if not totals.by_dtype:  # an index's total_size: no split by dtype to cast
        return totals.total_bytes
    return out


def _exact_detail(totals: SafetensorsTotals, served: int, serving: str) -> str:
    stored = totals.total_bytes
    if not totals.by_dtype:
        return f"{totals.detail()}; counted as stored: no split by dtype to cast to {serving}"
    if served == stored:
        return f"{totals.detail()}; stored {stored:,} B = served at {serving}"
    return f"{totals.detail()}; stored {stored:,} B, served at {serving} {served:,} B"


# -- exact: safetensors ------------------------------------------------------------------------


def safetensors_total_bytes(directory: Path) -> tuple[int, str] | None:
    """(bytes, how) from a local model directory, or None when it holds no safetensors."""
    from kvledger.source.headers import local_totals

    found = local_totals(str(directory))
    return None if found is None else (found.total_bytes, found.detail())


# -- estimated: parameter count ----------------------------------------------------------------


def _int(cfg: Mapping[str, Any], *keys: str, default: int = 0) -> int:
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


def count_parameters(cfg: Mapping[str, Any]) -> Parameters:
    """The architecture's parameter count (``derive/params/``), a config it cannot count
    refused as ``WeightsError``. ``cfg``: the whole config.json (towers and the text config
    found as derive finds them), or a language model's config alone."""
    from kvledger.derive.errors import DeriveError
    from kvledger.derive.params import count_parameters as count

    try:
        return count(cfg)
    except DeriveError as exc:
        raise WeightsError(
            f"cannot estimate weights: {exc}; give the KV budget with kv_cache_memory_bytes, "
            "or a model directory with safetensors for exact weights") from None


def parameter_counts(cfg: Mapping[str, Any]) -> dict[str, int]:
    """Parameters per category of the decoder the engine always loads (``derive/params/``
    ``CATEGORIES``; MTP layers and towers apart)."""
    return dict(count_parameters(cfg).categories)


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


def _experts_scheme(cfg: Mapping[str, Any], model_type: str,
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


def _quant_scheme(
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
            # Sized layer by layer (_mixed_bits); the categories listed are decided there.
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

        hidden = _int(Config(cfg, model="config").text().raw, "hidden_size")
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


def tower_bytes(cfg: Mapping[str, Any], model_dtype: str, serving: str | None = None) -> int:
    """The vision / audio towers vLLM builds beside the language model, at the serving dtype
    (``estimate_weights``'s ``towers`` share: towers stay at the dense dtype; layers past a
    LLaVA-style ``vision_feature_layer`` are not built). 0 for a text-only config, or one
    whose tower states no sizes (the estimate's warning says so)."""
    params = count_parameters(cfg)
    towers = params.towers - params.towers_unused
    served = serving or serving_dtype(model_dtype)
    return -(-towers * resolve_dtype(served).bits // 8)


@record(frozen=True)
class Estimate:
    """Bytes of the parameters ``derive/params/`` counts, at a dtype and quantization."""

    bytes: int
    how: str
    parameters: int  # the parameters these bytes hold
    warnings: tuple[str, ...] = ()
    by_dtype: Mapping[str, int] | None = None  # bytes per stored element type, estimated
    # Bytes per parameter category (``derive/params.py`` CATEGORIES; towers under "towers"),
    # each rounded up: what ``split_per_rank`` divides over the ranks that hold it.
    by_category: Mapping[str, int] | None = None


def estimate_weights(
    cfg: Mapping[str, Any], model_dtype: str, hf_quant: Mapping[str, Any] | None = None,
    *, speculative_mtp: bool = False, stored: bool = False,
    online: tuple[str, float, frozenset[str]] | None = None, serving: str | None = None,
) -> Estimate:
    """The weights' bytes from the architecture's parameter count (``derive/params/``).

    ``stored=False``: what vLLM holds at ``--dtype auto`` (``serving_dtype``): the decoder,
    its towers (vLLM builds a multimodal model's encoders), and its MTP layers only when the
    engine speculates with an MTP method (``mtp_part``) — each as one more decoder layer with
    its ``eh_proj`` and norms, the embedding and head shared with the model's (vLLM's proposer
    shares them when their shapes agree). ``stored=True``: what the checkpoint's safetensors
    hold: everything, at the config's own dtype (a float32 checkpoint: 4 bytes a weight), the
    MTP layers with the embedding and head copies the checkpoint keeps.

    Quantized categories are counted at the method's storage size (``_quant_scheme``); norms,
    biases, SSM vectors (``other``) and towers stay at the dense dtype. ``online``: the
    engine's online quantization of an unquantized checkpoint, as (name, bits per weight,
    categories quantized), in place of the checkpoint's scheme; a model with towers is
    refused then (whether their linear layers are quantized depends on the model class).
    """
    if hf_quant is None:
        hf_quant = _flat_modelopt(cfg)
    params = count_parameters(cfg)
    counts = dict(params.categories)
    mtp = params.mtp_layers
    with_mtp = stored or speculative_mtp
    if mtp and with_mtp:
        for category, n in params.mtp.items():
            if category in ("embed", "lm_head") and not stored:
                continue
            counts[category] = counts.get(category, 0) + n
    dense_dtype = resolve_dtype(model_dtype).name if stored else \
        serving or serving_dtype(model_dtype)
    dense_bits = resolve_dtype(dense_dtype).bits
    scheme = online if online is not None else _quant_scheme(cfg, hf_quant)
    if online is not None and params.towers:
        raise WeightsError(f"{online[0]} of a model with vision / audio towers: which tower "
                           "layers are quantized is not modelled")
    experts_scheme = None if online is not None else \
        _experts_scheme(cfg, params.model_type, scheme)
    mixed = _mixed_bits(cfg, hf_quant, dense_bits) \
        if online is None and scheme is not None and scheme[0].endswith("MIXED_PRECISION") \
        else None
    shares = _modelopt_shares(cfg, hf_quant, mtp if with_mtp else 0) \
        if online is None and hf_quant and scheme is not None and mixed is None else \
        _fbgemm_shares(cfg, mtp if with_mtp else 0) \
        if online is None and scheme is not None and scheme[0] == "fbgemm_fp8" else None
    # vLLM builds a LLaVA-style CLIP / SigLIP encoder only up to vision_feature_layer,
    # without its post-LayerNorm (vLLM 0.32 llava.py _get_num_hidden_layers; clip.py /
    # siglip.py build post_layernorm only with every layer): the unused layers are not held.
    towers = params.towers if stored else params.towers - params.towers_unused
    total_bits = float(towers * dense_bits)
    quant_bits = 0.0
    by_category = {"towers": -(-towers * dense_bits // 8)}
    expert_bits = 0.0
    for category, n in counts.items():
        if mixed is not None and category in mixed:
            quant_bits += n * mixed[category]
            by_category[category] = int(-(-(n * mixed[category]) // 8))
        elif experts_scheme is not None and category == "routed_experts":
            expert_bits += n * experts_scheme[1]
            by_category[category] = int(-(-(n * experts_scheme[1]) // 8))
        elif scheme is not None and shares is not None and category in shares:
            # ModelOpt's per-layer exclusions: that share stays in the model dtype.
            kept = shares[category]
            quant_bits += n * (1 - kept) * scheme[1]
            total_bits += n * kept * dense_bits
            by_category[category] = int(-(-(n * ((1 - kept) * scheme[1] + kept * dense_bits))
                                          // 8))
        elif scheme is not None and category in scheme[2]:
            quant_bits += n * scheme[1]
            by_category[category] = int(-(-(n * scheme[1]) // 8))
        else:
            total_bits += n * dense_bits
            by_category[category] = -(-n * dense_bits // 8)
    quant_bits += expert_bits
    total = int(-(-(total_bits + quant_bits) // 8))
    n_params = sum(counts.values()) + towers
    how = f"{n_params / 1e9:.2f}B parameters at {dense_dtype}"
    if towers:
        how += f" (towers {towers / 1e9:.2f}B included)"
    if mixed is not None:
        listed = ", ".join(f"{c} {mixed[c]:g}" for c in sorted(mixed) if counts.get(c))
        how += (f", MIXED_PRECISION by quantized_layers: bits per weight {listed or 'none'} "
                f"(a module it does not list stays {dense_dtype})")
    elif scheme is not None and shares is not None:
        listed = ", ".join(f"{c} {shares[c]:.1%}" for c in sorted(shares) if counts.get(c))
        which = "modules_to_not_convert" if scheme[0] == "fbgemm_fp8" else "exclude_modules"
        how += (f", linear layers at {scheme[0]} ({scheme[1]:g} bits) but what {which} "
                f"keeps in {dense_dtype} ({listed})")
    elif scheme is not None:
        cats = sorted(scheme[2] - ({"routed_experts"} if experts_scheme else set()))
        how += f", {'/'.join(cats)} at {scheme[0]} ({scheme[1]:g} bits)"
    if experts_scheme is not None:
        how += f", routed_experts at {experts_scheme[0]} ({experts_scheme[1]:g} bits)"
    s = "s" if mtp > 1 else ""
    if mtp and stored:
        how += f", with its {mtp} MTP layer{s} (the checkpoint stores them)"
    elif mtp:
        how += (f", with its {mtp} MTP layer{s} (speculating with an MTP method)"
                if speculative_mtp else
                f", without its {mtp} MTP layer{s} (vLLM loads them only when speculating "
                "with an MTP method)")
    warnings = params.warnings
    if shares is None and hf_quant and online is None and _per_layer_excludes(hf_quant):
        warnings = (*warnings, "hf_quant_config exclude_modules names modules layer by layer, "
                    "which the estimate places only for the families modelopt_exclude.py "
                    f"names ({params.model_type!r} is not one): each category is quantized or "
                    "kept whole by one probe module; likely error up to the excluded modules' "
                    "share at 16 bits")
    if stored and not _states_dtype(cfg):
        warnings = (*warnings, "the config states no dtype: its checkpoint is counted at "
                    "float32 (transformers' default); a checkpoint saved in 16 bits holds half "
                    "(BLOOM-176B's does)")
    by_dtype = {dense_dtype: int(-(-total_bits // 8))}
    if quant_bits - expert_bits and scheme is not None:
        by_dtype[scheme[0]] = int(-(-(quant_bits - expert_bits) // 8))
    if expert_bits and experts_scheme is not None:
        by_dtype[experts_scheme[0]] = int(-(-expert_bits // 8))
    return Estimate(total, how, n_params, warnings, by_dtype, by_category)


_MODELOPT_METHODS = frozenset({"modelopt", "modelopt_fp4"})


def _flat_modelopt(cfg: Mapping[str, Any]) -> Mapping[str, Any] | None:
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


def _mixed_bits(cfg: Mapping[str, Any], hf_quant: Mapping[str, Any] | None,
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
    layers = _int(text.raw, "num_hidden_layers") or 0
    experts = _int(text.raw, *ALIASES["experts"])
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


def _per_layer_excludes(hf_quant: Mapping[str, Any]) -> bool:
    q = hf_quant.get("quantization") or {}
    return isinstance(q, Mapping) and any("layers." in str(p)
                                          for p in q.get("exclude_modules") or ())


def _modelopt_shares(cfg: Mapping[str, Any], hf_quant: Mapping[str, Any],
                     mtp_layers: int) -> Mapping[str, float] | None:
    """Per linear category, the share a ModelOpt checkpoint's per-layer ``exclude_modules``
    keep unquantized (``_layer_shares``)."""
    q = hf_quant.get("quantization") or {}
    patterns = [str(p) for p in (q.get("exclude_modules") or ())] if isinstance(q, Mapping) \
        else []
    return _layer_shares(cfg, patterns, mtp_layers)


def _fbgemm_shares(cfg: Mapping[str, Any], mtp_layers: int) -> Mapping[str, float] | None:
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
    layers = _int(text.raw, "num_hidden_layers")
    if not patterns or not layers:
        return None
    experts = _int(text.raw, *ALIASES["experts"])
    moe = [*moe_layers(text, layers), *([bool(experts)] * mtp_layers)]
    return excluded_shares(text, str(text.model_type or ""), patterns, moe, experts, layers)


def _states_dtype(cfg: Mapping[str, Any]) -> bool:
    """Whether the config (or its text config) states a dtype (``Config.dtype``)."""
    from kvledger.derive.config import Config

    top = Config(cfg, model="config")
    return top.dtype() is not None or top.text().dtype() is not None


def estimate_total_bytes(
    cfg: Mapping[str, Any], model_dtype: str, hf_quant: Mapping[str, Any] | None = None,
    *, speculative_mtp: bool = False,
) -> tuple[int, str]:
    """(bytes, how) on the GPUs at the serving dtype (``estimate_weights``)."""
    est = estimate_weights(cfg, model_dtype, hf_quant, speculative_mtp=speculative_mtp)
    return est.bytes, est.how


# -- a checkpoint's MTP layers ------------------------------------------------------------------

# vLLM 0.32's count of the multi-token-prediction layers a checkpoint holds after its decoder:
# ``num_nextn_predict_layers`` (models/utils.py ``get_spec_layer_idx_from_weight_name``, read by
# deepseek_v2.py, deepseek_v32, glm4_moe.py ``skip_spec_layers``), ``num_mtp_modules``
# (minimax_m2.py), ``mtp_num_hidden_layers`` (Qwen3-Next / Qwen3.5, whose MTP tensors are named
# ``mtp.*``).
MTP_COUNT_KEYS = ALIASES["mtp"]


def mtp_layer_count(cfg: Mapping[str, Any]) -> int:
    return next((_int(cfg, key) for key in MTP_COUNT_KEYS if _int(cfg, key)), 0)


def mtp_part(totals: SafetensorsTotals,
             cfg: Mapping[str, Any]) -> tuple[dict[str, int], dict[str, int]] | None:
    """The bytes (by dtype, and of those the quantization companions) of the checkpoint's MTP
    layers, which vLLM 0.32's model skips when it loads the weights: the decoder layers
    ``num_hidden_layers`` … ``+ n − 1`` (``get_spec_layer_idx_from_weight_name``:
    ``model.layers.<i>.``, ``layers.<i>.``, ``model.language_model.layers.<i>.``; minimax_m2.py
    the same with ``num_mtp_modules``), and tensors named ``mtp`` (qwen3_next.py and qwen3_5.py
    drop the ``mtp.`` prefix, mimo.py ``model.mtp_layers.``, mimo_v2.py and ernie45_moe.py any
    name holding ``mtp``). Only its MTP drafter loads them (``--speculative-method mtp``).
    None: the totals cannot tell them apart."""
    if totals.groups is None:
        return None
    layers = _int(cfg, "num_hidden_layers", "num_layers", "n_layer", "decoder_layers")
    keys = [f"layer:{layers + i}" for i in range(mtp_layer_count(cfg))] + ["mtp"]
    by_dtype: dict[str, int] = {}
    aux: dict[str, int] = {}
    for key in keys:
        for dtype, size in totals.groups.get(key, {}).items():
            by_dtype[dtype] = by_dtype.get(dtype, 0) + size
        for dtype, size in totals.group_aux.get(key, {}).items():
            aux[dtype] = aux.get(dtype, 0) + size
    return by_dtype, aux


def _without(totals: SafetensorsTotals, part: tuple[dict[str, int], dict[str, int]]
             ) -> SafetensorsTotals:
    from kvledger.source.headers import SafetensorsTotals

    by_dtype = {d: n - part[0].get(d, 0) for d, n in totals.by_dtype.items()}
    aux = {d: n - part[1].get(d, 0) for d, n in totals.aux_by_dtype.items()}
    return SafetensorsTotals(sum(by_dtype.values()), by_dtype, totals.files, totals.how, aux)


def split_per_rank(total: int, parts: Mapping[str, int], tp: int, pp: int,
                   split: WeightSplit) -> tuple[int, dict[str, Any]]:
    """(bytes on one GPU, the parts) when ``split`` divides some categories over other ranks
    than TP: each such category's bytes ÷ (its ranks × PP), the rest of ``total`` ÷ (TP × PP),
    each rounded up. ``parts``: estimated bytes per category (``Estimate.by_category``)."""
    rows: dict[str, dict[str, int]] = {}
    left = total
    for category, ranks in split.ranks.items():
        size = min(parts.get(category, 0), left)
        left -= size
        rows[category] = {"bytes": size, "gpus": ranks, "per_gpu": -(-size // (ranks * pp))}
    rows["rest"] = {"bytes": left, "gpus": tp, "per_gpu": -(-left // (tp * pp))}
    per_rank = sum(row["per_gpu"] for row in rows.values())
    return per_rank, {"expert_parallel": split.expert_parallel,
                      "pipeline_parallel_size": pp, "parts": rows,
                      "weights_per_gpu": per_rank, "basis": split.basis}


def model_weights(
    cfg: Mapping[str, Any],
    *,
    model_dtype: str,
    directory: Path | None = None,
    hf_quant: Mapping[str, Any] | None = None,
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    exact: SafetensorsTotals | None = None,
    speculative_mtp: bool = False,
    config: Mapping[str, Any] | None = None,
    split: WeightSplit | None = None,
    online: tuple[str, float, frozenset[str]] | None = None,
    serving: str | None = None,
) -> Weights:
    """The weights' total on the GPUs and per-GPU share (module docstring: both paths, and
    the serving dtype ``model_dtype`` decides).

    ``exact``: the checkpoint's safetensors totals (``ModelSource.safetensors()``); else the
    safetensors files of a local ``directory``; else the estimate. A checkpoint's MTP layers
    count only with ``speculative_mtp`` (the engine speculates with an MTP method: ``mtp_part``).
    ``config``: the whole config.json, when ``cfg`` is a wrapper's language model: the
    estimate then counts the vision / audio towers vLLM builds beside it. ``split``: the
    engine divides the experts over other ranks than TP (``split_per_rank``; the experts'
    share of an exact total is the estimate's, so the per-GPU figure is estimated).
    ``online``: the engine quantizes an unquantized checkpoint as it loads it
    (``estimate_weights``): the checkpoint's headers hold the unquantized bytes, so the
    estimate is used. ``serving``: the dtype the engine serves the weights in
    (``Layout.serving_dtype``, the one rule its plan reads too); None: ``serving_dtype``.
    """
    serving = serving or serving_dtype(model_dtype)
    if online is not None:
        exact, directory = None, None
    if exact is None and directory is not None:
        from kvledger.source.headers import index_totals, local_totals

        exact = local_totals(str(directory)) or index_totals(str(directory))
    stored: int | None = None
    warnings: tuple[str, ...] = ()
    parameters: int | None = None
    if exact is not None:
        mtp = mtp_part(exact, cfg)
        mtp_stored = sum(mtp[0].values()) if mtp is not None else 0
        loaded = _without(exact, mtp) if mtp is not None and mtp_stored and \
            not speculative_mtp else exact
        stored, total = exact.total_bytes, served_bytes(loaded, serving)
        how = _exact_detail(exact, total, serving)
        if mtp_stored:
            how += (f"; its MTP layers' {mtp_stored:,} B stored included (speculating with an "
                    "MTP method)" if speculative_mtp else
                    f"; without its MTP layers' {mtp_stored:,} B stored (vLLM loads them only "
                    "when speculating with an MTP method)")
        elif mtp is None and mtp_layer_count(cfg):
            how += ("; the config has MTP layers, which this total cannot tell apart: counted "
                    "whether or not the engine loads them")
        basis = EXACT
    else:
        est = estimate_weights(config if config is not None else cfg, model_dtype, hf_quant,
                               speculative_mtp=speculative_mtp, online=online, serving=serving)
        total, how, warnings, parameters = est.bytes, est.how, est.warnings, est.parameters
        if warnings:
            how += f"; not exact: {'; '.join(warnings)}"
        basis = ESTIMATED
    ranks = tensor_parallel_size * pipeline_parallel_size
    per_rank = -(-total // ranks)
    per_rank_basis = basis if ranks == 1 else ESTIMATED
    parts: dict[str, Any] | None = None
    if split is not None:
        counted = estimate_weights(config if config is not None else cfg, model_dtype,
                                   hf_quant, speculative_mtp=speculative_mtp,
                                   online=online, serving=serving).by_category or {}
        if any(counted.get(category, 0) > 0 for category in split.ranks):
            per_rank, parts = split_per_rank(total, counted, tensor_parallel_size,
                                             pipeline_parallel_size, split)
            per_rank_basis = ESTIMATED
            shares = ", ".join(f"{c.replace('_', ' ')} / {n * pipeline_parallel_size}"
                               for c, n in split.ranks.items())
            how += (f"; per GPU: {shares}, the rest / ({tensor_parallel_size} TP × "
                    f"{pipeline_parallel_size} PP)")
    if parts is None and ranks > 1:
        how += f"; per GPU: total / ({tensor_parallel_size} TP × {pipeline_parallel_size} PP)"
    return Weights(total, per_rank, basis, per_rank_basis, how, stored, warnings, parameters,
                   parts)

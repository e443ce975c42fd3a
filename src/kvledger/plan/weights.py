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
8-bit scale per 32 = 4.25 bits, AWQ / GPTQ = bits + (16 + bits) / group_size (the schemes and
their exclusion lists are read in ``quant_storage.py``); norms, biases and towers stay at the
dense dtype. An unrecognised quantization method raises rather than guessing 16 bits.
``estimate_weights(..., stored=True)`` is what the checkpoint's safetensors hold (the config's
own dtype, MTP layers included); the default is what vLLM holds.

Per rank: tensor parallelism and pipeline stages split the weights; the per-GPU share is the
total divided evenly (``ceil(total / (tp × pp))``), an estimate even when the total is exact
(embeddings and the LM head sit on the first and last stage). Where an engine divides a MoE
model's experts over other GPUs than the TP group (``WeightSplit``: vLLM's experts over DP × TP
with data or expert parallelism, ``plan/engines/vllm/experts.py``), ``split_per_rank`` divides
the routed and shared experts' estimated bytes by their own rank counts and the rest by TP.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.params import ALIASES
from kvledger.plan.quant_storage import (
    WeightsError as WeightsError,  # re-exported: callers catch it as weights.WeightsError
)
from kvledger.plan.quant_storage import (
    config_count,
    fbgemm_shares,
    flat_modelopt,
    mixed_bits,
    modelopt_shares,
    per_layer_excludes,
    quant_scheme,
    routed_experts_scheme,
)
from kvledger.plan.tp_replicated import UNSHARDED_ATTN
from kvledger.records import record

if TYPE_CHECKING:
    from pathlib import Path

    from kvledger.derive.params import Parameters
    from kvledger.source.headers import SafetensorsTotals

EXACT = "exact"
ESTIMATED = "estimated"

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

    Quantized categories are counted at the method's storage size (``quant_scheme``); norms,
    biases, SSM vectors (``other``) and towers stay at the dense dtype. ``online``: the
    engine's online quantization of an unquantized checkpoint, as (name, bits per weight,
    categories quantized), in place of the checkpoint's scheme; a model with towers is
    refused then (whether their linear layers are quantized depends on the model class).
    """
    if hf_quant is None:
        hf_quant = flat_modelopt(cfg)
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
    scheme = online if online is not None else quant_scheme(cfg, hf_quant)
    if online is not None and params.towers:
        raise WeightsError(f"{online[0]} of a model with vision / audio towers: which tower "
                           "layers are quantized is not modelled")
    experts_scheme = None if online is not None else \
        routed_experts_scheme(cfg, params.model_type, scheme)
    mixed = mixed_bits(cfg, hf_quant, dense_bits) \
        if online is None and scheme is not None and scheme[0].endswith("MIXED_PRECISION") \
        else None
    shares = modelopt_shares(cfg, hf_quant, mtp if with_mtp else 0) \
        if online is None and hf_quant and scheme is not None and mixed is None else \
        fbgemm_shares(cfg, mtp if with_mtp else 0) \
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
    if params.unsharded_attention and counts.get("attn"):
        # The attention bytes the engines keep whole on every TP rank, at attention's own
        # storage (tp_replicated.py): apart from the sharded rest of "attn".
        whole = min(by_category["attn"],
                    -(-by_category["attn"] * params.unsharded_attention // counts["attn"]))
        by_category["attn"] -= whole
        by_category[UNSHARDED_ATTN] = whole
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
    if shares is None and hf_quant and online is None and per_layer_excludes(hf_quant):
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
    return next((config_count(cfg, key) for key in MTP_COUNT_KEYS if config_count(cfg, key)), 0)


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
    layers = config_count(cfg, "num_hidden_layers", "num_layers", "n_layer", "decoder_layers")
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

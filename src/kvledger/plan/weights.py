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

Estimated path (labelled so everywhere it is shown): a generic decoder — embeddings, attention
(GQA or MLA projections), dense or mixture-of-experts MLP, LM head — counted per category, each
category stored at the element size the quantization config gives it. Layers the generic
formula does not describe exactly (Mamba / linear-attention mixers) are counted as attention
layers; the number is an estimate and the report says so. Quantized weights are counted at
storage size, scales included: fp8 ≈ 8 bits (+ one fp32 scale per 128×128 block), nvfp4 =
4 bits + one fp8 scale per 16 = 4.5 bits, mxfp4 = 4 bits + one 8-bit scale per 32 = 4.25 bits.
An unrecognised quantization method raises rather than guessing 16 bits.

Per rank: tensor parallelism and pipeline stages split the weights; the per-GPU share is the
total divided evenly (``ceil(total / (tp × pp))``), an estimate even when the total is exact
(embeddings and the LM head sit on the first and last stage).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.quant import states_no_method
from kvledger.records import record

if TYPE_CHECKING:
    from pathlib import Path

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


class WeightsError(ValueError):
    """The weights cannot be sized without guessing (names what is missing)."""


# -- the serving dtype --------------------------------------------------------------------------

# Bytes per element of the floating dtypes an engine casts (safetensors names).
_FLOAT_WIDTH = {"F16": 2, "BF16": 2, "F32": 4, "F64": 8}


def serving_dtype(model_dtype: str) -> str:
    """The dtype vLLM serves a checkpoint in under ``--dtype auto``.

    vLLM 0.32.0 ``vllm/config/model.py`` ``_get_and_verify_dtype`` → ``_resolve_auto_dtype``:
    the config's dtype, except that a float32 one is downcast to the platform's preferred
    dtype, and a dtype the platform does not list falls back to it; on CUDA with bfloat16
    support (every GPU preset here) that is bfloat16. float16 and bfloat16 stay as they are.
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


def parameter_counts(cfg: Mapping[str, Any]) -> dict[str, int]:
    """Parameters per category for a generic decoder (see the module docstring)."""
    hidden = _int(cfg, "hidden_size", "d_model", "n_embd")
    layers = _int(cfg, "num_hidden_layers", "num_layers", "n_layer", "decoder_layers")
    vocab = _int(cfg, "vocab_size")
    if not hidden or not layers or not vocab:
        raise WeightsError(
            "cannot estimate weights: config lacks hidden_size / num_hidden_layers / vocab_size; "
            "give the KV budget with kv_cache_memory_bytes, or a model directory with "
            "safetensors for exact weights"
        )
    heads = _int(cfg, "num_attention_heads", "n_head", "decoder_attention_heads", default=1)
    kv_heads = _int(cfg, "num_key_value_heads", default=heads)
    head_dim = _int(cfg, "head_dim", default=hidden // max(1, heads))
    if cfg.get("kv_lora_rank"):  # MLA (DeepSeek-V2/V3, Kimi-K2, GLM-5)
        nope, rope = _int(cfg, "qk_nope_head_dim"), _int(cfg, "qk_rope_head_dim")
        v_dim, kv_lora = _int(cfg, "v_head_dim"), _int(cfg, "kv_lora_rank")
        q_lora = _int(cfg, "q_lora_rank")
        q = hidden * q_lora + q_lora * heads * (nope + rope) if q_lora else \
            hidden * heads * (nope + rope)
        attn = q + hidden * (kv_lora + rope) + kv_lora * heads * (nope + v_dim) + \
            heads * v_dim * hidden
    else:
        attn = hidden * (heads + 2 * kv_heads) * head_dim + heads * head_dim * hidden
    widths = cfg.get("intermediate_size")
    if isinstance(widths, list) and len(widths) == layers:
        # One MLP width per layer (Gemma 3n): the dense MLPs below sum them.
        per_layer = [_int({"intermediate_size": w}, "intermediate_size") for w in widths]
        inter = sum(per_layer) // layers
    else:
        per_layer = []
        inter = _int(cfg, "intermediate_size", "n_inner", "ffn_dim", default=4 * hidden)
    experts = _int(cfg, "n_routed_experts", "num_local_experts", "num_experts")
    counts = {k: 0 for k in _PROBES}
    counts["embed"] = vocab * hidden
    counts["lm_head"] = 0 if cfg.get("tie_word_embeddings") is True else vocab * hidden
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        return _hybrid_pattern_counts(cfg, pattern, counts, attn, hidden, inter, experts)
    counts["attn"] = layers * attn
    if experts:
        moe_inter = _int(cfg, "moe_intermediate_size", default=inter)
        dense_layers = min(layers, _int(cfg, "first_k_dense_replace"))
        moe_layers = layers - dense_layers
        shared_inter = _int(cfg, "shared_expert_intermediate_size") or \
            _int(cfg, "n_shared_experts") * moe_inter
        counts["dense_mlp"] = dense_layers * 3 * hidden * inter
        counts["routed_experts"] = moe_layers * experts * 3 * hidden * moe_inter
        counts["shared_experts"] = moe_layers * 3 * hidden * shared_inter
        counts["router"] = moe_layers * hidden * experts
    else:
        counts["dense_mlp"] = 3 * hidden * (sum(per_layer) if per_layer else layers * inter)
    return counts


def _hybrid_pattern_counts(
    cfg: Mapping[str, Any], pattern: str, counts: dict[str, int], attn: int, hidden: int,
    inter: int, experts: int,
) -> dict[str, int]:
    """Nemotron-H style ``hybrid_override_pattern``: one mixer per layer — ``M`` Mamba2, ``*``
    attention, ``-`` MLP, ``E`` mixture of experts (counted under ``attn`` / ``dense_mlp`` /
    ``routed_experts`` / ``shared_experts`` for the quantization scopes)."""
    mats = 2 if cfg.get("mlp_hidden_act") == "relu2" else 3  # relu² MLPs have no gate
    heads = _int(cfg, "mamba_num_heads")
    d_inner = heads * _int(cfg, "mamba_head_dim")
    groups_state = 2 * _int(cfg, "n_groups", default=1) * _int(cfg, "ssm_state_size")
    mamba = hidden * (2 * d_inner + groups_state + heads) + d_inner * hidden
    latent = _int(cfg, "moe_latent_size", default=hidden)
    moe_inter = _int(cfg, "moe_intermediate_size", default=inter)
    shared = _int(cfg, "moe_shared_expert_intermediate_size", "shared_expert_intermediate_size")
    counts["attn"] = pattern.count("M") * mamba + pattern.count("*") * attn
    counts["dense_mlp"] = pattern.count("-") * mats * hidden * inter
    moe_layers = pattern.count("E")
    counts["routed_experts"] = moe_layers * experts * mats * latent * moe_inter
    counts["shared_experts"] = moe_layers * (mats * hidden * shared +
                                             (2 * hidden * latent if latent != hidden else 0))
    counts["router"] = moe_layers * hidden * experts
    return counts


def _matches(patterns: Iterable[str], name: str) -> bool:
    for pattern in patterns:
        if pattern.startswith("re:"):
            if re.search(pattern[3:], name):
                return True
        elif fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(name, pattern + ".*") or \
                pattern == name or name.endswith("." + pattern):
            return True
    return False


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
        if bits is None:
            raise WeightsError(f"hf_quant_config quant_algo {algo!r} has no known storage size")
        cats = frozenset(c for c in linear if not _matches(excluded, _PROBES[c]))
        return f"modelopt {algo}", bits, cats
    qc = cfg.get("quantization_config")
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
    raise WeightsError(
        f"quantization_config.quant_method {method!r} has no known storage size; pass "
        "--kv-cache-memory-bytes, or a model directory with safetensors for exact weights"
    )


def estimate_total_bytes(
    cfg: Mapping[str, Any], model_dtype: str, hf_quant: Mapping[str, Any] | None = None,
    *, speculative_mtp: bool = False,
) -> tuple[int, str]:
    """(bytes, how) from the config's parameter count at storage size.

    The count is of the ``num_hidden_layers`` decoder layers; a checkpoint's MTP layers
    (``mtp_layer_count``) are added only when the engine speculates with an MTP method, as
    vLLM loads them only then (``mtp_part``): each as one more decoder layer of the model's
    kind plus its ``eh_proj`` (2 × hidden → hidden; ``deepseek_mtp.py``), the embedding and
    head shared with the model's (vLLM's proposer shares them when their shapes agree).
    """
    counts = parameter_counts(cfg)
    mtp = mtp_layer_count(cfg)
    if speculative_mtp and mtp:
        layers = _int(cfg, "num_hidden_layers", "num_layers", "n_layer", "decoder_layers")
        more = parameter_counts({**cfg, "num_hidden_layers": layers + mtp})
        for category in counts:
            if category not in ("embed", "lm_head"):
                counts[category] = more[category]
        counts["attn"] += mtp * 2 * _int(cfg, "hidden_size", "d_model", "n_embd") ** 2
    # Weights sit in GPU memory at the serving dtype: a float32 checkpoint (or a config that
    # states no dtype) is served in bfloat16, as vLLM's ModelConfig dtype "auto" does.
    serving = serving_dtype(model_dtype)
    dense_bits = resolve_dtype(serving).bits
    scheme = _quant_scheme(cfg, hf_quant)
    total_bits = 0.0
    for category, params in counts.items():
        bits = float(dense_bits)
        if scheme is not None and category in scheme[2]:
            bits = scheme[1]
        total_bits += params * bits
    params = sum(counts.values())
    how = f"{params / 1e9:.2f}B parameters at {serving}"
    if scheme is not None:
        how += f", {'/'.join(sorted(scheme[2]))} at {scheme[0]} ({scheme[1]:g} bits)"
    if mtp:
        how += (f", with its {mtp} MTP layer{'s' if mtp > 1 else ''} (speculating with an MTP "
                "method)" if speculative_mtp else
                f", without its {mtp} MTP layer{'s' if mtp > 1 else ''} (vLLM loads them only "
                "when speculating with an MTP method)")
    return int(-(-total_bits // 8)), how


# -- a checkpoint's MTP layers ------------------------------------------------------------------

# vLLM 0.32's count of the multi-token-prediction layers a checkpoint holds after its decoder:
# ``num_nextn_predict_layers`` (models/utils.py ``get_spec_layer_idx_from_weight_name``, read by
# deepseek_v2.py, deepseek_v32, glm4_moe.py ``skip_spec_layers``), ``num_mtp_modules``
# (minimax_m2.py), ``mtp_num_hidden_layers`` (Qwen3-Next / Qwen3.5, whose MTP tensors are named
# ``mtp.*``).
MTP_COUNT_KEYS = ("num_nextn_predict_layers", "num_mtp_modules", "mtp_num_hidden_layers")


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
) -> Weights:
    """The weights' total on the GPUs and per-GPU share (module docstring: both paths, and
    the serving dtype ``model_dtype`` decides).

    ``exact``: the checkpoint's safetensors totals (``ModelSource.safetensors()``); else the
    safetensors files of a local ``directory``; else the estimate. A checkpoint's MTP layers
    count only with ``speculative_mtp`` (the engine speculates with an MTP method: ``mtp_part``).
    """
    if exact is None and directory is not None:
        from kvledger.source.headers import index_totals, local_totals

        exact = local_totals(str(directory)) or index_totals(str(directory))
    stored: int | None = None
    if exact is not None:
        serving = serving_dtype(model_dtype)
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
        total, how = estimate_total_bytes(cfg, model_dtype, hf_quant,
                                          speculative_mtp=speculative_mtp)
        basis = ESTIMATED
    ranks = tensor_parallel_size * pipeline_parallel_size
    per_rank = -(-total // ranks)
    per_rank_basis = basis if ranks == 1 else ESTIMATED
    if ranks > 1:
        how += f"; per GPU: total / ({tensor_parallel_size} TP × {pipeline_parallel_size} PP)"
    return Weights(total, per_rank, basis, per_rank_basis, how, stored)

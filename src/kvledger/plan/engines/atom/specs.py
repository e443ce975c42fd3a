"""Each ATOM attention backend's entry classes, in bytes, from the config keys ATOM reads.

One function per backend's ``sub_pool_specs``, each citing it; ``layers`` is the runner's
``_get_total_num_layers()`` (this stage's decoder layers, plus the MTP draft layers on the last
stage when speculating). Every function returns kvledger ``SubPoolSpec``s and the terms of the
sum (for the plan's JSON), so a reader can check each product against ATOM's line.

Notation: ``B`` the runner's block size (``--block-size``), ``P`` the builder's physical block
size, ``e`` the KV element size (aiter ``d_dtypes``: bf16 2, fp8 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.declare.pools import SubPoolSpec, page_pool, state_pool
from kvledger.plan.engines.atom.releases import KV_DTYPE_BYTES
from kvledger.records import record

# atom/model_engine/kv_block.py: STATE_SLOT_CLASS = "state" — the per-request slot class
# every STATE-declaring backend imports.
STATE_SLOT_CLASS = "state"
FP32 = 4
FP8 = 1


class AtomConfigError(ValueError):
    """ATOM would stop on this configuration (an assertion or a missing key), in its words."""


@record(frozen=True)
class Settings:
    """What a builder reads besides the config (``ModelRunner`` / ``Config`` fields)."""

    kv_dtype: str  # "bf16" | "fp8"
    block_size: int  # runner.block_size (config.kv_cache_block_size)
    tp: int
    layers: int  # runner._get_total_num_layers() on this stage
    num_hidden_layers: int  # hf_config.num_hidden_layers
    num_spec: int = 0  # drafter.mtp_k (= --num-speculative-tokens), 0 without a drafter
    model_dtype_bytes: int = 2  # Config.torch_dtype (the config's dtype, else bf16)
    index_cache_dtype: str | None = None  # --index-cache-dtype (None: the default)

    @property
    def e(self) -> int:
        return KV_DTYPE_BYTES[self.kv_dtype]

    @property
    def num_draft(self) -> int:
        return self.layers - self.num_hidden_layers


@record(frozen=True)
class EntryClasses:
    specs: tuple[SubPoolSpec, ...]
    terms: dict[str, int]  # each product of the sum, named as ATOM's comment names it
    physical_block_size: int


def _int(cfg: Mapping[str, Any], key: str) -> int:
    value = cfg.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise AtomConfigError(f"the config has no integer {key!r}, which ATOM reads here")
    return value


def head_dim(cfg: Mapping[str, Any]) -> int:
    """``get_num_blocks``: ``head_dim`` if set, else ``hidden_size // num_attention_heads``."""
    value = cfg.get("head_dim")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return _int(cfg, "hidden_size") // _int(cfg, "num_attention_heads")


def kv_heads_per_rank(heads: int, tp: int) -> int:
    """``ModelRunner._get_num_kv_heads``: split when heads >= tp (which must divide), else 1
    (tp must be a multiple of heads)."""
    if heads >= tp:
        if heads % tp:
            raise AtomConfigError(f"ATOM asserts num_key_value_heads % tensor_parallel_size == 0"
                                  f" (_get_num_kv_heads): {heads} % {tp} != 0")
        return heads // tp
    if tp % heads:
        raise AtomConfigError(f"ATOM asserts tensor_parallel_size % num_key_value_heads == 0 "
                              f"(_get_num_kv_heads): {tp} % {heads} != 0")
    return 1


def _kv_heads(cfg: Mapping[str, Any]) -> int:
    value = cfg.get("num_key_value_heads")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return _int(cfg, "num_attention_heads")


def sparse_config(cfg: Mapping[str, Any]) -> Mapping[str, Any] | None:
    value = cfg.get("sparse_attention_config")
    return value if isinstance(value, Mapping) and value else None


def mha_physical_block_size(cfg: Mapping[str, Any], block_size: int, minimax_m3: bool) -> int:
    """``AiterAttentionMetadataBuilder.__init__``: MiniMax-M3's ``sparse_block_size``; else the
    runner's block size when it is 256 or 1024, else 16. It must divide the runner's."""
    sparse = sparse_config(cfg)
    if minimax_m3 and sparse and sparse.get("sparse_block_size"):
        physical = int(sparse["sparse_block_size"])
    else:
        physical = block_size if block_size in (256, 1024) else 16
    if block_size % physical:
        raise AtomConfigError(
            f"model_runner.block_size must be divisible by block_size but got "
            f"model_runner.block_size={block_size}, block_size={physical}, please set "
            f"--block-size (model_runner.block_size) to be divisible by {physical}")
    return physical


def mha(cfg: Mapping[str, Any], s: Settings, *, minimax_m3: bool = False) -> EntryClasses:
    """``AiterAttentionMetadataBuilder.sub_pool_specs``, standard path: K and V of every layer
    plus an fp32 ``kv_scale`` (kept for bf16 too), and MiniMax-M3's sparse index cache."""
    kvh = kv_heads_per_rank(_kv_heads(cfg), s.tp)
    hd = head_dim(cfg)
    p = mha_physical_block_size(cfg, s.block_size, minimax_m3)
    terms = {
        "kv_cache = 2 × layers × B × kv_heads × head_dim × e":
            2 * s.layers * s.block_size * kvh * hd * s.e,
        "kv_scale = 2 × layers × kv_heads × P × 4 (fp32)": 2 * s.layers * kvh * p * FP32,
    }
    sparse = sparse_config(cfg)
    if sparse:
        layers = sum(1 for on in sparse.get("sparse_attention_freq", []) if on)
        # _resolve_index_cache_dtype: --index-cache-dtype, else --kv_cache_dtype (bf16 / fp8).
        index_e = KV_DTYPE_BYTES[s.index_cache_dtype or s.kv_dtype]
        terms["index_cache = sparse layers × P × sparse_index_dim × index e"] = (
            layers * p * int(sparse["sparse_index_dim"]) * index_e)
    return EntryClasses((page_pool(sum(terms.values())),), terms, p)


def mimo_v2(cfg: Mapping[str, Any], s: Settings) -> EntryClasses:
    """``AiterAttentionMetadataBuilder.sub_pool_specs``, ``is_mimo_v2`` branch: full and SWA
    layers by ``hybrid_layer_pattern`` (1 = SWA), each at its own KV heads; draft layers count
    as SWA; both K and V at ``head_dim``; fp32 ``kv_scale`` per layer type."""
    pattern = cfg.get("hybrid_layer_pattern")
    if not isinstance(pattern, list) or len(pattern) < s.num_hidden_layers:
        raise AtomConfigError("MiMo-V2: the config has no hybrid_layer_pattern covering every "
                              "layer, which ATOM reads here")
    swa = sum(1 for i in range(s.num_hidden_layers) if pattern[i] == 1)
    full = s.num_hidden_layers - swa
    swa += s.num_draft
    kvh = kv_heads_per_rank(_kv_heads(cfg), s.tp)
    raw = cfg.get("swa_num_key_value_heads") or 0
    swa_kvh = raw // s.tp if raw >= s.tp else (1 if raw else 0)
    hd = head_dim(cfg)
    p = mha_physical_block_size(cfg, s.block_size, False)
    terms = {
        "full kv = 2 × full layers × B × kv_heads × head_dim × e":
            2 * full * s.block_size * kvh * hd * s.e,
        "swa kv = 2 × swa layers × B × swa_kv_heads × head_dim × e":
            2 * swa * s.block_size * swa_kvh * hd * s.e,
        "full kv_scale = 2 × full layers × kv_heads × P × 4": 2 * full * kvh * p * FP32,
        "swa kv_scale = 2 × swa layers × swa_kv_heads × P × 4": 2 * swa * swa_kvh * p * FP32,
    }
    return EntryClasses((page_pool(sum(terms.values())),), terms, p)


def mla(cfg: Mapping[str, Any], s: Settings) -> EntryClasses:
    """``AiterMLAMetadataBuilder.sub_pool_specs``: one 576-wide packed latent per layer
    (the width is a literal in ATOM, not read from the config), plus DeepSeek-V3.2's indexer
    (``index_head_dim + 4`` rounded up to 16, fp8) when the config has ``index_topk``."""
    terms = {"kv_cache = layers × B × 576 × e": s.layers * s.block_size * 576 * s.e}
    if "index_topk" in cfg:  # ModelRunner.is_deepseek_v32 = hasattr(hf_config, "index_topk")
        aligned = (_int(cfg, "index_head_dim") + 4 + 15) // 16 * 16
        terms["index_cache = layers × B × align16(index_head_dim + 4) × 1 (fp8)"] = (
            s.layers * s.block_size * aligned * FP8)
    # AiterMLAMetadataBuilder.block_size: 1 (ATOM_MLA_PAGE_SIZE unset).
    return EntryClasses((page_pool(sum(terms.values())),), terms, 1)


@record(frozen=True)
class LinearState:
    """The linear-attention geometry ``GDNStateMixin._state_shape_for_runner`` reads."""

    layers: int  # runner.num_gdn_attn_state
    k_heads: int
    v_heads: int
    k_dim: int
    v_dim: int
    kernel: int
    temporal_fp32: bool  # GDNStateMixin._state_dtypes: kimi_linear keeps it in float32


def state_class(st: LinearState, s: Settings) -> tuple[SubPoolSpec, dict[str, int]]:
    """``GDNStateMixin.state_spec``: conv_state ``(kernel − 1 + num_spec, conv_dim // tp)`` and
    temporal ``(v_heads // tp, v_dim, k_dim)`` per layer, ``1 + num_spec`` entries a request."""
    conv_dim = st.k_dim * st.k_heads * 2 + st.v_dim * st.v_heads
    conv = (st.kernel - 1 + s.num_spec) * (conv_dim // s.tp)
    temporal = (st.v_heads // s.tp) * st.v_dim * st.k_dim
    per_layer = conv * s.model_dtype_bytes + temporal * (
        FP32 if st.temporal_fp32 else s.model_dtype_bytes)
    terms = {
        "conv_state = (kernel − 1 + num_spec) × conv_dim // tp × model dtype, per layer":
            conv * s.model_dtype_bytes,
        "temporal_state = v_heads // tp × v_dim × k_dim × state dtype, per layer":
            temporal * (FP32 if st.temporal_fp32 else s.model_dtype_bytes),
        "state slot = state layers × per layer": st.layers * per_layer,
    }
    return state_pool(STATE_SLOT_CLASS, st.layers * per_layer,
                      entries_per_req=1 + s.num_spec), terms


def gdn(cfg: Mapping[str, Any], s: Settings) -> EntryClasses:
    """``GDNAttentionMetadataBuilder.sub_pool_specs``: paged K/V (and fp32 scale) for the
    full-attention layers only, at the physical block size in both terms, plus the state."""
    interval = _int(cfg, "full_attention_interval")
    full = s.num_hidden_layers // interval  # GDNStateMixin._init_gdn_state
    n_full = full + s.num_draft
    kvh = kv_heads_per_rank(_kv_heads(cfg), s.tp)
    hd = head_dim(cfg)
    p = mha_physical_block_size(cfg, s.block_size, False)
    terms = {
        "kv_cache = 2 × (full layers + draft) × P × kv_heads × head_dim × e":
            2 * n_full * p * kvh * hd * s.e,
        "kv_scale = 2 × (full layers + draft) × kv_heads × P × 4": 2 * n_full * kvh * p * FP32,
    }
    page = page_pool(sum(terms.values()))
    state, state_terms = state_class(LinearState(
        s.num_hidden_layers - full, _int(cfg, "linear_num_key_heads"),
        _int(cfg, "linear_num_value_heads"), _int(cfg, "linear_key_head_dim"),
        _int(cfg, "linear_value_head_dim"), _int(cfg, "linear_conv_kernel_dim"), False), s)
    return EntryClasses((page, state), {**terms, **state_terms}, p)


def kimi_linear(cfg: Mapping[str, Any], s: Settings) -> EntryClasses:
    """``_KimiMLAGDNCommon.sub_pool_specs``: MLA (``kv_lora_rank + qk_rope_head_dim``) for the
    full-attention layers and draft layers, plus the KDA state (``GDNStateMixin``) with the
    aliases ``_init_gdn_state`` fills from ``linear_attn_config``."""
    lin = cfg.get("linear_attn_config") or {}
    if not isinstance(lin, Mapping):
        raise AtomConfigError("kimi_linear: linear_attn_config is not a mapping")
    full = len(lin.get("full_attn_layers", []))
    kda = len(lin.get("kda_layers", []))
    entry = _int(cfg, "kv_lora_rank") + _int(cfg, "qk_rope_head_dim")
    rows = full + s.num_draft  # _num_cache_rows
    terms = {"kv_cache = (full layers + draft) × B × (kv_lora_rank + qk_rope_head_dim) × e":
             rows * s.block_size * entry * s.e}
    page = page_pool(terms[next(iter(terms))])

    def pick(key: str, default: Any) -> int:
        value = cfg.get(key)
        value = default if value is None else value
        if isinstance(value, bool) or not isinstance(value, int):
            raise AtomConfigError(f"kimi_linear: no integer {key!r} for the KDA state")
        return value

    heads = lin.get("num_heads", cfg.get("num_attention_heads"))
    st = LinearState(
        kda, pick("linear_num_key_heads", heads), pick("linear_num_value_heads", heads),
        pick("linear_key_head_dim", lin.get("head_dim", cfg.get("qk_nope_head_dim"))),
        pick("linear_value_head_dim", lin.get("head_dim", cfg.get("v_head_dim"))),
        pick("linear_conv_kernel_dim", lin.get("short_conv_kernel_size", 4)), True)
    state, state_terms = state_class(st, s)
    return EntryClasses((page, state), {**terms, **state_terms}, 1)


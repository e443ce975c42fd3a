"""Kimi Delta Attention hybrids: Kimi-Linear / Kimi-K3 (``kimi_linear``, ``kimi_k3``) and
GLM-5.3-Flash (``glm5_next``). Both wrappers keep the language model in ``text_config``.

Kimi-Linear / Kimi-K3 (vLLM ``kimi_linear.py``): ``linear_attn_config.kda_layers`` and
``full_attn_layers`` are **1-based** (vLLM ``KimiLinearConfig.is_kda_layer`` tests
``layer_idx + 1``). KDA layers hold a ``KDAState`` (vLLM ``kda_state_shape`` with
``num_heads``, ``head_dim``, ``short_conv_kernel_size``); the others are MLA caching
``kv_lora_rank + qk_rope_head_dim`` per token (Kimi-K3: 512 + 64 = 576, as vLLM's
``MLAAttentionSpec`` head_size).

GLM-5.3-Flash (vLLM 0.32 ``glm5_next``): ``layer_types`` names each layer
``linear_attention`` (KDA) or ``deepseek_sparse_attention``; its ``linear_attn_config`` lists
are 0-based and must agree. A sparse layer caches three things:

* the NoPE MLA latent, ``kv_lora_rank + qk_rope_head_dim`` (512 + 0);
* the pooled indexer keys: one fp8 key of ``index_head_dim`` plus one fp32 scale per
  ``index_kpool`` tokens (vLLM 0.32 oracle: MLAAttentionSpec head_size 132 uint8,
  tokens_per_state 4);
* the indexer tail: the raw rows of the pool still being filled, a per-request ring of
  ``index_kpool`` positions x 2 rows x ``index_head_dim`` in the model dtype (vLLM 0.32
  oracle: CircularBufferSpec block_size 4, 2 heads x 128, bfloat16; vLLM's
  CircularBufferSpec holds "the raw keys of the token group that is still being compressed",
  one block per request).

The MTP layer (``num_nextn_predict_layers``) is a sparse-attention layer and caches the same
three things.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnknownCacheKey, UnsupportedArchitecture
from kvledger.derive.kvdtype import model_dtype
from kvledger.derive.layers import MLA, Indexer, Kind, LayerCache, Role
from kvledger.derive.registry import Derived
from kvledger.derive.states import KDAState
from kvledger.records import record

FAMILY = "kda"

# linear_attn_config sub-keys checked against (anything else fails closed).
LINEAR_ATTN_KEYS = frozenset(
    {"num_heads", "head_dim", "short_conv_kernel_size", "kda_layers", "full_attn_layers",
     "gate_lower_bound", "use_full_rank_gate"}
)

# vLLM 0.32 stores the GLM-5.3 indexer keys as fp8 with one fp32 scale per 128 values
# (oracle: head_size 132 = 128 + 4 bytes, uint8).
INDEXER_QUANT_BLOCK = 128
INDEXER_SCALE_BYTES = 4
# Rows per position in the GLM-5.3 indexer tail ring (vLLM 0.32 oracle: num_kv_heads 2).
TAIL_ROWS = 2


@record(frozen=True, kw_only=True)
class PooledIndexer(Indexer):
    """Indexer keys pooled over ``pool`` positions: one quantized entry per ``pool`` tokens
    (GLM-5.3 ``index_kpool``; vLLM ``tokens_per_state``)."""

    pool: int

    def bytes_per_entry(self) -> int:
        return super().bytes_per_token()

    def bytes_per_token(self) -> int:
        entry = self.bytes_per_entry()
        if entry % self.pool:
            raise ValueError(
                f"pooled indexer entry of {entry} B is not a whole number of bytes per token "
                f"over {self.pool} tokens; use bytes_per_entry()"
            )
        return entry // self.pool


@record(frozen=True, kw_only=True)
class IndexerTail(LayerCache):
    """Per-request ring of the raw indexer rows of the pool still being filled:
    ``capacity`` positions x ``rows`` x ``head_dim``. Replicated on every TP rank."""

    kind: ClassVar[Kind] = Kind.STATE
    capacity: int
    rows: int
    head_dim: int

    def bytes_per_request(self) -> int:
        return self.kv_dtype.nbytes(self.capacity * self.rows * self.head_dim)


def _linear_attn_config(text: Config) -> Mapping[str, Any]:
    lac = text.require("linear_attn_config")
    if not isinstance(lac, Mapping):
        raise ConfigError(f"{text.model}: linear_attn_config must be an object")
    for key in sorted(lac):
        if key not in LINEAR_ATTN_KEYS and lac[key] is not None:
            raise UnknownCacheKey(f"linear_attn_config.{key}", model_type=text.model_type,
                                  family=FAMILY)
    return lac


def _int_list(lac: Mapping[str, Any], key: str, model: str) -> list[int]:
    value = lac.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise ConfigError(f"{model}: linear_attn_config.{key} must be a list of ints")
    return list(value)


def _lac_int(lac: Mapping[str, Any], key: str, model: str) -> int:
    value = lac.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{model}: linear_attn_config.{key} must be an integer")
    return value


def _kda_state(lac: Mapping[str, Any], mdtype: str, model: str) -> KDAState:
    return KDAState(
        index=0,
        num_heads=_lac_int(lac, "num_heads", model),
        head_dim=_lac_int(lac, "head_dim", model),
        conv_kernel=_lac_int(lac, "short_conv_kernel_size", model),
        conv_dtype=mdtype,
    )


def _mla(text: Config, kv_dtype: str) -> MLA:
    return MLA(index=0, latent_dim=text.int("kv_lora_rank"),
               rope_dim=text.int("qk_rope_head_dim", 0), dtype=kv_dtype)


def _at(template: LayerCache, index: int, role: Role = Role.DECODER) -> LayerCache:
    return template.at(index, role)


def _kimi_kda_flags(text: Config, lac: Mapping[str, Any], n: int) -> list[bool]:
    """Kimi lists are 1-based; every layer must be in exactly one of them."""
    kda = set(_int_list(lac, "kda_layers", text.model))
    full = set(_int_list(lac, "full_attn_layers", text.model))
    expected = set(range(1, n + 1))
    if kda & full or (kda | full) != expected:
        raise ConfigError(
            f"{text.model}: linear_attn_config kda_layers/full_attn_layers (1-based) must "
            f"partition layers 1..{n}"
        )
    return [(i + 1) in kda for i in range(n)]


def _derive_kimi(text: Config, kv_dtype: str, mdtype: str) -> Derived:
    n = text.int("num_hidden_layers")
    lac = _linear_attn_config(text)
    flags = _kimi_kda_flags(text, lac, n)
    if text.int("num_nextn_predict_layers", 0):
        raise UnsupportedArchitecture(
            f"{text.model}: Kimi-Linear MTP layers (num_nextn_predict_layers > 0) are not "
            "checked"
        )
    state = _kda_state(lac, mdtype, text.model)
    mla = _mla(text, kv_dtype)
    layers = [_at(state if is_kda else mla, i) for i, is_kda in enumerate(flags)]
    return Derived(layers=layers, notes=[_state_note(state)])


def _glm_kda_flags(text: Config, lac: Mapping[str, Any], n: int) -> list[bool]:
    types = text.require("layer_types")
    if not isinstance(types, list) or len(types) != n:
        raise ConfigError(f"{text.model}: layer_types must list {n} layers")
    unknown = sorted({t for t in types if t not in ("linear_attention",
                                                   "deepseek_sparse_attention")})
    if unknown:
        raise UnsupportedArchitecture(f"{text.model}: layer_types has unknown {unknown}")
    flags = [t == "linear_attention" for t in types]
    kda = _int_list(lac, "kda_layers", text.model)
    full = _int_list(lac, "full_attn_layers", text.model)
    if kda and sorted(kda) != [i for i, f in enumerate(flags) if f]:
        raise ConfigError(f"{text.model}: linear_attn_config.kda_layers disagrees with "
                          "layer_types (GLM-5.3 lists are 0-based)")
    if full and sorted(full) != [i for i, f in enumerate(flags) if not f]:
        raise ConfigError(f"{text.model}: linear_attn_config.full_attn_layers disagrees with "
                          "layer_types")
    return flags


def _derive_glm(text: Config, kv_dtype: str, mdtype: str) -> Derived:
    n = text.int("num_hidden_layers")
    lac = _linear_attn_config(text)
    flags = _glm_kda_flags(text, lac, n)
    indexer_types = text.get("indexer_types", [])
    if any(t != "full" for t in indexer_types):
        raise UnsupportedArchitecture(
            f"{text.model}: indexer_types other than 'full' are not checked for GLM-5.3"
        )
    for key in ("index_kpool_compress", "index_kpool_always_select_tail"):
        if text.get(key) is not True:
            raise UnsupportedArchitecture(f"{text.model}: {key} must be true (the checked "
                                          "pooled-indexer layout)")
    pool = text.int("index_kpool")
    index_dim = text.int("index_head_dim")
    state = _kda_state(lac, mdtype, text.model)
    sparse: list[LayerCache] = [
        _mla(text, kv_dtype),
        PooledIndexer(index=0, head_dim=index_dim, quant_block=INDEXER_QUANT_BLOCK,
                      scale_bytes=INDEXER_SCALE_BYTES, pool=pool, dtype="fp8_e4m3"),
        IndexerTail(index=0, capacity=pool, rows=TAIL_ROWS, head_dim=index_dim,
                    dtype=mdtype),
    ]
    layers: list[LayerCache] = []
    for i, is_kda in enumerate(flags):
        if is_kda:
            layers.append(_at(state, i))
        else:
            layers.extend(_at(t, i) for t in sparse)
    mtp = text.int("num_nextn_predict_layers", 0)
    for k in range(mtp):
        layers.extend(_at(t, n + k, Role.MTP) for t in sparse)
    notes = [
        _state_note(state),
        f"sparse layers: MLA latent + pooled fp8 indexer (1 entry / {pool} tokens) + a "
        f"{pool}-position indexer tail ring per request",
    ]
    if mtp:
        notes.append(f"{mtp} MTP layer(s): sparse-attention layers (MLA + indexer + tail)")
    return Derived(layers=layers, notes=notes)


def _state_note(state: KDAState) -> str:
    return (f"KDA state: conv {state.conv_dtype}, recurrent {state.temporal_dtype} "
            "(architecture); kv_cache_dtype does not apply to it")


def kimi(text: Config, kv_dtype: str) -> Derived:
    """Kimi-Linear / Kimi-K3's language model (row ``kimi_linear``)."""
    return _derive_kimi(text, kv_dtype, model_dtype(text))


def glm(text: Config, kv_dtype: str) -> Derived:
    """GLM-5.3-Flash's language model (row ``glm5_next_text``)."""
    return _derive_glm(text, kv_dtype, model_dtype(text))

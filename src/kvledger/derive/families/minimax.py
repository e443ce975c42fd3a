"""MiniMax hybrids: MiniMax-M1 (lightning attention) and MiniMax-M3 (sparse attention with a
lightning indexer). MiniMax-M2.x (plain GQA) lives in the dense family.

MiniMax-M1 (``minimax_m1``; vLLM ``minimax_text_01.py`` serves ``MiniMaxM1ForCausalLM``):

* ``attn_type_list[i]`` picks the layer: 0 = lightning (linear) attention, 1 = softmax
  attention (vLLM ``MiniMaxText01DecoderLayer``: ``attention_type == 0`` builds
  ``MiniMaxText01LinearAttention``, ``== 1`` builds ``MiniMaxText01Attention``).
* Lightning layers keep one fixed state per request: ``(num_attention_heads / tp, head_dim,
  head_dim)`` (vLLM ``MambaStateShapeCalculator.linear_attention_state_shape``; the heads
  must split exactly, vLLM asserts ``total_num_heads % tp_size == 0``), in the model dtype
  (``linear_attention_state_dtype``: ``mamba_cache_dtype`` "auto" -> model dtype). The KV
  cache dtype does not apply to it.
* Softmax layers are GQA: ``num_key_value_heads`` x ``head_dim`` for K and for V.

MiniMax-M3 (``minimax_m3``; no vLLM model file and no vLLM oracle — facts from SGLang's
``python/sglang/srt/models/minimax_m3.py`` and its ``MiniMaxSparseKVPool``):

* Every layer caches GQA K and V: ``num_key_value_heads`` x ``head_dim`` in the KV dtype.
* Layers with ``sparse_attention_config.sparse_attention_freq[i] == 1`` are sparse: they
  also cache the lightning indexer's key — one shared head of ``sparse_index_dim`` per token
  (``index_k`` is "a single shared head, replicated to every rank") — and, unless
  ``sparse_disable_index_value[i]`` is set, an index value of the same width. SGLang keeps
  this index cache in the model dtype (``index_dtype=self.model_dtype``), not the KV dtype.
* MTP: the M3 config states both ``num_mtp_modules`` (7) and ``num_nextn_predict_layers``
  (1), and no source we can cite defines what those layers cache, so no MTP layers are
  derived; ``extras["mtp_unsupported"]`` says so and a planner asked for MTP must refuse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Self

from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnknownCacheKey, UnsupportedArchitecture
from kvledger.derive.kvdtype import model_dtype
from kvledger.derive.layers import FullAttention, Indexer, LayerCache, RecurrentState
from kvledger.derive.registry import Derived
from kvledger.derive.states import RoleTensor, StateRole, divide_exact
from kvledger.records import record, replace

FAMILY = "minimax"

# sparse_attention_config keys: the two per-layer lists change the cache, the width is
# cached; the rest steer block selection only (SGLang MiniMaxSparseAttnBackend).
_SPARSE_KEYS = frozenset(
    {
        "use_sparse_attention", "sparse_attention_freq", "sparse_disable_index_value",
        "sparse_index_dim", "sparse_num_index_heads", "sparse_block_size",
        "sparse_topk_blocks", "sparse_init_block", "sparse_local_block", "sparse_score_type",
    }
)

LIGHTNING, SOFTMAX = 0, 1


@record(frozen=True, kw_only=True)
class LightningState(RecurrentState):
    """MiniMax lightning attention: one ``(heads/tp, head_dim, head_dim)`` matrix per request
    (vLLM ``linear_attention_state_shape``), in ``state_dtype``.

    vLLM sets this dtype from ``mamba_cache_dtype`` (``linear_attention_state_dtype``), so
    ``with_state_dtypes(conv=...)`` applies it; ``temporal`` (``mamba_ssm_cache_dtype``)
    does not reach this state. KV dtypes never apply (``with_dtype`` keeps the layer).
    """

    state_kind: ClassVar[str] = "minimax_lightning"
    num_heads: int
    head_dim: int
    state_dtype: str = "bfloat16"
    state_dtype_source: str = "model dtype"

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "state_dtype", resolve_dtype(self.state_dtype).name)
        object.__setattr__(self, "dtype", self.state_dtype)

    def tensors(self) -> Sequence[RoleTensor]:
        heads = divide_exact(self.num_heads, self.tp, "lightning attention heads")
        return (
            RoleTensor(
                "kv_state",
                (heads, self.head_dim, self.head_dim),
                self.state_dtype,
                StateRole.TEMPORAL,
                self.state_dtype_source,
            ),
        )

    def with_dtype(self, dtype: str) -> Self:
        resolve_dtype(dtype)  # reject unknown names, change nothing
        return self

    def with_state_dtypes(
        self, *, conv: str | None = None, temporal: str | None = None,
        source: str = "engine option",
    ) -> Self:
        if conv is None:
            return self
        return replace(
            self, state_dtype=resolve_dtype(conv).name, state_dtype_source=source
        )


@record(frozen=True, kw_only=True)
class IndexCache(Indexer):
    """MiniMax-M3 lightning-indexer cache: one replicated head of ``head_dim`` per token for
    the key, plus one for the value when ``with_value``; in the model dtype, which the KV
    dtype does not change (SGLang ``MiniMaxSparseKVPool(index_dtype=model_dtype)``).
    """

    with_value: bool = False

    def bytes_per_token(self) -> int:
        return self.kv_dtype.nbytes(self.head_dim) * (2 if self.with_value else 1)

    def with_dtype(self, dtype: str) -> Self:
        resolve_dtype(dtype)
        return self


def _head_dim(cfg: Config) -> int:
    """vLLM: ``head_dim`` if set, else hidden_size // num_attention_heads."""
    if "head_dim" in cfg:
        return cfg.int("head_dim", minimum=1)
    return cfg.int("hidden_size", minimum=1) // cfg.int("num_attention_heads", minimum=1)


def _per_layer(cfg: Config, value: Any, name: str, num_layers: int) -> list[int]:
    if not isinstance(value, list) or len(value) != num_layers:
        raise ConfigError(f"{cfg.model}: {name} must list {num_layers} layers")
    out: list[int] = []
    for v in value:
        if isinstance(v, bool) or v not in (0, 1):
            raise UnsupportedArchitecture(
                f"{cfg.model}: {name} holds {v!r}; the {FAMILY} family knows 0 and 1",
                model_type=cfg.model_type,
            )
        out.append(int(v))
    return out


def _derive_m1(cfg: Config, kv_dtype: str) -> Derived:
    num_layers = cfg.int("num_hidden_layers", minimum=1)
    heads = cfg.int("num_attention_heads", minimum=1)
    kv_heads = cfg.int("num_key_value_heads", minimum=1)
    head_dim = _head_dim(cfg)
    if "attn_type_list" not in cfg:
        raise ConfigError(f"{cfg.model}: minimax_m1 config has no 'attn_type_list'")
    types = _per_layer(cfg, cfg.raw["attn_type_list"], "attn_type_list", num_layers)
    state_dtype = model_dtype(cfg)
    source = "model dtype" if cfg.dtype() else "model dtype (config states none: float32)"
    layers: list[LayerCache] = []
    for i, kind in enumerate(types):
        if kind == LIGHTNING:
            layers.append(
                LightningState(
                    index=i, num_heads=heads, head_dim=head_dim, state_dtype=state_dtype,
                    state_dtype_source=source,
                )
            )
        else:
            layers.append(
                FullAttention(
                    index=i, dtype=kv_dtype, k_heads=kv_heads, k_dim=head_dim,
                    v_heads=kv_heads, v_dim=head_dim,
                )
            )
    lightning = types.count(LIGHTNING)
    notes = [
        f"{lightning} lightning-attention layers keep a fixed {heads}x{head_dim}x{head_dim} "
        f"state per request in {state_dtype} (the KV dtype does not apply); "
        f"{num_layers - lightning} softmax layers cache K/V",
    ]
    return Derived(layers=layers, notes=notes)


def _sparse_config(cfg: Config) -> dict[str, Any] | None:
    sc = cfg.get("sparse_attention_config")
    if sc is None:
        return None
    if not isinstance(sc, dict):
        raise ConfigError(f"{cfg.model}: sparse_attention_config is not an object")
    for key in sorted(sc):
        if key not in _SPARSE_KEYS and sc[key] is not None:
            raise UnknownCacheKey(
                f"sparse_attention_config.{key}", model_type=cfg.model_type or "?", family=FAMILY
            )
    return sc if sc.get("use_sparse_attention", False) else None


def _derive_m3(cfg: Config, kv_dtype: str) -> Derived:
    num_layers = cfg.int("num_hidden_layers", minimum=1)
    kv_heads = cfg.int("num_key_value_heads", minimum=1)
    head_dim = _head_dim(cfg)
    index_dtype = model_dtype(cfg)
    sc = _sparse_config(cfg)
    sparse = [0] * num_layers
    no_value = [1] * num_layers
    index_dim = 0
    if sc is not None:
        for key in ("sparse_attention_freq", "sparse_disable_index_value", "sparse_index_dim"):
            if sc.get(key) is None:
                raise ConfigError(f"{cfg.model}: sparse_attention_config has no {key!r}")
        sparse = _per_layer(cfg, sc["sparse_attention_freq"], "sparse_attention_freq", num_layers)
        no_value = _per_layer(
            cfg, sc["sparse_disable_index_value"], "sparse_disable_index_value", num_layers
        )
        index_dim = sc["sparse_index_dim"]
        if isinstance(index_dim, bool) or not isinstance(index_dim, int) or index_dim <= 0:
            raise ConfigError(f"{cfg.model}: sparse_index_dim must be a positive int")
    layers: list[LayerCache] = []
    for i in range(num_layers):
        layers.append(
            FullAttention(
                index=i, dtype=kv_dtype, k_heads=kv_heads, k_dim=head_dim,
                v_heads=kv_heads, v_dim=head_dim,
            )
        )
        if sparse[i]:
            layers.append(
                IndexCache(
                    index=i, dtype=index_dtype, head_dim=index_dim, with_value=not no_value[i],
                    note="lightning indexer key" + ("" if no_value[i] else " + value"),
                )
            )
    notes = [
        f"{sum(sparse)} of {num_layers} layers are sparse and also cache the lightning "
        f"indexer key ({index_dim} wide, {index_dtype}; the KV dtype does not apply)",
        "facts from SGLang's MiniMax-M3 model and MiniMaxSparseKVPool (no vLLM model/oracle)",
    ]
    extras: dict[str, Any] = {}
    mtp = (cfg.int("num_mtp_modules", 0), cfg.int("num_nextn_predict_layers", 0))
    if any(mtp):
        reason = (
            f"MiniMax-M3 MTP layers (num_mtp_modules={mtp[0]}, "
            f"num_nextn_predict_layers={mtp[1]}) are not derived: no citable source defines "
            "their cache"
        )
        extras["mtp_unsupported"] = reason
        notes.append(reason)
    return Derived(layers=layers, notes=notes, extras=extras)


def m1(text: Config, kv_dtype: str) -> Derived:
    """MiniMax-M1 (row ``minimax_m1``)."""
    return _derive_m1(text, kv_dtype)


def m3(text: Config, kv_dtype: str) -> Derived:
    """MiniMax-M3's language model (rows ``minimax_m3`` and ``minimax_m3_text``)."""
    return _derive_m3(text, kv_dtype)

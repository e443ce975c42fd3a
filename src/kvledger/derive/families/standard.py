"""The standard handler: decoders described by the keys transformers standardised —
``num_hidden_layers``, ``num_attention_heads``, ``num_key_value_heads``, ``head_dim``,
``hidden_size``, ``sliding_window``, ``layer_types``. A new Llama-like decoder is one row in
``model_types.py`` routed here, with the options below saying where its vLLM model file
departs from Llama's.

vLLM's rules, from its source (0.32):

* KV heads: ``num_key_value_heads``, else ``num_attention_heads`` (llama.py
  ``LlamaDecoderLayer``: ``getattr(config, "num_key_value_heads", config.num_attention_heads)``;
  the config classes' ``__post_init__`` do the same for ``None``).
* Head dim: ``head_dim`` if set, else ``hidden_size // num_attention_heads`` (llama.py
  ``LlamaAttention``: ``head_dim or hidden_size // total_num_heads``). Some model files ignore
  ``head_dim`` (qwen2.py, qwen2_moe.py: ``hidden_size // total_num_heads``): option
  ``stated_head_dim=False``; a stated ``head_dim`` that disagrees is then a warning.
* Windows: ``EngineArgs.create_engine_config`` (vllm/engine/arg_utils.py) sets the model-level
  ``CacheConfig.sliding_window`` to ``hf_text_config.sliding_window`` only when the config has
  no ``layer_types`` or every entry is ``"sliding_attention"``; ``Attention.__init__``
  (vllm/model_executor/layers/attention/attention.py) uses a layer's own window when the model
  file passes one, else that model-level window. So without ``layer_types`` every layer slides
  (Mistral-7B, Phi-3-mini). Model files that pass per-layer windows from ``layer_types``
  (llama.py: ``layer_types[i] == "sliding_attention"`` → ``config.sliding_window``) take
  option ``layer_windows=True``; the others (qwen2.py, mixtral.py) get the model-level window
  on every layer or on none.
* ``sliding_window == 0`` means none (vllm/config/model.py ``ModelConfig.__post_init__``).
* ``window_switch``: a key whose false value makes the config class drop the window
  (Qwen2Config: ``sliding_window = sliding_window if use_sliding_window else None``). The
  switch itself is an off key of those rows, so here it is always off.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.layers import Attention, FullAttention, LayerCache, Role, SlidingAttention
from kvledger.derive.registry import Derived

SLIDING = "sliding_attention"
FULL = "full_attention"


# -- helpers shared by the handlers of this package ----------------------------------------
def heads_and_dim(cfg: Config) -> tuple[int, int, int]:
    """(query heads, KV heads, head dim) the way vLLM's Llama-style attention reads them."""
    heads = cfg.int("num_attention_heads")
    kv_heads = cfg.int("num_key_value_heads", heads)
    return heads, kv_heads, head_dim(cfg, heads, hidden_key="hidden_size")


def head_dim(cfg: Config, heads: int, *, hidden_key: str) -> int:
    """``head_dim`` if the config states it, else hidden size / heads (must divide exactly)."""
    if "head_dim" in cfg:
        return cfg.int("head_dim")
    return divided_head_dim(cfg, heads, hidden_key=hidden_key)


def divided_head_dim(cfg: Config, heads: int, *, hidden_key: str) -> int:
    hidden = cfg.int(hidden_key)
    if heads <= 0 or hidden % heads:
        raise ConfigError(
            f"{cfg.model}: {hidden_key}={hidden} is not divisible by {heads} heads and the config "
            "states no head_dim"
        )
    return hidden // heads


def attention(
    index: int,
    kv_heads: int,
    dim: int,
    dtype: str,
    *,
    role: Role = Role.DECODER,
    window: int | None = None,
    sinks: bool = False,
    note: str = "",
) -> Attention:
    """One self-attention layer with equal K and V geometry (window → sliding)."""
    if window is None:
        return FullAttention(
            index=index, role=role, dtype=dtype, k_heads=kv_heads, k_dim=dim,
            v_heads=kv_heads, v_dim=dim, sinks=sinks, note=note,
        )
    if window <= 0:
        raise ConfigError(f"sliding window must be a positive integer, got {window}")
    return SlidingAttention(
        index=index, role=role, dtype=dtype, k_heads=kv_heads, k_dim=dim, v_heads=kv_heads,
        v_dim=dim, window=window, sinks=sinks, note=note,
    )


def check_nested(
    cfg: Config, key: str, allowed: Iterable[str], *, family: str, must_be_falsy: Iterable[str] = ()
) -> Mapping[str, object]:
    """A nested dict's keys must all be known; ``must_be_falsy`` ones must be off (else raise)."""
    value = cfg.get(key) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{cfg.model}: {key!r} must be an object, got {value!r}")
    known = set(allowed) | set(must_be_falsy)
    for sub in sorted(value):
        if sub not in known:
            raise UnsupportedArchitecture(
                f"unsupported: {cfg.model_type} config carries {key}.{sub}, which kvledger's "
                f"{family} has not been checked against; refusing to guess its effect",
                model_type=cfg.model_type,
            )
    for sub in must_be_falsy:
        if value.get(sub):
            raise UnsupportedArchitecture(
                f"unsupported: {cfg.model_type} config sets {key}.{sub}={value[sub]!r}; "
                f"kvledger's {family} models only configs where it is off",
                model_type=cfg.model_type,
            )
    return value


def stated_layer_types(cfg: Config, n: int, allowed: tuple[str, ...]) -> list[str] | None:
    """``layer_types`` as the config states it (``None`` if absent), validated."""
    types = cfg.get("layer_types")
    if types is None:
        return None
    if not isinstance(types, list) or len(types) != n:
        raise ConfigError(f"{cfg.model}: layer_types must list {n} entries, got {types!r}")
    for i, kind in enumerate(types):
        if kind not in allowed:
            raise UnsupportedArchitecture(
                f"unsupported: {cfg.model_type} layer_types[{i}] is {kind!r}; understood: "
                f"{', '.join(allowed)}",
                model_type=cfg.model_type,
            )
    return [str(t) for t in types]


# -- the handler -----------------------------------------------------------------------------
def _model_window(cfg: Config, window_switch: str | None, notes: list[str]) -> int | None:
    """The window the config class leaves in ``sliding_window`` (None: no window)."""
    if "sliding_window" not in cfg:
        return None
    if window_switch is not None and not cfg.get(window_switch, False):
        stated = cfg.get("sliding_window")
        extra = (f" (max_window_layers {cfg.get('max_window_layers')} unused)"
                 if "max_window_layers" in cfg else "")
        notes.append(f"sliding_window {stated} ignored: {window_switch} is false{extra}")
        return None
    window = cfg.int("sliding_window")
    return window or None  # vLLM: 0 means no window


def _head_dim(cfg: Config, heads: int, stated_head_dim: bool, warnings: list[str]) -> int:
    if stated_head_dim:
        return head_dim(cfg, heads, hidden_key="hidden_size")
    dim = divided_head_dim(cfg, heads, hidden_key="hidden_size")
    if cfg.stated("head_dim") and cfg.int("head_dim") != dim:
        warnings.append(
            f"{cfg.model_type}: head_dim {cfg.int('head_dim')} disagrees with hidden_size / "
            f"num_attention_heads = {dim}; vLLM's {cfg.model_type} model computes {dim}, so "
            "kvledger uses it"
        )
    return dim


def derive(
    cfg: Config,
    kv_dtype: str,
    *,
    layer_windows: bool = True,
    window_switch: str | None = None,
    stated_head_dim: bool = True,
    layers_key: str = "num_hidden_layers",
) -> Derived:
    """Every layer caches K and V for ``num_key_value_heads`` × head dim; windows per the
    module docstring. Options come from the model type's row (``layers_key``: a schema that
    names the layer count otherwise, as EXAONE 3's ``num_layers``)."""
    notes: list[str] = []
    warnings: list[str] = []
    n = cfg.int(layers_key)
    heads = cfg.int("num_attention_heads")
    kv_heads = cfg.int("num_key_value_heads", heads)
    dim = _head_dim(cfg, heads, stated_head_dim, warnings)
    window = _model_window(cfg, window_switch, notes)
    types = stated_layer_types(cfg, n, (FULL, SLIDING))
    if types is not None and SLIDING in types and window is None:
        raise UnsupportedArchitecture(
            f"unsupported: {cfg.model_type} layer_types lists sliding layers but the config "
            "leaves no sliding_window"
            + (f" ({window_switch} is false)" if window_switch else ""),
            model_type=cfg.model_type,
        )
    if types is None:
        windows = [window] * n
        if window is not None:
            notes.append(
                f"sliding_window {window} applies to every layer (vLLM: no layer_types, so "
                "the model-level window reaches every Attention)"
            )
    elif layer_windows:
        windows = [window if t == SLIDING else None for t in types]
    else:
        uniform = window if all(t == SLIDING for t in types) else None
        windows = [uniform] * n
        if window is not None and uniform is None:
            notes.append(
                f"sliding_window {window} unused: vLLM's {cfg.model_type} model takes no "
                "per-layer window and the model-level one is set only when every layer slides"
            )
    layers: list[LayerCache] = [
        attention(i, kv_heads, dim, kv_dtype, window=w) for i, w in enumerate(windows)
    ]
    return Derived(layers, notes, warnings=warnings)

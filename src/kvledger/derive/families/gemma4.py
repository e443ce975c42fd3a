"""Gemma-4 text models (``gemma4_text``; the language model of the ``gemma4`` wrapper).

Facts, read from vLLM 0.32 ``gemma4.py`` and transformers 5.19 ``Gemma4TextConfig``:

* ``layer_types``: stated, else sliding except every 6th layer; the last layer is always made
  full attention (``__post_init__``: "Last layer must use `full_attention`").
* Sliding layers cache ``num_key_value_heads`` × ``head_dim`` over ``sliding_window``
  positions (halved + 1 when ``use_bidirectional_attention`` is "all": the config class does
  that to the window vLLM then reads).
* Full layers cache ``global_head_dim`` wide heads (default 512), and — only when
  ``attention_k_eq_v`` — ``num_global_key_value_heads`` of them (the config class builds this
  ``per_layer_config``; vLLM's decoder layer reads ``config.per_layer_config[i]``). K and V are
  both cached even when K = V (vLLM's spec has head_size_v = head_size).
* KV sharing: the last ``num_kv_shared_layers`` layers allocate nothing; each reads the cache
  of the last earlier non-shared layer of its own type (``Gemma4Attention``:
  ``kv_sharing_target_layer_name``), so Gemma-4-E2B caches 15 of its 35 layers.
"""

from __future__ import annotations

from kvledger import records
from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.families.standard import attention
from kvledger.derive.layers import LayerCache
from kvledger.derive.registry import Derived

SLIDING = "sliding_attention"
FULL = "full_attention"
PATTERN = 6  # Gemma4TextConfig: "sliding_window_pattern = 6  # by default 5:1"
BIDIRECTIONAL = (None, "vision", "all")


def _layer_types(cfg: Config, n: int, notes: list[str]) -> list[str]:
    stated = cfg.get("layer_types")
    if stated is None:
        types = [SLIDING if (i + 1) % PATTERN else FULL for i in range(n)]
    else:
        if not isinstance(stated, list) or len(stated) != n:
            raise ConfigError(f"{cfg.model}: layer_types must list {n} entries, got {stated!r}")
        bad = sorted({str(t) for t in stated if t not in (SLIDING, FULL)})
        if bad:
            raise UnsupportedArchitecture(
                f"unsupported: gemma4_text layer_types has {bad}; understood: {SLIDING}, {FULL}",
                model_type=cfg.model_type,
            )
        types = [str(t) for t in stated]
    if types and types[-1] != FULL:
        types[-1] = FULL
        notes.append("last layer made full attention, as Gemma4TextConfig forces it")
    return types


def _window(cfg: Config) -> int:
    mode = cfg.get("use_bidirectional_attention")
    if mode not in BIDIRECTIONAL:
        raise UnsupportedArchitecture(
            f"unsupported: gemma4_text use_bidirectional_attention={mode!r}; Gemma4TextConfig "
            "takes 'all', 'vision' or none",
            model_type=cfg.model_type,
        )
    window = cfg.int("sliding_window", minimum=1)
    # Gemma4TextConfig.__post_init__: "all" -> sliding_window // 2 + 1 (exclusive bounds).
    return window // 2 + 1 if mode == "all" else window


def _share_targets(types: list[str], shared: int) -> dict[int, int]:
    """Layer → the layer whose cache it reads (vLLM ``Gemma4Attention``)."""
    n = len(types)
    if shared == 0:
        return {}
    if shared >= n:
        raise ConfigError(f"num_kv_shared_layers {shared} leaves no layer that owns a cache")
    first = n - shared
    owners = types[:first]
    out: dict[int, int] = {}
    for i in range(first, n):
        if types[i] not in owners:
            raise UnsupportedArchitecture(
                f"unsupported: gemma4_text layer {i} ({types[i]}) is KV-shared but no earlier "
                "layer of its type owns a cache; vLLM fails to build it"
            )
        out[i] = first - 1 - owners[::-1].index(types[i])
    return out


def derive(cfg: Config, kv_dtype: str) -> Derived:
    notes: list[str] = []
    n = cfg.int("num_hidden_layers")
    types = _layer_types(cfg, n, notes)
    window = _window(cfg)
    kv_heads = cfg.int("num_key_value_heads", cfg.int("num_attention_heads"), minimum=1)
    head_dim = cfg.int("head_dim", minimum=1)
    global_dim = cfg.int("global_head_dim", minimum=1)
    global_kv = kv_heads
    if cfg.get("attention_k_eq_v", False) and "num_global_key_value_heads" in cfg:
        global_kv = cfg.int("num_global_key_value_heads", minimum=1)
    targets = _share_targets(types, cfg.int("num_kv_shared_layers", 0))
    layers: list[LayerCache] = []
    for i, kind in enumerate(types):
        if kind == SLIDING:
            layer = attention(i, kv_heads, head_dim, kv_dtype, window=window)
        else:
            layer = attention(i, global_kv, global_dim, kv_dtype)
        if i in targets:
            layer = records.replace(layer, shares_with=targets[i])
        layers.append(layer)
    local = types.count(SLIDING)
    notes.append(f"{local} sliding (window {window}, {kv_heads} x {head_dim}) and {n - local} "
                 f"full ({global_kv} x {global_dim}) layers")
    notes += _sharing_note(targets, n)
    return Derived(layers, notes)


def _overrides(cfg: Config, n: int) -> dict[int, dict[str, int]]:
    """``per_layer_config`` as a file states it: layer index (an int or a string such as
    "05", PretrainedConfig's sparse per-layer mapping) → the attributes that differ there.
    Only the two that size a cache are understood."""
    stated = cfg.get("per_layer_config")
    if not isinstance(stated, dict):
        raise ConfigError(f"{cfg.model}: per_layer_config must map layer indices to "
                          f"attributes, got {stated!r}")
    out: dict[int, dict[str, int]] = {}
    for key, override in stated.items():
        try:
            index = int(key)
        except (TypeError, ValueError):
            raise ConfigError(f"{cfg.model}: per_layer_config key {key!r} is not a layer "
                              "index") from None
        if not 0 <= index < n or not isinstance(override, dict):
            raise ConfigError(f"{cfg.model}: per_layer_config[{key!r}] names no layer of {n} "
                              f"or is not a mapping: {override!r}")
        other = sorted(set(override) - {"head_dim", "num_key_value_heads"})
        if other:
            raise UnsupportedArchitecture(
                f"unsupported: {cfg.model_type} per_layer_config[{key!r}] overrides {other}; "
                "understood: head_dim, num_key_value_heads", model_type=cfg.model_type)
        for name, value in override.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{cfg.model}: per_layer_config[{key!r}].{name} must be a "
                                  f"positive integer, got {value!r}")
        out[index] = dict(override)
    return out


def unified(cfg: Config, kv_dtype: str) -> Derived:
    """Gemma-4 Unified's text model (``gemma4_unified_text``), read from transformers 5.20
    ``Gemma4UnifiedTextConfig`` and vLLM 0.33 ``gemma4_unified.py``, which builds
    ``Gemma4ForCausalLM`` (gemma4.py) on ``text_config``. The class serializes what the
    Gemma-4 text class derives: ``per_layer_config`` (layer → head_dim / num_key_value_heads
    overrides; the class fills it with ``global_head_dim``, default 512, on the full layers
    when a file has none), and vLLM's ``Gemma4DecoderLayer`` reads
    ``config.per_layer_config[layer_idx]``; every other layer takes the top-level values."""
    if "per_layer_config" not in cfg:
        return derive(cfg, kv_dtype)
    notes: list[str] = []
    n = cfg.int("num_hidden_layers")
    types = _layer_types(cfg, n, notes)
    window = _window(cfg)
    kv_heads = cfg.int("num_key_value_heads", cfg.int("num_attention_heads"), minimum=1)
    head_dim = cfg.int("head_dim", minimum=1)
    overrides = _overrides(cfg, n)
    targets = _share_targets(types, cfg.int("num_kv_shared_layers", 0))
    layers: list[LayerCache] = []
    for i, kind in enumerate(types):
        own = overrides.get(i, {})
        heads, dim = own.get("num_key_value_heads", kv_heads), own.get("head_dim", head_dim)
        layer = attention(i, heads, dim, kv_dtype, window=window if kind == SLIDING else None)
        if i in targets:
            layer = records.replace(layer, shares_with=targets[i])
        layers.append(layer)
    local = types.count(SLIDING)
    notes.append(f"{local} sliding (window {window}) and {n - local} full layers; "
                 f"per_layer_config overrides {len(overrides)} of them")
    notes += _sharing_note(targets, n)
    return Derived(layers, notes)


def _sharing_note(targets: dict[int, int], n: int) -> list[str]:
    """The KV-sharing line (``num_kv_shared_layers``): empty when no layer shares."""
    if not targets:
        return []
    return [f"KV sharing: the last {len(targets)} layers read earlier layers' caches; "
            f"{n - len(targets)} of {n} layers allocate KV"]

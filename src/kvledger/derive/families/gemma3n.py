"""Gemma 3n text models (``gemma3n_text``; the language model of the ``gemma3n`` wrapper).

Facts, read from vLLM 0.32 ``model_executor/models/gemma3n.py`` (``Gemma3nAttention.__init__``)
and transformers 5.19 ``Gemma3nTextConfig``:

* ``layer_types``: stated, else full attention on every 5th layer (``(i + 1) % 5 == 0``) and
  sliding elsewhere (``Gemma3nTextConfig.__post_init__``). Sliding layers get
  ``per_layer_sliding_window=config.sliding_window``; full layers none.
* Every layer caches ``num_key_value_heads`` × ``head_dim`` (one geometry for both types).
* KV sharing ("You Only Cache Once"): with ``first = num_hidden_layers - num_kv_shared_layers``,
  layers ``first..`` build no K/V projection and read another layer's cache through
  ``kv_sharing_target_layer_name``: a sliding layer reads layer ``first - 2``, a full layer
  layer ``first - 1`` (vLLM's fixed offsets: "Last full attention layer is 1 before sharing,
  last sliding attention layer is 2 before sharing"). When that index is negative vLLM names
  no target and the layer keeps a cache of its own. Unlike Gemma 4 (``gemma4.py``), the
  target is found by offset, not by type: a config whose offset lands on a layer of the other
  type is refused, since vLLM would hand a sliding layer a full layer's cache (or the reverse).
"""

from __future__ import annotations

from kvledger import records
from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.families.standard import FULL, SLIDING, attention, stated_layer_types
from kvledger.derive.layers import LayerCache
from kvledger.derive.registry import Derived

EVERY = 5  # Gemma3nTextConfig.__post_init__: "full_attention" if (i + 1) % 5 == 0


def _layer_types(cfg: Config, n: int) -> list[str]:
    stated = stated_layer_types(cfg, n, (SLIDING, FULL))
    if stated is not None:
        return stated
    return [FULL if (i + 1) % EVERY == 0 else SLIDING for i in range(n)]


def _share_targets(cfg: Config, types: list[str], shared: int) -> dict[int, int]:
    """Layer → the layer whose cache it reads (vLLM ``Gemma3nAttention``'s offsets)."""
    n = len(types)
    if shared < 0 or shared > n:
        raise ConfigError(f"{cfg.model}: num_kv_shared_layers {shared} is outside 0..{n}")
    first = n - shared
    out: dict[int, int] = {}
    for i in range(first, n):
        target = first - (2 if types[i] == SLIDING else 1)
        if target < 0:
            continue  # vLLM names no target: this layer keeps its own cache
        if types[target] != types[i]:
            raise UnsupportedArchitecture(
                f"unsupported: gemma3n_text layer {i} ({types[i]}) would read layer {target}'s "
                f"cache ({types[target]}) by vLLM's fixed sharing offsets; kvledger has "
                "not been checked against a shared cache of another attention type",
                model_type=cfg.model_type,
            )
        out[i] = target
    return out


def derive(cfg: Config, kv_dtype: str) -> Derived:
    n = cfg.int("num_hidden_layers")
    types = _layer_types(cfg, n)
    kv_heads = cfg.int("num_key_value_heads", cfg.int("num_attention_heads"), minimum=1)
    head_dim = cfg.int("head_dim", minimum=1)
    window = cfg.int("sliding_window", minimum=1)
    targets = _share_targets(cfg, types, cfg.int("num_kv_shared_layers", 0))
    layers: list[LayerCache] = []
    for i, kind in enumerate(types):
        layer = attention(i, kv_heads, head_dim, kv_dtype,
                          window=window if kind == SLIDING else None)
        if i in targets:
            layer = records.replace(layer, shares_with=targets[i])
        layers.append(layer)
    local = types.count(SLIDING)
    notes = [f"{local} sliding (window {window}) and {n - local} full layers, "
             f"{kv_heads} x {head_dim} each"]
    if targets:
        notes.append(f"KV sharing: the last {len(targets)} layers read layers "
                     f"{sorted(set(targets.values()))}' caches; {n - len(targets)} of {n} "
                     "layers allocate KV")
    return Derived(layers, notes)

"""MiMo-V2-Flash (vLLM 0.32 ``mimo_v2.py``, ``MiMoV2FlashForCausalLM``).

Two attention geometries, chosen per layer by ``hybrid_layer_pattern`` (1 = sliding-window
layer, ``MiMoV2FlashDecoderLayer.is_compressed_softmax_layer``; 0 = full attention):

* full layers: ``num_key_value_heads`` × K ``head_dim`` / V ``v_head_dim``;
* sliding layers: ``swa_num_key_value_heads`` × K ``swa_head_dim`` / V ``swa_v_head_dim``
  (``swa_head_dim`` when absent), window ``sliding_window_size``.

The model file clears ``cache_config.sliding_window`` so full layers get no window, which
makes the config's ``sliding_window`` and ``layer_types`` unread; ``hybrid_layer_pattern``,
``sliding_window_size`` and the ``swa_*`` sizes are read without a fallback (a config lacking
them does not load in vLLM), so they are required here. K and V widths differ: vLLM stores
them as ``head_size`` / ``head_size_v`` (TRITON_ATTN_DIFFKV).
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.layers import FullAttention, LayerCache, SlidingAttention
from kvledger.derive.registry import Derived

SLIDING = "sliding_attention"
FULL = "full_attention"


def _pattern(cfg: Config, n: int) -> list[bool]:
    pattern = cfg.require("hybrid_layer_pattern")
    if not isinstance(pattern, list) or len(pattern) != n or any(
            p not in (0, 1) or isinstance(p, bool) for p in pattern):
        raise ConfigError(f"{cfg.model}: hybrid_layer_pattern must list 0/1 for {n} layers")
    sliding = [p == 1 for p in pattern]
    stated = cfg.get("layer_types")
    if stated is not None and stated != [SLIDING if s else FULL for s in sliding]:
        raise UnsupportedArchitecture(
            "unsupported: mimo_v2_flash layer_types disagrees with hybrid_layer_pattern (vLLM "
            "reads only the pattern); refusing to pick one",
            model_type=cfg.model_type,
        )
    return sliding


def derive(cfg: Config, kv_dtype: str) -> Derived:
    n = cfg.int("num_hidden_layers")
    sliding = _pattern(cfg, n)
    full_kv, full_k = cfg.int("num_key_value_heads", minimum=1), cfg.int("head_dim", minimum=1)
    full_v = cfg.int("v_head_dim", full_k, minimum=1)
    swa_kv = cfg.int("swa_num_key_value_heads", minimum=1)
    swa_k = cfg.int("swa_head_dim", minimum=1)
    swa_v = cfg.int("swa_v_head_dim", swa_k, minimum=1)
    window = cfg.int("sliding_window_size", minimum=1)
    layers: list[LayerCache] = []
    for i, slides in enumerate(sliding):
        if slides:
            layers.append(SlidingAttention(
                index=i, dtype=kv_dtype, k_heads=swa_kv, k_dim=swa_k, v_heads=swa_kv,
                v_dim=swa_v, window=window))
        else:
            layers.append(FullAttention(
                index=i, dtype=kv_dtype, k_heads=full_kv, k_dim=full_k, v_heads=full_kv,
                v_dim=full_v))
    local = sum(sliding)
    notes = [f"{local} sliding layers (window {window}, {swa_kv} x K {swa_k} / V {swa_v}) and "
             f"{n - local} full layers ({full_kv} x K {full_k} / V {full_v}), from "
             "hybrid_layer_pattern"]
    return Derived(layers, notes)

"""MiniCPM3: latent-attention projections, but vLLM 0.32 caches full per-head K and V.

MiniCPM3's attention has DeepSeek-style low-rank projections (``kv_lora_rank``,
``q_lora_rank``, a ``qk_rope_head_dim`` rotary part), yet vLLM's minicpm3.py
(``MiniCPM3Attention``) does not use MLA: it up-projects the latent, concatenates
``k_nope`` (``qk_nope_head_dim``) with the rotary part, zero-pads V from ``v_head_dim`` to
the same width, and hands an ordinary ``Attention`` ``num_attention_heads`` KV heads of
``qk_nope_head_dim + qk_rope_head_dim``. So the cache is K and V of that width for every
query head — not the latent a DeepSeek-style MLA engine would keep.
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import UnsupportedArchitecture
from kvledger.derive.families.standard import attention, divided_head_dim
from kvledger.derive.layers import LayerCache
from kvledger.derive.registry import Derived


def derive(cfg: Config, kv_dtype: str) -> Derived:
    """Every layer: ``num_attention_heads`` KV heads × (``qk_nope_head_dim`` +
    ``qk_rope_head_dim``) for K and for (padded) V. MiniCPM3Config (transformers 5.19) fills
    ``v_head_dim`` = ``hidden_size // num_attention_heads`` when absent."""
    heads = cfg.int("num_attention_heads", minimum=1)
    width = cfg.int("qk_nope_head_dim") + cfg.int("qk_rope_head_dim", minimum=1)
    v_dim = (cfg.int("v_head_dim") if cfg.stated("v_head_dim")
             else divided_head_dim(cfg, heads, hidden_key="hidden_size"))
    if v_dim > width:
        raise UnsupportedArchitecture(
            f"unsupported: minicpm3 v_head_dim {v_dim} is wider than the key width {width}; "
            "vLLM's minicpm3.py pads V up to the key width and was not checked for the reverse",
            model_type=cfg.model_type,
        )
    layers: list[LayerCache] = [
        attention(i, heads, width, kv_dtype) for i in range(cfg.int("num_hidden_layers"))
    ]
    notes = [
        f"MiniCPM3: vLLM caches full K and V ({heads} heads × {width}; V padded from {v_dim}), "
        f"not the {cfg.get('kv_lora_rank')}-wide latent"
    ]
    return Derived(layers, notes)

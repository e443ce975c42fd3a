"""DBRX (vLLM 0.32 ``dbrx.py``; transformers 5.19 ``DbrxConfig``).

DBRX keeps its own names: ``n_layers``, ``n_heads``, ``d_model`` and, in the nested
``attn_config``, ``kv_n_heads``. vLLM's ``DbrxAttention`` caches, on every layer, K and V of
``attn_config.kv_n_heads`` heads × ``d_model // n_heads`` (it reads no ``head_dim``), with no
window. ``DbrxAttentionConfig`` defaults ``kv_n_heads`` to 1 when ``attn_config`` omits it.
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError
from kvledger.derive.families.standard import attention, check_nested, divided_head_dim
from kvledger.derive.layers import LayerCache
from kvledger.derive.registry import Derived

# DbrxAttentionConfig's fields (transformers 5.19): what attn_config may carry.
ATTN_CONFIG_KEYS = ("attn_pdrop", "clip_qkv", "kv_n_heads", "rope_theta", "model_type")
DEFAULT_KV_HEADS = 1  # DbrxAttentionConfig.kv_n_heads


def derive(cfg: Config, kv_dtype: str) -> Derived:
    attn = check_nested(cfg, "attn_config", ATTN_CONFIG_KEYS, family="dbrx")
    _check_ffn_act_fn(cfg)
    n = cfg.int("n_layers")
    heads = cfg.int("n_heads", minimum=1)
    kv_heads = attn.get("kv_n_heads", DEFAULT_KV_HEADS)
    if isinstance(kv_heads, bool) or not isinstance(kv_heads, int) or kv_heads < 1:
        raise ConfigError(f"{cfg.model}: attn_config.kv_n_heads must be a positive integer, "
                          f"got {kv_heads!r}")
    dim = divided_head_dim(cfg, heads, hidden_key="d_model")
    layers: list[LayerCache] = [attention(i, kv_heads, dim, kv_dtype) for i in range(n)]
    notes = [f"DBRX: {kv_heads} KV heads x d_model/n_heads = {dim} on every layer "
             "(attn_config.kv_n_heads)",
             # DbrxConfig maps max_position_embeddings to max_seq_len (derive/max_len.py).
             f"max length: max_seq_len {cfg.int('max_seq_len')}"]
    return Derived(layers, notes)


def _check_ffn_act_fn(cfg: Config) -> None:
    """transformers 5.19 ``DbrxFFNConfig`` declares ``ffn_act_fn: dict | None`` and its strict
    dataclass validation rejects anything else (a plain ``"silu"``, as OME's copy of DBRX
    writes it), so vLLM 0.32 fails loading such a config: refuse rather than plan it."""
    ffn = cfg.get("ffn_config")
    if not isinstance(ffn, dict):
        return  # absent, or an object whose weights-only keys the estimate checks
    act = ffn.get("ffn_act_fn")
    if act is not None and not isinstance(act, dict):
        raise ConfigError(
            f"{cfg.model}: ffn_config.ffn_act_fn must be an object such as "
            f'{{"name": "silu"}} (transformers\' DbrxFFNConfig), got {act!r}; vLLM '
            "cannot load this config")

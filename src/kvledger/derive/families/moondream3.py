"""Moondream 3 (vLLM's ``Moondream3Config``, transformers_utils/configs/moondream3.py): the
text decoder's sizes sit in Moondream's own schema, ``config["text"]``, under its own names.

``Moondream3TextConfig.__init__`` takes ``dim`` (2,048), ``n_layers`` (24), ``n_heads`` (32),
``n_kv_heads`` (32) and ``max_context`` (4,096) — the defaults live in the model-type row — and
maps them to ``hidden_size``, ``num_hidden_layers``, ``num_attention_heads``,
``num_key_value_heads`` and ``max_position_embeddings``; vLLM's length comes from that
``text_config`` (``get_hf_text_config``), so ``max_context`` is the length.

vLLM 0.33 model_executor/models/moondream3.py ``Moondream3Attention`` builds one plain
``Attention`` a layer for every one of ``n_layers`` layers: ``num_kv_heads=config.n_kv_heads``,
``head_size = config.dim // config.n_heads``, no window. (The tau scaling of Q and V and the
MoE feed-forward from ``moe.start_layer`` keep no cache.)
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError
from kvledger.derive.families.standard import attention
from kvledger.derive.registry import Derived


def derive(cfg: Config, kv_dtype: str) -> Derived:
    """Every one of ``n_layers`` layers caches K and V: ``n_kv_heads`` × ``dim // n_heads``."""
    n = cfg.int("n_layers", minimum=1)
    heads = cfg.int("n_heads", minimum=1)
    kv_heads = cfg.int("n_kv_heads", minimum=1)
    width = cfg.int("dim", minimum=1)
    if width % heads:
        raise ConfigError(f"{cfg.model}: {cfg.path}dim {width} is not a multiple of n_heads "
                          f"{heads} (moondream3.py sizes a head as dim // n_heads)")
    return Derived([attention(i, kv_heads, width // heads, kv_dtype) for i in range(n)],
                   max_len=cfg.int("max_context", minimum=1))

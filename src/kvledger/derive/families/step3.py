"""Step3's text model (vLLM 0.33 ``step3_text.py``; vLLM's own ``Step3TextConfig`` in
``transformers_utils/configs/step3_vl.py``).

Step3 attends with one shared K/V head ("multi-matrix factorization attention"): its decoder
layer builds ``Step3TextAttention(num_kv_heads=1, head_dim=config.head_dim, ...)`` with the 1
written in the call, not read from the config (``Step3TextDecoderLayer.__init__``), and the
attention raises unless it is 1. So every one of ``num_hidden_layers`` layers caches K and V of
one head × ``head_dim`` (the class's default 256), with no window. ``num_attention_groups``
(the config's name for that group count) is not read by vLLM, so not here either (the row
lists it as harmless, saying so).
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.families.standard import attention
from kvledger.derive.layers import LayerCache
from kvledger.derive.registry import Derived

KV_HEADS = 1  # step3_text.py Step3TextDecoderLayer: Step3TextAttention(num_kv_heads=1, ...)


def derive(cfg: Config, kv_dtype: str) -> Derived:
    n = cfg.int("num_hidden_layers")
    dim = cfg.int("head_dim")
    layers: list[LayerCache] = [attention(i, KV_HEADS, dim, kv_dtype) for i in range(n)]
    return Derived(layers, [f"Step3: {KV_HEADS} K/V head x head_dim {dim} on every layer "
                            "(step3_text.py passes num_kv_heads=1)"])

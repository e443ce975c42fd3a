"""AFMoE (Arcee Trinity, ``afmoe``): sliding and full attention, the pattern built by the config
class when the file states no ``layer_types``.

vLLM's ``afmoe.py`` (``AfmoeAttention.__init__``) slides layer i when
``config.layer_types[i] == "sliding_attention"`` (``per_layer_sliding_window`` =
``sliding_window``) and takes ``head_dim`` or ``hidden_size // num_attention_heads``;
transformers 5.19's ``AfmoeConfig.__post_init__`` builds a missing ``layer_types`` as
"sliding unless (i + 1) % global_attn_every_n_layers == 0". That is layer_patterns' rule with
the interval read from its own key, so this module only names the key.
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.families.layer_patterns import derive as _patterned
from kvledger.derive.registry import Derived

PATTERN_KEY = "global_attn_every_n_layers"


def derive(cfg: Config, kv_dtype: str) -> Derived:
    return _patterned(cfg, kv_dtype, every=4, pattern_key=PATTERN_KEY)

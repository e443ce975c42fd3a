"""Neural-architecture-searched Llama derivatives (Nemotron-NAS / DeciLM, e.g.
Llama-3.3-Nemotron-Super-49B): every layer has its own ``block_configs`` entry, so KV heads
differ per layer and some layers have no attention at all.

vLLM nemotron_nas.py (``DeciLMDecoderLayer``): a layer with ``attention.no_op`` builds no
attention; otherwise ``num_kv_heads = num_attention_heads // attention.n_heads_in_group`` with
the Llama head dim (``head_dim`` or ``hidden_size // num_attention_heads``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.families.standard import attention, head_dim
from kvledger.derive.layers import LayerCache, NoCache
from kvledger.derive.registry import Derived

# attention entries of a block config: the ones read, and the ones that must be off because
# they would change what is cached (sink tokens, windows, sparsity) and are not modeled.
_ATTN_READ = frozenset({"n_heads_in_group", "no_op", "replace_with_linear"})
_ATTN_MUST_BE_OFF = (
    "num_sink_tokens", "sparsify", "unshifted_sink", "use_prefill_window_in_sink_attention",
    "window_length",
)
_BLOCK_KEYS = frozenset({"attention", "ffn"})


def _unsupported(cfg: Config, message: str) -> UnsupportedArchitecture:
    return UnsupportedArchitecture(
        f"unsupported: {message}", model_type=cfg.model_type, architectures=cfg.architectures
    )


def _attention_entry(cfg: Config, i: int, block: Any) -> Mapping[str, Any]:
    if not isinstance(block, Mapping):
        raise ConfigError(f"{cfg.model}: block_configs[{i}] is not an object")
    for key in sorted(block):
        if key not in _BLOCK_KEYS:
            raise _unsupported(cfg, f"block_configs[{i}] carries {key!r}, not checked")
    attn = block.get("attention")
    if not isinstance(attn, Mapping):
        raise ConfigError(f"{cfg.model}: block_configs[{i}].attention is missing")
    for key in sorted(attn):
        if key not in _ATTN_READ and key not in _ATTN_MUST_BE_OFF:
            raise _unsupported(
                cfg, f"block_configs[{i}].attention.{key} has not been checked; refusing to guess"
            )
    for key in _ATTN_MUST_BE_OFF:
        if attn.get(key):
            raise _unsupported(
                cfg, f"block_configs[{i}].attention.{key}={attn[key]!r} (sinks / windows / "
                "sparsity in NAS blocks are not modeled)"
            )
    return attn


def derive(text: Config, kv_dtype: str) -> Derived:
    blocks = text.require("block_configs")
    n = text.int("num_hidden_layers")
    if not isinstance(blocks, list) or len(blocks) != n:
        raise ConfigError(f"{text.model}: block_configs must list {n} layers")
    heads = text.int("num_attention_heads")
    dim = head_dim(text, heads, hidden_key="hidden_size")
    layers: list[LayerCache] = []
    for i, block in enumerate(blocks):
        attn = _attention_entry(text, i, block)
        if attn.get("no_op"):
            layers.append(NoCache(index=i, dtype=kv_dtype, note="no-op attention"))
            continue
        if attn.get("replace_with_linear"):
            # The architecture replaces attention by a linear map: nothing is cached. vLLM's
            # nemotron_nas.py tests only no_op, so it would still build an attention here.
            layers.append(
                NoCache(index=i, dtype=kv_dtype, note="attention replaced with a linear layer")
            )
            continue
        group = attn.get("n_heads_in_group")
        if isinstance(group, bool) or not isinstance(group, int) or group < 1 or heads % group:
            raise ConfigError(
                f"{text.model}: block_configs[{i}].attention.n_heads_in_group={group!r} does not "
                f"divide {heads} attention heads"
            )
        layers.append(attention(i, heads // group, dim, kv_dtype))
    cached = sum(1 for layer in layers if not isinstance(layer, NoCache))
    notes = [f"{cached} of {n} layers have attention (block_configs); the rest cache nothing"]
    return Derived(layers, notes)

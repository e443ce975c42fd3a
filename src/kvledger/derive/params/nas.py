"""Nemotron-NAS / DeciLM ``block_configs``: per-layer attention and FFN shapes."""

from __future__ import annotations

from collections.abc import Mapping

from kvledger.derive.errors import ConfigError
from kvledger.derive.limits import checked_count
from kvledger.derive.params.base import _Count


def _nas(k: _Count) -> None:
    """Nemotron-NAS / DeciLM ``block_configs`` (vLLM nemotron_nas.py ``DeciLMDecoderLayer``;
    the published ``modeling_decilm.py``): per layer, attention is absent (``no_op``), one
    ``hidden × hidden`` linear (``replace_with_linear``), or GQA with
    ``num_attention_heads // n_heads_in_group`` KV heads; the FFN is absent, one linear, or a
    gated MLP of ``_find_multiple(int(2 × ffn_mult × hidden / 3), 256)`` (nemotron_nas.py
    ``_ffn_mult_to_intermediate_size``). A layer norm precedes each present sub-block."""
    cfg = k.cfg
    hidden, vocab, heads = k.alias("hidden"), k.alias("vocab"), k.alias("heads")
    head_dim = k.num("head_dim", default=hidden // max(1, heads))
    blocks = cfg.require("block_configs")
    if not isinstance(blocks, list):
        raise ConfigError(f"{cfg.model}: block_configs must be a list")
    k.head(hidden, vocab, k.model_type)
    for i, block in enumerate(blocks):
        attn = block.get("attention") if isinstance(block, Mapping) else None
        ffn = block.get("ffn") if isinstance(block, Mapping) else None
        if not isinstance(attn, Mapping) or not isinstance(ffn, Mapping):
            raise ConfigError(f"{cfg.model}: block_configs[{i}] must hold an attention and an "
                              "ffn object")
        if attn.get("replace_with_linear"):
            k.add("attn", hidden * hidden)
            k.add("other", hidden)
        elif not attn.get("no_op"):
            group = checked_count(attn.get("n_heads_in_group"), f"block_configs[{i}]."
                                  "attention.n_heads_in_group", where=cfg.model, minimum=1)
            linear, small = k.gqa(hidden, heads, heads // group, head_dim)
            k.add("attn", linear)
            k.add("other", small + hidden)
        if ffn.get("replace_with_linear"):
            k.add("dense_mlp", hidden * hidden)
            k.add("other", hidden)
        elif not ffn.get("no_op"):
            mult = ffn.get("ffn_mult")
            if isinstance(mult, bool) or not isinstance(mult, (int, float)) or mult <= 0:
                raise ConfigError(f"{cfg.model}: block_configs[{i}].ffn.ffn_mult must be a "
                                  f"positive number, got {mult!r}")
            linear, bias = k.mlp(hidden, nas_intermediate_size(float(mult), hidden))
            k.add("dense_mlp", linear)
            k.add("other", bias + hidden)
    k.add("other", hidden)


def nas_intermediate_size(ffn_mult: float, hidden: int) -> int:
    """DeciLM's FFN width: ``int(2 × ffn_mult × hidden / 3)`` rounded up to a multiple of 256
    (vLLM nemotron_nas.py ``_ffn_mult_to_intermediate_size`` / ``_find_multiple``)."""
    n = int(2 * ffn_mult * hidden / 3)
    return n if n % 256 == 0 else n + 256 - n % 256

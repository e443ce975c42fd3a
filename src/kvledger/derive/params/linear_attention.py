"""Linear-attention and short-convolution hybrids: Gated DeltaNet (Qwen3-Next / Qwen3.5,
and its MTP), LFM2's convolutions, MiniMax's lightning attention."""

from __future__ import annotations

from kvledger.derive.params.base import _Count, _with
from kvledger.derive.params.decoder import _moe, moe_layers


def _gdn(k: _Count) -> None:
    """Qwen3-Next / Qwen3.5 (vLLM qwen3_next.py): Gated DeltaNet layers and, every
    ``full_attention_interval``-th (or where ``layer_types`` says full_attention), gated
    attention whose query projection also yields the output gate. GDN:
    ``in_proj_qkvz`` hidden → 2 × Kh × Kd + 2 × Vh × Vd, ``in_proj_ba`` hidden → 2 × Vh,
    ``conv1d`` over 2 × Kh × Kd + Vh × Vd channels, ``dt_bias`` / ``A_log`` per value head,
    a gated RMSNorm over Vd, ``out_proj`` Vh × Vd → hidden. MLP: experts on every layer."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    heads = k.alias("heads")
    kv_heads = k.alias("kv_heads", default=heads)
    head_dim = k.num("head_dim", default=hidden // heads)
    kh, kd = k.num("linear_num_key_heads"), k.num("linear_key_head_dim")
    vh, vd = k.num("linear_num_value_heads"), k.num("linear_value_head_dim")
    conv = k.num("linear_conv_kernel_dim", default=4)
    types = k.cfg.get("layer_types")
    interval = k.num("full_attention_interval", default=4)
    inter = k.alias("inter", default=4 * hidden)
    experts = k.alias("experts", default=0)
    sparse = moe_layers(k.cfg, layers) if experts else [False] * layers
    k.head(hidden, vocab, k.model_type)
    for i in range(layers):
        full = types[i] == "full_attention" if isinstance(types, list) and i < len(types) \
            else (i + 1) % interval == 0
        if full:
            linear, small = k.gqa(hidden, heads, kv_heads, head_dim,
                                  q_gate=k.flag("attn_output_gate", True))
            k.add("attn", linear)
            k.add("other", small)
        else:
            conv_ch = 2 * kh * kd + vh * vd
            k.add("attn", hidden * (2 * kh * kd + 2 * vh * vd) + hidden * 2 * vh +
                  vh * vd * hidden)
            k.add("other", conv_ch * conv + 2 * vh + vd)
        k.add("other", 2 * hidden)
        if sparse[i]:
            for cat, n in _moe(k, hidden, inter, experts).items():
                k.add(cat, n)
        else:
            k.add("dense_mlp", 3 * hidden * inter)
    k.add("other", hidden)


def _gdn_mtp(k: _Count, count: int) -> dict[str, int]:
    """Qwen3-Next / Qwen3.5 MTP (vLLM qwen3_next_mtp.py): per step one full-attention layer
    with the model's MLP, ``fc`` (2 × hidden → hidden), ``pre_fc_norm_embedding``,
    ``pre_fc_norm_hidden`` and a final ``norm``; the embedding and head are the model's
    (``mtp_use_dedicated_embeddings`` false)."""
    sub = _Count(_with(k.cfg, {"num_hidden_layers": 1, "layer_types": ["full_attention"],
                               "mlp_only_layers": []}), k.model_type, k.p)
    _gdn(sub)
    hidden = k.alias("hidden")
    sub.c["embed"] = sub.c["lm_head"] = 0
    sub.c["attn"] += 2 * hidden * hidden
    sub.c["other"] += 2 * hidden
    if k.flag("mtp_use_dedicated_embeddings"):
        sub.c["embed"] = k.c["embed"]
    return {cat: n * count for cat, n in sub.c.items()}


def _lfm2(k: _Count) -> None:
    """LFM2 (vLLM lfm2.py): ``layer_types`` conv or full_attention. A conv layer: ``in_proj``
    hidden → 3 × hidden, a depthwise conv of ``conv_L_cache`` taps, ``out_proj`` hidden →
    hidden (biases with ``conv_bias``); attention: GQA with per-head q/k layernorms. The
    SwiGLU MLP's width from ``block_ff_dim``: × 2/3 with ``block_auto_adjust_ff_dim``, ×
    ``block_ffn_dim_multiplier``, rounded up to ``block_multiple_of``. Two RMSNorms a layer,
    the final ``embedding_norm``; the head tied."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    heads = k.alias("heads")
    kv_heads = k.alias("kv_heads", default=heads)
    head_dim = hidden // heads
    ff = k.num("block_ff_dim", "intermediate_size")
    if k.flag("block_auto_adjust_ff_dim"):
        ff = int(2 * ff / 3)
        mult = k.cfg.get("block_ffn_dim_multiplier")
        if isinstance(mult, (int, float)) and not isinstance(mult, bool):
            ff = int(mult * ff)
        multiple = k.num("block_multiple_of", default=256) or 1
        ff = multiple * ((ff + multiple - 1) // multiple)
    taps = k.num("conv_L_cache", default=3)
    bias = k.flag("conv_bias")
    types = k.cfg.get("layer_types")
    k.head(hidden, vocab, k.model_type)
    for i in range(layers):
        if isinstance(types, list) and i < len(types) and types[i] == "full_attention":
            k.add("attn", hidden * (heads + 2 * kv_heads) * head_dim + heads * head_dim * hidden)
            k.add("other", 2 * head_dim)
        else:
            k.add("attn", hidden * 3 * hidden + hidden * hidden)
            k.add("other", hidden * taps + (3 * hidden + hidden + hidden if bias else 0))
        k.add("dense_mlp", 3 * hidden * ff)
        k.add("other", 2 * hidden)
    k.add("other", hidden)



def _minimax_linear(k: _Count) -> None:
    """MiniMax-M1 / Text-01 (vLLM minimax_text_01.py): ``attn_type_list`` 0 = lightning
    (linear) attention — ``qkv_proj`` hidden → 3 × heads × head_dim (every head its own K and
    V), ``output_gate`` hidden → heads × head_dim, ``out_proj`` back, an RMSNorm over
    heads × head_dim — and 1 = GQA softmax attention; experts on every layer."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    heads = k.alias("heads")
    kv_heads = k.alias("kv_heads", default=heads)
    head_dim = k.num("head_dim", default=hidden // heads)
    inter = k.alias("inter")
    experts = k.alias("experts", default=0)
    kinds = k.cfg.get("attn_type_list")
    k.head(hidden, vocab, k.model_type)
    q = heads * head_dim
    for i in range(layers):
        full = isinstance(kinds, list) and i < len(kinds) and kinds[i] == 1
        if full:
            linear, small = k.gqa(hidden, heads, kv_heads, head_dim)
            k.add("attn", linear)
            k.add("other", small)
        else:
            k.add("attn", hidden * 3 * q + hidden * q + q * hidden)
            k.add("other", q)
        k.add("other", 2 * hidden)
        if experts:
            for cat, n in _moe(k, hidden, inter, experts).items():
                k.add(cat, n)
        else:
            k.add("dense_mlp", 3 * hidden * inter)
    k.add("other", hidden)

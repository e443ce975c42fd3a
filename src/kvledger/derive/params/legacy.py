"""The pre-Llama schemas: MPT, GPT-2, BigCode, BLOOM, Falcon."""

from __future__ import annotations

from kvledger.derive.params.base import _Count


def _mpt(k: _Count) -> None:
    """MPT (transformers mpt, vLLM <= 0.25 mpt.py): fused ``Wqkv`` (3 × d_model), ``out_proj``,
    a plain MLP ``expansion_ratio × d_model`` wide, LayerNorms (biases and linear biases
    unless ``no_bias``), ALiBi positions (no table), the head tied to the embedding."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    inter = k.num("expansion_ratio", default=4) * hidden
    bias = not k.flag("no_bias", True)
    k.add("embed", vocab * hidden)
    k.add("attn", layers * 4 * hidden * hidden)
    k.add("dense_mlp", layers * 2 * hidden * inter)
    norm = 2 * hidden if bias else hidden
    k.add("other", layers * (2 * norm + ((4 * hidden + inter + hidden) if bias else 0)) + norm)


def _legacy(k: _Count) -> None:
    """The pre-Llama schemas (gpt2.py, gpt_bigcode.py, bloom.py, falcon.py): fused QKV with
    biases, plain 4×-wide MLP with biases, LayerNorms with biases, learned positions where the
    model has them (GPT-2, BigCode)."""
    mt = k.model_type
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    heads = k.alias("heads")
    head_dim = hidden // heads
    inter = k.alias("inter", default=4 * hidden) if k.cfg.get("n_inner") is not None or \
        k.cfg.get("ffn_hidden_size") is not None else 4 * hidden
    if mt == "falcon":
        new = k.flag("new_decoder_architecture")
        kv = k.num("num_kv_heads", default=heads) if new else \
            (1 if k.flag("multi_query", True) else heads)
        bias = k.flag("bias")
        qkv = hidden * (heads + 2 * kv) * head_dim
        per = qkv + hidden * hidden + 2 * hidden * inter
        small = (((heads + 2 * kv) * head_dim + hidden + inter + hidden) if bias else 0) + \
            (4 * hidden if new and k.cfg.get("num_ln_in_parallel_attn", 2) == 2 else 2 * hidden)
        k.add("attn", (qkv + hidden * hidden) * layers)
        k.add("dense_mlp", 2 * hidden * inter * layers)
        k.add("other", small * layers + 2 * hidden)
        del per
    else:
        kv = 1 if mt == "gpt_bigcode" and k.flag("multi_query", True) else heads
        qkv = hidden * (heads + 2 * kv) * head_dim
        k.add("attn", (qkv + hidden * hidden) * layers)
        k.add("dense_mlp", 2 * hidden * inter * layers)
        k.add("other", ((heads + 2 * kv) * head_dim + hidden + inter + hidden + 4 * hidden) *
              layers + 2 * hidden)
        if mt in ("gpt2", "gpt_bigcode"):
            k.add("embed", k.num("n_positions", "max_position_embeddings") * hidden)
        if mt == "bloom":
            k.add("other", 2 * hidden)  # word_embeddings_layernorm
    k.head(hidden, vocab, mt)
    if mt == "falcon" and k.cfg.get("tie_word_embeddings") is None:
        k.warnings.append(
            "falcon: the config leaves tie_word_embeddings to FalconConfig (true), so one "
            "embedding is counted; some Falcon checkpoints store lm_head.weight as well "
            f"(Falcon-180B does): stored bytes may be {vocab * hidden:,} parameters higher")

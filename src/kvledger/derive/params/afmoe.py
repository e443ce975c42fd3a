"""Arcee's AFMoE (Trinity; vLLM ``afmoe.py``): per layer GQA attention with an output gate
(``gate_proj`` hidden → heads × head_dim, sigmoid-applied), ``q_norm`` / ``k_norm`` over
``head_dim``, four RMSNorms (input, post-attention, pre-MLP, post-MLP); the first
``num_dense_layers`` layers a gated MLP of ``intermediate_size``, the others a mixture of
``num_experts`` gated experts of ``moe_intermediate_size``, a router (``gate``, hidden →
experts) with its ``expert_bias`` (one per expert), and ``num_shared_experts`` ×
``moe_intermediate_size`` of shared expert; the embedding, a final norm and the head
(``tie_word_embeddings``)."""

from __future__ import annotations

from kvledger.derive.params.base import _Count


def _afmoe(k: _Count) -> None:
    hidden, layers, vocab, heads, kv_heads, head_dim = k.decoder_shape()
    inter = k.alias("inter")
    moe_inter = k.num("moe_intermediate_size", default=inter)
    experts = k.alias("experts", default=0)
    shared = k.num("num_shared_experts", default=0)
    dense = k.num("num_dense_layers", default=0)
    k.head(hidden, vocab, k.model_type)
    q = heads * head_dim
    for i in range(layers):
        k.add("attn", hidden * (q + 2 * kv_heads * head_dim) + q * hidden + hidden * q)
        k.add("other", 2 * head_dim + 4 * hidden)
        if i < dense or not experts:
            k.add("dense_mlp", 3 * hidden * inter)
        else:
            k.add("routed_experts", experts * 3 * hidden * moe_inter)
            k.add("shared_experts", 3 * hidden * moe_inter * shared)
            k.add("router", hidden * experts)
            k.add("other", experts)  # expert_bias
    k.add("other", hidden)

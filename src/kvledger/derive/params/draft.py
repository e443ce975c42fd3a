"""EAGLE-3 draft heads (vLLM ``llama_eagle3.py``: ``Eagle3LlamaForCausalLM``).

Per layer a Llama decoder layer whose first layer's ``qkv_proj`` reads 2 × hidden (the
embedding and the hidden state concatenated; later layers hidden), with ``hidden_norm``
beside ``input_layernorm`` and ``post_attention_layernorm``; ``fc`` (no bias) maps the
target's ``num_aux_hidden_states`` hidden states (``eagle_aux_hidden_state_layer_ids``,
default 3) of ``target_hidden_size`` each to hidden; a final ``norm``; ``lm_head`` over
``draft_vocab_size`` (default the vocabulary). ``embed_tokens`` (vocab × hidden) is counted
too, with a warning: many drafts share the target's and do not store it. The ``d2t`` /
``t2d`` index tables (int64 × draft vocab, bool × vocab) are buffers, not parameters.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvledger.derive.params.base import _Count


def _eagle3(k: _Count) -> None:
    hidden, layers, vocab, heads, kv_heads, head_dim = k.decoder_shape()
    inter = k.alias("inter")
    draft_vocab = k.num("draft_vocab_size", default=vocab)
    eagle = k.cfg.get("eagle_config")
    ids = eagle.get("eagle_aux_hidden_state_layer_ids") if isinstance(eagle, Mapping) else None
    aux = k.num("num_aux_hidden_states", default=len(ids) if isinstance(ids, list) and ids
                else 3)
    use_aux = not isinstance(eagle, Mapping) or eagle.get("use_aux_hidden_state", True)
    target = k.num("target_hidden_size", default=hidden)
    k.add("embed", vocab * hidden)
    for i in range(layers):
        width = 2 * hidden if i == 0 else hidden
        linear, small = k.gqa(hidden, heads, kv_heads, head_dim)
        # k.gqa counts q/k/v as read from hidden: the first layer reads twice that.
        qkv = hidden * (heads + 2 * kv_heads) * head_dim
        k.add("attn", linear + qkv * (width // hidden - 1))
        k.add("other", small + 3 * hidden)
        mlp, bias = k.mlp(hidden, inter)
        k.add("dense_mlp", mlp)
        k.add("other", bias)
    if use_aux:
        k.add("attn", target * aux * hidden)
        if k.flag("norm_before_fc"):
            k.add("other", target * aux)
        if k.flag("fc_norm"):
            k.add("other", aux * target)
    k.add("other", hidden)
    k.add("lm_head", draft_vocab * hidden)
    k.warnings.append(
        f"EAGLE-3 draft: embed_tokens counted ({vocab * hidden:,} parameters); a draft that "
        "shares its target's embedding does not store it (vLLM then takes the target's): the "
        "stored bytes may be that much lower")

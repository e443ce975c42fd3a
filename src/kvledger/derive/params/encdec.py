"""Whisper's encoder-decoder (vLLM ``whisper.py``; transformers ``modeling_whisper.py``).

Encoder: ``conv1`` (``num_mel_bins`` → d, kernel 3, bias), ``conv2`` (d → d, kernel 3, bias),
``embed_positions`` (``max_source_positions`` × d, stored though sinusoidal),
``encoder_layers`` layers of self-attention (q / v / out with biases, k without: vLLM adds a
zero k bias when it loads, ``_create_fake_bias_for_k_proj``), a plain MLP ``encoder_ffn_dim``
wide with biases and two LayerNorms, then a final LayerNorm. Decoder: ``embed_tokens``
(vocab × d), learned ``embed_positions`` (``max_target_positions`` × d), ``decoder_layers``
layers of self-attention, cross-attention (``encoder_attn``, the same shapes), the MLP and
three LayerNorms, a final LayerNorm; ``proj_out`` is tied to ``embed_tokens``
(``tie_weights``), so not stored. The encoder is returned apart: the audio tower.
"""

from __future__ import annotations

from kvledger.derive.params.base import _Count


def _attention(d: int) -> tuple[int, int]:
    """(linear, small) of one Whisper attention: four d × d projections, biases on q, v and
    out (k has none)."""
    return 4 * d * d, 3 * d


def _mlp(d: int, ffn: int) -> tuple[int, int]:
    return 2 * d * ffn, ffn + d


def _whisper(k: _Count) -> int:
    """Counts the decoder into ``k``; returns the encoder's parameters (the audio tower)."""
    d = k.num("d_model")
    vocab = k.alias("vocab")
    mel = k.num("num_mel_bins", default=80)
    enc_layers = k.num("encoder_layers")
    dec_layers = k.num("decoder_layers")
    enc_ffn = k.num("encoder_ffn_dim", default=4 * d)
    dec_ffn = k.num("decoder_ffn_dim", default=4 * d)
    ln = 2 * d  # LayerNorm: weight and bias
    attn, attn_small = _attention(d)
    mlp, mlp_bias = _mlp(d, enc_ffn)
    encoder = (mel * d * 3 + d) + (3 * d * d + d) + k.num("max_source_positions") * d + \
        enc_layers * (attn + attn_small + mlp + mlp_bias + 2 * ln) + ln
    k.head(d, vocab, k.model_type)
    k.add("other", k.num("max_target_positions") * d)  # learned decoder positions
    mlp, mlp_bias = _mlp(d, dec_ffn)
    k.add("attn", dec_layers * 2 * attn)  # self- and cross-attention
    k.add("dense_mlp", dec_layers * mlp)
    k.add("other", dec_layers * (2 * attn_small + mlp_bias + 3 * ln) + ln)
    return encoder


def _mllama_text(k: _Count) -> None:
    """Llama 3.2 Vision's language model (transformers ``modeling_mllama.py``;
    vLLM <= 0.10.2 ``mllama.py``): ``embed_tokens`` holds ``vocab_size + 8`` rows (the image
    tokens), ``lm_head`` ``vocab_size``; ``num_hidden_layers`` counts every layer, those in
    ``cross_attention_layers`` being cross-attention layers — q / k / v / o of the
    self-attention's shapes (no biases), ``q_norm`` / ``k_norm`` over ``head_dim``, the
    tanh gates ``cross_attn_attn_gate`` / ``cross_attn_mlp_gate`` (one value each) — the others
    Llama self-attention layers; every layer a gated MLP and two RMSNorms; a final norm."""
    hidden, layers, vocab, heads, kv_heads, head_dim = k.decoder_shape()
    inter = k.alias("inter")
    cross = k.cfg.get("cross_attention_layers") or []
    crossed = {int(i) for i in cross if isinstance(i, int) and not isinstance(i, bool)}
    k.add("embed", (vocab + 8) * hidden)
    tied = k.cfg.get("tie_word_embeddings")
    if not tied:
        k.add("lm_head", vocab * hidden)
    for i in range(layers):
        linear, small = k.gqa(hidden, heads, kv_heads, head_dim)
        k.add("attn", linear)
        k.add("other", small + 2 * hidden)
        if i in crossed:
            k.add("other", 2 * head_dim + 2)  # q_norm, k_norm; the two gates
        mlp, bias = k.mlp(hidden, inter)
        k.add("dense_mlp", mlp)
        k.add("other", bias)
    k.add("other", hidden)

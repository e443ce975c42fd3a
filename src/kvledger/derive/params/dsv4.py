"""DeepSeek-V4 (vLLM 0.33 ``models/deepseek_v4``: ``attention.py``, ``compressor.py``,
``nvidia/model.py``).

Per layer: the attention — ``fused_wqa_wkv`` hidden → q_lora_rank + head_dim (one shared KV
head), ``q_norm``, ``wq_b`` q_lora_rank → heads × head_dim, ``kv_norm``, the grouped output
``wo_a`` (heads × head_dim / o_groups → o_groups × o_lora_rank) and ``wo_b`` (o_groups ×
o_lora_rank → hidden), one ``attn_sink`` a head; on a layer whose ``compress_ratios`` entry
r > 1 a compressor (``ape`` r × c × head_dim, ``fused_wkv_wgate`` hidden → 2 × c × head_dim,
a norm over head_dim; c = 2 when r = 4, else 1), and where r = 4 the sparse indexer
(``wq_b`` q_lora_rank → index heads × index_head_dim, ``weights_proj`` hidden → index heads,
its own compressor over index_head_dim); the hyper-connection mixers (``hc_attn_fn`` /
``hc_ffn_fn`` of (2 + hc_mult) × hc_mult rows over hc_mult × hidden, their bases and
scales); two norms; the MoE (``_moe``: experts, shared expert, router). The model adds the
embedding, head, final norm and ``hc_head`` (hc_mult × hc_mult × hidden, base, scale). The
hash layers' ``tid2eid`` routing table is an integer table, not counted.
"""

from __future__ import annotations

from kvledger.derive.params.base import _Count
from kvledger.derive.params.decoder import _moe


def _compressor(hidden: int, head_dim: int, ratio: int) -> int:
    c = 2 if ratio == 4 else 1
    return ratio * c * head_dim + hidden * 2 * c * head_dim + head_dim


def _dsv4_layer(k: _Count, ratio: int) -> None:
    hidden, heads = k.alias("hidden"), k.alias("heads")
    hd = k.num("head_dim")
    q_lora, o_lora = k.num("q_lora_rank"), k.num("o_lora_rank")
    groups = k.num("o_groups", default=1)
    k.add("attn", hidden * (q_lora + hd) + q_lora * heads * hd + heads * hd * o_lora +
          groups * o_lora * hidden)
    k.add("other", q_lora + hd + heads + 2 * hidden)
    if ratio > 1:
        k.add("attn", _compressor(hidden, hd, ratio))
    if ratio == 4:
        n, dim = k.num("index_n_heads"), k.num("index_head_dim")
        k.add("attn", q_lora * n * dim + _compressor(hidden, dim, ratio))
        k.add("other", hidden * n)  # weights_proj stays unquantized
    hc = k.num("hc_mult", default=0)
    if hc:
        mix = (2 + hc) * hc
        k.add("other", 2 * (mix * hc * hidden + mix + 3))
    experts = k.alias("experts", default=0)
    for cat, n in _moe(k, hidden, k.alias("inter", default=4 * hidden), experts).items():
        k.add(cat, n)


def _ratios(k: _Count, layers: int) -> list[int]:
    ratios = k.cfg.get("compress_ratios")
    if not isinstance(ratios, list):
        return [1] * layers
    return [int(r) if isinstance(r, int) and not isinstance(r, bool) else 1
            for r in ratios[:layers]] + [1] * max(0, layers - len(ratios))


def _dsv4(k: _Count) -> None:
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    k.head(hidden, vocab, k.model_type)
    for ratio in _ratios(k, layers):
        _dsv4_layer(k, ratio)
    k.add("other", hidden)
    hc = k.num("hc_mult", default=0)
    if hc:
        k.add("other", hc * hc * hidden + hc + 1)


def _dsv4_mtp(k: _Count, count: int) -> dict[str, int]:
    """DeepSeek-V4's MTP layers (deepseek_v4 ``DeepSeekV4MTP``): a decoder layer of
    compress ratio 1 each, with DeepSeek's ``enorm`` / ``hnorm`` / ``eh_proj`` (2 × hidden →
    hidden) and a final norm."""
    sub = _Count(k.cfg, k.model_type, k.p)
    hidden = k.alias("hidden")
    for _ in range(count):
        _dsv4_layer(sub, 1)
        sub.add("attn", 2 * hidden * hidden)
        sub.add("other", 3 * hidden)
    return dict(sub.c)

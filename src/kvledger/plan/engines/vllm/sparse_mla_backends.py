"""The sparse MLA (DSA) attention backend an SM10x CUDA worker picks, and what it does to the
cache page: its stored layout and the stride between physical blocks.

``platforms/cuda.py _get_backend_priorities`` (``use_mla``, capability major 10) puts the
sparse backends last, in an order that depends on the KV cache dtype and on the layer's query
heads per TP rank (``MLAAttention`` gets ``num_local_heads``):

- quantized cache (fp8): FLASHINFER_MLA_SPARSE, FLASHMLA_SPARSE;
- float cache, at most 16 heads a rank: FLASHINFER_MLA_SPARSE, FLASHMLA_SPARSE, with
  FLASH_ATTN_MLA_SPARSE_FA4 before them in vLLM 0.33 only (the release field
  ``fa4_sparse_mla_on_sm10x``; 0.32 has no FA4 sparse backend);
- float cache, more heads: FLASHMLA_SPARSE, FLASHINFER_MLA_SPARSE.

Apart from FA4, the files below read alike in vLLM 0.32 and 0.33 (messages aside).

The first whose ``supports_combination`` passes is taken (each as its file under
``v1/attention/backends/mla/`` states it):

- ``FLASHMLA_SPARSE`` (flashmla_sparse.py): head size 576, or 512 only on SM90 (so never a
  no-RoPE GLM-5-next layer on SM10x); a quantized cache is canonicalised to "fp8_ds_mla"
  (``_canonicalize_sparse_mla_kv_cache_dtype``, model_executor/layers/attention/
  mla_attention.py), 656 bytes a token; ``customize_spec`` on SM100: whole rows
  (``align_blocks_to_rows(spec)``).
- ``FLASHINFER_MLA_SPARSE`` (flashinfer_mla_sparse.py ``FlashInferMLASparseTRTLLMBackend``):
  auto / float16 / bfloat16 / fp8 / fp8_e4m3, never fp8_ds_mla, so fp8 stays the standard
  one-byte layout ("Using standard fp8 KV cache format"); no-RoPE models need
  qk_nope_head_dim 256 and kv_lora_rank 512, RoPE models qk_nope_head_dim 128 or 192; the
  config must have ``index_topk``. Its kernel blocks are ``MultipleOf(32)`` and
  ``customize_spec`` aligns blocks to 32 rows (``align_blocks_to_rows(spec, 32)``): 32 x the
  row's bytes (GLM-5.3-Flash at bfloat16: 32 x 1,024 B = 32,768 B).
- ``FLASH_ATTN_MLA_SPARSE_FA4`` (flashattn_mla_sparse.py): a FlashInfer sparse backend with
  ``MultipleOf(64)`` kernel blocks (so 64-row alignment), bfloat16 cache, head size 576,
  ``index_topk`` % 128 == 0, (kv_lora_rank, qk_rope_head_dim) == (512, 64), and 8/16/32/64/128
  heads a rank. Read from source only: no oracle case exercises it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.records import record

_FLOAT = frozenset({"auto", "float16", "bfloat16"})
FLASHMLA_SPARSE = "FLASHMLA_SPARSE"
FLASHINFER_MLA_SPARSE = "FLASHINFER_MLA_SPARSE"
FA4_MLA_SPARSE = "FLASH_ATTN_MLA_SPARSE_FA4"


@record(frozen=True)
class SparseMlaBackend:
    """The backend taken, the layout it stores and its block-stride alignment in rows."""

    name: str
    ds_mla_layout: bool  # the cache holds FlashMLA's packed "fp8_ds_mla" rows
    alignment_rows: int  # ``align_blocks_to_rows(spec, rows)``


def _flashmla(cache_dtype: str, model_dtype: str, head_size: int) -> SparseMlaBackend | None:
    # supported_dtypes [bfloat16]; supported_kv_cache_dtypes auto, bfloat16, fp8 (and its
    # own fp8_ds_mla / nvfp4_ds_mla); head size 512 is taken on SM90 only.
    if model_dtype != "bfloat16" or cache_dtype not in ("auto", "bfloat16", "fp8") \
            or head_size != 576:
        return None
    return SparseMlaBackend(FLASHMLA_SPARSE, cache_dtype not in _FLOAT, 1)


def _flashinfer(cache_dtype: str, text: Mapping[str, Any]) -> SparseMlaBackend | None:
    if cache_dtype not in _FLOAT | {"fp8", "fp8_e4m3"} or "index_topk" not in text:
        return None
    nope, lora = text.get("qk_nope_head_dim"), text.get("kv_lora_rank")
    if text.get("qk_rope_head_dim") == 0:
        if (nope, lora) != (256, 512):
            return None
    elif nope not in (128, 192):
        return None
    return SparseMlaBackend(FLASHINFER_MLA_SPARSE, False, 32)


def _fa4(cache_dtype: str, model_dtype: str, text: Mapping[str, Any], head_size: int,
         heads: int) -> SparseMlaBackend | None:
    topk = text.get("index_topk")
    if (model_dtype != "bfloat16" or cache_dtype not in ("auto", "bfloat16")
            or head_size != 576
            or not isinstance(topk, int) or topk % 128
            or (text.get("kv_lora_rank"), text.get("qk_rope_head_dim")) != (512, 64)
            or heads not in (8, 16, 32, 64, 128) or _flashinfer(cache_dtype, text) is None):
        return None
    return SparseMlaBackend(FA4_MLA_SPARSE, False, 64)


def choose_sm10x(cache_dtype: str, model_dtype: str, text: Mapping[str, Any], head_size: int,
                 heads_per_rank: int, *, fa4: bool = True,
                 forced: str | None = None) -> SparseMlaBackend | None:
    """The sparse MLA backend an SM10x worker takes; None when none does (vLLM then stops:
    "No valid attention backend found"). ``fa4``: the release lists FA4 (0.33). ``forced``:
    the backend the user selected, the only one tried."""
    order: tuple[SparseMlaBackend | None, ...]
    if forced is not None:
        if forced == FLASHMLA_SPARSE:
            return _flashmla(cache_dtype, model_dtype, head_size)
        if forced == FLASHINFER_MLA_SPARSE:
            return _flashinfer(cache_dtype, text)
        if forced == FA4_MLA_SPARSE and fa4:
            return _fa4(cache_dtype, model_dtype, text, head_size, heads_per_rank)
        return None
    if cache_dtype not in _FLOAT:
        order = (_flashinfer(cache_dtype, text), _flashmla(cache_dtype, model_dtype, head_size))
    elif heads_per_rank <= 16:
        order = (_fa4(cache_dtype, model_dtype, text, head_size, heads_per_rank) if fa4
                 else None,
                 _flashinfer(cache_dtype, text),
                 _flashmla(cache_dtype, model_dtype, head_size))
    else:
        order = (_flashmla(cache_dtype, model_dtype, head_size),
                 _flashinfer(cache_dtype, text))
    return next((b for b in order if b is not None), None)

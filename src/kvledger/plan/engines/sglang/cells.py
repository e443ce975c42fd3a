"""Bytes per token of SGLang's KV pools, exactly as SGLang 0.5.23 computes them.

Every formula is SGLang's integer arithmetic, cited by file and function:

* **MHA** — ``DefaultPoolConfigurator._compute_cell_size`` (``model_executor/
  pool_configurator.py``): ``get_num_kv_heads(attn_tp) × (head_dim + v_head_dim) × layers ×
  element_size``, with ``get_num_kv_heads`` = ``max(1, heads // attn_tp)``
  (``configs/model_config.py``). K and V dims enter apart.
* **MLA** — same function: ``calculate_mla_kv_cache_dim × layers × element_size``, where the
  dim is ``kv_lora_rank + qk_rope_head_dim`` (``mem_cache/kv_cache_configurator.py``). For DSA
  with an fp8 KV on the FlashMLA (Hopper) layout the row also holds one fp32 scale per 128
  latent values and a bf16 rope: ``kv_lora_rank + kv_lora_rank // 128 × 4 + rope × 2``;
  Blackwell's trtllm DSA backend keeps the raw ``kv_lora_rank + rope`` row.
* **MLA fp4** — ``cell // 2 + (kv_lora_rank + rope) // 16 × layers × element_size``.
* **DSA indexer** — ``_compute_dsa_indexer_cell_size``: ``ceil_div(index_head_dim +
  index_head_dim // 128 × 4, index_kpool)`` bytes (uint8 buffer) × the layers that keep
  their own index keys (``dsa_layer_skips_topk``, ``_get_dsa_cache_layer_ids``).
* **EAGLE / MTP draft layers** — ``DefaultPoolConfigurator.__init__``:
  ``cell += int(cell × draft_layers / layers)`` (the draft is assumed to share the target's
  per-layer size); for DSA the latent and the indexer are scaled apart.
* **Hybrid SWA** — ``HybridSWAPoolConfigurator.__init__``: per-layer bytes of a full and of a
  sliding layer (``get_swa_num_kv_heads``, ``swa_head_dim``, ``swa_v_head_dim``).

``element_size`` is ``torch._utils._element_size``: 2 for 16-bit, 1 for fp8 and for the packed
``float4_e2m1fn_x2`` (two fp4 values per byte), 4 for float32.
"""

from __future__ import annotations

from kvledger.plan.engines.sglang.model import DsaIndexer, Heads, SglangLayoutError, SglangModel
from kvledger.records import record

# mem_cache/memory_pool.py: DSATokenToKVPool.quant_block_size / rope_storage_dtype (bf16).
DSA_QUANT_BLOCK = 128
DSA_ROPE_BYTES = 2
FP4_SCALE_BLOCK = 16  # MLA fp4: kv_scale_buffer block (_compute_cell_size)

# torch._utils._element_size of the storage dtype SGLang allocates.
_ELEMENT_SIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1,
                 "nvfp4": 1}
# The torch dtype name SGLang logs ("KV Cache is allocated. dtype: torch.bfloat16, ...").
TORCH_NAMES = {"float32": "torch.float32", "float16": "torch.float16",
               "bfloat16": "torch.bfloat16", "fp8_e4m3": "torch.float8_e4m3fn",
               "fp8_e5m2": "torch.float8_e5m2", "nvfp4": "torch.float4_e2m1fn_x2"}


def element_size(kv_dtype: str) -> int:
    return _ELEMENT_SIZE[kv_dtype]


def kv_heads_per_rank(heads: int, attn_tp: int) -> int:
    """``ModelConfig.get_num_kv_heads``: ``max(1, total // attn_tp)`` (DCP size 1)."""
    return max(1, heads // attn_tp)


def mha_bytes_per_layer(heads: Heads, kv_dtype: str, attn_tp: int) -> int:
    if kv_dtype == "nvfp4":
        raise SglangLayoutError(
            "--kv-cache-dtype nvfp4 on a standard-attention model: SGLang's NVFP4 cell "
            "(NVFP4KVCacheMethod.compute_cell_size) depends on which scale layouts and "
            "dequant workspace the chosen attention backends need; not reproduced"
        )
    return kv_heads_per_rank(heads.kv_heads, attn_tp) * (heads.head_dim + heads.v_head_dim) \
        * element_size(kv_dtype)


def mla_row_dim(model: SglangModel, kv_dtype: str, dsa_scaled_fp8: bool) -> int:
    """``calculate_mla_kv_cache_dim`` (mem_cache/kv_cache_configurator.py)."""
    assert model.mla is not None
    lora, rope = model.mla.kv_lora_rank, model.mla.qk_rope_head_dim
    if model.dsa is not None and kv_dtype == "fp8_e4m3" and dsa_scaled_fp8:
        if lora % DSA_QUANT_BLOCK:
            raise SglangLayoutError(f"kv_lora_rank {lora} is not a multiple of "
                                    f"{DSA_QUANT_BLOCK} (SGLang asserts it for fp8 DSA)")
        return lora + lora // DSA_QUANT_BLOCK * 4 + rope * DSA_ROPE_BYTES
    return lora + rope


def mla_cell(model: SglangModel, kv_dtype: str, num_layers: int, dsa_scaled_fp8: bool) -> int:
    """The MLA part of ``_compute_cell_size`` (no indexer)."""
    assert model.mla is not None
    size = element_size(kv_dtype)
    cell = mla_row_dim(model, kv_dtype, dsa_scaled_fp8) * num_layers * size
    if kv_dtype == "nvfp4":
        if model.dsa is not None:
            raise SglangLayoutError("--kv-cache-dtype nvfp4 with DSA is not reproduced "
                                    "(SGLang's DSA kv dtype is bfloat16 or fp8_e4m3)")
        dims = model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
        cell = cell // 2 + dims // FP4_SCALE_BLOCK * num_layers * size
    return cell


def dsa_indexer_cell(dsa: DsaIndexer, num_indexer_layers: int) -> int:
    """``_compute_dsa_indexer_cell_size``: one uint8 row per indexer layer."""
    head = dsa.index_head_dim
    row = -(-(head + head // DSA_QUANT_BLOCK * 4) // dsa.index_kpool)
    return row * num_indexer_layers


@record(frozen=True)
class Cell:
    """Bytes per token of the default (non-SWA) pool, and its parts."""

    bytes_per_token: int
    kv_bytes: int  # the target's attention cache (MHA or MLA) per token
    indexer_bytes: int  # DSA index keys per token
    draft_bytes: int  # EAGLE / MTP draft layers per token
    num_layers: int  # layers in this pool on this rank


def default_cell(
    model: SglangModel,
    kv_dtype: str,
    *,
    attn_tp: int,
    layers: tuple[int, ...],
    indexer_layers: tuple[int, ...],
    draft_layers: int,
    dsa_scaled_fp8: bool,
) -> Cell:
    """``DefaultPoolConfigurator``'s ``_cell_size`` for the layers one rank holds."""
    n = len(layers)
    indexer = 0
    if model.attention_arch == "MLA":
        kv = mla_cell(model, kv_dtype, n, dsa_scaled_fp8)
        if model.dsa is not None:
            indexer = dsa_indexer_cell(model.dsa, len(indexer_layers))
    elif model.heads is not None:
        kv = mha_bytes_per_layer(model.heads, kv_dtype, attn_tp) * n
    else:
        kv = 0
    cell = kv + indexer
    draft = 0
    if draft_layers > 0 and n > 0:
        if model.dsa is not None:
            # DSA: the latent scales by layers, the draft's indexer keeps every layer.
            draft = int(kv * draft_layers / n) + dsa_indexer_cell(model.dsa, draft_layers)
        else:
            draft = int(cell * draft_layers / n)
    return Cell(cell + draft, kv, indexer, draft, n)

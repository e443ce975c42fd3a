"""The block size vLLM settles on, including its hybrid attention/Mamba alignment.

vLLM keeps one block pool whose page must hold a whole recurrent state, so for models
mixing attention with Mamba-style layers it *raises the attention block size* until one
attention page is at least one state, rounded to the attention kernel's block alignment,
and pads the state page up to that attention page
(``Platform._align_hybrid_block_size`` / ``HybridAttentionMambaModelConfig``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.derive.layers import ceil_div
from kvledger.plan.vllm.resolve import Resolved, VllmLayoutError
from kvledger.plan.vllm.specs import (
    AttentionSpec,
    CircularBufferSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
)

# Smallest kernel block size of the backend vLLM picks on an SM90 GPU:
# FlashAttention takes MultipleOf(16); FlashMLA (dense and sparse) takes 64.
FLASH_ATTENTION_ALIGNMENT = 16
FLASH_MLA_ALIGNMENT = 64
# vLLM ``Platform._align_hybrid_block_size``: MLA hybrids align to at least 128 tokens.
MLA_HYBRID_MIN_ALIGNMENT = 128
DEFAULT_BLOCK_SIZE = 16


@dataclass(frozen=True)
class BlockSizes:
    """The block sizes vLLM settles on (attention, and Mamba when the model has it)."""

    block_size: int  # attention (cache_config.block_size), what vLLM reports
    mamba_block_size: int | None
    mamba_page_size_padded: int | None
    notes: tuple[str, ...] = ()


def _main_attention(specs: list[KVCacheSpec]) -> AttentionSpec | None:
    """The attention spec vLLM measures one token of (the model's own head size)."""
    attn = [
        s for s in specs
        if isinstance(s, AttentionSpec) and not isinstance(s, CircularBufferSpec)
    ]
    mla = [s for s in attn if isinstance(s, MLAAttentionSpec) and not s.is_indexer]
    if mla:
        return mla[0]
    plain = [s for s in attn if not isinstance(s, MLAAttentionSpec)]
    return plain[0] if plain else (attn[0] if attn else None)


def resolve_block_sizes(specs: list[KVCacheSpec], res: Resolved) -> BlockSizes:
    requested = res.requested_block_size
    notes: list[str] = []
    backend_min = FLASH_MLA_ALIGNMENT if res.use_mla else FLASH_ATTENTION_ALIGNMENT
    # FlashMLA-sparse (DeepSeek-V3.2 DSA) supports block size 64 only: "auto" picks it
    # and anything else is refused by vLLM's backend validation.
    if res.use_sparse and requested is not None and requested % FLASH_MLA_ALIGNMENT:
        raise VllmLayoutError(
                f"block_size {requested} is not supported by vLLM's sparse MLA backend "
                f"(needs a multiple of {FLASH_MLA_ALIGNMENT}); use --block-size auto"
            )
    mambas = [s for s in specs if isinstance(s, MambaSpec)]
    main = _main_attention(specs)
    if not mambas or main is None:
        if requested is not None:
            block = requested
        elif res.use_sparse:
            block = FLASH_MLA_ALIGNMENT
        else:
            block = DEFAULT_BLOCK_SIZE
            if res.use_mla:
                notes.append("block_size auto with dense MLA assumed 16 (no oracle case checks it)")
        mamba_block = None
        if mambas:  # attention-free recurrent model
            mamba_block = block if res.mamba_cache_mode == "align" else res.max_model_len
        return BlockSizes(block, mamba_block, None, tuple(notes))

    # vLLM ``_align_hybrid_block_size``: kernel alignment = max(backend's smallest kernel
    # block, the configured block size); MLA raises it to >= 128.
    alignment = max(backend_min, requested or backend_min)
    if res.use_mla:
        alignment = max(alignment, MLA_HYBRID_MIN_ALIGNMENT)
    if res.mamba_cache_mode == "all":
        raise VllmLayoutError("mamba_cache_mode 'all' is not modelled by the vLLM layout")
    attn_page_1 = main.with_block_size(1).page_size_bytes
    mamba_page = max(s.real_page_size_bytes for s in mambas)
    # attn_block_size = alignment * cdiv(mamba_page, alignment * attn_page_size_1_token)
    attn_block = alignment * ceil_div(mamba_page, alignment * attn_page_1)
    block = requested if requested is not None else alignment
    block = max(block, attn_block)
    attn_page = block * attn_page_1
    padded = attn_page if attn_page > mamba_page else None
    # vLLM: align mode keeps a state per attention block; otherwise one state per request
    # (mamba_block_size = max_model_len).
    mamba_block = block if res.mamba_cache_mode == "align" else res.max_model_len
    notes.append(
        f"hybrid alignment: attention block size {block} so one page "
        f"({attn_page} B) holds a {mamba_page} B recurrent state"
    )
    return BlockSizes(block, mamba_block, padded, tuple(notes))


def apply_block_sizes(specs: list[KVCacheSpec], sizes: BlockSizes) -> list[KVCacheSpec]:
    out: list[KVCacheSpec] = []
    for spec in specs:
        if isinstance(spec, MambaSpec):
            mamba = spec.with_block_size(sizes.mamba_block_size or sizes.block_size)
            if sizes.mamba_page_size_padded is not None:
                mamba = mamba.with_page_size_padded(sizes.mamba_page_size_padded)
            out.append(mamba)
        elif isinstance(spec, CircularBufferSpec):
            out.append(spec)  # its block is its ring, whatever the pool's block size
        else:
            out.append(spec.with_block_size(sizes.block_size))
    return out

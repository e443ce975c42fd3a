"""The block size vLLM settles on, including its hybrid attention/Mamba alignment.

vLLM keeps one block pool whose page must hold a whole recurrent state, so for models
mixing attention with Mamba-style layers it *raises the attention block size* until one
attention page is at least one state, rounded to the attention kernel's block alignment,
and pads the state page up to that attention page
(``Platform._align_hybrid_block_size`` / ``HybridAttentionMambaModelConfig``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from kvledger.derive.layers import ceil_div
from kvledger.plan.engines.vllm.errors import VllmRefusesToStart, engine_words
from kvledger.plan.engines.vllm.resolve import Resolved, VllmLayoutError
from kvledger.plan.engines.vllm.specs import (
    AttentionSpec,
    CircularBufferSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
)
from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.plan.engines.vllm.releases.profile import VllmRelease

# Smallest kernel block size of the backend vLLM picks on an SM90 GPU
# (``get_supported_kernel_block_sizes``, v1/attention/backends/): FLASH_ATTN and
# FLASH_ATTN_MLA take MultipleOf(16); the sparse MLA backends MultipleOf(64), FLASHMLA [64].
FLASH_ATTENTION_ALIGNMENT = 16
FLASH_MLA_ALIGNMENT = 64
# vLLM ``Platform._align_hybrid_block_size``: MLA hybrids align to at least 128 tokens.
MLA_HYBRID_MIN_ALIGNMENT = 128
# vLLM 0.32/0.33 ``CacheConfig.DEFAULT_BLOCK_SIZE``; a release's own is its profile's
# ``default_block_size`` (``Resolved.default_block_size``: 0.34 took 64).
DEFAULT_BLOCK_SIZE = 16
# MiniMax-M3's sparse attention: ``MiniMaxM3SparseBackend.get_supported_kernel_block_sizes``
# (models/minimax_m3/common/sparse_attention.py; the NVIDIA MSA / Triton / CUTLASS backends
# inherit it) and ``MiniMaxM3IndexerBackend.get_supported_kernel_block_sizes``
# (common/indexer.py) both return exactly [128] ("one sparse block per KV page").
MINIMAX_M3_KERNEL_BLOCK = 128

# A backend's declared kernel block sizes: an int is that size exactly, ``MultipleOf(n)``
# (written ("multiple", n) here) any multiple of n.
KernelSizes = tuple[int | tuple[str, int], ...]
_FLASH_ATTN: KernelSizes = (("multiple", FLASH_ATTENTION_ALIGNMENT),)
_MINIMAX_M3_SPARSE: KernelSizes = (MINIMAX_M3_KERNEL_BLOCK,)


def _base(size: int | tuple[str, int]) -> int:
    return size[1] if isinstance(size, tuple) else size


def _supports(sizes: KernelSizes, block: int) -> bool:
    """vLLM ``AttentionBackend.supports_block_size``: the manager block need only be a
    multiple of one kernel size (a larger block is split into kernel blocks)."""
    return not sizes or any(block % _base(s) == 0 for s in sizes)


def preferred_block_size(backends: list[KernelSizes], default: int = DEFAULT_BLOCK_SIZE,
                         release: VllmRelease | None = None) -> int:
    """vLLM ``Platform._preferred_block_size_for_backends`` (platforms/interface.py): one
    backend → its ``get_preferred_block_size(default)`` (``default`` if it takes it, else its
    smallest size); several → ``default`` if all take it, else the smallest lcm of one size
    per backend that every backend takes. ``default``: the release's DEFAULT_BLOCK_SIZE."""
    if len(backends) == 1:
        only = backends[0]
        if _supports(only, default):
            return default
        return min(_base(s) for s in only)
    if all(_supports(b, default) for b in backends):
        return default
    per_backend = [[_base(s) for s in b] or [1] for b in backends]
    for candidate in sorted({math.lcm(*combo) for combo in itertools.product(*per_backend)}):
        if all(_supports(b, candidate) for b in backends):
            return candidate
    raise VllmRefusesToStart(f"{engine_words(release)} refuses to start: the attention "
                             "backends share no "
                          "supported KV cache block size")


def _minimax_m3_block_size(res: Resolved, has_dense: bool) -> int:
    """MiniMax-M3 (``MiniMaxM3SparseForConditionalGeneration``): its dense layers run
    FLASH_ATTN (MultipleOf(16)), its sparse layers MINIMAX_M3_SPARSE and its indexer caches
    MINIMAX_M3_SPARSE_INDEXER (both exactly 128).

    ``--block-size auto``: ``update_block_size_for_backend`` phase 1 gives lcm(16, 128) = 128.
    A block size the user sets skips phase 1; the worker then splits each block into kernel
    blocks (``prepare_kernel_block_sizes`` → ``select_common_block_size``), which needs a
    multiple of 128, else it raises "No common block size" and vLLM stops at start-up. (The
    oracle stubs the worker's KV initialisation, so only source shows that refusal.)
    """
    requested = res.requested_block_size
    if requested is None:
        backends = ([_FLASH_ATTN] if has_dense else []) + [_MINIMAX_M3_SPARSE] * 2
        return preferred_block_size(backends, res.default_block_size, res.release)
    if requested % MINIMAX_M3_KERNEL_BLOCK:
        raise VllmRefusesToStart(
            f"{res.release.short} refuses to start: No common block size for {requested} "
            f"(MINIMAX_M3_SPARSE: [{MINIMAX_M3_KERNEL_BLOCK}]); MiniMax-M3's sparse-attention "
            f"kernels take {MINIMAX_M3_KERNEL_BLOCK}-token blocks: use --block-size auto or a "
            f"multiple of {MINIMAX_M3_KERNEL_BLOCK}"
        )
    return requested


@record(frozen=True)
class BlockSizes:
    """The block sizes vLLM settles on (attention, and Mamba when the model has it)."""

    block_size: int  # attention (cache_config.block_size), what vLLM reports
    mamba_block_size: int | None
    mamba_page_size_padded: int | None
    notes: tuple[str, ...] = ()


def _main_attention(specs: Sequence[KVCacheSpec]) -> AttentionSpec | None:
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


def _auto_block_size(res: Resolved, notes: list[str]) -> int:
    """``--block-size auto``, non-hybrid models.

    vLLM ``Platform.update_block_size_for_backend`` phase 1: the backends' preferred size
    (``_preferred_block_size_for_backends`` / ``AttentionBackend.get_preferred_block_size``):
    the release's ``CacheConfig.DEFAULT_BLOCK_SIZE`` (16; 0.34: 64) when every backend takes
    it, else the smallest kernel size they share. The backend is
    chosen with no block size (``get_attn_backend``: block_size None unless user-specified)
    from the GPU's priority list (platforms/cuda.py ``_get_backend_priorities``):

    - standard attention: FLASH_ATTN (SM8x/9x/12x, MultipleOf(16)) or FLASHINFER (SM10x,
      [16, 32, 64]), both taking 16 and 64;
    - sparse MLA (DSA): FLASH_ATTN_MLA_SPARSE / FLASHMLA_SPARSE, MultipleOf(64), and the
      indexer's 64 → 64;
    - dense MLA: the backend ``mla_backends.choose`` finds for the capability (SM90:
      FLASH_ATTN_MLA → 16, or with an fp8 cache FLASHMLA → 64; SM10x: FLASHINFER_MLA → 32;
      SM8x and SM12x: TRITON_MLA → 16). The CPU oracle lacks FlashMLA, so SM90's fp8 row is
      read from source only.
    """
    if res.use_sparse:
        return FLASH_MLA_ALIGNMENT
    if res.use_mla and res.mla_auto_block:
        block = res.mla_auto_block
        if block != res.default_block_size:
            source = (" (FlashMLA: the vLLM CPU oracle lacks this kernel, so the rule is "
                      "read from source only)" if res.mla_backend == "FLASHMLA" else "")
            notes.append(f"block size {block}: with --block-size auto, {res.release.short} "
                         f"picks {res.mla_backend} for MLA on this GPU, whose kernel blocks "
                         f"take {block}{source}")
        return block
    if res.standard_auto_block:
        notes.append(f"block size {res.standard_auto_block}: the selected backend's "
                     "get_preferred_block_size")
        return res.standard_auto_block
    if res.default_block_size != res.release.default_block_size:  # backend_choice.rocm_own_standard
        notes.append(f"block size {res.default_block_size}: with --block-size auto, "
                     f"{res.release.short} picks ROCM_ATTN on this GPU, whose "
                     f"get_preferred_block_size is {res.default_block_size}")
    return res.default_block_size


def resolve_block_sizes(counted: Sequence[tuple[KVCacheSpec, int]], res: Resolved) -> BlockSizes:
    """The block sizes for the planned layers: ``counted`` holds each distinct spec with the
    number of layers that have it, in the order of their first layer."""
    specs = [spec for spec, _ in counted]
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
    if res.minimax_sparse_layers and not mambas:
        # The attention layers that are not sparse run FLASH_ATTN.
        attention = sum(n for s, n in counted if isinstance(s, AttentionSpec)
                        and not isinstance(s, MLAAttentionSpec))
        dense = attention > len(res.minimax_sparse_layers)
        return BlockSizes(_minimax_m3_block_size(res, dense), None, None, tuple(notes))
    if res.minimax_sparse_layers:  # pragma: no cover - no MiniMax-M3 has recurrent layers
        raise VllmLayoutError("MiniMax-M3 sparse attention beside recurrent layers is not "
                              "modelled by the vLLM layout")
    if not mambas or main is None:
        block = requested if requested is not None else _auto_block_size(res, notes)
        mamba_block = None
        if mambas:  # attention-free recurrent model
            mamba_block = block if res.mamba_cache_mode == "align" else res.max_model_len
            # vLLM EngineCore._initialize_kv_caches (v1/engine/core.py) then sets
            # cache_config.block_size to the smallest block of the (prefix-cacheable)
            # groups: here the Mamba group's alone (oracle case: falcon-mamba-7b, 2048).
            block = mamba_block
        return BlockSizes(block, mamba_block, None, tuple(notes))

    # vLLM ``_align_hybrid_block_size``: kernel_block_alignment_size = max(the first
    # backend's smallest kernel block, the configured block size); MLA raises it to >= 128.
    # Its second rounding, to the lcm of every backend's smallest kernel block
    # (backend_block_alignment), never moves these numbers: for the SM90 backends modelled
    # here that lcm (16, 64 or 128) divides the alignment already.
    # Unset, cache_config.block_size is phase 1's choice: the release's default block when
    # every backend takes it (FLASH_ATTN, FlashMLA and the sparse MLA backends take 64).
    alignment = max(backend_min, requested or max(backend_min, res.default_block_size))
    if res.use_mla:
        alignment = max(alignment, MLA_HYBRID_MIN_ALIGNMENT)
    if res.release.hybrid_alignment_fixed:
        # vLLM 0.19 HybridAttentionMambaModelConfig.verify_and_update_config: a fixed
        # kernel_block_alignment_size, 16 (64 for MLA; 128 under a forced CUTLASS_MLA, not
        # modelled); the configured block size does not enter it.
        alignment = backend_min
    if res.gdn_checkpoint_alignment and res.mamba_cache_mode == "align":
        # vLLM 0.33: align = lcm(align, get_mamba_prefill_checkpoint_alignment(vllm_config)).
        alignment = math.lcm(alignment, res.gdn_checkpoint_alignment)
    if res.mamba_cache_mode == "all" and not res.mamba_chunk_size:
        raise VllmLayoutError("mamba_cache_mode 'all' is not modelled by the vLLM layout")
    attn_page_1 = main.with_block_size(1).page_size_bytes
    mamba_page = max(s.real_page_size_bytes for s in mambas)
    if res.mamba_cache_mode == "all":
        # vLLM to 0.26 ``_align_hybrid_block_size``, "all" mode: chunk = lcm(the Mamba chunk,
        # the alignment); the block is the chunk multiple that holds a state, and the Mamba
        # block is that too (a state every block).
        chunk = math.lcm(res.mamba_chunk_size, alignment)
        attn_block = chunk * ceil_div(ceil_div(mamba_page, attn_page_1), chunk)
        block = max(requested if requested is not None else alignment, attn_block)
        attn_page = block * attn_page_1
        notes.append(f"hybrid alignment ({res.release.short}, mamba_cache_mode all): attention "
                     f"block size {block}, a multiple of the {res.mamba_chunk_size}-token "
                     f"Mamba chunk, so one page ({attn_page} B) holds a {mamba_page} B state")
        return BlockSizes(block, attn_block, attn_page if attn_page > mamba_page else None,
                          tuple(notes))
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

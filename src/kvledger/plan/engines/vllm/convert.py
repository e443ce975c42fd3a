"""Engine-neutral layer facts → the spec vLLM's attention layer would return.

One function per fact kind, each stating which vLLM layer class produces the spec
(``get_kv_cache_spec``). The block size is a placeholder here; ``hybrid`` decides it.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvledger import records
from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.layers import (
    MLA,
    Attention,
    ChunkedAttention,
    CrossAttention,
    FullAttention,
    Indexer,
    Kind,
    LayerCache,
    RecurrentState,
    Role,
    SlidingAttention,
    StateTensor,
)
from kvledger.plan.engines.vllm.hybrid import MINIMAX_M3_KERNEL_BLOCK
from kvledger.plan.engines.vllm.resolve import Resolved, VllmLayoutError
from kvledger.plan.engines.vllm.specs import (
    FP8_DS_MLA_BYTES_PER_TOKEN,
    QUANT_FP8_PER_TENSOR,
    QUANT_NVFP4,
    ChunkedLocalAttentionSpec,
    CircularBufferSpec,
    CrossAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    MultipleOf,
    SlidingWindowSpec,
)
from kvledger.plan.request import (
    DRAFT_MODEL_METHODS,
    MTP_METHODS,
    PARALLEL_DRAFT_METHODS,
    PlanRequest,
)


def layer_takes_part(layer: LayerCache, request: PlanRequest) -> bool:
    """Whether vLLM allocates KV for this layer under these options."""
    if not layer.owns_memory or layer.kind is Kind.NONE:
        return False
    if layer.role is Role.ENCODER:
        # vLLM ``EncoderOnlyAttentionSpec``: encoder self-attention keeps no KV.
        return False
    speculating = request.num_speculative_tokens > 0
    method = (request.speculative_method or "").lower()
    if layer.role is Role.MTP:
        return speculating and method in MTP_METHODS
    if layer.role is Role.DRAFT:
        # DFlash / DSpark drafts' layers join the target's KV groups (parallel_draft.py).
        return speculating and (method in DRAFT_MODEL_METHODS
                                or method in PARALLEL_DRAFT_METHODS)
    return True


def why_not_cached(layer: LayerCache, request: PlanRequest) -> str:
    """Why vLLM allocates nothing for a layer that holds cache of its own ("" when it does,
    and for layers with nothing to allocate): ``layer_takes_part``'s reasons in words."""
    if not layer.owns_memory or layer.kind is Kind.NONE or layer_takes_part(layer, request):
        return ""
    if layer.role is Role.ENCODER:
        return "encoder self-attention keeps no KV"
    if layer.role is Role.MTP:
        return "MTP layer: cached only with an MTP speculative method"
    if layer.role is Role.DRAFT:
        return "draft layer: cached only when speculating with its draft"
    return "not cached"


def _attention_heads(layer: Attention) -> int:
    if layer.k_heads != layer.v_heads:
        raise VllmLayoutError(
            f"layer {layer.index}: K and V head counts differ ({layer.k_heads} vs "
            f"{layer.v_heads}); vLLM's AttentionSpec has one num_kv_heads"
        )
    return layer.k_heads


def _state_dtypes(
    layer: RecurrentState, res: Resolved, tensors: Sequence[StateTensor]
) -> tuple[str, ...]:
    """vLLM ``MambaStateDtypeCalculator``: conv states use mamba_cache_dtype ("auto": the
    model dtype); temporal/SSM states use mamba_ssm_cache_dtype ("auto": the conv dtype);
    KDA keeps its recurrent state in float32 (``kda_state_dtype``); lightning / linear
    attention keeps every state at the conv dtype (``linear_attention_state_dtype``).
    """
    conv = res.model_dtype if res.mamba_cache_dtype == "auto" else res.mamba_cache_dtype
    temporal = conv if res.mamba_ssm_cache_dtype == "auto" else res.mamba_ssm_cache_dtype
    kind = layer.state_kind.lower()
    if "kda" in kind:
        # ``kda_state_dtype``: the recurrent state is float32 unless mamba_ssm_cache_dtype
        # says otherwise, and float16 is refused.
        if res.mamba_ssm_cache_dtype == "float16":
            raise VllmLayoutError("vLLM refuses to start: KDA recurrent state supports only "
                                  "auto, float32, and bfloat16; got float16 "
                                  "(mamba_utils.py kda_state_dtype): drop "
                                  "--mamba-ssm-cache-dtype float16")
        temporal = "float32" if res.mamba_ssm_cache_dtype == "auto" else res.mamba_ssm_cache_dtype
    if "lightning" in kind or "linear" in kind:
        temporal = conv
    return tuple(conv if _is_conv(t) else temporal for t in tensors)


def _is_conv(tensor: object) -> bool:
    role = getattr(tensor, "role", None)
    if isinstance(role, str):
        return role == "conv"
    name = getattr(tensor, "name", "")
    return isinstance(name, str) and "conv" in name.lower()


def _mamba_type(layer: RecurrentState) -> str:
    return layer.state_kind.lower()


def layer_spec(layer: LayerCache, res: Resolved, request: PlanRequest) -> KVCacheSpec:
    """The spec of one (tensor-parallel split) layer, at a placeholder block size of 1."""
    bs = 1
    dtype, quant = res.kv_storage_dtype, res.kv_quant
    if isinstance(layer, CrossAttention):
        return CrossAttentionSpec(
            block_size=bs, num_kv_heads=_attention_heads(layer), head_size=layer.k_dim,
            head_size_v=layer.v_dim, dtype=dtype, quant=quant,
        )
    if isinstance(layer, SlidingAttention):
        return SlidingWindowSpec(
            block_size=bs, num_kv_heads=_attention_heads(layer), head_size=layer.k_dim,
            head_size_v=layer.v_dim, dtype=dtype, quant=quant, sliding_window=layer.window,
            extra_retained_tokens=res.extra_retained_tokens,
        )
    if isinstance(layer, ChunkedAttention):
        return ChunkedLocalAttentionSpec(
            block_size=bs, num_kv_heads=_attention_heads(layer), head_size=layer.k_dim,
            head_size_v=layer.v_dim, dtype=dtype, quant=quant, attention_chunk_size=layer.chunk,
        )
    if isinstance(layer, FullAttention) or type(layer) is Attention:
        assert isinstance(layer, Attention)
        # MiniMax-M3's sparse layers: ``customize_attention_spec`` (v1/worker/utils.py) gives
        # a backend whose kernel sizes are all fixed ints (MINIMAX_M3_SPARSE: [128]) a
        # ``MultipleOf(max size)`` block-stride alignment.
        sparse = layer.index in res.minimax_sparse_layers
        return FullAttentionSpec(
            block_size=bs, num_kv_heads=_attention_heads(layer), head_size=layer.k_dim,
            head_size_v=layer.v_dim, dtype=dtype, quant=quant,
            block_stride_alignment=MultipleOf(MINIMAX_M3_KERNEL_BLOCK) if sparse else None,
        )
    if isinstance(layer, MLA):
        # vLLM ``MLAAttention.get_kv_cache_spec``: one head of kv_lora_rank + rope dims;
        # sparse MLA with an fp8 cache uses the FlashMLA-sparse "fp8_ds_mla" layout.
        if quant == QUANT_NVFP4:
            raise VllmLayoutError(
                "--kv-cache-dtype nvfp4 is not a vLLM cache layout for MLA attention "
                "(vLLM's packed fp4 MLA layout is DeepSeek-V4's only); use fp8 or auto"
            )
        cache_str = res.cache_dtype
        head_size = layer.latent_dim + layer.rope_dim
        alignment: int | MultipleOf | None = None
        if res.sparse_mla is not None:
            # SM10x: the backend ``sparse_mla_backends.choose_sm10x`` found. FLASHMLA_SPARSE
            # packs fp8 as "fp8_ds_mla"; FLASHINFER_MLA_SPARSE keeps the one-byte fp8 rows;
            # each aligns blocks to whole rows of its kernel page (``align_blocks_to_rows``).
            # The row is vLLM's ``state_content_size_bytes``: 656 B packed, else head_size
            # elements of the stored dtype.
            row = resolve_dtype(dtype).nbytes(head_size)
            if res.sparse_mla.ds_mla_layout:
                cache_str, row = "fp8_ds_mla", FP8_DS_MLA_BYTES_PER_TOKEN
            return MLAAttentionSpec(
                block_size=bs, num_kv_heads=1, head_size=head_size, dtype=dtype, quant=quant,
                cache_dtype_str=cache_str,
                block_stride_alignment=res.sparse_mla.alignment_rows * row,
            )
        if res.use_sparse and quant == QUANT_FP8_PER_TENSOR:
            # FLASHMLA_SPARSE (the SM90 sparse backend that takes fp8) canonicalises fp8 to
            # its packed layout (``_canonicalize_sparse_mla_kv_cache_dtype``) and, quantized
            # off SM100, asks for whole 64-token kernel blocks (``customize_spec``).
            cache_str = "fp8_ds_mla"
            alignment = MultipleOf(64)
        elif res.use_sparse:
            # The SM90 sparse backends read the cache as flat rows: blocks must be whole rows
            # apart (``align_blocks_to_rows``: one row of head_size elements).
            alignment = resolve_dtype(dtype).nbytes(head_size)
        return MLAAttentionSpec(
            block_size=bs, num_kv_heads=1, head_size=head_size,
            dtype=dtype, quant=quant, cache_dtype_str=cache_str,
            block_stride_alignment=alignment,
        )
    # Imported here, past the branches dense, windowed and MLA layers take: loading the KDA
    # family (and its recurrent-state classes) costs CLI start-up for models that have none.
    from kvledger.derive.families.kda import IndexerTail, PooledIndexer

    if isinstance(layer, PooledIndexer):
        # GLM-5.3 pooled indexer: one fp8 row (+ scales) per ``pool`` tokens
        # (MLAAttentionSpec.tokens_per_state).
        # ``Glm5NextIndexerBackend`` (v1/attention/backends/mla/indexer.py) takes kernel
        # blocks of pool x (32, 64) tokens (``get_paged_mqa_page_sizes`` off SM120), all fixed
        # sizes, so ``customize_attention_spec`` asks for MultipleOf(pool x 64).
        return MLAAttentionSpec(
            block_size=bs, num_kv_heads=1, head_size=layer.bytes_per_entry(), dtype="uint8",
            tokens_per_state=layer.pool, is_indexer=True,
            block_stride_alignment=MultipleOf(layer.pool * 64),
        )
    if isinstance(layer, IndexerTail):
        # vLLM ``CircularBufferSpec``: the raw rows of the pool still filling, a ring of
        # ``capacity`` positions x ``rows`` heads, K only; its block is the ring.
        return CircularBufferSpec(
            block_size=layer.capacity, num_kv_heads=layer.rows, head_size=layer.head_dim,
            head_size_v=0, dtype=layer.dtype,
        )
    if isinstance(layer, Indexer) and layer.index in res.minimax_sparse_layers:
        # vLLM ``MiniMaxM3IndexerCache.get_kv_cache_spec`` (models/minimax_m3/common/
        # indexer.py): key-only, one head of sparse_index_dim, in indexer_kv_dtype ("bf16"
        # unless --attention-config sets it: ``MiniMaxM3SparseAttention`` resolves it with
        # default "bf16", whatever the model dtype); MINIMAX_M3_SPARSE_INDEXER's fixed [128]
        # kernel blocks give it a MultipleOf(128) stride alignment.
        return MLAAttentionSpec(
            block_size=bs, num_kv_heads=1, head_size=layer.head_dim, dtype="bfloat16",
            is_indexer=True, block_stride_alignment=MultipleOf(MINIMAX_M3_KERNEL_BLOCK),
        )
    if isinstance(layer, Indexer):
        # vLLM ``Indexer`` (DeepSeek-V3.2 DSA) registers an MLAAttentionSpec of uint8 rows:
        # the fp8 key plus its fp32 scales, whatever --kv-cache-dtype says.
        # ``DeepseekV32IndexerBackend`` takes 64-token kernel blocks only → MultipleOf(64).
        return MLAAttentionSpec(
            block_size=bs, num_kv_heads=1, head_size=layer.bytes_per_token(), dtype="uint8",
            is_indexer=True, block_stride_alignment=MultipleOf(64),
        )
    if isinstance(layer, RecurrentState):
        spec_blocks = request.num_speculative_tokens if request.speculative_method else 0
        if spec_blocks and hasattr(layer, "spec_tokens"):
            # vLLM's state-shape calculator widens the conv window by num_spec
            # (MambaStateShapeCalculator: conv rows = conv_kernel - 1 + num_spec).
            layer = records.replace(layer, spec_tokens=spec_blocks)
        tensors = layer.tensors()
        mamba_type = _mamba_type(layer)
        # Prefill-checkpoint blocks (MambaSpec.num_prefill_checkpoint_blocks, charged in align
        # mode only): ``MambaMixer2.get_kv_cache_spec`` sets 1 (from 0.32); GDN sets none; KDA
        # (Kimi-K3 ``KimiDeltaAttention``, GLM-5.3 ``Glm5NextLinearAttention``) sets 1 only
        # with the FlashKDA prefill backend (``kda_prefill_checkpoint_alignment``), which
        # ``_resolve_kda_prefill_backend`` picks on CUDA SM90/10x/12x for bf16, head_dim 128
        # and a bounded gate. The vLLM CPU oracle is not CUDA, takes Triton and charges 2
        # blocks per KDA request; a real H100/H200 would charge 3. kvledger follows the
        # oracle here (the cases check it) and says so in the plan's warnings.
        checkpoint = 0
        if "mamba2" in mamba_type and res.mamba_cache_mode == "align":
            # 1 from vLLM 0.32 (releases/profile.py mamba2_prefill_checkpoint_blocks).
            checkpoint = res.release.mamba2_prefill_checkpoint_blocks
        if mamba_type == "gated_delta_net" and res.mamba_cache_mode == "align":
            checkpoint = res.gdn_prefill_checkpoint_blocks  # vLLM 0.33 (releases/v0_33.py)
        return MambaSpec(
            block_size=bs,
            shapes=tuple(tuple(t.shape) for t in tensors),
            dtypes=_state_dtypes(layer, res, tensors),
            mamba_type=mamba_type,
            mamba_cache_mode=res.mamba_cache_mode,
            num_speculative_blocks=spec_blocks,
            num_prefill_checkpoint_blocks=checkpoint,
        )
    raise VllmLayoutError(
        f"layer {layer.index}: the vLLM layout does not model {type(layer).__name__} "
        f"({layer.kind}) caches: no vLLM oracle checks vLLM's layout for them, and kvledger "
        "says so rather than guess; use --engine native"
    )

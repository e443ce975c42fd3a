"""DeepSeek-V4 (``deepseek_v4``: V4-Flash, V4-Pro) in the vLLM layout: the caches vLLM's CUDA
model registers, from the facts ``derive/families/deepseek_v4.py`` states.

Read in vLLM 0.33's source (0.32's is the same for everything below: the two differ only in
how the model reads the ratios, ``config.compress_ratios[i]`` in 0.32 against transformers'
``layer_types`` / ``compress_rates`` in 0.33, which give the same ratios; 0.32 has no oracle
case for V4, its CPU build had no V4 model). Per backbone layer ``i`` with ratio
``r = max(1, compress_ratio)`` (``models/deepseek_v4/attention.py DeepseekV4Attention.__init__``),
registered in this order (the order of ``static_forward_context``, which decides buckets):

1. ``r == 4``: ``attn.indexer.k_cache`` (``DeepseekV4IndexerCache.get_kv_cache_spec``):
   ``MLAAttentionSpec`` of uint8 rows of ``index_head_dim + index_head_dim / 128 * 4`` bytes
   (132: fp8 key + fp32 scales; ``DeepseekV4Indexer.__init__``), one per 4 tokens
   (``tokens_per_state``), block ``cache_config.block_size``, page aligned to 576 B under
   fp8_ds_mla; then ``attn.indexer.compressor.state_cache``;
2. ``attn.swa_cache`` (``v1/attention/backends/mla/sparse_swa.py DeepseekV4SWACache``):
   ``SlidingWindowMLASpec``, window ``sliding_window``, block 64, 584 B a token
   (``packed_bytes_per_token``: 448 fp8 nope + 8 scale bytes + 128 B bf16 rope), page aligned
   to 576 B (``packed_page_alignment``);
3. ``r > 1``: ``attn`` (``DeepseekV4Attention.get_kv_cache_spec``): ``MLAAttentionSpec``, 584 B
   per ``r`` tokens, block ``cache_config.block_size``, aligned to 576 B;
4. ``r > 1``: ``attn.compressor.state_cache`` (``models/deepseek_v4/compressor.py
   CompressorStateCache``): ``SlidingWindowMLASpec`` of float32 rows of ``state_dim`` =
   2 x coff x head_dim (kv and score states side by side; coff = 2 for the overlapping
   ratio-4 compressor), window coff x r, block 4 (r = 4) or 8 (r = 128), aligned to 576 B.

``cache_config.block_size`` is 256: the V4 sparse-MLA and indexer backends take only 256-token
kernel blocks (``DeepseekV4SparseMLABackend`` / ``DeepseekV4IndexerBackend
.get_supported_kernel_block_sizes``), so ``Platform.update_block_size_for_backend`` prefers it.
Those fixed sizes give the two specs a ``MultipleOf(256)`` block-stride alignment
(``v1/worker/utils.py customize_attention_spec``), which at block 256 is no constraint.
Page sizes: ``AttentionSpec.page_size_bytes`` = heads x (block / tokens_per_state) x bytes a
state, padded up to the alignment (``kv_cache_interface.py _apply_alignment_padding``).

MTP speculation (``--speculative-method mtp``; ``config/speculative.py`` turns a V4 draft
config into ``DeepSeekV4MTPModel``, ``models/deepseek_v4/nvidia/mtp.py DeepSeekV4MTP``): one
``DeepSeekV4MultiTokenPredictorLayer`` per ``num_nextn_predict_layers``, prefixed
``model.layers.<num_hidden_layers + k>``, each a full ``DeepseekV4DecoderLayer`` whose attention
reads its index past ``num_hidden_layers`` and so takes ratio 1 ("MTP layer is not included in
the compress ratio list", ``DeepseekV4Attention.__init__``): no indexer, no compressor, and
``get_kv_cache_spec`` None — the layer registers its ``attn.swa_cache`` only, the same
``SlidingWindowMLASpec`` as the backbone's, so it joins their bucket (the runner marks it
``is_draft``, a field outside spec equality: ``kv_cache_interface.py KVCacheSpec``). vLLM's
``get_kv_cache_configs`` then writes ``extra_retained_tokens`` = num_prefill_lookahead_tokens
- 1 on every ``SlidingWindowSpec`` (window caches and compressor states alike): 0 unless more
than one MTP module drafts (``VllmConfig.num_prefill_lookahead_tokens``), which no published V4
config has (both state ``num_nextn_predict_layers`` 1). The CPU oracle cannot answer: its V4
MTP class is a stub that raises (``models/deepseek_v4/cpu/mtp.py``; asked with
``--num-speculative-tokens 1 --speculative-method mtp``, the 0.33 tool stops there with
NotImplementedError), so the MTP plans rest on this reading and hand arithmetic.

Pipeline parallelism takes vLLM's generic path: ``DeepseekV4Model`` builds its layers with
``make_layers`` (other stages' layers are ``PPMissingLayer``s, registering nothing) and
``DeepseekV4ForCausalLM`` is ``SupportsPP``; the MTP drafter runs on the last rank.
``get_kv_cache_configs`` groups the specs of every worker together (the packed groups above,
for the whole model), projects the groups onto each worker
(``_project_kv_cache_groups_to_worker``), sizes each worker's blocks from its projected groups
and keeps the smallest block count — the layout's PP path (``layout.py _project_all``). No
oracle case checks it (the tool has no PP option): hand arithmetic only.

The indexer backend declares block-outermost layouts only (``DeepseekV4IndexerBackend
.supported_kv_cache_layouts``: BLHNC, BLNHC), so vLLM packs the mixed pages side by side in
each block (``kv_cache_planning.py _get_packed_kv_cache_groups``, ``grouping.packed_groups``),
and reports the smallest block size of its groups (``v1/engine/core.py``: min over the
prefix-cacheable groups, 4 here).

The 0.33 oracle (``tests/oracles/vllm-0.33/vllm-0.33-dsv4.jsonl``) runs on a CPU and so builds
vLLM's CPU variant (``models/deepseek_v4/cpu``); for the caches it is the CUDA class's twin:
``DeepseekV4CPUAttention`` keeps the base ``__init__`` and ``get_kv_cache_spec`` (fp8_ds_mla
layout, default SWA cache), and its backends (``cpu/cpu_mla.py``) subclass the CUDA ones with
their block sizes and layouts unchanged, only their metadata builders and kernels differ.

KV dtype (``_resolve_dsv4_kv_cache_dtype``): the default FlashMLA class (every CUDA GPU but
SM12x, ``nvidia/model.py _select_dsv4_attn_cls``) has the fp8_ds_mla layout; ``auto`` and every
``fp8*`` value become ``fp8_ds_mla``, anything else raises.
"""

from __future__ import annotations

from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.families.deepseek_v4 import (
    CompressorState,
    V4CompressedIndexer,
    V4CompressedKV,
    V4WindowKV,
    row_bytes,
)
from kvledger.derive.layers import LayerCache, ModelFacts
from kvledger.plan.engines.vllm.resolve import Resolved, VllmLayoutError
from kvledger.plan.engines.vllm.specs import (
    QUANT_FP8_PER_TENSOR,
    KVCacheSpec,
    MLAAttentionSpec,
    MultipleOf,
    SlidingWindowSpec,
)
from kvledger.plan.engines.vllm.startup import VllmStartupError
from kvledger.plan.request import MTP_METHODS, PlanRequest
from kvledger.records import record, replace

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import ClassVar

    from kvledger.plan.engines.vllm.releases.profile import VllmRelease

CACHE_DTYPE = "fp8_ds_mla"
# DeepseekV4SparseMLABackend / DeepseekV4IndexerBackend.get_supported_kernel_block_sizes.
SPARSE_BLOCK = 256
SWA_BLOCK = 64  # DeepseekV4SWACache(block_size=64)
PACKED_BYTES = 584  # packed_bytes_per_token / state_content_bytes=584
ALIGNMENT = 576  # packed_page_alignment / alignment=576 under fp8_ds_mla
STATE_BLOCK = {4: 4, 128: 8}  # CompressorStateCache.__init__
# --kv-cache-dtype values that become fp8_ds_mla (``kv_cache_dtype.startswith("fp8")``).
_FP8 = ("auto", "fp8", "fp8_e4m3", "fp8_ds_mla")


def _padded(real: int, alignment: int | None) -> int:
    # vLLM ``_apply_alignment_padding``: round_up(real page, alignment).
    if not alignment:
        return real
    return -(-real // alignment) * alignment


@record(frozen=True, kw_only=True)
class DeepseekV4MLASpec(MLAAttentionSpec):
    """vLLM ``MLAAttentionSpec`` as V4 fills it: packed states of ``state_content_bytes``
    (None: ``head_size`` elements of ``dtype``), one per ``tokens_per_state`` tokens, the page
    padded to ``alignment``. The indexer's spec carries the block-outermost layout."""

    state_content_bytes: int | None = None
    alignment: int | None = None

    @property
    def real_page_size_bytes(self) -> int:
        # AttentionSpec.unpadded_page_size_bytes: heads x states x bytes a state.
        content = self.state_content_bytes or resolve_dtype(self.dtype).nbytes(self.head_size)
        return self.num_kv_heads * (self.block_size // self.tokens_per_state) * content

    def page_bytes(self) -> int:
        return _padded(self.real_page_size_bytes, self.alignment)

    def needs_block_outermost(self) -> bool:
        return self.is_indexer


@record(frozen=True, kw_only=True)
class SlidingWindowMLASpec(SlidingWindowSpec):
    """vLLM ``SlidingWindowMLASpec``: a sliding window of single latent rows (no V)."""

    kind: ClassVar[str] = "SlidingWindowMLASpec"
    head_size_v: int = 0
    cache_dtype_str: str | None = None
    state_content_bytes: int | None = None
    alignment: int | None = None

    @property
    def real_page_size_bytes(self) -> int:
        content = self.state_content_bytes or resolve_dtype(self.dtype).nbytes(self.head_size)
        return self.num_kv_heads * self.block_size * content

    def page_bytes(self) -> int:
        return _padded(self.real_page_size_bytes, self.alignment)

    def uniform_type_key(self) -> tuple[object, ...] | None:
        # SlidingWindowMLASpec.is_uniform_with_collection: same window (and replay policy,
        # always off for V4).
        return ("sliding_mla", self.sliding_window)


def check_request(facts: ModelFacts, request: PlanRequest, cap: tuple[int, int] | None,
                  release: VllmRelease) -> None:
    """What kvledger does not reproduce for V4, refused by name (before any spec is built)."""
    why = ""
    if cap is None:
        why = ("a non-CUDA GPU: vLLM's ROCm / XPU V4 models (models/deepseek_v4/amd, xpu) "
               "were not read")
    elif cap[0] == 12:
        why = ("an SM12x GPU: vLLM picks DeepseekV4FlashInferSM120Attention (nvidia/model.py "
               "_select_dsv4_attn_cls), whose backends' block sizes were not checked")
    elif request.num_speculative_tokens and request.speculative_method not in MTP_METHODS:
        why = (f"--speculative-method {request.speculative_method}: only V4's own MTP "
               "drafter (models/deepseek_v4/nvidia/mtp.py) was read; DSpark and separate "
               "draft models were not")
    elif request.block_size not in (None, SPARSE_BLOCK):
        # The 0.33 oracle at --block-size 16: a ratio-128 page holds 16 // 128 = 0 states and
        # vLLM stops with a ZeroDivisionError while it plans; other sizes were not asked.
        why = (f"--block-size {request.block_size}: V4's sparse-MLA and indexer backends take "
               f"only {SPARSE_BLOCK}-token blocks (get_supported_kernel_block_sizes)")
    elif request.kv_cache_dtype == "nvfp4_ds_mla" or request.kv_cache_dtype.startswith("fp8_e5"):
        why = f"--kv-cache-dtype {request.kv_cache_dtype}: not checked by an oracle case"
    if why:
        raise VllmLayoutError(
            f"{facts.model}: kvledger does not reproduce {release.short}'s DeepSeek-V4 caches "
            f"with {why}; use --engine native")
    if request.kv_cache_dtype not in _FP8:
        # _resolve_dsv4_kv_cache_dtype, on the default (fp8_ds_mla layout) attention class.
        raise VllmStartupError(
            f"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got "
            f"{request.kv_cache_dtype}", "models/deepseek_v4/attention.py "
            "_resolve_dsv4_kv_cache_dtype", "use --kv-cache-dtype auto or fp8", release=release)


def resolved(res: Resolved) -> Resolved:
    """The cache dtype vLLM writes back onto ``cache_config`` (fp8_ds_mla, uint8 pages)."""
    return replace(
        res, cache_dtype=CACHE_DTYPE, kv_storage_dtype="uint8", kv_quant=QUANT_FP8_PER_TENSOR,
        kv_cache_dtype="fp8_e4m3", cache_dtype_source="model",
        cache_dtype_reason="DeepSeek-V4's FlashMLA attention stores fp8_ds_mla rows "
        "(models/deepseek_v4/attention.py _resolve_dsv4_kv_cache_dtype)")


# Said with every V4 plan.
NOTES = (
    "DeepSeek-V4 as vLLM's CUDA model registers it (plan/engines/vllm/dsv4.py): fp8_ds_mla "
    "rows of 584 B in 576-B-aligned pages, the compressor states in float32; the layer "
    "table keeps derive's dtype for the compressed rows, the KV cache groups show what "
    "vLLM stores",
    "every tensor-parallel rank holds all of V4's caches (one KV head, max_tp_shards 1)",
)


def _packed_row(layer: V4WindowKV | V4CompressedKV) -> int:
    # The config's fp8_ds_mla row (derive's row_bytes) must be vLLM's constant 584.
    found = row_bytes("fp8_e4m3", layer.head_dim, layer.rope_dim)
    if found != PACKED_BYTES:
        raise VllmLayoutError(
            f"layer {layer.index}: head_dim {layer.head_dim} / rope {layer.rope_dim} make a "
            f"{found} B fp8_ds_mla row; vLLM hardcodes {PACKED_BYTES} B for DeepSeek-V4")
    return found


def _state_shape(layer: CompressorState) -> tuple[int, int]:
    """(window, state_dim) of a compressor: kv and score states side by side, each
    (coff x ratio, coff x head_dim) (``DeepseekCompressor``)."""
    kv, score = layer.tensors()
    return kv.shape[0], kv.shape[1] + score.shape[1]


def layer_spec(layer: LayerCache, extra_retained_tokens: int = 0) -> KVCacheSpec:
    """The spec vLLM's V4 layer registers for one derived cache (module docstring).

    ``extra_retained_tokens`` (``Resolved.extra_retained_tokens``) is what vLLM's
    ``get_kv_cache_configs`` writes onto every ``SlidingWindowSpec`` — the window caches and
    both compressor states are ``SlidingWindowMLASpec``s, a subclass — before it groups."""
    if isinstance(layer, V4WindowKV):
        return SlidingWindowMLASpec(
            block_size=SWA_BLOCK, num_kv_heads=1, head_size=layer.head_dim, dtype="uint8",
            quant=QUANT_FP8_PER_TENSOR, sliding_window=layer.window,
            cache_dtype_str=CACHE_DTYPE, state_content_bytes=_packed_row(layer),
            alignment=ALIGNMENT, extra_retained_tokens=extra_retained_tokens)
    if isinstance(layer, V4CompressedKV):
        return DeepseekV4MLASpec(
            block_size=SPARSE_BLOCK, num_kv_heads=1, head_size=layer.head_dim, dtype="uint8",
            quant=QUANT_FP8_PER_TENSOR, cache_dtype_str=CACHE_DTYPE,
            tokens_per_state=layer.ratio, state_content_bytes=_packed_row(layer),
            alignment=ALIGNMENT, block_stride_alignment=MultipleOf(SPARSE_BLOCK))
    if isinstance(layer, V4CompressedIndexer):
        return DeepseekV4MLASpec(
            block_size=SPARSE_BLOCK, num_kv_heads=1, head_size=layer.entry_bytes(),
            dtype="uint8", tokens_per_state=layer.ratio, is_indexer=True,
            alignment=ALIGNMENT, block_stride_alignment=MultipleOf(SPARSE_BLOCK))
    if isinstance(layer, CompressorState):
        if layer.ratio not in STATE_BLOCK:
            raise VllmLayoutError(f"layer {layer.index}: vLLM has no compressor for ratio "
                                  f"{layer.ratio}")
        window, state_dim = _state_shape(layer)
        return SlidingWindowMLASpec(
            block_size=STATE_BLOCK[layer.ratio], num_kv_heads=1, head_size=state_dim,
            dtype=layer.dtype, sliding_window=window, alignment=ALIGNMENT,
            extra_retained_tokens=extra_retained_tokens)
    raise VllmLayoutError(f"layer {layer.index}: {type(layer).__name__} is not a DeepSeek-V4 "
                          "cache vLLM registers")


def registration_rank(layer: LayerCache, facts: ModelFacts) -> int:
    """Where a layer's cache comes among its layer's caches in vLLM's registration (module
    docstring: indexer keys, indexer compressor, window, compressed KV, attention compressor).
    The two compressors are told apart by head_dim: the indexer's is ``index_head_dim``."""
    if isinstance(layer, V4CompressedIndexer):
        return 0
    if isinstance(layer, V4WindowKV):
        return 2
    if isinstance(layer, V4CompressedKV):
        return 3
    if isinstance(layer, CompressorState):
        index_dims = {g.layer.head_dim for g in facts.groups
                      if isinstance(g.layer, V4CompressedIndexer)}
        attention_dims = {g.layer.head_dim for g in facts.groups
                          if isinstance(g.layer, V4WindowKV)}
        if index_dims & attention_dims:
            raise VllmLayoutError(f"{facts.model}: index_head_dim equals head_dim; kvledger "
                                  "cannot tell the two compressors' registration order apart")
        return 1 if layer.head_dim in index_dims else 4
    raise VllmLayoutError(f"{facts.model}: {type(layer).__name__} is not a DeepSeek-V4 cache")


def check_layout(specs: list[KVCacheSpec]) -> None:
    """Without a ratio-4 layer no spec asks for the block-outermost layout, and vLLM's
    ``validate_kv_cache_layout`` would meet mixed pages in a layer-outermost one: refused."""
    if not any(isinstance(s, DeepseekV4MLASpec) and s.is_indexer for s in specs):
        raise VllmLayoutError(
            "a DeepSeek-V4 config without ratio-4 (indexer) layers: vLLM's KV cache layout "
            "for it was not read; use --engine native")


def cache_name(layer: LayerCache, facts: ModelFacts) -> str:
    """vLLM's name for this cache under ``model.layers.<i>.`` (module docstring)."""
    if isinstance(layer, V4WindowKV):
        return "attn.swa_cache"
    if isinstance(layer, V4CompressedKV):
        return f"attn [C{layer.ratio}]"
    if isinstance(layer, V4CompressedIndexer):
        return "attn.indexer.k_cache"
    if isinstance(layer, CompressorState):
        rank = registration_rank(layer, facts)
        return "attn.indexer.compressor.state_cache" if rank == 1 else \
            "attn.compressor.state_cache"
    return type(layer).__name__


def group_caches(members: list[tuple[int, str]]) -> str:
    """One group's caches in vLLM's names, each with its count and first-last layer:
    ``attn.indexer.k_cache ×21 (layers 2-42), attn ×41 (layers 2-42)``."""
    by_name: dict[str, list[int]] = {}
    for index, name in members:
        by_name.setdefault(name, []).append(index)
    return ", ".join(f"{name} ×{len(ix)} (layers {min(ix)}-{max(ix)})"
                     for name, ix in by_name.items())

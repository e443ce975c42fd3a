"""vLLM's KV cache spec kinds, each owning its page size and per-request worst case.

Mirrors ``vllm/v1/kv_cache_interface.py`` (vLLM 0.32): one spec per layer, a *page* is one
block of ``block_size`` tokens of one layer, and ``max_memory_usage_bytes`` is what one
request at ``max_model_len`` can hold of that layer. Every formula below cites the vLLM
class it reproduces; the numbers are checked against ``../shared/oracles/vllm-0.32``.

Why our own classes instead of a table of formulas: vLLM groups layers by *spec equality*
and by *spec type* (``UniformTypeKVCacheSpecs``), so the planner needs values that compare
the way vLLM's do. Frozen dataclasses give exactly that equality.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.layers import ceil_div
from kvledger.records import fields, record, replace

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any, ClassVar, Self

# KV quantization modes (vLLM ``KVQuantMode``).
QUANT_NONE = "none"
QUANT_FP8_PER_TENSOR = "fp8_per_tensor"
QUANT_FP8_PER_TOKEN_HEAD = "fp8_per_token_head"
QUANT_INT8_PER_TOKEN_HEAD = "int8_per_token_head"
QUANT_NVFP4 = "nvfp4"
PER_TOKEN_HEAD = (QUANT_FP8_PER_TOKEN_HEAD, QUANT_INT8_PER_TOKEN_HEAD)

# vLLM ``MLAAttentionSpec.real_page_size_bytes``: the FlashMLA-sparse fp8 layout stores
# 656 bytes per token (512 fp8 latent + 4 fp32 scales + 64 bf16 rope).
FP8_DS_MLA_BYTES_PER_TOKEN = 656


class MultipleOf:
    """vLLM ``MultipleOf`` (v1/attention/backend.py): whole kernel blocks of ``base`` tokens.

    Compares and hashes by value (specs holding it are compared and bucketed by equality).
    """

    __slots__ = ("base",)

    def __init__(self, base: int) -> None:
        self.base = base

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MultipleOf) and other.base == self.base

    def __hash__(self) -> int:
        return hash(("MultipleOf", self.base))

    def __repr__(self) -> str:
        return f"MultipleOf({self.base})"


@record(frozen=True)
class SpecContext:
    """The engine settings a spec's per-request worst case depends on."""

    max_model_len: int
    # vLLM ``VllmConfig.max_in_flight_tokens``: scheduled-but-unsettled tokens that
    # recycling specs (sliding window, chunked local) keep blocks for.
    max_in_flight_tokens: int
    # vLLM ``SchedulerConfig.max_num_encoder_input_tokens`` (cross-attention worst case).
    max_num_encoder_input_tokens: int
    mamba_cache_mode: str  # "none" | "align" | "all"
    # How the release counts one request's blocks and the logged tokens (VllmRelease
    # .request_blocks / .logged_tokens; engines/vllm/blocks.py).
    request_blocks: str = "per_group"
    logged_tokens: str = "concurrency"
    # ParallelConfig.decode_context_parallel_size: the ranks a DCP-sharded spec's tokens are
    # spread over (engines/vllm/dcp.py); 1: none.
    dcp: int = 1


@record(frozen=True, kw_only=True)
class KVCacheSpec:
    """vLLM ``KVCacheSpec``: one layer's cache format."""

    kind: ClassVar[str] = "KVCacheSpec"
    block_size: int
    # vLLM ``KVCacheSpec.block_stride_alignment``: bytes (or whole kernel blocks) the stride
    # between physical blocks must be a multiple of; set by the attention backend
    # (``customize_attention_spec`` in v1/worker/utils.py). It only moves the block size in
    # block-outermost layouts (``_get_kv_cache_bytes_per_block``).
    block_stride_alignment: int | MultipleOf | None = None

    def block_stride_alignment_bytes(self) -> int:
        """vLLM ``KVCacheSpec.get_block_stride_alignment``."""
        alignment = self.block_stride_alignment
        if not isinstance(alignment, MultipleOf):
            return alignment or 1
        kernel = math.gcd(alignment.base, self.block_size)
        if kernel == self.block_size:
            return 1
        return self.with_block_size(kernel).page_size_bytes

    @property
    def page_size_bytes(self) -> int:
        """Bytes of one page: computed once per spec object (a frozen value), because block
        sizes, grouping and block counts each ask for it. Kinds define ``page_bytes``."""
        found: int | None = self.__dict__.get("_page_size_bytes")
        if found is None:
            # A memo beside the fields (equality, hashing and ``replace`` see fields only).
            found = self.__dict__["_page_size_bytes"] = self.page_bytes()
        return found

    def page_bytes(self) -> int:
        raise NotImplementedError

    @property
    def real_page_size_bytes(self) -> int:
        return self.page_size_bytes

    def max_memory_usage_bytes(self, ctx: SpecContext) -> int:
        raise NotImplementedError

    def blocks_per_request(self, ctx: SpecContext) -> int:
        """Pages one request at ``max_model_len`` takes from the shared block pool.

        vLLM ``get_max_concurrency_for_kv_cache_config``: cdiv(max memory, page size).
        """
        return ceil_div(self.max_memory_usage_bytes(ctx), self.page_size_bytes)

    def uniform_type_key(self) -> tuple[Any, ...] | None:
        """Layers whose keys are equal may share one group despite different page sizes.

        vLLM ``UniformTypeKVCacheSpecs.is_uniform_type``: all full attention (MLA
        included), or all sliding window with one window, or all chunked local with one
        chunk, ... ``None``: never merged that way.
        """
        return None

    def needs_block_outermost(self) -> bool:
        """Whether this layer's attention backend declares block-outermost KV cache layouts
        only (vLLM ``AttentionBackend.supported_kv_cache_layouts``), see
        ``grouping.block_outermost``."""
        return False

    def with_block_size(self, block_size: int) -> Self:
        return replace(self, block_size=block_size)

    def with_page_size_padded(self, padded: int) -> Self:
        raise NotImplementedError(f"{self.kind} pages cannot be padded")

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"spec": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            # As vLLM prints it (the oracle's layer_specs): "MultipleOf(64)".
            out[f.name] = f"MultipleOf({value.base})" if isinstance(value, MultipleOf) else value
        out["page_size_bytes"] = self.page_size_bytes
        out["real_page_size_bytes"] = self.real_page_size_bytes
        return out


@record(frozen=True, kw_only=True)
class AttentionSpec(KVCacheSpec):
    """vLLM ``AttentionSpec``: K and V rows of ``head_size`` / ``head_size_v`` per head."""

    kind: ClassVar[str] = "AttentionSpec"
    num_kv_heads: int
    head_size: int
    head_size_v: int
    dtype: str  # storage element type (registry name); fp8 caches store uint8
    quant: str = QUANT_NONE
    page_size_padded: int | None = None

    def _row_bytes(self, width: int) -> int:
        # Exact bytes for one head's row; nvfp4 packs 2 values/byte plus one fp8 scale
        # per 16 values (vLLM ``nvfp4_kv_cache_full_dim``).
        return resolve_dtype(self.dtype).nbytes(width)

    @property
    def real_page_size_bytes(self) -> int:
        # vLLM ``FullAttentionSpec.real_page_size_bytes``:
        # block_size * num_kv_heads * (head_size + head_size_v) * dtype size.
        return self.block_size * self.num_kv_heads * (
            self._row_bytes(self.head_size) + self._row_bytes(self.head_size_v)
        )

    def page_bytes(self) -> int:
        # vLLM ``AttentionSpec.page_size_bytes``: per-token-head quantization carves its
        # fp32 K and V scales out of the same allocation: + 2 * block * heads * 4.
        page = self.real_page_size_bytes
        if self.quant in PER_TOKEN_HEAD:
            page += 2 * self.block_size * self.num_kv_heads * 4
        if self.page_size_padded is not None:
            if self.page_size_padded < page:
                raise ValueError(f"padded page {self.page_size_padded} < real page {page}")
            return self.page_size_padded
        return page

    def with_page_size_padded(self, padded: int) -> Self:
        return replace(self, page_size_padded=padded)


@record(frozen=True, kw_only=True)
class FullAttentionSpec(AttentionSpec):
    """vLLM ``FullAttentionSpec``: every position of a request up to ``max_model_len``."""

    kind: ClassVar[str] = "FullAttentionSpec"

    def max_memory_usage_bytes(self, ctx: SpecContext) -> int:
        # vLLM ``FullAttentionSpec.max_memory_usage_bytes``: cdiv(max_model_len, block) pages;
        # an attention spec is DCP-sharded (``AttentionSpec.dcp_sharded = True``), so under
        # DCP a rank holds cdiv(max_model_len, dcp) of a request's tokens.
        tokens = ceil_div(ctx.max_model_len, ctx.dcp) if ctx.dcp > 1 else ctx.max_model_len
        return ceil_div(tokens, self.block_size) * self.page_size_bytes

    def uniform_type_key(self) -> tuple[Any, ...] | None:
        return ("full",)


@record(frozen=True, kw_only=True)
class MLAAttentionSpec(FullAttentionSpec):
    """vLLM ``MLAAttentionSpec``: one latent row per token, no separate V.

    Also used by vLLM for sparse-attention indexer keys (head_size = fp8 key + scales,
    dtype uint8). ``tokens_per_state`` > 1 stores one row per that many tokens.
    """

    kind: ClassVar[str] = "MLAAttentionSpec"
    head_size_v: int = 0
    cache_dtype_str: str = "auto"
    tokens_per_state: int = 1
    is_indexer: bool = False  # a sparse-attention indexer's keys, not the model's attention

    @property
    def real_page_size_bytes(self) -> int:
        rows = self.block_size // self.tokens_per_state
        if self.cache_dtype_str == "fp8_ds_mla":
            # vLLM ``MLAAttentionSpec.real_page_size_bytes`` (flashmla_sparse layout).
            return rows * FP8_DS_MLA_BYTES_PER_TOKEN
        return rows * self.num_kv_heads * self._row_bytes(self.head_size)


@record(frozen=True, kw_only=True)
class SlidingWindowSpec(AttentionSpec):
    """vLLM ``SlidingWindowSpec``: the last ``sliding_window`` positions (plus in-flight ones)."""

    kind: ClassVar[str] = "SlidingWindowSpec"
    sliding_window: int
    # Tokens below the window kept for multi-module MTP re-prefill (``get_kv_cache_configs``
    # sets num_prefill_lookahead_tokens - 1 on every SlidingWindowSpec).
    extra_retained_tokens: int = 0

    def max_memory_usage_bytes(self, ctx: SpecContext) -> int:
        # vLLM ``SlidingWindowSpec.max_admission_blocks_per_request``: tokens =
        # min(window - 1 + extra_retained_tokens + max_in_flight_tokens, max_model_len);
        # cdiv(tokens, block) + 1 (the window need not start on a block boundary).
        tokens = min(self.sliding_window - 1 + self.extra_retained_tokens
                     + ctx.max_in_flight_tokens, ctx.max_model_len)
        return (ceil_div(tokens, self.block_size) + 1) * self.page_size_bytes

    def uniform_type_key(self) -> tuple[Any, ...] | None:
        return ("sliding", self.sliding_window)


@record(frozen=True, kw_only=True)
class ChunkedLocalAttentionSpec(AttentionSpec):
    """vLLM ``ChunkedLocalAttentionSpec``: the current chunk (plus in-flight positions)."""

    kind: ClassVar[str] = "ChunkedLocalAttentionSpec"
    attention_chunk_size: int

    def max_memory_usage_bytes(self, ctx: SpecContext) -> int:
        # vLLM ``ChunkedLocalAttentionSpec``: min(chunk + max_in_flight_tokens,
        # max_model_len) tokens, no extra block.
        tokens = min(self.attention_chunk_size + ctx.max_in_flight_tokens, ctx.max_model_len)
        return ceil_div(tokens, self.block_size) * self.page_size_bytes

    def uniform_type_key(self) -> tuple[Any, ...] | None:
        return ("chunked", self.attention_chunk_size)


@record(frozen=True, kw_only=True)
class CrossAttentionSpec(AttentionSpec):
    """vLLM ``CrossAttentionSpec``: K/V over the encoder's input tokens."""

    kind: ClassVar[str] = "CrossAttentionSpec"

    def max_memory_usage_bytes(self, ctx: SpecContext) -> int:
        # vLLM ``CrossAttentionSpec``: cdiv(max_num_encoder_input_tokens, block) pages.
        return ceil_div(ctx.max_num_encoder_input_tokens, self.block_size) * self.page_size_bytes

    def uniform_type_key(self) -> tuple[Any, ...] | None:
        return ("cross",)


@record(frozen=True, kw_only=True)
class MambaSpec(KVCacheSpec):
    """vLLM ``MambaSpec``: one page holds a whole recurrent state (all its tensors)."""

    kind: ClassVar[str] = "MambaSpec"
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    mamba_type: str
    mamba_cache_mode: str = "none"
    page_size_padded: int | None = None
    num_speculative_blocks: int = 0
    # Extra align-mode block the Mamba2 mixer keeps for its prefill checkpoint.
    num_prefill_checkpoint_blocks: int = 0

    @property
    def real_page_size_bytes(self) -> int:
        # vLLM ``MambaSpec.page_size_bytes``: sum(prod(shape) * dtype size).
        total = 0
        for shape, dtype in zip(self.shapes, self.dtypes, strict=True):
            numel = 1
            for d in shape:
                numel *= d
            total += resolve_dtype(dtype).nbytes(numel)
        return total

    def page_bytes(self) -> int:
        real = self.real_page_size_bytes
        if self.page_size_padded is not None:
            if self.page_size_padded < real:
                raise ValueError(f"padded page {self.page_size_padded} < state {real}")
            return self.page_size_padded
        return real

    def max_memory_usage_bytes(self, ctx: SpecContext) -> int:
        # vLLM ``MambaSpec.max_memory_usage_bytes``: "all" keeps a state per block of the
        # sequence; "align" keeps the running state plus the last block-aligned one (+ spec
        # decode slots, + a prefill checkpoint); "none" keeps one (+ spec decode slots).
        if ctx.mamba_cache_mode == "all":
            return ceil_div(ctx.max_model_len, self.block_size) * self.page_size_bytes
        if ctx.mamba_cache_mode == "align":
            extra = self.num_speculative_blocks + self.num_prefill_checkpoint_blocks
            return self.page_size_bytes * (2 + extra)
        return self.page_size_bytes * (1 + self.num_speculative_blocks)

    def uniform_type_key(self) -> tuple[Any, ...] | None:
        # vLLM ``MambaSpec.is_uniform_with_collection``: same speculative and checkpoint
        # blocks, same page size.
        return ("mamba", self.num_speculative_blocks, self.num_prefill_checkpoint_blocks,
                self.page_size_bytes)

    def with_page_size_padded(self, padded: int) -> Self:
        return replace(self, page_size_padded=padded)


@record(frozen=True, kw_only=True)
class CircularBufferSpec(AttentionSpec):
    """vLLM ``CircularBufferSpec``: a fixed ring of ``block_size`` positions per request."""

    kind: ClassVar[str] = "CircularBufferSpec"

    def max_memory_usage_bytes(self, ctx: SpecContext) -> int:
        return self.page_size_bytes

    def needs_block_outermost(self) -> bool:
        # KpoolTailBackend.supported_kv_cache_layouts: BLHNC only.
        return True

    def uniform_type_key(self) -> tuple[Any, ...] | None:
        # vLLM ``CircularBufferSpec.is_uniform_with_collection``: every ring alike.
        return ("ring",)


@record(frozen=True)
class UniformTypeSpecs:
    """vLLM ``UniformTypeKVCacheSpecs``: one group whose layers need the same number of
    pages per request but have different page sizes (MLA + sparse indexer).
    """

    block_size: int
    specs: tuple[KVCacheSpec, ...]  # one per layer, in group order

    @property
    def page_size_bytes(self) -> int:
        # vLLM: the group's page is the sum of its layers' pages.
        return sum(s.page_size_bytes * n for s, n in counted(self.specs))

    def blocks_per_request(self, ctx: SpecContext) -> int:
        # vLLM ``UniformTypeKVCacheSpecs.max_memory_usage_pages``: every layer needs the
        # same number of its own pages; the group needs that many blocks.
        counts = {s.blocks_per_request(ctx) for s, _ in counted(self.specs)}
        return max(counts)


def counted(specs: Iterable[KVCacheSpec]) -> list[tuple[KVCacheSpec, int]]:
    """The distinct spec objects of ``specs`` with how often each occurs, in order.

    Layers with equal facts share one spec object (the layout builds one per layer group), so
    a page size is computed once per object, not once per layer."""
    found: dict[int, list[Any]] = {}
    for spec in specs:
        entry = found.get(id(spec))
        if entry is None:
            found[id(spec)] = [spec, 1]
        else:
            entry[1] += 1
    return [(spec, n) for spec, n in found.values()]


def spec_name(spec: KVCacheSpec | UniformTypeSpecs) -> str:
    if isinstance(spec, UniformTypeSpecs):
        return spec.specs[0].kind
    return spec.kind

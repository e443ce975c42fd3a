"""vLLM's decode context parallelism (``-dcp N`` / ``--decode-context-parallel-size N``): what
it refuses at start-up and how it counts a request's blocks.

DCP reuses the tensor-parallel ranks (``ParallelConfig.decode_context_parallel_size``: "DCP
does not expand the process world size. Without PCP, DCP reuses TP ranks"), so the GPUs, the
weights on each and the KV bytes of a token on each are TP's: ``ModelConfig.get_num_kv_heads``
is ``max(1, total // tp)`` with or without DCP, and MLA's one latent head is on every rank.
What changes is which tokens a rank holds: an attention layer's spec is DCP-sharded
(``AttentionSpec.dcp_sharded = True``, v1/kv_cache_interface.py), token ``t`` lives on DCP
rank ``(t // cp_kv_cache_interleave_size) % dcp``, so

- one block of ``block_size`` tokens on a rank stands for ``block_size × dcp`` tokens of a
  request (v1/core/kv_cache_utils.py ``resolve_dcp_kv_block_size``);
- a ``max_model_len`` request takes ``cdiv(cdiv(max_model_len, dcp), block_size)`` pages of a
  full-attention / MLA layer (``FullAttentionSpec.max_memory_usage_bytes``: "if
  self.dcp_sharded and dcp_world_size > 1: max_model_len = cdiv(max_model_len,
  dcp_world_size)"), which is what ``get_max_concurrency_for_kv_cache_config`` divides the
  unchanged per-rank ``num_blocks`` by, and what ``_check_enough_kv_cache_memory`` needs;
- "GPU KV cache size" stays ``int(max_concurrency × max_model_len)`` (``get_kv_cache_capacity``),
  so the logged tokens grow with the concurrency: about dcp times TP's alone.

The interleave size moves tokens between ranks, not bytes: ``--cp-kv-cache-interleave-size``
only has to fit the block (``VllmConfig.validate_block_size``), and
``--dcp-kv-cache-interleave-size`` is read only with a NIXL P/D connector
(``VllmConfig.adjust_dcp_kv_cache_interleave_size``), where ``validate_block_size`` is skipped.

Read in vLLM 0.33.0 and 0.34.0 (the same in both: the files above, ``config/parallel.py``,
``config/model.py``, the backends' ``supports_dcp``); the releases whose DCP code kvledger has
not read say so (``VllmRelease.decode_context_parallel``).
"""

from __future__ import annotations

from kvledger.derive.layers import Kind, ModelFacts
from kvledger.plan.engines.vllm.errors import VllmLayoutError
from kvledger.plan.engines.vllm.resolve import dcp_size
from kvledger.plan.request import PlanRequest

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.plan.engines.vllm.releases.profile import VllmRelease

# Attention backends whose impl says ``supports_dcp = False`` (the class default,
# v1/attention/backend.py AttentionImpl) among those a line can select, read in 0.33 and
# 0.34 v1/attention/backends/: triton_attn.py, flex_attention.py, rocm_attn.py,
# rocm_aiter_unified_attn.py, rocm_aiter_fa.py, mla/rocm_aiter_mla_sparse.py. Every other
# backend kvledger plans sets it True (flash_attn.py, flashinfer.py and the MLA backends:
# flashmla.py, flashattn_mla.py, cutlass_mla.py, flashinfer_mla.py, triton_mla.py,
# tokenspeed_mla.py, rocm_aiter_mla.py, flashmla_sparse.py, flashinfer_mla_sparse.py; the FA4
# sparse impl inherits FlashInfer's).
NO_DCP_BACKENDS = frozenset({"TRITON_ATTN", "FLEX_ATTENTION", "ROCM_ATTN",
                             "ROCM_AITER_UNIFIED_ATTN", "ROCM_AITER_FA", "ROCM_AITER_MLA_SPARSE"})
# Layer kinds whose vLLM spec is DCP-sharded full attention (FullAttentionSpec /
# MLAAttentionSpec, the sparse indexer's keys included: DeepseekV32IndexerCache returns an
# MLAAttentionSpec, dcp_sharded by default), holds nothing, or is a recurrent state: a
# MambaSpec keeps ``dcp_sharded = False`` (the KVCacheSpec default) and "Mamba state is
# replicated across DCP/PCP ranks, never sharded, so no CP scaling applies"
# (``MambaSpec.max_num_blocks_per_req``, 0.33 and 0.34); its manager takes a DCP world of 1
# (``SingleTypeKVCacheManager.__init__``), so a hybrid's state blocks a request are those
# without DCP while its attention group's shrink as above.
PLANNED_KINDS = frozenset({Kind.FULL, Kind.MLA, Kind.INDEXER, Kind.NONE, Kind.STATE})




def interleave_size(request: PlanRequest) -> int:
    """``cp_kv_cache_interleave_size`` (ParallelConfig's default 1)."""
    size = getattr(request.vllm_launch, "cp_kv_cache_interleave_size", 1)
    return size if isinstance(size, int) else 1


def check_parallel(request: PlanRequest, release: VllmRelease) -> None:
    """What vLLM checks of the sizes alone, as ``ParallelConfig`` is built (config/parallel.py
    ``_validate_parallel_config``, prefill context parallelism 1: "DCP reuses the TP ranks
    when PCP is disabled"). Also: kvledger plans DCP only for a release whose DCP code it
    read."""
    from kvledger.plan.engines.vllm.startup import VllmStartupError

    dcp, tp = dcp_size(request), request.tensor_parallel_size
    if dcp == 1:
        return
    if not release.decode_context_parallel:
        from kvledger.plan.engines.vllm.releases import RELEASES

        read = [r for r in RELEASES.values() if r.decode_context_parallel]
        raise VllmLayoutError(
            f"--decode-context-parallel-size {dcp} under {release.short}: kvledger has not "
            "read this release's decode context parallelism; it plans it under "
            f"{', '.join(r.short for r in read)} (pin one with "
            f"--engine {read[0].pin.rpartition('.')[0] if read else 'vllm'})")
    if tp % dcp:
        raise VllmStartupError(f"tp_size={tp} must be divisible by dcp_size={dcp}.",
                               "ParallelConfig._validate_parallel_config",
                               "use a --decode-context-parallel-size that divides "
                               "--tensor-parallel-size", release=release)


def check_model(facts: ModelFacts, request: PlanRequest, release: VllmRelease,
                kv_heads: list[int], attention_heads: int) -> None:
    """``ModelConfig.verify_with_parallel_config`` (config/model.py), after the head and PP
    checks: DCP on a model without MLA needs TP ranks beyond the KV heads, at most
    ``tp // kv_heads`` of them in a DCP group, and query heads per KV head that split over it.
    Then what kvledger plans: only layers whose cache DCP shards (``PLANNED_KINDS``); a
    sliding window is vLLM's own refusal (``SlidingWindowSpec.max_memory_usage_bytes``
    asserts "DCP not support sliding window.")."""
    from kvledger.plan.engines.vllm.backend_choice import forced_backend
    from kvledger.plan.engines.vllm.startup import VllmStartupError

    dcp, tp = dcp_size(request), request.tensor_parallel_size
    if dcp == 1:
        return
    use_mla = any(layer.kind is Kind.MLA for layer in facts.layers)
    if not use_mla:
        if len(kv_heads) != 1:
            raise VllmLayoutError(
                f"{facts.model}: decode context parallelism on layers with different KV head "
                f"counts ({', '.join(map(str, kv_heads))}) is not modelled; drop "
                "--decode-context-parallel-size")
        total = kv_heads[0]
        where = "ModelConfig.verify_with_parallel_config"
        fix = "or set `--decode-context-parallel-size 1`"
        if tp <= total:
            raise VllmStartupError(
                "Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` "
                f"({tp}) to be greater than the model's total number of KV heads ({total}). "
                "Increase `--tensor-parallel-size` or set `--decode-context-parallel-size 1`.",
                where, release=release)
        if dcp > tp // total:
            raise VllmStartupError(
                f"`--decode-context-parallel-size` ({dcp}) exceeds the maximum supported value "
                f"({tp // total}) for `--tensor-parallel-size` ({tp}) and {total} model KV "
                "heads.", where, fix, release=release)
        per_kv = attention_heads // total
        if per_kv % dcp:
            raise VllmStartupError(
                f"The model's number of query heads per KV head ({per_kv}) must be divisible "
                f"by `--decode-context-parallel-size` ({dcp}) for GQA/MQA.", where, fix,
                release=release)
    kinds = {layer.kind for layer in facts.layers if layer.owns_memory}
    if Kind.SLIDING in kinds:
        raise VllmStartupError(
            "DCP not support sliding window.", "SlidingWindowSpec.max_memory_usage_bytes, "
            "an AssertionError while the KV cache is sized", "drop "
            "--decode-context-parallel-size", release=release)
    if facts.model_type == "deepseek_v4" or kinds - PLANNED_KINDS:
        other = ", ".join(sorted(k.value for k in kinds - PLANNED_KINDS)) or "DeepSeek-V4's"
        raise VllmLayoutError(
            f"{facts.model}: decode context parallelism beside {other} caches is not "
            "modelled (kvledger plans DCP on full attention, MLA and recurrent state only); "
            "drop "
            "--decode-context-parallel-size")
    forced = forced_backend(request)
    if forced in NO_DCP_BACKENDS:
        # platforms/cuda.py get_attn_backend_cls checks a selected backend alone;
        # AttentionBackend.validate_configuration adds "DCP not supported".
        raise VllmStartupError(
            f"Selected backend AttentionBackendEnum.{forced} is not valid for this "
            "configuration. Reason: ['DCP not supported']",
            "AttentionBackend.validate_configuration", "drop --attention-backend",
            release=release)
    from kvledger.plan.engines.vllm.hardware import capability

    if not use_mla and forced is None and capability(request.gpu)[0] is None:
        # platforms/rocm.py: ROCm's standard backends (ROCM_ATTN, ROCM_AITER_*) have no DCP.
        raise VllmLayoutError(
            f"{facts.model}: decode context parallelism on a ROCm GPU without MLA: vLLM's "
            "ROCm attention backends do not support DCP and which one it would take is not "
            "modelled; drop --decode-context-parallel-size")


def check_block(block_size: int, request: PlanRequest, release: VllmRelease) -> None:
    """``VllmConfig.validate_block_size`` (config/vllm.py), once the backend fixed the block,
    without a NixlConnector: the interleave must fit the block."""
    from kvledger.plan.engines.vllm.startup import VllmStartupError

    interleave = interleave_size(request)
    if dcp_size(request) == 1 or interleave == 1:
        return
    transfer = getattr(request.vllm_launch, "kv_transfer_config", None) or ""
    if "NixlConnector" in transfer:
        return
    if interleave > block_size or block_size % interleave:
        raise VllmStartupError(
            f"Block_size({block_size}) should be greater than or equal to and divisible by "
            f"cp_kv_cache_interleave_size ({interleave}).",
            "VllmConfig.validate_block_size, an AssertionError",
            "use a --cp-kv-cache-interleave-size that divides the block", release=release)

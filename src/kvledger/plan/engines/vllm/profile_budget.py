"""The vLLM GPU budget with the reserves its profile run counts (``reserves.py``), for the
release being planned: what the rules need is read from the request, the facts and the GPU
preset here, and ``plan/budget.py gpu_budget`` writes the lines (keys unchanged)."""

from __future__ import annotations

from kvledger.plan.budget import Budget, BudgetLine, Reserves, gpu_budget
from kvledger.plan.engines.base import GpuBudgetInput
from kvledger.plan.engines.vllm.releases.profile import VllmRelease
from kvledger.plan.engines.vllm.reserves import (
    SM_COUNT,
    ReserveInput,
    activation_line,
    cuda_graph_line,
    non_torch_line,
)

_MULTIMODAL_KEYS = ("vision_config", "audio_config", "vision_tower", "visual",
                    "speech_config", "audio_encoder_config")


def _dense_mla(inp: GpuBudgetInput) -> bool:
    from kvledger.derive.layers import Kind

    kinds = {g.layer.kind for g in inp.facts.groups}
    return Kind.MLA in kinds and Kind.INDEXER not in kinds


def _indexer_head_dim(inp: GpuBudgetInput) -> int:
    """The DeepSeek-V3.2-style indexer's ``index_head_dim`` (model_executor/models/
    deepseek_v2.py Indexer: ``config.index_head_dim``, its buffer sized by
    get_max_prefill_buffer_size); 0 without one. DeepSeek-V4 divides that buffer by its
    compress ratio (models/deepseek_v4/attention.py), which is not modelled: 0 there."""
    from kvledger.derive.layers import Kind

    if Kind.INDEXER not in {g.layer.kind for g in inp.facts.groups}:
        return 0
    if str(inp.text_config.get("model_type", "")).startswith("deepseek_v4"):
        return 0
    head_dim = inp.text_config.get("index_head_dim")
    return head_dim if isinstance(head_dim, int) else 0


def _mla_backend(inp: GpuBudgetInput, default: int) -> tuple[int, str]:
    """(the block size the dense MLA backend takes, its name; "" when none is found)."""
    from kvledger.plan.engines.vllm.hardware import capability
    from kvledger.plan.engines.vllm.mla_backends import choose

    req = inp.request
    cap, _ = capability(req.gpu)
    from kvledger.plan.engines.vllm.backend_choice import forced_backend

    chosen = choose(cap or (9, 0), req.kv_cache_dtype, inp.text_config, req.block_size,
                    forced_backend(req))
    if chosen is None:
        return req.block_size or default, ""
    return req.block_size or chosen.preferred_block(default), chosen.name


def runtime_dtype(inp: GpuBudgetInput) -> str:
    """The dtype vLLM runs the model in (``resolve._model_dtype``: a float32 config, or one
    stating none, is downcast to bfloat16), which the profile run's tensors take."""
    from kvledger.plan.engines.vllm.resolve import _model_dtype

    return _model_dtype(inp.facts)


def reserve_input(inp: GpuBudgetInput, release: VllmRelease) -> ReserveInput:
    from kvledger.plan.engines.vllm.launch_budget import launch_of
    from kvledger.plan.engines.vllm.resolve import effective_max_model_len

    req = inp.request
    mla = _dense_mla(inp)
    default = release.default_block_size
    block, backend = _mla_backend(inp, default) if mla else (default, "")
    return ReserveInput(
        text=inp.text_config, model_dtype=runtime_dtype(inp),
        tensor_parallel_size=req.tensor_parallel_size,
        multi_gpu=req.tensor_parallel_size * req.pipeline_parallel_size > 1
        or inp.weights.split is not None,
        max_num_seqs=req.max_num_seqs, max_num_batched_tokens=req.max_num_batched_tokens,
        max_model_len=effective_max_model_len(inp.facts, req, release)[0],
        num_speculative_tokens=req.num_speculative_tokens,
        mla=mla, mla_block_size=block, mla_backend=backend,
        sm_count=SM_COUNT.get(inp.preset.name),
        # --language-model-only: every modality's limit is 0, so no encoder is profiled.
        multimodal=any(key in inp.facts.config for key in _MULTIMODAL_KEYS)
        and not getattr(launch_of(req), "language_model_only", False),
        cublas_handles_before_snapshot=release.cublas_handles_before_snapshot,
        triton_mla_workspace_in_profile=release.triton_mla_workspace_in_profile,
        indexer_head_dim=_indexer_head_dim(inp),
        indexer_prefill_entries=release.indexer_prefill_entries,
        indexer_radix_workspace=release.indexer_radix_workspace,
        topk_topp_triton_min_rows=release.topk_topp_triton_min_rows,
        topk_topp_native_sort=release.topk_topp_native_sort
        and getattr(launch_of(req), "flashinfer_sampler", None) is not True,
        flashinfer_sampler=getattr(launch_of(req), "flashinfer_sampler", None),
        rocm=inp.preset.vendor == "amd",
        cuda_graph_estimate_on_rocm=release.cuda_graph_estimate_on_rocm,
        cuda_graph_estimate_by_default=release.cuda_graph_estimate_by_default,
    )


def vllm_gpu_budget(inp: GpuBudgetInput, release: VllmRelease, *, utilization: float,
                    whose_default: str | None) -> Budget:
    """``int(total × utilization) − weights − reserves`` with ``release``'s reserve rules
    (a reserve the user gave is taken as given)."""
    from kvledger import records
    from kvledger.plan.engines.vllm.extensible_budget import (
        applies,
        default_utilization,
        extensible_budget,
    )

    extensible = applies(inp.request, release)
    if whose_default is not None:
        # CacheConfig.resolved_gpu_memory_utilization: 1.0 with the extensible KV cache; the
        # default 0.92 (and why, when a KV connector turned the mode off) without it.
        utilization, whose_default = default_utilization(inp.request, release)
    rin = reserve_input(inp, release)
    estimates = {}
    for line, parts in (activation_line(rin), cuda_graph_line(rin), non_torch_line(rin)):
        estimates[line.key] = records.replace(line, parts=parts)
    req = inp.request
    budget = gpu_budget(
        inp.preset, gpu_memory_utilization=utilization, weights=inp.weights, request=req,
        cfg=inp.text_config, model_dtype=runtime_dtype(inp),
        reserves=Reserves(req.activation_peak_bytes, req.cuda_graph_bytes, req.non_torch_bytes),
        total_bytes=req.gpu_total_bytes, utilization_default=whose_default,
        estimates=estimates)
    if not extensible:
        notes = startup_notes(inp, release, budget, utilization)
        return records.replace(budget, notes=notes,
                               after_kv=headroom_lines(inp, budget, utilization))
    # 0.34: sized after warm-up and CUDA-graph capture (extensible_budget.py). Its
    # free-memory admission does not apply: v1/worker/utils.py request_memory skips the
    # "less than desired GPU memory utilization" refusal when enable_extensible_kv_cache
    # ("the budget is only a cap"), and the margin stands in for the headroom.
    return extensible_budget(budget, release, multi_gpu=rin.multi_gpu,
                             rocm=inp.preset.vendor == "amd")


def headroom_lines(inp: GpuBudgetInput, budget: Budget,
                   utilization: float) -> tuple[BudgetLine, ...]:
    """0.32/0.33 capture the CUDA graphs after the KV cache (``compile_or_warm_up_model``):
    the ``headroom`` line (``plan/startup_memory.vllm_headroom``)."""
    from kvledger.plan.startup_memory import FreeMemory, vllm_headroom

    req = inp.request
    if not req.startup_admission:
        return ()
    total = budget.total_bytes if budget.total_bytes is not None else inp.preset.total_bytes
    return (vllm_headroom(total, utilization,
                          FreeMemory(req.gpu_free_bytes, req.gpu_memory_in_use)),)


def startup_notes(inp: GpuBudgetInput, release: VllmRelease, budget: Budget,
                  utilization: float) -> tuple[str, ...]:
    """0.32/0.33's free-memory admission and the headroom after the KV cache
    (``plan/startup_memory.py``; both releases: ``request_memory`` in ``v1/worker/utils.py``,
    graphs captured after the cache with their estimate taken from the budget).
    ``StartupRefusal`` when vLLM refuses to start."""
    from kvledger.plan.startup_memory import FreeMemory, vllm_startup

    req = inp.request
    if not req.startup_admission:
        return ()
    total = budget.total_bytes if budget.total_bytes is not None else inp.preset.total_bytes
    multi = req.tensor_parallel_size * req.pipeline_parallel_size > 1 or \
        inp.weights.split is not None
    return tuple(vllm_startup(total, utilization,
                              FreeMemory(req.gpu_free_bytes, req.gpu_memory_in_use),
                              multi_gpu=multi, release=release.short))

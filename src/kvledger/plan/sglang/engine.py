"""``--engine sglang`` behind ``plan_model``: budget, plan, answers, as a ``PlanResult``.

The budget is ``kv_cache_memory_bytes`` when given (the pool bytes per GPU, exactly what
reaches SGLang's configurator), else SGLang's own on a GPU preset (``budget.py``):
``mem_fraction_static`` is ``--mem-fraction-static``, else ``--gpu-memory-utilization`` when
given (the shared spelling of the same knob), else SGLang's formula. The platform SGLang's
defaults read (page size, DSA KV dtype) is the GPU's; with no GPU named, Hopper.

``max_concurrency`` is kvledger's answer, not a number SGLang logs: requests of
``context_length`` tokens that fit at once — the full pool's tokens over the context, the
sliding-window pool's over what one request keeps there, and never more than
``max_running_requests``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvledger.plan.budget import Budget, Reserves, given_budget
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PlanResult, PoolRow, RankResult, layer_summary
from kvledger.plan.sglang.layout import SglangPlan, plan_sglang
from kvledger.plan.sglang.memory import (
    MemorySettings,
    default_chunked_prefill_size,
    gpu_arch,
    memory_settings,
)
from kvledger.plan.sglang.model import MULTIMODAL_PREFILL_GRAPH_ARCHS, build, vision_tower
from kvledger.plan.sglang.options import SglangOptions
from kvledger.plan.sglang.pools import max_running_requests

if TYPE_CHECKING:
    from kvledger.derive.layers import ModelFacts
    from kvledger.derive.source import ModelSource

MIB = 1 << 20
HOPPER_80GB_MIB = 81559  # the chunked-prefill default with no GPU named (H100-80GB)


def _budget(
    facts: ModelFacts,
    source: ModelSource | None,
    request: PlanRequest,
    options: SglangOptions,
    *,
    gpu: str | None,
    gpu_memory_utilization: float | None,
    reserves: Reserves | None,
    total_memory_bytes: int | None,
) -> tuple[Budget, MemorySettings | None, list[str]]:
    notes: list[str] = []
    if request.kv_cache_memory_bytes is not None:
        if gpu is not None:
            notes.append(f"kv_cache_memory_bytes given: the {gpu} budget (weights, "
                         "mem_fraction_static) is not computed")
        return given_budget(request.kv_cache_memory_bytes), None, notes
    if gpu is None:
        raise ValueError("no memory budget: pass kv_cache_memory_bytes, or a gpu preset")
    from kvledger.derive.config import Config
    from kvledger.plan.gpus import gpu_preset
    from kvledger.plan.sglang.budget import sglang_gpu_budget
    from kvledger.plan.weights import model_weights

    preset = gpu_preset(gpu)
    gpu_arch(preset.name)  # refuses platforms whose defaults are not reproduced
    model = build(facts)
    total = preset.total_bytes if total_memory_bytes is None else total_memory_bytes
    fraction = options.mem_fraction_static if options.mem_fraction_static is not None \
        else gpu_memory_utilization
    settings = memory_settings(
        total / MIB, tp=request.tensor_parallel_size, pp=request.pipeline_parallel_size,
        mla=model.attention_arch == "MLA", attn_dp_size=request.data_parallel_size,
        dp_attention=options.enable_dp_attention,
        chunked_prefill_size=options.chunked_prefill_size,
        cuda_graph_max_bs=options.cuda_graph_max_bs,
        max_running_requests=options.max_running_requests,
        max_total_tokens=options.max_total_tokens, mem_fraction_static=fraction,
        model_name=facts.model, multimodal=model.multimodal,
        prefill_graph=not model.multimodal or
        model.architecture in MULTIMODAL_PREFILL_GRAPH_ARCHS,
        vision_tower=vision_tower(model.config))
    text = Config(facts.config, model=facts.model).text().raw
    weights = model_weights(
        text, model_dtype=facts.model_dtype,
        directory=source.directory if source is not None else None,
        hf_quant=source.hf_quant_config if source is not None else None,
        tensor_parallel_size=request.tensor_parallel_size,
        pipeline_parallel_size=request.pipeline_parallel_size)
    multi = request.tensor_parallel_size * request.pipeline_parallel_size > 1
    budget = sglang_gpu_budget(
        preset, settings, weights=weights, multi_gpu=multi, multimodal=model.multimodal,
        pre_load_in_use_bytes=reserves.non_torch_bytes if reserves is not None else None,
        total_bytes=total_memory_bytes)
    if weights.basis != "exact":
        notes.append("weights estimated from the config's parameter count; a local model "
                     "directory with safetensors makes them exact")
    return budget, settings, notes


def _concurrency_at(plan: SglangPlan, options: SglangOptions, context: int) -> float:
    """Requests of ``context`` tokens the same pools hold (see the module docstring)."""
    res = plan.resolved
    reqs = max_running_requests(
        plan.kv_cache_tokens, context_len=context, requested=res.max_running_requests,
        attn_dp_size=res.attn_dp,
        state_slots=plan.state.max_mamba_cache_size if plan.state is not None else None,
        slots_per_request=next((int(r["entries_per_req"]) for r in plan.pool_rows
                                if r["name"] == "mamba"), 1)).max_running_requests
    fits = plan.kv_cache_tokens / context
    if plan.swa_tokens is not None:
        window = next((int(r["entries_per_req"]) for r in plan.pool_rows if r["name"] == "swa"),
                      1) * res.page_size
        fits = min(fits, plan.swa_tokens / min(context, window))
    return min(float(reqs), fits)


def plan_result(
    facts: ModelFacts,
    source: ModelSource | None,
    request: PlanRequest,
    *,
    gpu: str | None = None,
    gpu_memory_utilization: float | None = None,
    reserves: Reserves | None = None,
    total_memory_bytes: int | None = None,
    concurrency: int | None = None,
    warnings: tuple[str, ...] = (),
) -> PlanResult:
    options = request.sglang or SglangOptions()
    budget, settings, notes = _budget(
        facts, source, request, options, gpu=gpu,
        gpu_memory_utilization=gpu_memory_utilization, reserves=reserves,
        total_memory_bytes=total_memory_bytes)
    platform = gpu_arch(gpu)
    chunked = settings.chunked_prefill_size if settings is not None else \
        default_chunked_prefill_size(HOPPER_80GB_MIB)
    plan = plan_sglang(facts, request, budget.available_bytes, options=options,
                       platform=platform, default_chunked_prefill_size=chunked)
    all_warnings = [*notes, *warnings, *plan.warnings]
    if gpu is None and request.block_size is None:
        all_warnings.append("page size auto: SGLang's choice on Hopper (H100/H200); pass "
                            "--gpu or --page-size for another GPU")
    rows = tuple(PoolRow(r["name"], r["pool"], int(r["entries"]), int(r["entry_bytes"]),
                         int(r["entries_per_req"]), int(r["reserved_bytes"]))
                 for r in plan.pool_rows)
    ranks = tuple(
        RankResult(s.stage, s.layer_range, s.full_layers + s.swa_layers, plan.page_size,
                   plan.kv_cache_tokens // plan.page_size, plan.kv_cache_tokens,
                   plan.max_concurrency, budget.available_bytes,
                   s.kv_bytes + (plan.state.reserved_bytes if plan.state else 0), rows)
        for s in plan.stages)
    split = [layer.split(request.tensor_parallel_size)
             if request.tensor_parallel_size > 1 else layer for layer in facts.layers]
    answers: dict[str, Any] = {"max_concurrency_at_max_model_len": plan.max_concurrency}
    if concurrency is not None:
        from kvledger.plan.answers import max_context_at

        hi = plan.context_len
        best = max_context_at(concurrency, lambda c: _concurrency_at(plan, options, c), hi=hi)
        answers["concurrency"] = concurrency
        answers["max_context_at_concurrency"] = best
        if best == hi:
            answers["max_context_note"] = f"capped at {hi} (the model's context length)"
        elif best is None:
            answers["max_context_note"] = (f"{concurrency} concurrent requests do not fit even "
                                           "at one token each")
    res = plan.resolved
    resolved: dict[str, Any] = {
        "page_size": res.page_size, "page_size_source": res.page_size_source,
        "kv_cache_dtype_source": res.kv_dtype_source, "context_length": res.context_len,
        "attn_tp_size": res.attn_tp, "attn_dp_size": res.attn_dp,
        "swa_full_tokens_ratio": res.swa_full_tokens_ratio if plan.swa_tokens is not None
        else None,
        "mamba_full_memory_ratio": res.mamba_full_memory_ratio if plan.state else None,
        "mamba_radix_cache_strategy": res.mamba_strategy,
        "draft_layers": res.draft_layers, "platform": res.platform,
    }
    if settings is not None:
        resolved.update(mem_fraction_static=settings.mem_fraction_static,
                        chunked_prefill_size=settings.chunked_prefill_size,
                        cuda_graph_max_bs=settings.cuda_graph_max_bs)
    extra: dict[str, Any] = {
        "max_running_requests": plan.max_running_requests,
        "max_running_requests_capped_by": plan.max_running_requests_capped_by,
        "sglang_log_line": plan.sglang_log_line,
        "sglang_log_lines": list(plan.sglang_log_lines),
        "cell_bytes_per_token": plan.cell_bytes_per_token,
        "swa_tokens": plan.swa_tokens,
        "sglang_resolved": {k: v for k, v in resolved.items() if v is not None},
    }
    if plan.state is not None:
        extra["max_mamba_cache_size"] = plan.state.max_mamba_cache_size
    binding = max(ranks, key=lambda r: r.reserved_bytes)
    return PlanResult(
        model=facts.model, engine="sglang", block_size=plan.page_size,
        num_blocks=plan.kv_cache_tokens // plan.page_size, kv_cache_tokens=plan.kv_cache_tokens,
        max_concurrency=plan.max_concurrency, max_model_len=plan.context_len,
        available_bytes=budget.available_bytes, reserved_bytes=binding.reserved_bytes,
        pools=binding.pools, layers=tuple(layer_summary(split)),
        warnings=tuple(dict.fromkeys(all_warnings)), budget=budget, ranks=ranks,
        tensor_parallel_size=request.tensor_parallel_size,
        pipeline_parallel_size=request.pipeline_parallel_size,
        data_parallel_size=1 if options.enable_dp_attention else request.data_parallel_size,
        max_num_seqs=plan.max_running_requests, kv_cache_dtype=plan.kv_cache_dtype,
        answers=answers, engine_fields=extra,
    )


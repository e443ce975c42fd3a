"""The SGLang layout's plan for DeepSeek-V4: SGLang's DSV4 pool arithmetic (``dsv4.py``, each
rule cited there) assembled into the layout's plan records, with what this path does not
reproduce refused by name. Apart from ``layout.py`` because V4 replaces SGLang's per-token
cell and request cap with its own pool configurator; ``layout.plan_sglang`` hands it over.
"""

from __future__ import annotations

from typing import Any

from kvledger.plan.engines.sglang import dsv4
from kvledger.plan.engines.sglang.model import SglangLayoutError, SglangModel
from kvledger.plan.engines.sglang.options import SglangOptions
from kvledger.plan.engines.sglang.pools import max_running_requests, validate_swa_pool
from kvledger.plan.engines.sglang.result import SglangPlan, StagePlan
from kvledger.plan.engines.sglang.settings import Resolved, context_length
from kvledger.plan.request import PlanRequest


def plan_dsv4(model: SglangModel, request: PlanRequest, available_bytes: int,
               options: SglangOptions, platform: str, default_chunked: int) -> SglangPlan:
    """DeepSeek-V4's pools (``dsv4.py`` cites SGLang's rules): the full pool's tokens from
    ``DSV4PoolConfigurator.calculate_pool_sizes``, the SWA pool a ratio of it."""
    def refuse(what: str) -> SglangLayoutError:
        return SglangLayoutError(f"{model.model} ({model.architecture}): {what} with SGLang's "
                                 "DeepSeek-V4 pool is not reproduced")

    if request.pipeline_parallel_size > 1:
        raise refuse("pipeline parallelism")
    if options.enable_dp_attention:
        raise refuse("DP attention")
    if request.num_speculative_tokens > 0:
        raise refuse("speculative decoding (compress-state rings, draft inflation)")
    if request.kv_cache_dtype not in ("auto", "fp8", "fp8_e4m3"):
        raise refuse(f"--kv-cache-dtype {request.kv_cache_dtype}")
    geo = dsv4.geometry(model.config)
    context = context_length(model, request)
    # An explicit --swa-full-tokens-ratio is the operator's; else the override's 0.1.
    ratio = options.swa_full_tokens_ratio if options.swa_full_tokens_ratio is not None \
        else dsv4.DEFAULT_SWA_RATIO
    requested = options.max_running_requests if options.max_running_requests is not None \
        else dsv4.DEFAULT_MAX_RUNNING_REQUESTS
    sizes = dsv4.pool_sizes(geo, available_bytes, swa_ratio=ratio,
                            requests_per_worker=max(1, requested))
    warnings: list[str] = []
    if request.block_size is not None and request.block_size != dsv4.PAGE_SIZE:
        # _deepseek_v4_overrides sets page_size 256 over the operator's (oracle case
        # cov-deepseek-v4 ran with --page-size 1 and SGLang sized 256-token pages).
        warnings.append(f"--page-size {request.block_size}: SGLang sets {dsv4.PAGE_SIZE} for "
                        "DeepSeek-V4 whatever is asked")
    if options.max_total_tokens is not None:
        if options.max_total_tokens > sizes.full_tokens:
            warnings.append(f"max_total_tokens={options.max_total_tokens} is larger than the "
                            f"profiled value {sizes.full_tokens}; SGLang uses the profiled "
                            "value")
        else:
            # calculate_pool_sizes_from_max_tokens: the fixed pools stay as profiled.
            sizes = dsv4.sizes_for_tokens(geo, options.max_total_tokens, ratio,
                                          sizes.full_token_bytes, sizes.fixed_bytes)
    full, swa, page = sizes.full_tokens, sizes.swa_tokens, dsv4.PAGE_SIZE
    if full <= 0:
        raise ValueError("Not enough memory: SGLang's KV pool would hold no token "
                         "(raise the budget or --mem-fraction-static)")
    validate_swa_pool(swa, geo.window, page)
    reqs = max_running_requests(full, context_len=context, requested=requested,
                                attn_dp_size=1, state_slots=None, slots_per_request=1)
    res = Resolved(
        kv_cache_dtype="fp8_e4m3", kv_dtype_source="DeepSeek-V4 default "
        "(_deepseek_v4_kv_cache_dtype)" if request.kv_cache_dtype == "auto" else "option",
        page_size=page, page_size_source="DeepSeek-V4 (_deepseek_v4_overrides)",
        context_len=context, attn_tp=request.tensor_parallel_size, attn_dp=1, draft_layers=0,
        swa_full_tokens_ratio=ratio, mamba_full_memory_ratio=options.mamba_ratio,
        chunked_prefill_size=options.chunked_prefill_size or default_chunked,
        overlap=not options.disable_overlap_schedule, mamba_strategy=None,
        max_running_requests=requested, dsa_scaled_fp8=False, platform=platform)
    reserved = int(full * sizes.full_token_bytes) + sizes.fixed_bytes
    lines = dsv4.log_lines(sizes, available_bytes)
    stage = StagePlan(0, (0, geo.num_layers), geo.num_layers, 0, full,
                      sizes.full_token_bytes, reserved, lines, available_bytes)
    per_request_swa = min(context, geo.window + page)
    concurrency = min(float(reqs.max_running_requests), full / context, swa / per_request_swa)
    rows: tuple[dict[str, Any], ...] = (
        {"name": "kv", "pool": "page", "entries": full // page,
         "entry_bytes": int(sizes.full_token_bytes * page),
         "entries_per_req": -(-context // page), "reserved_bytes": reserved},
    )
    return SglangPlan(
        model=model.model, kv_cache_tokens=full, swa_tokens=swa,
        max_running_requests=reqs.max_running_requests,
        max_running_requests_capped_by=reqs.capped_by, page_size=page, context_len=context,
        kv_cache_dtype="fp8_e4m3", cell_bytes_per_token=sizes.full_token_bytes,
        available_bytes=available_bytes, kv_budget_bytes=available_bytes,
        reserved_bytes=reserved, max_concurrency=concurrency, state=None, state_bytes=None,
        stages=(stage,), resolved=res, sglang_log_line=lines[1], sglang_log_lines=lines,
        warnings=tuple(warnings), pool_rows=rows)


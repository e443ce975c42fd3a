"""The SGLang layout as the API sees it (``--engine sglang``): ``SglangEngine(Layout)``.

A thin adapter from ``kvledger.plan.engines.base.Layout`` to ``plan_sglang``:

* ``gpu_budget`` — SGLang's own budget on a GPU preset (``budget.py``):
  ``mem_fraction_static`` is ``--mem-fraction-static``, else ``--gpu-memory-utilization`` when
  given (the shared spelling of the same knob), else SGLang's formula (``memory.py``).
* ``plan`` — the platform SGLang's defaults read (page size, DSA KV dtype) is the GPU's
  (``memory.gpu_arch``); with no GPU named, Hopper. Each pipeline stage gets its budget from
  ``LayoutInput.stage_budgets`` (model-local caches already subtracted). The JSON keys only
  SGLang has: ``max_running_requests``, ``sglang_log_line`` (and every line it logs),
  ``cell_bytes_per_token``, ``swa_tokens``, ``sglang_resolved``.
* ``concurrency_at`` — kvledger's answer, not a number SGLang logs: requests of a context
  length that fit at once — the full pool's tokens over the context, the sliding-window
  pool's over what one request keeps there, and never more than ``max_running_requests``
  at that context length.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvledger.derive.layers import LayerCache, Role
from kvledger.plan.engines.base import GpuBudgetInput, Layout, LayoutInput, LayoutPlan
from kvledger.plan.engines.sglang.releases import NEWEST, RELEASES
from kvledger.plan.engines.sglang.releases.profile import SglangRelease
from kvledger.plan.result import PoolRow, RankResult, stored_summary
from kvledger.records import replace

if TYPE_CHECKING:
    from kvledger.derive.layers import ModelFacts
    from kvledger.plan.budget import Budget
    from kvledger.plan.engines.release import Release
    from kvledger.plan.engines.sglang.options import SglangOptions
    from kvledger.plan.engines.sglang.result import SglangPlan
    from kvledger.plan.engines.sglang.settings import Resolved
    from kvledger.plan.request import PlanRequest
    from kvledger.plan.weights import WeightSplit

MIB = 1 << 20
HOPPER_80GB_MIB = 81559  # the chunked-prefill default with no GPU named (H100-80GB)


def _options(inp: GpuBudgetInput | LayoutInput) -> SglangOptions:
    from kvledger.plan.engines.sglang.options import SglangOptions

    given = inp.request.sglang
    if given is not None and not isinstance(given, SglangOptions):
        raise TypeError(f"sglang must be SglangOptions, got {given!r}")
    return given or SglangOptions()


def _plan(inp: LayoutInput, release: SglangRelease) -> SglangPlan:
    from kvledger.plan.engines.sglang.layout import plan_sglang
    from kvledger.plan.engines.sglang.memory import default_chunked_prefill_size, gpu_arch
    from kvledger.plan.gpus import gpu_preset

    request = inp.request
    gpu = gpu_preset(request.gpu).name if request.gpu is not None else None
    total = request.gpu_total_bytes or (gpu_preset(gpu).total_bytes if gpu else None)
    options = _options(inp)
    chunked = default_chunked_prefill_size(total / MIB if total else HOPPER_80GB_MIB)
    return plan_sglang(inp.facts, request, min(inp.stage_budgets), options=options,
                       platform=gpu_arch(gpu), default_chunked_prefill_size=chunked,
                       stage_available_bytes=inp.stage_budgets, release=release)


def _engine_fields(plan: SglangPlan, budget: Budget) -> dict[str, Any]:
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
        "attention_backend": res.attention_backend, "dsa_backends": res.dsa_backends,
        "mem_fraction_static": budget.gpu_memory_utilization,
    }
    fields: dict[str, Any] = {
        "max_running_requests": plan.max_running_requests,
        "max_running_requests_capped_by": plan.max_running_requests_capped_by,
        "sglang_log_line": plan.sglang_log_line,
        "sglang_log_lines": list(plan.sglang_log_lines),
        "cell_bytes_per_token": plan.cell_bytes_per_token,
        "swa_tokens": plan.swa_tokens,
        "sglang_resolved": {k: v for k, v in resolved.items() if v is not None},
    }
    if plan.state is not None:
        fields["max_mamba_cache_size"] = plan.state.max_mamba_cache_size
    return fields


def _hicache(inp: LayoutInput, plan: SglangPlan) -> tuple[dict[str, Any] | None, list[str]]:
    from kvledger.plan.engines.sglang.hicache import plain_plan_tier

    options = _options(inp)
    names = {str(row["name"]) for row in plan.pool_rows}
    return plain_plan_tier(
        enabled=options.enable_hierarchical_cache, ratio=options.hicache_ratio,
        size_gb=options.hicache_size, layout=options.hicache_mem_layout,
        device_tokens=plan.kv_cache_tokens, bytes_per_token=int(plan.cell_bytes_per_token),
        page_size=plan.page_size, context_len=plan.context_len,
        single_pool=plan.swa_tokens is None and plan.state is None and names <= {"kv"}
        and len(plan.stages) == 1)


def _stored_bytes_per_token(inp: LayoutInput, plan: SglangPlan,
                            layers: tuple[dict[str, Any], ...]) -> tuple[int, str] | None:
    """(SGLang's cell, why) where its one token pool's cell is not what the layer rows (the
    model's own caches) add up to; None where they agree, or the pool is not one plain pool
    (hybrid SWA or state pools, pipeline stages: the headline is then the rows')."""
    from kvledger.plan.engines.sglang.model import MLA_FROM_CONFIG_ARCHS, NO_OP_SLOTTED_ARCHS
    from kvledger.plan.result import rows_bytes

    names = {str(row["name"]) for row in plan.pool_rows}
    if plan.swa_tokens is not None or plan.state is not None or names != {"kv"} \
            or len(plan.stages) != 1:
        return None
    cell, rows = int(plan.cell_bytes_per_token), rows_bytes(layers)[0]
    if cell == rows:
        return None
    arch = inp.facts.architectures[0] if inp.facts.architectures else ""
    if arch in MLA_FROM_CONFIG_ARCHS:
        why = ("SGLang sizes this architecture as MLA from the config's kv_lora_rank + "
               "qk_rope_head_dim (configs/model_config.py _derive_model_shapes), where the "
               "rows below are the whole K/V heads vLLM caches")
    elif arch in NO_OP_SLOTTED_ARCHS:
        why = ("SGLang gives every one of num_hidden_layers a K/V slot, the layers without "
               "attention included (ModelConfig nemotron-nas branch, resolve_layer_indices)")
    elif plan.resolved.draft_note is not None and plan.resolved.draft_layers:
        why = (f"it holds the separate draft's {plan.resolved.draft_layers} layer(s) at the "
               "target's per-layer size too (pool_configurator.py; sglang/draft_layers.py)")
    elif any(row.get("kind") == "cross" for row in layers):
        why = ("SGLang keeps cross-attention K/V in the same token pool, a slot per token in "
               "each cross layer (encoder_decoder.py)")
    else:
        why = "its cell (memory_pool.py _cell_size) is not the rows' sum"
    return cell, (f"SGLang's token pool stores {cell:,} B a token per GPU where the layer rows "
                  f"below add up to {rows:,} B: {why}")


def _why_not_cached(layer: LayerCache, res: Resolved) -> str:
    """SGLang keeps the checkpoint's MTP (next-n) layers in a draft pool only when it
    speculates with them (``Resolved.draft_layers``, from the speculative settings)."""
    if layer.role is Role.MTP and not res.draft_layers:
        return "MTP layer: cached only when speculating (NEXTN / EAGLE)"
    return ""


class SglangEngine(Layout):
    """SGLang's KV pools (``kvledger.plan.engines.sglang``), as the requested release
    (``releases/``) sizes them."""

    releases = RELEASES
    newest = NEWEST

    def __init__(self, release: Release | None = None, release_note: str = "") -> None:
        super().__init__(release, release_note)
        # The profile every rule of this layout reads (``get_layout`` binds it once).
        self.profile: SglangRelease = release if isinstance(release, SglangRelease) else \
            RELEASES[NEWEST]
        # concurrency_at is asked many contexts for one input: plan it once.
        self._last: tuple[LayoutInput, SglangPlan] | None = None

    def _planned(self, inp: LayoutInput) -> SglangPlan:
        if self._last is None or self._last[0] is not inp:
            self._last = (inp, _plan(inp, self.profile))
        return self._last[1]

    def weight_split(self, facts: ModelFacts, request: PlanRequest) -> WeightSplit | None:
        """DP attention's attention weights over the attention group (``dp_weights.py``);
        vLLM's --enable-expert-parallel is refused (SGLang's is --ep-size)."""
        if request.enable_expert_parallel:
            raise ValueError("enable_expert_parallel is vLLM's flag; SGLang's expert "
                             "parallelism is --ep-size (the same bytes as TP when it equals "
                             "--tp-size)")
        from kvledger.plan.engines.sglang.dp_weights import weight_split

        return weight_split(facts, request)

    def pipeline_parallel_refusal(self, facts: ModelFacts) -> str:
        """SGLang's refusal of pp_size > 1 for a Transformers-backend model with no pipeline
        plan (``served.pipeline_parallel_refusal``); "" otherwise."""
        from kvledger.plan.engines.sglang.served import NotServed, pipeline_parallel_refusal

        try:
            reason = pipeline_parallel_refusal(facts.architectures, self.profile)
        except NotServed:
            return ""  # refused whatever the layout: each candidate says why
        return f"{self.profile.short} refuses to start: {reason}" if reason else ""

    def gpu_budget(self, inp: GpuBudgetInput) -> Budget:
        from kvledger.plan.engines.sglang.backends import aiter_fraction, is_rocm
        from kvledger.plan.engines.sglang.budget import sglang_gpu_budget
        from kvledger.plan.engines.sglang.memory import gpu_arch, memory_settings
        from kvledger.plan.engines.sglang.model import (
            MULTIMODAL_PREFILL_GRAPH_ARCHS,
            SglangLayoutError,
            build,
            vision_tower,
        )
        from kvledger.plan.engines.sglang.settings import context_length, platform_backend

        request, options = inp.request, _options(inp)
        platform = gpu_arch(inp.preset)
        model = build(inp.facts, self.profile)
        # The backend SGLang picks off Hopper (backends.py): ROCm's aiter scales the fraction.
        backend = platform_backend(model, request, platform, self.profile, options)
        if request.pipeline_parallel_size > 1 and \
                (no_pp := self.pipeline_parallel_refusal(inp.facts)):
            # SGLang stops while it builds the model, before it sizes the pools
            raise SglangLayoutError(no_pp)
        total = request.gpu_total_bytes or inp.preset.total_bytes
        fraction = options.mem_fraction_static if options.mem_fraction_static is not None \
            else request.gpu_memory_utilization
        settings_for: dict[str, Any] = dict(
            tp=request.tensor_parallel_size, pp=request.pipeline_parallel_size,
            mla=model.attention_arch == "MLA", attn_dp_size=request.data_parallel_size,
            dp_attention=options.enable_dp_attention,
            chunked_prefill_size=options.chunked_prefill_size,
            cuda_graph_max_bs=options.cuda_graph_max_bs,
            max_running_requests=options.max_running_requests,
            max_total_tokens=options.max_total_tokens,
            model_name=inp.facts.model, multimodal=model.multimodal,
            # cuda_graph_config.py default_prefill_backend: the breakable prefill graph is on
            # by default on CUDA only (off on ROCm).
            prefill_graph=not is_rocm(platform) and (
                not model.multimodal or model.architecture in MULTIMODAL_PREFILL_GRAPH_ARCHS),
            vision_tower=vision_tower(model.config))
        settings = memory_settings(total / MIB, mem_fraction_static=fraction, **settings_for)
        context = context_length(model, request)
        scaled = aiter_fraction(settings.mem_fraction_static, backend, context, self.profile)
        if scaled != settings.mem_fraction_static:
            # attention_hook.py handle_attention_backend_compatibility (after the memory
            # defaults): "scales mem_fraction_static by 0.85 to reserve non-static workspace".
            settings = replace(settings, mem_fraction_static=scaled, scaled_by=(
                f"× {self.profile.aiter_mem_factor:g} for the aiter backend at context "
                f"{context} > {self.profile.aiter_factor_above_context} = {scaled:.6g}"))
        # SGLang's own reservation for these settings (its default fraction's), for the
        # runtime-OOM check beside a given fraction or a co-tenant (budget.py).
        own = settings.reserved_mib if fraction is None else \
            memory_settings(total / MIB, mem_fraction_static=None, **settings_for).reserved_mib
        multi = request.tensor_parallel_size * request.pipeline_parallel_size > 1
        others = 0
        if request.gpu_free_bytes is not None:
            others = max(0, total - request.gpu_free_bytes)
        elif request.gpu_memory_in_use is not None:
            others = request.gpu_memory_in_use
        return sglang_gpu_budget(
            inp.preset, settings, weights=inp.weights, multi_gpu=multi,
            multimodal=model.multimodal, pre_load_in_use_bytes=request.non_torch_bytes,
            total_bytes=request.gpu_total_bytes, others_bytes=others, own_reserve_mib=own)

    def plan(self, inp: LayoutInput) -> LayoutPlan:
        plan = self._planned(inp)
        request = inp.request
        rows = tuple(PoolRow(r["name"], r["pool"], int(r["entries"]), int(r["entry_bytes"]),
                             int(r["entries_per_req"]), int(r["reserved_bytes"]))
                     for r in plan.pool_rows)
        state = plan.state.reserved_bytes + plan.state.spec_reserved_bytes \
            if plan.state is not None else 0
        ranks = tuple(
            RankResult(s.stage, s.layer_range, s.full_layers + s.swa_layers, plan.page_size,
                       plan.kv_cache_tokens // plan.page_size, plan.kv_cache_tokens,
                       plan.max_concurrency, s.available_bytes, s.kv_bytes + state, rows)
            for s in plan.stages)
        warnings = list(plan.warnings)
        if request.gpu is None and request.block_size is None and \
                plan.resolved.page_size_source.startswith("SGLang default"):
            warnings.append("page size auto: SGLang's choice on Hopper (H100/H200); pass "
                            "--gpu or --page-size for another GPU")
        # --enable-hierarchical-cache: HiCache's host tier beside the pool (hicache.py).
        hicache, hicache_lines = _hicache(inp, plan)
        warnings += hicache_lines
        # One context-length request: its tokens at the cell, and one state slot set.
        per_state = plan.state.bytes_per_slot * next(
            (int(r["entries_per_req"]) for r in plan.pool_rows if r["name"] == "mamba"), 0) \
            if plan.state is not None else 0
        one = int((plan.context_len + plan.encoder_tokens) * plan.cell_bytes_per_token) \
            + per_state
        layers = tuple(stored_summary(inp.facts, request.tensor_parallel_size,
                                      plan.kv_cache_dtype,
                                      lambda layer: _why_not_cached(layer, plan.resolved),
                                      raw_sparse_mla=not plan.resolved.dsa_scaled_fp8))
        stored = _stored_bytes_per_token(inp, plan, layers)
        if stored is not None:
            warnings.append(stored[1])
        return LayoutPlan(
            ranks=ranks,
            block_size=plan.page_size,
            num_blocks=plan.kv_cache_tokens // plan.page_size,
            kv_cache_tokens=plan.kv_cache_tokens,
            max_concurrency=plan.max_concurrency,
            max_model_len=plan.context_len,
            kv_cache_dtype=plan.kv_cache_dtype,
            # The attention rows in the KV dtype SGLang stores (a float32 config: bfloat16).
            # The DSA kernel pair's fp8 row: raw 576 B unless it is the scaled layout
            # (dsa_backends.py).
            layers=layers,
            stored_bytes_per_token=stored[0] if stored is not None else None,
            warnings=tuple(warnings),
            one_request_bytes=(one,) * len(ranks),
            engine_fields={**_engine_fields(plan, inp.budget),
                           **({"hicache": hicache} if hicache is not None else {})},
            # DP attention: attn_dp groups inside the TP group, one replica
            # (runtime_context.launch_world_size_of: tp_size × pp_size GPUs).
            attention_dp_size=plan.resolved.attn_dp,
        )

    def concurrency_at(self, inp: LayoutInput, context: int) -> float:
        from kvledger.plan.engines.sglang.pools import max_running_requests

        plan = self._planned(inp)
        res = plan.resolved
        slots = next((int(r["entries_per_req"]) for r in plan.pool_rows
                      if r["name"] == "mamba"), 1)
        reqs = max_running_requests(
            plan.kv_cache_tokens, context_len=context, requested=res.max_running_requests,
            attn_dp_size=res.attn_dp,
            state_slots=plan.state.max_mamba_cache_size if plan.state is not None else None,
            slots_per_request=slots).max_running_requests
        fits = plan.kv_cache_tokens / (context + plan.encoder_tokens)
        if plan.swa_tokens is not None:
            window = next((int(r["entries_per_req"]) for r in plan.pool_rows
                           if r["name"] == "swa"), 1) * res.page_size
            fits = min(fits, plan.swa_tokens / min(context, window))
        return min(float(reqs), fits)

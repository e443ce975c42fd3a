"""The vLLM layout as the API sees it (``--engine vllm``, the default).

A thin adapter from ``kvledger.plan.engines.base.Layout`` to ``plan_vllm``: each pipeline stage on
its
own budget (``LayoutInput.stage_budgets``: a stage whose GPUs also hold a model-local cache
has less), the stage plans as rows, and vLLM's own JSON key ``vllm_refuses_to_start``. vLLM does
not know model-local caches, so they never reach this module: the API has already subtracted
them from the budget (``pools_model_local`` is False).
"""

from __future__ import annotations

from kvledger import records
from kvledger.derive.errors import UnsupportedArchitecture
from kvledger.derive.layers import Role
from kvledger.plan.engines.base import GpuBudgetInput, Layout, LayoutInput, LayoutPlan
from kvledger.plan.engines.vllm.releases import NEWEST, RELEASES
from kvledger.plan.engines.vllm.releases.profile import VllmRelease
from kvledger.plan.request import PARALLEL_DRAFT_METHODS
from kvledger.plan.result import PoolRow, RankResult, stored_summary

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.derive.layers import ModelFacts
    from kvledger.plan.budget import Budget
    from kvledger.plan.engines.release import Release
    from kvledger.plan.engines.vllm.layout import VllmPlan
    from kvledger.plan.gpus import GpuPreset
    from kvledger.plan.request import PlanRequest
    from kvledger.plan.weights import WeightSplit
    from kvledger.source.model_source import ModelSource


def _stage_ranges(inp: LayoutInput) -> list[tuple[int, int]]:
    pp = inp.request.pipeline_parallel_size
    if pp == 1:
        decoder = sum(len(g.indices) for g in inp.facts.groups if g.layer.role == Role.DECODER)
        return [(0, decoder)]
    from kvledger.plan.parallel import split_stages

    layers = [layer for layer in inp.facts.layers if layer.role == Role.DECODER]
    return [s.layer_range for s in split_stages(layers, 1, pp)]


def _ranks(inp: LayoutInput, plan: VllmPlan) -> tuple[RankResult, ...]:
    stage_plans = list(plan.stages) or [plan]
    ranges = _stage_ranges(inp)
    return tuple(
        RankResult(
            k, ranges[k], sum(g.num_layers for g in sp.groups), sp.block_size, sp.num_blocks,
            sp.kv_cache_tokens, sp.max_concurrency, sp.available_bytes, sp.reserved_bytes,
            tuple(PoolRow(**row) for row in sp.pools()), tuple(sp.warnings),
            sp.vllm_refuses_to_start,
        )
        for k, sp in enumerate(stage_plans)
    )


def _plan(inp: LayoutInput, release: VllmRelease, max_model_len: int | None = None,
          checked: bool = False) -> VllmPlan:
    from kvledger.plan.engines.vllm import (
        plan_vllm,  # the vLLM layout is only imported when asked for
    )

    request = inp.request
    if max_model_len is not None:
        request = records.replace(request, max_model_len=max_model_len)
    budgets = inp.stage_budgets
    stage_budgets = None if len(set(budgets)) <= 1 else budgets
    return plan_vllm(inp.facts, request, min(budgets), release=release,
                     stage_available_bytes=stage_budgets,
                     startup_checked=checked and request is inp.request)


def tokens_note(plan: VllmPlan, rules: VllmRelease, dcp: int = 1) -> str:
    """Why the "GPU KV cache size" tokens are not num_blocks × block_size, in one line ("" when
    they are). vLLM logs ``int(max_concurrency × max_model_len)`` (kv_cache_utils.py
    ``get_kv_cache_capacity``), concurrency being the blocks over one max_model_len request's
    blocks, summed over its KV cache groups (``get_max_concurrency_for_kv_cache_config``):
    a hybrid's window or state groups take blocks of their own, so the tokens move with
    --max-model-len; a length that is not a multiple of the block leaves its last block part
    empty."""
    sp = next((p for p in (plan, *plan.stages) if p.groups), None)
    if sp is None or sp.kv_cache_tokens == sp.num_blocks * sp.block_size:
        return ""
    if rules.logged_tokens == "blocks_per_group":  # vLLM 0.10 to 0.20 (releases/profile.py)
        return (f"kv_cache_tokens {sp.kv_cache_tokens:,} is not num_blocks × block_size "
                f"({sp.num_blocks:,} × {sp.block_size:,}): {rules.short} logs num_blocks // "
                f"{len(sp.groups)} KV cache groups × {sp.block_size:,} (kv_cache_utils.py's "
                "\"GPU KV cache size\" line), whatever one request takes; its concurrency "
                f"counts {sp.blocks_per_request:,} blocks a {sp.max_model_len:,}-token request")
    taken: dict[str, list[int]] = {}
    for group in sp.groups:
        taken.setdefault(group.spec.removesuffix("Spec"), []).append(group.blocks_per_request)
    parts = " + ".join(
        f"{name} {blocks[0]:,}" if len(blocks) == 1 else
        f"{name} {len(blocks)} groups × {blocks[0]:,}"
        if len(set(blocks)) == 1 else f"{name} {sum(blocks):,}"
        for name, blocks in taken.items())
    why = ("every KV cache group takes its own blocks from the one pool" if len(sp.groups) > 1
           else f"{sp.max_model_len:,} is not a multiple of {sp.block_size}: the last block "
           "is part empty")
    if dcp > 1:
        # v1/core/kv_cache_utils.py resolve_dcp_kv_block_size; FullAttentionSpec.
        # max_memory_usage_bytes counts cdiv(max_model_len, dcp) tokens a rank (dcp.py).
        why = (f"decode context parallelism {dcp}: each rank holds 1/{dcp} of a request's "
               f"tokens, so a block of {sp.block_size} tokens a rank stands for "
               f"{sp.block_size * dcp:,} tokens of a request")
    return (f"kv_cache_tokens {sp.kv_cache_tokens:,} is not num_blocks × block_size "
            f"({sp.num_blocks:,} × {sp.block_size:,} = {sp.num_blocks * sp.block_size:,}): vLLM "
            f"logs max_concurrency × max_model_len, and one {sp.max_model_len:,}-token request "
            f"takes {sp.blocks_per_request:,} blocks ({parts}): {why}")


def _stored_rows(inp: LayoutInput, plan: VllmPlan) -> tuple[dict[str, object], ...]:
    """The layer rows as vLLM stores them: its KV dtype, nothing for layers it leaves out, and
    the sparse MLA rows of the backend chosen (FLASHINFER_MLA_SPARSE keeps fp8 one byte a
    value: convert.py)."""
    from kvledger.plan.engines.vllm.convert import why_not_cached
    from kvledger.plan.engines.vllm.specs import FP8_DS_MLA_BYTES_PER_TOKEN

    res = plan.resolved
    sparse = res.sparse_mla
    # convert.py: sparse MLA with an fp8 cache off SM10x (FLASHMLA_SPARSE) is canonicalised
    # to fp8_ds_mla, whose rows are 656 B whatever the latent's dims.
    packed = res.use_sparse and sparse is None and \
        res.cache_dtype in ("fp8", "fp8_e4m3", "fp8_ds_mla")
    return tuple(stored_summary(
        inp.facts, inp.request.tensor_parallel_size, res.kv_cache_dtype,
        lambda layer: why_not_cached(layer, inp.request),
        raw_sparse_mla=sparse is not None and not sparse.ds_mla_layout,
        mla_row_bytes=FP8_DS_MLA_BYTES_PER_TOKEN if packed else None))


def _group_rows(plan: VllmPlan) -> list[dict[str, object]]:
    """vLLM's KV cache groups with the caches each holds, where kvledger names them (one row a
    group, as vLLM lists ``kv_cache_groups``); [] otherwise."""
    if not any(g.caches for g in plan.groups):
        return []
    return [{"spec": g.spec, "num_layers": g.num_layers, "block_size": g.block_size,
             "page_size_bytes": g.page_size_bytes, "blocks_per_request": g.blocks_per_request,
             "caches": g.caches} for g in plan.groups]


class VllmEngine(Layout):
    """vLLM's KV cache allocator (``kvledger.plan.engines.vllm``), as the requested release
    (``releases/``) builds it."""

    releases = RELEASES
    newest = NEWEST

    def __init__(self, release: Release | None = None, release_note: str = "") -> None:
        super().__init__(release, release_note)
        # The profile every rule of this layout reads (``get_layout`` binds it once).
        self.profile: VllmRelease = release if isinstance(release, VllmRelease) else \
            RELEASES[NEWEST]
        # The (facts, request) the start-up checks last passed for (``checked``): the budget
        # runs them, and the plan of the same request does not run them again.
        self._checked: tuple[ModelFacts, PlanRequest] | None = None

    def check_started(self, facts: ModelFacts, request: PlanRequest) -> None:
        """vLLM's start-up checks for ``facts`` served with ``request`` (a refusal raises), run
        once for these very objects: the budget and the plan of one request share them."""
        last = self._checked
        if last is not None and last[0] is facts and last[1] is request:
            return
        from kvledger.plan.engines.vllm.layout import check_served

        check_served(facts, request, self.profile)
        self._checked = (facts, request)

    def not_served(self, model_type: str) -> str:
        return self.profile.not_served.get(model_type, "")

    def max_model_len(self, facts: ModelFacts, request: PlanRequest) -> int | None:
        """The length the bound release starts with (``resolve.effective_max_model_len``: the
        asked or derived length — 2,048 where the config states none — lowered by a shorter
        draft model)."""
        from kvledger.plan.engines.vllm.resolve import effective_max_model_len

        return effective_max_model_len(facts, request, self.profile)[0]

    def default_utilization(self, request: PlanRequest) -> tuple[float, str]:
        release = self.profile
        return release.default_gpu_memory_utilization, f"{release.short}'s default"

    def budget_notes(self, preset: GpuPreset) -> tuple[str, ...]:
        """vLLM multiplies CUDA's total (``torch.cuda.mem_get_info()``), which may sit a few
        hundred MiB below a device-report preset: ``plan.gpus.nvml_total_note`` says so."""
        from kvledger.plan.gpus import nvml_total_note

        note = nvml_total_note(preset)
        return () if note is None else (note,)

    def serving_dtype(self, facts: ModelFacts) -> str:
        """vLLM's ``--dtype auto`` (``resolve._model_dtype``): the dtype the weights line and
        the profile run's reserves both read."""
        from kvledger.plan.engines.vllm.resolve import _model_dtype

        return _model_dtype(facts)

    def derive(self, source: ModelSource, request: PlanRequest) -> ModelFacts:
        """derive's facts, or this release's reason for not serving the model type: a type
        derive cannot read is refused in vLLM's words when vLLM refuses it too (whose
        reason, not kvledger's, is what a vLLM user needs); one derive reads is refused
        after derive (``check_served``), so ``--engine native`` still plans it."""
        release = self.profile
        try:
            facts = super().derive(source, request)
        except UnsupportedArchitecture as exc:
            why = release.not_served.get(exc.model_type)
            if why:
                raise UnsupportedArchitecture(
                    f"unsupported: {why}", model_type=exc.model_type,
                    architectures=exc.architectures) from None
            raise
        if request.speculative_method in PARALLEL_DRAFT_METHODS:
            # A DFlash / DSpark draft's layers join the target's KV cache (imported only
            # then: start-up, bench/startup.py).
            from kvledger.plan.engines.vllm.parallel_draft import with_draft

            facts = with_draft(facts, request, release)
        return facts

    def weight_split(self, facts: ModelFacts, request: PlanRequest) -> WeightSplit | None:
        """vLLM's experts over the DP × TP GPUs (``engines/vllm/experts.py``); one DP rank
        divides them by TP (the module is not imported then: start-up)."""
        if request.data_parallel_size == 1 and request.tensor_parallel_size == 1:
            return None
        from kvledger.plan.engines.vllm.experts import weight_split

        return weight_split(facts, request)

    def pipeline_parallel_refusal(self, facts: ModelFacts) -> str:
        """vLLM's refusal of PP for a model class without ``SupportsPP`` (``startup.py``)."""
        from kvledger.plan.engines.vllm.startup import pipeline_parallel_refusal, prefix

        refusal = pipeline_parallel_refusal(facts, self.profile)
        if refusal is None:
            return ""
        reason = getattr(refusal, "reason", None)  # vLLM's words, without kvledger's fix hint
        return f"{prefix(self.profile)}: {reason}" if reason else str(refusal)

    def gpu_budget(self, inp: GpuBudgetInput) -> Budget:
        """The default GPU budget, after vLLM's configuration refusals: vLLM refuses a
        setting (PP on a model without SupportsPP, TP that does not divide the heads) while
        it builds its config, before it loads weights or profiles memory, so that reason
        comes first even when the budget would be too small too."""
        release = self.profile
        self.check_started(inp.facts, inp.request)
        if getattr(inp.request, "vllm_launch", None) is None:
            return self._profile_budget(inp, release)
        # LoRA slots, online quantization, CPU offload (launch_budget.py).
        from kvledger.plan.engines.vllm.launch_budget import launch_budget

        return launch_budget(inp, lambda i: self._profile_budget(i, release), release)

    def _profile_budget(self, inp: GpuBudgetInput, release: VllmRelease) -> Budget:
        """The budget with the reserves ``release``'s profile run counts (reserves.py)."""
        from kvledger.plan.engines.vllm.profile_budget import vllm_gpu_budget

        util = inp.request.gpu_memory_utilization
        default, whose = self.default_utilization(inp.request)
        return vllm_gpu_budget(inp, release, utilization=default if util is None else util,
                               whose_default=whose if util is None else None)

    def plan(self, inp: LayoutInput) -> LayoutPlan:
        self.check_started(inp.facts, inp.request)
        plan = _plan(inp, self.profile, checked=True)
        stage_plans = list(plan.stages) or [plan]
        tier: dict[str, object] = {}
        notes: list[str] = []
        if getattr(inp.request, "vllm_launch", None) is not None:
            # --kv-offloading-size: the CPU tier beside this GPU plan (offload.py).
            from kvledger.plan.engines.vllm.launch_budget import given_budget_note, kv_tier_fields

            tier = kv_tier_fields(inp.request, self.profile, bytes_per_block=plan.bytes_per_block,
                                  block_size=plan.block_size, groups=len(plan.groups),
                                  use_mla=any("MLA" in g.spec for g in plan.groups),
                                  num_blocks=plan.num_blocks)
            notes = given_budget_note(inp.request)
        rows = _stored_rows(inp, plan)
        groups = _group_rows(plan)
        from kvledger.plan.engines.vllm.resolve import dcp_size
        return LayoutPlan(
            ranks=_ranks(inp, plan),
            block_size=plan.block_size,
            num_blocks=plan.num_blocks,
            kv_cache_tokens=plan.kv_cache_tokens,
            max_concurrency=plan.max_concurrency,
            max_model_len=plan.max_model_len,
            # A dtype name (fp8_e4m3, not its uint8 storage), as vLLM resolved it.
            kv_cache_dtype=plan.resolved.kv_cache_dtype or inp.facts.kv_dtype,
            # The rows as vLLM stores them: its KV dtype, nothing for layers it leaves out.
            layers=rows,
            warnings=(*plan.warnings, *notes),
            refuses_to_start=plan.vllm_refuses_to_start,
            # vLLM refuses unless one request's blocks fit beside the null block.
            one_request_bytes=tuple(sp.needed_bytes + sp.bytes_per_block for sp in stage_plans),
            # A budget too small for one request is not an error (README, "Decisions worth
            # knowing"): the figures stand, with vLLM's reason beside them.
            engine_fields={"vllm_refuses_to_start": plan.vllm_refuses_to_start,
                           "vllm_refusal_reason": plan.refusal_reason or None, **tier,
                           **({"kv_cache_tokens_note": note} if (note := tokens_note(
                               plan, plan.resolved.release, dcp_size(inp.request)))
                              else {}),
                           **({"decode_context_parallel_size": dcp_size(inp.request)}
                              if dcp_size(inp.request) > 1 else {}),
                           **({"kv_cache_groups": groups} if groups else {})},
        )

    def concurrency_at(self, inp: LayoutInput, context: int) -> float:
        """vLLM's max concurrency if ``max_model_len`` were ``context`` (same budgets)."""
        try:
            return float(_plan(inp, self.profile, context).max_concurrency)
        except ValueError:
            return 0.0

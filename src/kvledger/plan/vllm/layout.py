"""The vLLM layout: what vLLM 0.32 allocates for a model, to the block.

``plan_vllm(facts, request, available_bytes)`` runs vLLM's own sequence on engine-neutral
facts: resolve settings → per-layer specs (tensor-parallel split) → block size (hybrid
alignment) → grouping → blocks and the two numbers vLLM logs. With pipeline parallelism
the groups are formed over the whole model and projected onto each stage, each stage
counts its blocks from the same per-GPU budget, and all stages use the smallest count
(vLLM ``get_kv_cache_configs``).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kvledger.derive.layers import Kind, LayerCache, ModelFacts, RecurrentState, Role
from kvledger.derive.model_types import MODEL_TYPES
from kvledger.derive.model_types import resolve as resolve_row
from kvledger.plan.request import MTP_METHODS, PlanRequest
from kvledger.plan.vllm.blocks import BlockMath, block_math
from kvledger.plan.vllm.convert import layer_spec, layer_takes_part
from kvledger.plan.vllm.grouping import Group, Grouping, get_kv_cache_groups
from kvledger.plan.vllm.hybrid import BlockSizes, apply_block_sizes, resolve_block_sizes
from kvledger.plan.vllm.no_cache_config import layer_kv_dtype
from kvledger.plan.vllm.resolve import Resolved, VllmLayoutError, resolve
from kvledger.plan.vllm.specs import (
    AttentionSpec,
    CircularBufferSpec,
    KVCacheSpec,
    MLAAttentionSpec,
    SpecContext,
    UniformTypeSpecs,
    spec_name,
)
from kvledger.plan.vllm.startup import check_block_size, check_startup, memory_refusal_reason

__all__ = ["GroupInfo", "VllmLayoutError", "VllmPlan", "plan_vllm", "plan_vllm_stage", "pp_stages"]


def pp_stages(num_layers: int, pp: int) -> list[tuple[int, int]]:
    """[start, end) layer ranges per pipeline stage (vLLM ``get_pp_indices``).

    One rule for both layouts: ``kvledger.plan.parallel.pp_partition``.
    """
    from kvledger.plan.parallel import pp_partition

    try:
        return pp_partition(num_layers, pp)
    except ValueError as exc:
        raise VllmLayoutError(str(exc)) from None


@dataclass(frozen=True)
class GroupInfo:
    """One KV cache group as reported: its spec, layer count and per-request pages."""

    spec: str
    num_layers: int
    block_size: int
    page_size_bytes: int
    max_memory_usage_bytes_per_request: int
    blocks_per_request: int


@dataclass(frozen=True)
class VllmPlan:
    """What ``plan_vllm`` returns: vLLM's block count, logged numbers and groups."""

    model: str
    num_blocks: int
    block_size: int
    kv_cache_tokens: int
    max_concurrency: float
    max_model_len: int
    bytes_per_block: int
    blocks_per_request: int
    needed_bytes: int
    available_bytes: int
    vllm_refuses_to_start: bool
    groups: tuple[GroupInfo, ...]
    layer_specs: tuple[tuple[dict[str, Any], int], ...]
    resolved: Resolved
    mamba_block_size: int | None
    mamba_page_size_padded: int | None
    tp_kv_heads_per_rank: int | None
    warnings: tuple[str, ...] = ()
    stage: int | None = None
    # [start, end) decoder layer indices of this stage (vLLM ``get_pp_indices``).
    layer_range: tuple[int, int] | None = None
    stages: tuple[VllmPlan, ...] = field(default=())
    # Why vLLM would not start on this budget (vLLM's words, plan/vllm/startup.py); "" if it
    # would.
    refusal_reason: str = ""

    @property
    def reserved_bytes(self) -> int:
        return self.num_blocks * self.bytes_per_block

    def pools(self) -> list[dict[str, Any]]:
        """The plan as pool rows: vLLM keeps one block pool shared by every group."""
        return [
            {
                "name": "kv",
                "pool": "page",
                "entries": self.num_blocks,
                "entry_bytes": self.bytes_per_block,
                "entries_per_req": self.blocks_per_request,
                "reserved_bytes": self.reserved_bytes,
            }
        ]


@dataclass(frozen=True)
class _Prepared:
    """Everything ``_prepare`` derives once, before blocks are counted per stage."""

    res: Resolved
    layers: tuple[LayerCache, ...]
    sizes: BlockSizes
    grouping: Grouping
    ctx: SpecContext
    warnings: tuple[str, ...]


def not_in_vllm(model_type: str) -> str:
    """Why vLLM 0.32 has no model for ``model_type`` ('' when it has one): the model-type
    table's ``not_in_vllm`` field. Those types' facts come from another engine's (or an
    older vLLM's) implementation, so "what vLLM allocates" has no answer and the layout
    refuses; ``--engine native`` still plans them."""
    if model_type not in MODEL_TYPES:
        return ""  # facts built by hand, not from a row
    return resolve_row(model_type).not_in_vllm


def _prepare(facts: ModelFacts, request: PlanRequest) -> _Prepared:
    if absent := not_in_vllm(facts.model_type):
        raise VllmLayoutError(f"{facts.model}: {absent}; use --engine native")
    check_startup(facts, request)
    res, kv_notes = layer_kv_dtype(facts, resolve(facts, request))
    if (request.num_speculative_tokens and request.speculative_method in MTP_METHODS
            and not any(layer.role is Role.MTP for layer in facts.layers)):
        # vLLM builds the MTP drafter's layers from the config (e.g. Qwen3NextMTP takes
        # num_nextn_predict_layers, default 1; derive states them as Role.MTP layers) and
        # gives each its own KV cache: facts without any (a model type whose MTP module
        # kvledger does not know) would hold more tokens than vLLM does.
        raise VllmLayoutError(
            f"{facts.model}: --speculative-method {request.speculative_method} adds the "
            "model's MTP layers to vLLM's KV cache, and kvledger derived none for this "
            "config; refusing to plan without them"
        )
    tp = request.tensor_parallel_size
    taking = [layer.split(tp) for layer in facts.layers if layer_takes_part(layer, request)]
    # vLLM registers a layer's indexer caches before its attention cache; the order only
    # decides which layer represents a mixed group in what vLLM reports.
    ranked = sorted(
        enumerate(taking),
        key=lambda p: (p[1].index, 0 if p[1].kind is Kind.INDEXER else 1, p[0]),
    )
    layers = tuple(layer for _, layer in ranked)
    if not layers:
        if facts.layers and all(layer.role is Role.DRAFT for layer in facts.layers):
            raise VllmLayoutError(
                f"{facts.model} is a speculative draft model; vLLM serves it only beside its "
                "target: plan the target model with --speculative-method eagle3"
            )
        raise VllmLayoutError(f"{facts.model}: no layer keeps a KV cache under these options")
    raw = [layer_spec(layer, res, request) for layer in layers]
    sizes = resolve_block_sizes(raw, res)
    check_block_size(sizes.block_size, request.block_size,
                     any(isinstance(s, AttentionSpec) for s in raw))
    specs = apply_block_sizes(raw, sizes)
    grouping = get_kv_cache_groups(dict(enumerate(specs)))
    ctx = SpecContext(
        max_model_len=res.max_model_len,
        max_in_flight_tokens=res.max_in_flight_tokens,
        max_num_encoder_input_tokens=res.max_num_encoder_input_tokens,
        mamba_cache_mode=res.mamba_cache_mode,
    )
    warnings = list(sizes.notes) + list(grouping.warnings) + kv_notes
    warnings.extend(checkpoint_kv_notes(facts, request, res))
    if any(getattr(layer, "with_value", False) for layer in layers
           if layer.index in res.minimax_sparse_layers):
        warnings.append(
            "the config keeps an index value on some MiniMax-M3 sparse layers "
            "(sparse_disable_index_value 0); vLLM 0.32's MiniMaxM3IndexerCache caches the "
            "index key only, and so does this plan"
        )
    if res.mamba_cache_mode == "align" and any(
        isinstance(layer, RecurrentState) and "kda" in layer.state_kind.lower()
        for layer in layers
    ):
        warnings.append(
            "KDA layers in align mode are charged 2 state blocks per request, as vLLM's CPU "
            "oracle does; on a CUDA GPU vLLM 0.32 picks the FlashKDA prefill backend for bf16 "
            "head_dim-128 bounded-gate models and charges a third (prefill checkpoint) block"
        )
    return _Prepared(res, layers, sizes, grouping, ctx, tuple(warnings))


def checkpoint_kv_notes(facts: ModelFacts, request: PlanRequest, res: Resolved) -> list[str]:
    """Say when vLLM's KV dtype differs from what the checkpoint declares, or adopts it."""
    declared = facts.kv_dtype_source in ("quantization_config", "hf_quant_config")
    if request.kv_cache_dtype != "auto":
        return []
    if res.cache_dtype_source == "checkpoint":
        return [f"KV cache in {res.kv_cache_dtype}: {res.cache_dtype_reason}"]
    if declared and facts.kv_dtype != res.kv_cache_dtype:
        return [
            f"the checkpoint declares a {facts.kv_dtype} KV cache ({facts.kv_dtype_source}), "
            f"but vLLM 0.32 does not adopt it under --kv-cache-dtype auto (it reads only a "
            f"ModelOpt quant_method in config.json, or an hf_quant_config.json with a ModelOpt "
            f"producer when config.json has no quantization_config, or a compressed-tensors "
            f"kv_cache_scheme): it stores {res.kv_cache_dtype}; pass --kv-cache-dtype fp8 to "
            "use the checkpoint's scales"
        ]
    return []


def _group_info(group: Group, ctx: SpecContext) -> GroupInfo:
    # Per-layer representative, as vLLM's scheduler view reports a UniformType group.
    spec: KVCacheSpec = group.spec.specs[0] if isinstance(group.spec, UniformTypeSpecs) else (
        group.spec
    )
    return GroupInfo(
        spec=spec_name(group.spec),
        num_layers=len(group.layers),
        block_size=spec.block_size,
        page_size_bytes=spec.page_size_bytes,
        max_memory_usage_bytes_per_request=spec.max_memory_usage_bytes(ctx),
        blocks_per_request=group.spec.blocks_per_request(ctx),
    )


def _layer_specs(
    specs: dict[int, KVCacheSpec], members: list[int]
) -> tuple[tuple[dict[str, Any], int], ...]:
    counts = Counter(specs[i] for i in members)
    return tuple((spec.describe(), n) for spec, n in counts.items())


def _tp_heads(specs: dict[int, KVCacheSpec]) -> int | None:
    """KV heads per rank of the model's own attention (not indexer keys or rings)."""
    for s in specs.values():
        if isinstance(s, AttentionSpec) and not isinstance(s, CircularBufferSpec) and not (
            isinstance(s, MLAAttentionSpec) and s.is_indexer
        ):
            return s.num_kv_heads
    return None


def _project(groups: tuple[Group, ...], members: set[int]) -> tuple[Group, ...]:
    """vLLM ``_project_kv_cache_groups_to_worker``: keep each group, only this stage's layers."""
    return _project_all(groups, [members])[0]


def _project_all(
    groups: tuple[Group, ...], members: list[set[int]]
) -> list[tuple[Group, ...]]:
    """``_project`` for every stage in one pass over the layers (issue 10: projecting stage by
    stage walked every layer once per stage, quadratic when PP grows with the layer count)."""
    stage_of = {i: k for k, m in enumerate(members) for i in m}
    out: list[list[Group]] = [[] for _ in members]
    for g in groups:
        kept: list[list[int]] = [[] for _ in members]
        picked: list[list[KVCacheSpec]] = [[] for _ in members]
        for k, layer in enumerate(g.layers):
            stage = stage_of.get(layer)
            if stage is not None:
                kept[stage].append(layer)
                if isinstance(g.spec, UniformTypeSpecs):
                    picked[stage].append(g.spec.specs[k])
        for stage, layers in enumerate(kept):
            spec = g.spec
            if layers and isinstance(spec, UniformTypeSpecs):
                spec = UniformTypeSpecs(spec.block_size, tuple(picked[stage]))
            out[stage].append(Group(tuple(layers), spec))
    return [tuple(groups_of_stage) for groups_of_stage in out]


def _stage_ranges(prep: _Prepared, pp: int) -> list[tuple[int, int]]:
    decoder = [layer.index for layer in prep.layers if layer.role is Role.DECODER]
    return pp_stages(max(decoder) + 1 if decoder else 1, pp)


def _stage_members(prep: _Prepared, pp: int) -> list[set[int]]:
    ranges = _stage_ranges(prep, pp)
    starts = [a for a, _ in ranges]
    members: list[set[int]] = [set() for _ in ranges]
    for ordinal, layer in enumerate(prep.layers):
        stage = len(ranges) - 1  # MTP / draft layers run on the last stage
        if layer.role is Role.DECODER:
            stage = bisect.bisect_right(starts, layer.index) - 1  # linear overall (issue 10)
        members[stage].add(ordinal)
    return members


def _plan(
    facts: ModelFacts,
    prep: _Prepared,
    groups: tuple[Group, ...],
    members: list[int],
    available_bytes: int,
    math: BlockMath,
    *,
    stage: int | None,
    layer_range: tuple[int, int] | None = None,
    stages: tuple[VllmPlan, ...] = (),
    extra_warnings: tuple[str, ...] = (),
) -> VllmPlan:
    warnings = list(prep.warnings) + list(extra_warnings)
    reason = ""
    if math.refuses_to_start:
        reason = memory_refusal_reason(prep.res.max_model_len, math.needed_bytes,
                                       available_bytes - math.bytes_per_block)
        warnings.append(
            f"vLLM would refuse to start: one {prep.res.max_model_len}-token request needs "
            f"{math.needed_bytes} B of KV cache but {available_bytes - math.bytes_per_block} B "
            "are usable after the null block"
        )
    return VllmPlan(
        model=facts.model,
        num_blocks=math.num_blocks,
        block_size=prep.sizes.block_size,
        kv_cache_tokens=math.kv_cache_tokens,
        max_concurrency=math.max_concurrency,
        max_model_len=prep.res.max_model_len,
        bytes_per_block=math.bytes_per_block,
        blocks_per_request=math.blocks_per_request,
        needed_bytes=math.needed_bytes,
        available_bytes=available_bytes,
        vllm_refuses_to_start=math.refuses_to_start,
        groups=tuple(_group_info(g, prep.ctx) for g in groups),
        layer_specs=_layer_specs(prep.grouping.specs, members),
        resolved=prep.res,
        mamba_block_size=prep.sizes.mamba_block_size,
        mamba_page_size_padded=prep.sizes.mamba_page_size_padded,
        tp_kv_heads_per_rank=_tp_heads(prep.grouping.specs),
        warnings=tuple(warnings),
        stage=stage,
        layer_range=layer_range,
        stages=stages,
        refusal_reason=reason,
    )


def _check_budget(available_bytes: int) -> None:
    if isinstance(available_bytes, bool) or not isinstance(available_bytes, int):
        raise TypeError(f"available_bytes must be an int, got {available_bytes!r}")
    if available_bytes < 0:
        raise ValueError(f"available_bytes must be >= 0, got {available_bytes}")


def plan_vllm_stage(
    facts: ModelFacts, request: PlanRequest, available_bytes: int, stage: int
) -> VllmPlan:
    """One pipeline stage on its own budget (blocks not yet reconciled across stages)."""
    _check_budget(available_bytes)
    prep = _prepare(facts, request)
    members = _stage_members(prep, request.pipeline_parallel_size)
    if not 0 <= stage < len(members):
        raise ValueError(f"stage {stage} out of range for {len(members)} pipeline stages")
    groups = _project(prep.grouping.groups, members[stage])
    math = block_math(groups, prep.grouping.specs, available_bytes, prep.ctx)
    return _plan(
        facts, prep, groups, sorted(members[stage]), available_bytes, math, stage=stage,
        layer_range=_stage_ranges(prep, request.pipeline_parallel_size)[stage],
    )


def plan_vllm(
    facts: ModelFacts,
    request: PlanRequest,
    available_bytes: int,
    *,
    stage_available_bytes: Sequence[int] | None = None,
) -> VllmPlan:
    """The vLLM plan for one GPU's KV budget (``available_bytes`` per worker).

    ``stage_available_bytes`` gives each pipeline stage's workers their own budget (vLLM
    ``get_kv_cache_configs`` takes one ``available_memory`` per worker): a stage whose GPUs
    also hold a model-local cache has less. Default: ``available_bytes`` on every stage.
    """
    _check_budget(available_bytes)
    prep = _prepare(facts, request)
    pp = request.pipeline_parallel_size
    budgets = [available_bytes] * pp if stage_available_bytes is None else \
        list(stage_available_bytes)
    if len(budgets) != pp:
        raise ValueError(f"stage_available_bytes has {len(budgets)} entries for {pp} stages")
    for b in budgets:
        _check_budget(b)
    every = list(range(len(prep.layers)))
    if pp == 1:
        math = block_math(prep.grouping.groups, prep.grouping.specs, budgets[0], prep.ctx)
        return _plan(facts, prep, prep.grouping.groups, every, budgets[0], math, stage=None)

    members = _stage_members(prep, pp)
    ranges = _stage_ranges(prep, pp)
    projected = _project_all(prep.grouping.groups, members)
    counts = [
        block_math(g, prep.grouping.specs, budgets[k], prep.ctx).num_blocks
        for k, g in enumerate(projected)
    ]
    # vLLM: every stage uses the smallest block count among stages.
    fewest = min(counts)
    stage_plans: list[VllmPlan] = []
    for k, (groups, m) in enumerate(zip(projected, members, strict=True)):
        math = block_math(
            groups, prep.grouping.specs, budgets[k], prep.ctx, num_blocks=fewest
        )
        stage_plans.append(
            _plan(
                facts, prep, groups, sorted(m), budgets[k], math, stage=k,
                layer_range=ranges[k],
            )
        )
    # The scheduler's view is built from the first stage's config (vLLM
    # ``generate_scheduler_kv_cache_config``); vLLM refuses if any stage cannot hold a request.
    first = stage_plans[0]
    refuses = any(p.vllm_refuses_to_start for p in stage_plans)
    math = BlockMath(
        bytes_per_block=first.bytes_per_block,
        num_blocks=fewest,
        blocks_per_request=first.blocks_per_request,
        max_concurrency=first.max_concurrency,
        kv_cache_tokens=first.kv_cache_tokens,
        needed_bytes=max(p.needed_bytes for p in stage_plans),
        refuses_to_start=refuses,
    )
    notes = tuple(
        f"pipeline stage {k}: {c} blocks on its own budget" for k, c in enumerate(counts)
    )
    return _plan(
        facts, prep, prep.grouping.groups, every, min(budgets), math,
        stage=None, stages=tuple(stage_plans), extra_warnings=notes,
    )

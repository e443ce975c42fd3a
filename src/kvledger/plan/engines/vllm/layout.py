"""The vLLM layout: what vLLM 0.32 allocates for a model, to the block.

``plan_vllm(facts, request, available_bytes)`` runs vLLM's own sequence on engine-neutral
facts: resolve settings → per-layer specs (tensor-parallel split) → block size (hybrid
alignment) → grouping → blocks and the two numbers vLLM logs. With pipeline parallelism
the groups are formed over the whole model and projected onto each stage, each stage
counts its blocks from the same per-GPU budget, and all stages use the smallest count
(vLLM ``get_kv_cache_configs``).
"""

from __future__ import annotations

from collections.abc import Sequence, Set

from kvledger.derive.layers import Kind, LayerGroup, ModelFacts, RecurrentState, Role
from kvledger.plan.engines.vllm.blocks import BlockMath, block_math
from kvledger.plan.engines.vllm.convert import layer_spec, layer_takes_part
from kvledger.plan.engines.vllm.grouping import Bucket, Group, Grouping, get_kv_cache_groups
from kvledger.plan.engines.vllm.hybrid import BlockSizes, apply_block_sizes, resolve_block_sizes
from kvledger.plan.engines.vllm.resolve import Resolved, VllmLayoutError, dcp_size, resolve
from kvledger.plan.engines.vllm.specs import (
    AttentionSpec,
    CircularBufferSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    SpecContext,
    UniformTypeSpecs,
    spec_name,
)
from kvledger.plan.engines.vllm.startup import (
    attention_heads,
    check_block_size,
    check_startup,
    kv_head_counts,
    memory_refusal_reason,
    sentence_len_notes,
)
from kvledger.plan.request import MTP_METHODS, PlanRequest
from kvledger.records import field, record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from kvledger.plan.engines.vllm.releases.profile import VllmRelease

DSV4_TYPE = "deepseek_v4"  # planned by dsv4.py

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


@record(frozen=True)
class GroupInfo:
    """One KV cache group as reported: its spec, layer count and per-request pages."""

    spec: str
    num_layers: int
    block_size: int
    page_size_bytes: int
    max_memory_usage_bytes_per_request: int
    blocks_per_request: int
    # The caches it holds in vLLM's layer names, where kvledger names them (DeepSeek-V4:
    # ``dsv4.group_caches``); "" otherwise.
    caches: str = ""


@record(frozen=True)
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
    # The planned layers' distinct specs (this stage's layers: ``spec_members``, None for
    # all), kept as specs: ``layer_specs`` describes them only when asked.
    spec_buckets: tuple[Bucket, ...]
    spec_members: frozenset[int] | None
    resolved: Resolved
    mamba_block_size: int | None
    mamba_page_size_padded: int | None
    tp_kv_heads_per_rank: int | None
    warnings: tuple[str, ...] = ()
    stage: int | None = None
    # [start, end) decoder layer indices of this stage (vLLM ``get_pp_indices``).
    layer_range: tuple[int, int] | None = None
    stages: tuple[VllmPlan, ...] = field(default=())
    # Why vLLM would not start on this budget (vLLM's words, plan/engines/vllm/startup.py); "" if it
    # would.
    refusal_reason: str = ""

    @property
    def reserved_bytes(self) -> int:
        return self.num_blocks * self.bytes_per_block

    @property
    def layer_specs(self) -> tuple[tuple[dict[str, Any], int], ...]:
        """Each distinct spec of the planned layers with its layer count, in order of first
        layer: what vLLM reports as its unique layer specs (the oracle's ``layer_specs``)."""
        return _layer_specs(self.spec_buckets, self.spec_members)

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


@record(frozen=True)
class _Prepared:
    """Everything ``_prepare`` derives once, before blocks are counted per stage.

    The planned layers are in vLLM's registration order (``ordinal``: a position in it);
    ``indices`` and ``roles`` give each one's model layer index and role."""

    res: Resolved
    indices: tuple[int, ...]
    roles: tuple[Role, ...]
    sizes: BlockSizes
    grouping: Grouping
    ctx: SpecContext
    warnings: tuple[str, ...]
    # Per ordinal: (model layer index, vLLM's cache name) where kvledger names the caches
    # (DeepSeek-V4), else None.
    cache_names: tuple[tuple[int, str], ...] | None = None


def not_in_vllm(model_type: str, release: VllmRelease) -> str:
    """Why vLLM ``release`` has no model for ``model_type`` ('' when it has one): the release
    profile's ``not_served`` table. Those types' facts come from another engine's (or an
    older vLLM's) implementation, so "what vLLM allocates" has no answer and the layout
    refuses; ``--engine native`` still plans them."""
    return release.not_served.get(model_type, "")


def check_served(facts: ModelFacts, request: PlanRequest, release: VllmRelease) -> None:
    """vLLM ``release`` has a model for ``facts`` and starts with ``request``'s settings —
    what vLLM decides from its configuration, before it profiles memory (so before any
    budget)."""
    if absent := not_in_vllm(facts.model_type, release):
        raise VllmLayoutError(f"{facts.model}: {absent}; use --engine native")
    later = release.unregistered_architectures
    if later and facts.architectures and all(a in later for a in facts.architectures):
        raise VllmLayoutError(
            f"{facts.model}: {release.short}'s model registry (model_executor/models/"
            f"registry.py) has no {', '.join(facts.architectures)}: a later release adds it "
            f"(kvledger does not plan the Transformers-backend fallback {release.short} may "
            "try); pin a newer release with --engine vllm==X, or use --engine native")
    check_startup(facts, request, release)
    if dcp_size(request) > 1:
        from kvledger.plan.engines.vllm.dcp import check_model, check_parallel

        check_parallel(request, release)
        heads = facts.cached(("vllm kv head counts",), lambda: sorted(kv_head_counts(facts.layers)))
        check_model(facts, request, release, heads, attention_heads(facts))


def _prepare(facts: ModelFacts, request: PlanRequest, release: VllmRelease,
             checked: bool = False) -> _Prepared:
    if not checked:  # the engine ran them before the budget, for this very request
        check_served(facts, request, release)
    res = resolve(facts, request, release)
    kv_notes: list[str] = []
    if facts.model_type in release.no_cache_config:
        # Imported only for the model files it concerns (start-up: bench/startup.py).
        from kvledger.plan.engines.vllm.no_cache_config import layer_kv_dtype

        res, kv_notes = layer_kv_dtype(facts, res, release)
    if (request.num_speculative_tokens and request.speculative_method in MTP_METHODS
            and not any(g.layer.role is Role.MTP for g in facts.groups)):
        # vLLM builds the MTP drafter's layers from the config (e.g. Qwen3NextMTP takes
        # num_nextn_predict_layers, default 1; derive states them as Role.MTP layers) and
        # gives each its own KV cache: facts without any (a model type whose MTP module
        # kvledger does not know) would hold more tokens than vLLM does.
        raise VllmLayoutError(
            f"{facts.model}: --speculative-method {request.speculative_method} adds the "
            "model's MTP layers to vLLM's KV cache, and kvledger derived none for this "
            "config; refusing to plan without them"
        )
    taking = tuple(n for n, g in enumerate(facts.groups) if layer_takes_part(g.layer, request))
    if not taking:
        if facts.layers and all(g.layer.role is Role.DRAFT for g in facts.groups):
            raise VllmLayoutError(
                f"{facts.model} is a speculative draft model; vLLM serves it only beside its "
                "target: plan the target model with --speculative-method eagle3"
            )
        raise VllmLayoutError(f"{facts.model}: no layer keeps a KV cache under these options")
    v4 = facts.model_type == DSV4_TYPE
    if v4:
        # DeepSeek-V4's caches are registered by its own model classes (imported only here:
        # start-up, bench/startup.py).
        from kvledger.plan.engines.vllm import dsv4
        from kvledger.plan.engines.vllm.hardware import capability

        dsv4.check_request(facts, request, capability(request.gpu)[0], release)
        res = dsv4.resolved(res)
    order = facts.cached(
        ("vllm registration order", taking),
        lambda: _registration_order(facts, taking, res.minimax_sparse_layers, v4=v4))
    # One spec per part (a group of identical layers, ``ModelFacts.groups``), shared by its
    # members: the work follows the number of distinct layers, not of layers.
    tp = request.tensor_parallel_size
    split = {n: facts.groups[n].layer.split(tp) for n in taking}
    parts = [split[n] if split[n].index == index else split[n].at(index)
             for n, index in order.parts]
    if v4:
        # V4's caches come with their block sizes (dsv4.py); vLLM reports the smallest of
        # its groups' (v1/engine/core.py), and every spec is in a group.
        specs = [dsv4.layer_spec(layer, res.extra_retained_tokens) for layer in parts]
        dsv4.check_layout(specs)
        sizes = BlockSizes(min(s.block_size for s in specs), None, None)
    else:
        raw = [layer_spec(layer, res, request) for layer in parts]
        sizes = resolve_block_sizes(
            [(raw[k], len(order.positions[k])) for k in order.by_first_layer], res)
        if res.mla_backend != "ROCM_AITER_MLA":  # MultipleOf(1): every block size
            check_block_size(sizes.block_size, request.block_size,
                             any(isinstance(s, AttentionSpec) for s in raw), release)
        if dcp_size(request) > 1:
            from kvledger.plan.engines.vllm.dcp import check_block

            check_block(sizes.block_size, request, release)
        specs = apply_block_sizes(raw, sizes)
    # vLLM buckets layers by spec equality: parts with equal specs (an MTP layer and the
    # decoder's full attention) share a bucket.
    buckets: list[tuple[KVCacheSpec, tuple[int, ...]]] = []
    for k in order.by_first_layer:
        same = next((b for b, (spec, _) in enumerate(buckets) if spec == specs[k]), None)
        if same is None:
            buckets.append((specs[k], order.positions[k]))
        else:
            spec, layers = buckets[same]
            buckets[same] = (spec, tuple(sorted(layers + order.positions[k])))
    grouping = get_kv_cache_groups(buckets, chunks=release.hybrid_group_chunks,
                                   sort_by_type=release.groups_sorted_by_spec_type)
    ctx = SpecContext(
        max_model_len=res.max_model_len,
        max_in_flight_tokens=res.max_in_flight_tokens,
        max_num_encoder_input_tokens=res.max_num_encoder_input_tokens,
        mamba_cache_mode=res.mamba_cache_mode,
        request_blocks=res.release.request_blocks,
        logged_tokens=res.release.logged_tokens,
        dcp=dcp_size(request),
    )
    warnings = list(sizes.notes) + list(grouping.warnings) + kv_notes + list(res.notes)
    warnings.extend(checkpoint_kv_notes(facts, request, res))
    warnings.extend(sentence_len_notes(facts, request, release))
    if v4:
        warnings.extend(dsv4.NOTES)
    if any(getattr(layer, "with_value", False) for layer in parts
           if layer.index in res.minimax_sparse_layers):
        warnings.append(
            "the config keeps an index value on some MiniMax-M3 sparse layers "
            f"(sparse_disable_index_value 0); {release.short}'s MiniMaxM3IndexerCache caches the "
            "index key only, and so does this plan"
        )
    if res.mamba_cache_mode == "align" and any(
        isinstance(layer, RecurrentState) and "kda" in layer.state_kind.lower()
        for layer in parts
    ):
        warnings.append(
            "KDA layers in align mode are charged 2 state blocks per request, as vLLM's CPU "
            f"oracle does; on a CUDA GPU {release.short} picks the FlashKDA prefill backend "
            f"for bf16 "
            "head_dim-128 bounded-gate models and charges a third (prefill checkpoint) block"
        )
    names = None
    if v4:
        named = [""] * len(order.indices)
        for k, layer in enumerate(parts):
            for ordinal in order.positions[k]:
                named[ordinal] = dsv4.cache_name(layer, facts)
        names = tuple(zip(order.indices, named, strict=True))
    return _Prepared(res, order.indices, order.roles, sizes, grouping, ctx, tuple(warnings),
                     names)


@record(frozen=True)
class _Order:
    """The planned layers in vLLM's registration order (a layer's *ordinal* is its position
    in it), for one set of layer groups taking part: a view of the facts alone, computed once
    per model (``ModelFacts.cached``).

    A *part* is a group, or on MiniMax-M3 the sparse or the dense layers of one (``_by_spec``):
    each part gets one spec."""

    parts: tuple[tuple[int, int], ...]  # (group number, index of its first layer)
    positions: tuple[tuple[int, ...], ...]  # per part: its layers' ordinals
    by_first_layer: tuple[int, ...]  # part numbers, in the order of their first layer
    indices: tuple[int, ...]  # per ordinal: the model's layer index
    roles: tuple[Role, ...]  # per ordinal


def _registration_order(
    facts: ModelFacts, taking: tuple[int, ...], sparse: frozenset[int], *, v4: bool = False
) -> _Order:
    parts: list[tuple[int, int]] = []
    # (layer index, 0 for an indexer's cache, position in the model's layers, part number)
    entries: list[tuple[int, int, int, int]] = []
    for number in taking:
        group = facts.groups[number]
        rank = 0 if group.layer.kind is Kind.INDEXER else 1
        if v4:
            from kvledger.plan.engines.vllm.dsv4 import registration_rank

            rank = registration_rank(group.layer, facts)  # five caches a layer, vLLM's order
        for members in _by_spec(group, sparse):
            parts.append((number, members[0][0]))
            entries.extend((index, rank, ordinal, len(parts) - 1) for index, ordinal in members)
    # vLLM registers a layer's indexer caches before its attention cache; the order only
    # decides which layer represents a mixed group in what vLLM reports.
    entries.sort()
    positions: list[list[int]] = [[] for _ in parts]
    for ordinal, entry in enumerate(entries):
        positions[entry[3]].append(ordinal)
    return _Order(
        parts=tuple(parts),
        positions=tuple(tuple(p) for p in positions),
        by_first_layer=tuple(sorted(range(len(parts)), key=lambda k: positions[k][0])),
        indices=tuple(e[0] for e in entries),
        roles=tuple(facts.groups[parts[e[3]][0]].layer.role for e in entries),
    )


def _by_spec(group: LayerGroup, sparse: frozenset[int]) -> list[list[tuple[int, int]]]:
    """A group's (index, position in the model's layers) pairs, split where vLLM gives equal
    facts different specs: MiniMax-M3's sparse-attention layers (``sparse``, from
    ``Resolved.minimax_sparse_layers``) take a kernel-block alignment its dense layers do not."""
    pairs = list(zip(group.indices, group.ordinals, strict=True))
    if not sparse:
        return [pairs]
    on = [p for p in pairs if p[0] in sparse]
    off = [p for p in pairs if p[0] not in sparse]
    return [part for part in (on, off) if part]


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
            f"but {res.release.short} does not adopt it under --kv-cache-dtype auto (it reads "
            "only a "
            f"ModelOpt quant_method in config.json, or an hf_quant_config.json with a ModelOpt "
            f"producer when config.json has no quantization_config, or a compressed-tensors "
            f"kv_cache_scheme): it stores {res.kv_cache_dtype}; pass --kv-cache-dtype fp8 to "
            "use the checkpoint's scales"
        ]
    return []


def _group_info(
    group: Group, ctx: SpecContext, names: tuple[tuple[int, str], ...] | None = None
) -> GroupInfo:
    # Per-layer representative, as vLLM's scheduler view reports a UniformType group.
    spec: KVCacheSpec = group.spec.specs[0] if isinstance(group.spec, UniformTypeSpecs) else (
        group.spec
    )
    caches = ""
    if names is not None:
        from kvledger.plan.engines.vllm.dsv4 import group_caches

        caches = group_caches([names[i] for i in group.layers])
    return GroupInfo(
        spec=spec_name(group.spec),
        num_layers=len(group.layers),
        block_size=spec.block_size,
        page_size_bytes=spec.page_size_bytes,
        max_memory_usage_bytes_per_request=spec.max_memory_usage_bytes(ctx),
        blocks_per_request=group.spec.blocks_per_request(ctx),
        caches=caches,
    )


def _layer_specs(
    buckets: tuple[Bucket, ...], members: Set[int] | None
) -> tuple[tuple[dict[str, Any], int], ...]:
    """Each distinct spec of ``members`` (None: every planned layer) with its layer count, in
    order of first layer: what vLLM reports as its unique layer specs."""
    if members is None:
        return tuple((spec.describe(), len(layers)) for spec, layers in buckets)
    kept = [(spec, [i for i in layers if i in members]) for spec, layers in buckets]
    ordered = sorted(((spec, mine) for spec, mine in kept if mine), key=lambda b: b[1][0])
    return tuple((spec.describe(), len(mine)) for spec, mine in ordered)


def _tp_heads(buckets: tuple[Bucket, ...]) -> int | None:
    """KV heads per rank of the model's own attention (not indexer keys or rings)."""
    for s, _ in buckets:
        if isinstance(s, AttentionSpec) and not isinstance(s, CircularBufferSpec) and not (
            isinstance(s, MLAAttentionSpec) and s.is_indexer
        ):
            return s.num_kv_heads
    if any(isinstance(s, MambaSpec) for s, _ in buckets):
        # An attention-free model: vLLM ModelConfig.get_num_kv_heads (config/model.py) still
        # answers max(1, total_num_kv_heads // tp), and total is 0 (oracle: falcon-mamba-7b).
        return 1
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
    decoder = [i for i, role in zip(prep.indices, prep.roles, strict=True)
               if role is Role.DECODER]
    return pp_stages(max(decoder) + 1 if decoder else 1, pp)


def _stage_members(prep: _Prepared, pp: int) -> list[set[int]]:
    ranges = _stage_ranges(prep, pp)
    # Stage of each decoder index, by one pass over the ranges (linear overall, issue 10; the
    # ranges are contiguous from 0, so every decoder index has one).
    stage_of = [k for k, (a, b) in enumerate(ranges) for _ in range(a, b)]
    members: list[set[int]] = [set() for _ in ranges]
    for ordinal, (index, role) in enumerate(zip(prep.indices, prep.roles, strict=True)):
        stage = len(ranges) - 1  # MTP / draft layers run on the last stage
        if role is Role.DECODER:
            stage = stage_of[index]
        members[stage].add(ordinal)
    return members


def _plan(
    facts: ModelFacts,
    prep: _Prepared,
    groups: tuple[Group, ...],
    members: set[int] | None,
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
        groups=tuple(_group_info(g, prep.ctx, prep.cache_names) for g in groups),
        spec_buckets=prep.grouping.buckets,
        spec_members=None if members is None else frozenset(members),
        resolved=prep.res,
        mamba_block_size=prep.sizes.mamba_block_size if prep.res.release.mamba_cache_settings
        else None,
        mamba_page_size_padded=prep.sizes.mamba_page_size_padded,
        tp_kv_heads_per_rank=_tp_heads(prep.grouping.buckets),
        warnings=tuple(warnings),
        stage=stage,
        layer_range=layer_range,
        stages=stages,
        refusal_reason=reason,
    )


def _bound(request: PlanRequest) -> VllmRelease:
    """The profile of the release ``request`` names, bound as the engine binds it
    (``get_layout``): a library caller of ``plan_vllm`` without a layout."""
    from kvledger.plan.engines.base import get_layout

    layout: Any = get_layout("vllm", request.engine_release)  # a VllmEngine (not imported:
    profile: VllmRelease = layout.profile  # it imports this module)
    return profile


def _extensible_granule(request: PlanRequest, release: VllmRelease) -> int:
    """vLLM 0.34's commit granule when its extensible KV cache sizes this launch (a GPU
    budget, no kv_cache_memory_bytes: extensible_budget.py); 0 otherwise."""
    if request.kv_cache_memory_bytes is not None:
        return 0  # a given budget: never extensible (and the module stays unimported)
    from kvledger.plan.engines.vllm.extensible_budget import GRANULE, applies

    return GRANULE if applies(request, release) else 0


def _check_budget(available_bytes: int) -> None:
    if isinstance(available_bytes, bool) or not isinstance(available_bytes, int):
        raise TypeError(f"available_bytes must be an int, got {available_bytes!r}")
    if available_bytes < 0:
        raise ValueError(f"available_bytes must be >= 0, got {available_bytes}")


def plan_vllm_stage(
    facts: ModelFacts, request: PlanRequest, available_bytes: int, stage: int,
    release: VllmRelease | None = None,
) -> VllmPlan:
    """One pipeline stage on its own budget (blocks not yet reconciled across stages), as
    ``release`` builds it (``plan_vllm`` says how None binds one)."""
    _check_budget(available_bytes)
    bound = release if release is not None else _bound(request)
    prep = _prepare(facts, request, bound)
    members = _stage_members(prep, request.pipeline_parallel_size)
    if not 0 <= stage < len(members):
        raise ValueError(f"stage {stage} out of range for {len(members)} pipeline stages")
    groups = _project(prep.grouping.groups, members[stage])
    math = block_math(groups, available_bytes, prep.ctx,
                      granule=_extensible_granule(request, bound))
    return _plan(
        facts, prep, groups, members[stage], available_bytes, math, stage=stage,
        layer_range=_stage_ranges(prep, request.pipeline_parallel_size)[stage],
    )


def plan_vllm(
    facts: ModelFacts,
    request: PlanRequest,
    available_bytes: int,
    *,
    release: VllmRelease | None = None,
    stage_available_bytes: Sequence[int] | None = None,
    startup_checked: bool = False,
) -> VllmPlan:
    """The vLLM plan for one GPU's KV budget (``available_bytes`` per worker), as
    ``release`` builds it. The engine passes the release it is bound to; a library caller
    that passes none binds the one ``request.engine_release`` names here, once (the newest
    when None): no rule below looks a release up.

    ``stage_available_bytes`` gives each pipeline stage's workers their own budget (vLLM
    ``get_kv_cache_configs`` takes one ``available_memory`` per worker): a stage whose GPUs
    also hold a model-local cache has less. Default: ``available_bytes`` on every stage.
    ``startup_checked``: the caller already ran vLLM's start-up checks on these facts and this
    request (the engine does, before the budget), so they are not run twice.
    """
    bound = release if release is not None else _bound(request)
    _check_budget(available_bytes)
    prep = _prepare(facts, request, bound, startup_checked)
    pp = request.pipeline_parallel_size
    budgets = [available_bytes] * pp if stage_available_bytes is None else \
        list(stage_available_bytes)
    if len(budgets) != pp:
        raise ValueError(f"stage_available_bytes has {len(budgets)} entries for {pp} stages")
    for b in budgets:
        _check_budget(b)
    granule = _extensible_granule(request, bound)
    if pp == 1:
        math = block_math(prep.grouping.groups, budgets[0], prep.ctx, granule=granule)
        return _plan(facts, prep, prep.grouping.groups, None, budgets[0], math, stage=None)

    members = _stage_members(prep, pp)
    ranges = _stage_ranges(prep, pp)
    projected = _project_all(prep.grouping.groups, members)
    counts = [
        block_math(g, budgets[k], prep.ctx, granule=granule).num_blocks
        for k, g in enumerate(projected)
    ]
    # vLLM: every stage uses the smallest block count among stages.
    fewest = min(counts)
    stage_plans: list[VllmPlan] = []
    for k, (groups, m) in enumerate(zip(projected, members, strict=True)):
        math = block_math(groups, budgets[k], prep.ctx, num_blocks=fewest)
        stage_plans.append(
            _plan(
                facts, prep, groups, m, budgets[k], math, stage=k,
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
        facts, prep, prep.grouping.groups, None, min(budgets), math,
        stage=None, stages=tuple(stage_plans), extra_warnings=notes,
    )

"""From groups and a budget to vLLM's block count and the numbers it logs.

- bytes per block (``_get_kv_cache_bytes_per_block``): the widest group's pages summed —
  all groups draw block ids from one pool, and one id addresses a page in every layer of
  a group — rounded to the layers' block-stride alignment;
- ``num_blocks = available // bytes_per_block`` (``get_kv_cache_config_from_groups``);
- blocks per request at ``max_model_len``: the sum over groups of
  cdiv(max_memory_usage_bytes, page_size_bytes) (``get_max_concurrency_for_kv_cache_config``;
  before 0.28 one cdiv of the summed worst cases: ``VllmRelease.request_blocks``);
- "Maximum concurrency" = num_blocks / blocks per request (unrounded float);
- "GPU KV cache size" = int(max_concurrency * max_model_len) tokens (``get_kv_cache_capacity``;
  0.19 and 0.20 logged num_blocks // groups x block: ``VllmRelease.logged_tokens``);
- vLLM refuses to start when one max_model_len request needs more than the budget less the
  null block BlockPool holds back (``get_kv_cache_configs`` → ``_check_enough_kv_cache_memory``).
"""

from __future__ import annotations

import math

from kvledger.derive.layers import ceil_div
from kvledger.plan.engines.vllm.grouping import Group, block_outermost
from kvledger.plan.engines.vllm.specs import SpecContext, UniformTypeSpecs
from kvledger.records import record


@record(frozen=True)
class BlockMath:
    """The block count and the numbers vLLM logs from it, for one budget."""

    bytes_per_block: int
    num_blocks: int
    blocks_per_request: int
    max_concurrency: float
    kv_cache_tokens: int
    needed_bytes: int  # one max_model_len request
    refuses_to_start: bool


def bytes_per_block(groups: tuple[Group, ...]) -> int:
    """vLLM ``_get_kv_cache_bytes_per_block``: the widest group's pages.

    Layer-outermost layouts stride each layer by its own page rounded up to its block-stride
    alignment. Block-outermost layouts pack all of a block's pages together and round that
    block up to the lcm of every layer's alignment (GLM-5.3-Flash: 1,024 B MLA rows and its
    indexer's 64-row pages, 8,448 B, give a 33,792 B multiple).
    """
    if not groups:
        return 0
    members = [spec for g in groups for spec, _ in g.layer_specs()]
    if block_outermost(members):
        widest = max(g.layer_pages() for g in groups)
        lcm = math.lcm(*(spec.block_stride_alignment_bytes() for spec in members))
        return ceil_div(widest, lcm) * lcm
    return max(
        sum(
            n * ceil_div(spec.page_size_bytes, a) * a
            for spec, n in g.layer_specs()
            for a in (spec.block_stride_alignment_bytes(),)
        )
        for g in groups
    )


def segment_strides(groups: tuple[Group, ...]) -> list[int]:
    """The per-block strides of the KV cache allocation's segments (vLLM 0.34
    ``ExtensibleKVCache._segments``): one per layer region of the widest group in a
    layer-outermost layout, one block-sized segment in a block-outermost one."""
    if not groups:
        return []
    members = [spec for g in groups for spec, _ in g.layer_specs()]
    if block_outermost(members):
        return [bytes_per_block(groups)]
    widest = max(groups, key=lambda g: sum(
        n * ceil_div(spec.page_size_bytes, a) * a
        for spec, n in g.layer_specs() for a in (spec.block_stride_alignment_bytes(),)))
    return [ceil_div(spec.page_size_bytes, a) * a
            for spec, n in widest.layer_specs()
            for a in (spec.block_stride_alignment_bytes(),) for _ in range(n)]


def blocks_per_request(groups: tuple[Group, ...], ctx: SpecContext,
                       rule: str = "per_group") -> int:
    """Blocks one ``max_model_len`` request takes (the release's ``request_blocks``):
    "per_group" sums each group's cdiv(worst case, page); "summed" (vLLM to 0.26,
    ``get_max_concurrency_for_kv_cache_config``) divides the groups' summed worst case by the
    first group's page (the layers-per-group factor it multiplies both by cancels)."""
    if rule == "summed" and groups:
        usage = sum(_worst_case(g, ctx) for g in groups)
        return ceil_div(usage, groups[0].spec.page_size_bytes)
    return sum(g.spec.blocks_per_request(ctx) for g in groups)


def _worst_case(group: Group, ctx: SpecContext) -> int:
    """``max_memory_usage_bytes`` of a group's spec (a uniform-type group: its layers' sum)."""
    if isinstance(group.spec, UniformTypeSpecs):
        return sum(spec.max_memory_usage_bytes(ctx) * n for spec, n in group.layer_specs())
    return group.spec.max_memory_usage_bytes(ctx)


def logged_tokens(groups: tuple[Group, ...], num_blocks: int, concurrency: float,
                  ctx: SpecContext, rule: str = "concurrency") -> int:
    """The "GPU KV cache size" tokens (the release's ``logged_tokens``): "concurrency" =
    int(max_concurrency x max_model_len); "blocks_per_group" (vLLM 0.19, 0.20
    ``_report_kv_cache_config``) = num_blocks // len(groups) x the smallest group block."""
    if rule == "blocks_per_group" and groups:
        return num_blocks // len(groups) * min(g.spec.block_size for g in groups)
    return int(concurrency * ctx.max_model_len)


def block_math(
    groups: tuple[Group, ...],
    available_bytes: int,
    ctx: SpecContext,
    *,
    num_blocks: int | None = None,
    granule: int = 0,
) -> BlockMath:
    """``num_blocks`` overrides the budget's count (pipeline stages reconcile to the min).
    ``granule``: vLLM 0.34's extensible KV cache commits each segment in whole granules of
    this size (``extensible_budget.granule_blocks``); 0: ``available // bytes_per_block``."""
    bpb = bytes_per_block(groups)
    if bpb <= 0:
        # vLLM: attention-free models get num_blocks = 1 (the null block).
        return BlockMath(0, 1, 0, 0.0, 0, 0, False)
    if num_blocks is not None:
        blocks = num_blocks
    elif granule:
        from kvledger.plan.engines.vllm.extensible_budget import granule_blocks

        blocks = granule_blocks(available_bytes, bpb, segment_strides(groups), granule)
    else:
        blocks = available_bytes // bpb
    per_request = blocks_per_request(groups, ctx, ctx.request_blocks)
    concurrency = blocks / per_request if per_request else 0.0
    tokens = logged_tokens(groups, blocks, concurrency, ctx, ctx.logged_tokens)
    needed = bpb * per_request
    usable = available_bytes - bpb  # the null block
    refuses = usable <= 0 or needed > usable
    return BlockMath(bpb, blocks, per_request, concurrency, tokens, needed, refuses)

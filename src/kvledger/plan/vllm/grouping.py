"""vLLM's KV cache grouping: which layers share a block table.

Reproduces ``get_kv_cache_groups`` (vllm/v1/core/kv_cache_utils.py, vLLM 0.32):

1. every layer has the same spec → one group;
2. every layer has the same spec *type* and block size (``UniformTypeKVCacheSpecs``, e.g.
   MLA + its sparse indexer) → one group whose page is the sum of its layers' pages;
3. otherwise unify page sizes (``unify_kv_cache_spec_page_size``: grow the block size of
   smaller attention pages, pad Mamba pages) and split each spec's layers into groups of
   equal size (``_get_kv_cache_groups_uniform_page_size``). A group short of layers is
   implicitly padded: the shared block still spans ``group_size`` pages;
4. in a block-outermost layout with mixed page sizes, before step 3, pack uniform-type
   buckets side by side in each block (``_get_packed_kv_cache_groups``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvledger.derive.layers import ceil_div
from kvledger.plan.vllm.resolve import VllmLayoutError
from kvledger.plan.vllm.specs import (
    AttentionSpec,
    CircularBufferSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
    UniformTypeSpecs,
)


@dataclass(frozen=True)
class Group:
    """One KV cache group: its layers and the spec they share."""

    layers: tuple[int, ...]  # ordinals into the planned layer list
    spec: KVCacheSpec | UniformTypeSpecs

    def layer_pages(self, specs: dict[int, KVCacheSpec]) -> int:
        """Bytes of one block of this group: the sum of its layers' pages."""
        return sum(specs[i].page_size_bytes for i in self.layers)


@dataclass(frozen=True)
class Grouping:
    """vLLM's KV cache groups, the per-layer specs after unification, and any warnings."""

    groups: tuple[Group, ...]
    specs: dict[int, KVCacheSpec]  # per layer, after page-size unification
    warnings: tuple[str, ...] = ()


def _uniform_type(specs: dict[int, KVCacheSpec]) -> UniformTypeSpecs | None:
    # vLLM ``UniformTypeKVCacheSpecs.from_specs``: same type key and same block size.
    values = list(specs.values())
    key = values[0].uniform_type_key()
    if key is None or any(v.uniform_type_key() != key for v in values[1:]):
        return None
    if len({v.block_size for v in values}) != 1:
        return None
    return UniformTypeSpecs(block_size=values[0].block_size, specs=tuple(values))


def unify_page_sizes(specs: dict[int, KVCacheSpec]) -> dict[int, KVCacheSpec]:
    """vLLM ``unify_kv_cache_spec_page_size``."""
    pages = {s.page_size_bytes for s in specs.values()}
    if len(pages) <= 1:
        return specs
    largest = max(pages)
    out: dict[int, KVCacheSpec] = {}
    for i, spec in specs.items():
        page = spec.page_size_bytes
        if page == largest:
            out[i] = spec
        elif isinstance(spec, MambaSpec):
            out[i] = spec.with_page_size_padded(largest)
        elif largest % page == 0:
            out[i] = spec.with_block_size(spec.block_size * (largest // page))
        elif isinstance(spec, AttentionSpec) and not isinstance(spec, MLAAttentionSpec):
            out[i] = spec.with_page_size_padded(largest)
        else:
            raise VllmLayoutError(
                f"vLLM cannot unify page size {page} with {largest} (layer {i}, {spec.kind})"
            )
    return out


def block_outermost(specs: dict[int, KVCacheSpec]) -> bool:
    """Whether vLLM resolves a block-outermost KV cache layout (BLHNC) for these layers.

    vLLM ``resolve_kv_cache_layout`` takes the first layout every backend that declares one
    supports (``get_supported_kv_cache_layouts``); the SM90 backends kvledger models declare
    none (any layout; default preference LBNHC, layer-outermost) except ``KpoolTailBackend``
    (GLM-5.3-Flash's indexer ring, ``CircularBufferSpec``), which takes BLHNC only.
    """
    return any(isinstance(s, CircularBufferSpec) for s in specs.values())


def get_kv_cache_groups(specs: dict[int, KVCacheSpec]) -> Grouping:
    """vLLM ``get_kv_cache_groups``."""
    if not specs:
        return Grouping((), {})
    values = list(specs.values())
    if all(v == values[0] for v in values[1:]):
        return Grouping((Group(tuple(specs), values[0]),), dict(specs))
    uniform = _uniform_type(specs)
    if uniform is not None:
        return Grouping((Group(tuple(specs), uniform),), dict(specs))
    if block_outermost(specs) and len({s.page_size_bytes for s in values}) > 1:
        return packed_groups(specs)
    if any(isinstance(s, CircularBufferSpec) for s in values):
        raise VllmLayoutError("circular-buffer caches need vLLM's block-outermost layout")

    unified = unify_page_sizes(specs)
    # Same spec → same bucket, buckets ordered by first appearance (dict order).
    buckets: dict[KVCacheSpec, list[int]] = {}
    for i, spec in unified.items():
        buckets.setdefault(spec, []).append(i)
    sizes = [len(v) for v in buckets.values()]
    smallest, largest = min(sizes), max(sizes)
    # vLLM: the "1" of an n:1 pattern is the group size, unless the counts are close
    # (max < 1.5 * min), where padding the smaller types to the larger count wastes less.
    group_size = largest if largest < smallest * 1.5 else smallest
    groups: list[Group] = []
    warnings: list[str] = []
    for spec, layers in buckets.items():
        padding = group_size - len(layers) % group_size
        if padding != group_size:
            warnings.append(
                f"vLLM adds {padding} padding layer(s) to {spec.kind} groups "
                f"(up to {padding / len(layers) * 100:.2f}% of their KV memory wasted)"
            )
        n = ceil_div(len(layers), group_size)
        # layers[i::n]: keeps pipeline stages balanced (vLLM comment on PP).
        groups.extend(Group(tuple(layers[k::n]), spec) for k in range(n))
    return Grouping(tuple(groups), unified, tuple(warnings))


def approximate_gcd(values: list[int], lower_bound: int) -> int:
    """vLLM ``_approximate_gcd``: the chunk d >= lower_bound (up to max(values)) that wastes
    the least rounding each value up to a multiple of d; ties go to the larger d."""
    best_d, best_pad = lower_bound, -1
    for d in range(max(1, lower_bound), max(values) + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad < 0 or pad < best_pad or (pad == best_pad and d > best_d):
            best_d, best_pad = d, pad
    return best_d


def _is_uniform(specs: list[KVCacheSpec]) -> bool:
    # vLLM ``UniformTypeKVCacheSpecs.is_uniform_type``: one block size, one type key.
    key = specs[0].uniform_type_key()
    return key is not None and all(
        s.uniform_type_key() == key and s.block_size == specs[0].block_size for s in specs
    )


def packed_groups(specs: dict[int, KVCacheSpec]) -> Grouping:
    """vLLM ``_get_packed_kv_cache_groups`` (block-outermost layout, mixed page sizes).

    Layers are bucketed greedily into uniform-type buckets (in registration order). A bucket
    whose page sizes each have the same layer count is a repeating pattern ("balanced"); the
    balanced buckets are split into groups of the same number of pattern repeats, chosen by
    ``approximate_gcd`` above a floor set by the largest mixed-page bucket. State buckets
    (Mamba, rings) are then split so one group of them fits in the bytes a block already
    holds for the others (``anchor_bytes``). Groups are listed bucket by bucket.
    """
    buckets: list[list[int]] = []
    for i, spec in specs.items():
        for bucket in buckets:
            # A bucket is uniform already, and uniformity is agreement with its first member:
            # comparing with that one alone is the same test, in constant time (issue 10: the
            # whole bucket per layer was quadratic in layers).
            if _is_uniform([specs[bucket[0]], spec]):
                bucket.append(i)
                break
        else:
            buckets.append([i])

    def by_page(bucket: list[int]) -> dict[int, list[int]]:
        pages: dict[int, list[int]] = {}
        for i in bucket:
            pages.setdefault(specs[i].page_size_bytes, []).append(i)
        return pages

    def max_per_page(bucket: list[int]) -> int:
        return max(len(v) for v in by_page(bucket).values())

    def balanced(bucket: list[int]) -> bool:
        return len({len(v) for v in by_page(bucket).values()}) == 1

    floor = max(
        (max_per_page(b) for b in buckets if balanced(b) and len(by_page(b)) > 1), default=0
    )
    repeats = (
        approximate_gcd([max_per_page(b) for b in buckets if balanced(b)], floor)
        if floor else None
    )

    def num_groups_for(bucket: list[int]) -> int:
        if balanced(bucket) and repeats is not None:
            return ceil_div(max_per_page(bucket), repeats)
        return 1

    def is_state(bucket: list[int]) -> bool:
        first = specs[bucket[0]]
        if isinstance(first, MambaSpec | CircularBufferSpec):
            return True
        return repeats is None and isinstance(first, SlidingWindowSpec)

    def widest_group_bytes(bucket: list[int], n: int) -> int:
        return sum(ceil_div(len(v), n) * page for page, v in by_page(bucket).items())

    anchor = max(
        (widest_group_bytes(b, len(b) if is_state(b) else num_groups_for(b)) for b in buckets),
        default=0,
    )
    groups: list[Group] = []
    for bucket in buckets:
        n = num_groups_for(bucket)
        if anchor and is_state(bucket):
            # Cap a state group at the states a block already fits.
            per_block = max(anchor // specs[bucket[0]].page_size_bytes, 1)
            n = max(n, ceil_div(len(bucket), per_block))
        if n == 1:
            split = [tuple(bucket)]
        else:
            # One repeat = one layer of each page size; group k takes repeats k, k+n, ...
            pattern = list(zip(*by_page(bucket).values(), strict=False))
            split = [tuple(i for rep in pattern[k::n] for i in rep) for k in range(n)]
        for members in split:
            groups.append(Group(members, UniformTypeSpecs(
                block_size=specs[members[0]].block_size,
                specs=tuple(specs[i] for i in members),
            )))
    return Grouping(tuple(groups), dict(specs))

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

from collections.abc import Iterable

from kvledger.derive.layers import ceil_div
from kvledger.plan.engines.vllm.resolve import VllmLayoutError
from kvledger.plan.engines.vllm.specs import (
    AttentionSpec,
    CircularBufferSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
    UniformTypeSpecs,
    counted,
    spec_name,
)
from kvledger.records import record


@record(frozen=True)
class Group:
    """One KV cache group: its layers and the spec they share."""

    layers: tuple[int, ...]  # ordinals into the planned layer list
    spec: KVCacheSpec | UniformTypeSpecs

    def layer_specs(self) -> list[tuple[KVCacheSpec, int]]:
        """The distinct spec objects of this group's layers, each with its layer count.

        Layers with equal facts share one spec object, so this is a handful of entries
        however many layers the group has (``counted``)."""
        if not self.layers:
            return []
        if isinstance(self.spec, UniformTypeSpecs):
            return counted(self.spec.specs)
        return [(self.spec, len(self.layers))]

    def layer_pages(self) -> int:
        """Bytes of one block of this group: the sum of its layers' pages."""
        return sum(spec.page_size_bytes * n for spec, n in self.layer_specs())


Bucket = tuple[KVCacheSpec, tuple[int, ...]]  # a spec and its layers' ordinals, in order


@record(frozen=True)
class Grouping:
    """vLLM's KV cache groups, the layers of each distinct spec after page-size unification
    (in order of first layer: what vLLM reports as its unique layer specs), and warnings."""

    groups: tuple[Group, ...]
    buckets: tuple[Bucket, ...]
    warnings: tuple[str, ...] = ()


def buckets_of(specs: dict[int, KVCacheSpec]) -> list[Bucket]:
    """Per-layer specs (ordinal → spec) as buckets of equal specs, in order of first layer
    (vLLM buckets layers by spec equality)."""
    found: list[tuple[KVCacheSpec, list[int]]] = []
    by_object: dict[int, list[int]] = {}  # equal layers usually share one spec object
    for i, spec in specs.items():
        members = by_object.get(id(spec))
        if members is None:
            members = next((m for s, m in found if s == spec), None)
            if members is None:
                members = []
                found.append((spec, members))
            by_object[id(spec)] = members
        members.append(i)
    return [(spec, tuple(members)) for spec, members in found]


def _per_layer(buckets: list[Bucket]) -> dict[int, KVCacheSpec]:
    """Back from buckets to one spec per layer, in layer order (the rare paths need it)."""
    return dict(sorted((i, spec) for spec, layers in buckets for i in layers))


def _uniform_type(buckets: list[Bucket]) -> bool:
    # vLLM ``UniformTypeKVCacheSpecs.from_specs``: same type key and same block size.
    key = buckets[0][0].uniform_type_key()
    if key is None or any(s.uniform_type_key() != key for s, _ in buckets[1:]):
        return False
    return len({s.block_size for s, _ in buckets}) == 1


def unify_page_size(spec: KVCacheSpec, largest: int) -> KVCacheSpec:
    """One spec of vLLM ``unify_kv_cache_spec_page_size``: its page grown to ``largest``."""
    page = spec.page_size_bytes
    if page == largest:
        return spec
    if isinstance(spec, MambaSpec):
        return spec.with_page_size_padded(largest)
    if largest % page == 0:
        return spec.with_block_size(spec.block_size * (largest // page))
    if isinstance(spec, AttentionSpec) and not isinstance(spec, MLAAttentionSpec):
        return spec.with_page_size_padded(largest)
    raise VllmLayoutError(f"vLLM cannot unify page size {page} with {largest} ({spec.kind})")


def unify_page_sizes(buckets: list[Bucket]) -> list[Bucket]:
    """vLLM ``unify_kv_cache_spec_page_size``, bucket by bucket. Two buckets whose unified
    specs are equal become one (layers in order), and buckets stay in order of first layer."""
    pages = {s.page_size_bytes for s, _ in buckets}
    if len(pages) <= 1:
        return buckets
    largest = max(pages)
    merged: list[Bucket] = []
    for spec, layers in buckets:
        unified = unify_page_size(spec, largest)
        same = next((k for k, (s, _) in enumerate(merged) if s == unified), None)
        if same is None:
            merged.append((unified, layers))
        else:
            merged[same] = (unified, tuple(sorted(merged[same][1] + layers)))
    merged.sort(key=lambda bucket: bucket[1][0])
    return merged


def block_outermost(specs: Iterable[KVCacheSpec]) -> bool:
    """Whether vLLM resolves a block-outermost KV cache layout (BLHNC) for these layers.

    vLLM ``resolve_kv_cache_layout`` takes the first layout every backend that declares one
    supports (``get_supported_kv_cache_layouts``); the SM90 backends kvledger models declare
    none (any layout; default preference LBNHC, layer-outermost) except ``KpoolTailBackend``
    (GLM-5.3-Flash's indexer ring, ``CircularBufferSpec``), which takes BLHNC only, and
    ``DeepseekV4IndexerBackend`` (BLHNC, BLNHC: ``dsv4.py``) — ``needs_block_outermost``.
    """
    return any(s.needs_block_outermost() for s in specs)


def get_kv_cache_groups(buckets: list[Bucket], *, chunks: bool = False,
                        sort_by_type: bool = False) -> Grouping:
    """vLLM ``get_kv_cache_groups``, over the planned layers' buckets of equal specs (in order
    of first layer, ``buckets_of``): its cost follows the number of distinct specs, not of
    layers, except on the uniform-type and packed paths.

    ``chunks`` (``VllmRelease.hybrid_group_chunks``, 0.10): the group size is the fewest layers
    of a spec, without the 1.5 × rule, and each spec's layers go in consecutive chunks.
    ``sort_by_type`` (``VllmRelease.groups_sorted_by_spec_type``, 0.10): the groups are listed
    by their spec's class name, as ``unify_kv_cache_configs`` sorts them (its key goes on to
    the spec's fields, which here keeps groups of one class in the order of first layer)."""
    grouping = _groups(buckets, chunks)
    if not sort_by_type:
        return grouping
    ordered = sorted(grouping.groups, key=lambda g: spec_name(g.spec))
    return Grouping(tuple(ordered), grouping.buckets, grouping.warnings)


def _groups(buckets: list[Bucket], chunks: bool) -> Grouping:
    if not buckets:
        return Grouping((), ())
    if len(buckets) == 1:
        spec, layers = buckets[0]
        return Grouping((Group(layers, spec),), tuple(buckets))
    if _uniform_type(buckets):
        per_layer = _per_layer(buckets)
        uniform = UniformTypeSpecs(block_size=buckets[0][0].block_size,
                                   specs=tuple(per_layer.values()))
        return Grouping((Group(tuple(per_layer), uniform),), tuple(buckets))
    outermost = block_outermost(s for s, _ in buckets)
    if outermost and len({s.page_size_bytes for s, _ in buckets}) > 1:
        return Grouping(packed_groups(_per_layer(buckets)), tuple(buckets))
    if outermost:
        raise VllmLayoutError("circular-buffer caches need vLLM's block-outermost layout")

    buckets = unify_page_sizes(buckets)
    sizes = [len(layers) for _, layers in buckets]
    smallest, largest = min(sizes), max(sizes)
    # vLLM: the "1" of an n:1 pattern is the group size, unless the counts are close
    # (max < 1.5 * min), where padding the smaller types to the larger count wastes less.
    group_size = largest if largest < smallest * 1.5 and not chunks else smallest
    groups: list[Group] = []
    warnings: list[str] = []
    for spec, layers in buckets:
        padding = group_size - len(layers) % group_size
        if padding != group_size:
            warnings.append(
                f"vLLM adds {padding} padding layer(s) to {spec.kind} groups "
                f"(up to {padding / len(layers) * 100:.2f}% of their KV memory wasted)"
            )
        n = ceil_div(len(layers), group_size)
        if chunks:  # 0.10: layers[i:i + group_size]
            groups.extend(Group(layers[k:k + group_size], spec)
                          for k in range(0, len(layers), group_size))
            continue
        # layers[i::n]: keeps pipeline stages balanced (vLLM comment on PP).
        groups.extend(Group(layers[k::n], spec) for k in range(n))
    return Grouping(tuple(groups), tuple(buckets), tuple(warnings))


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


def packed_groups(specs: dict[int, KVCacheSpec]) -> tuple[Group, ...]:
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
    return tuple(groups)

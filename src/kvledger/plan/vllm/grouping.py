"""vLLM's KV cache grouping: which layers share a block table.

Reproduces ``get_kv_cache_groups`` (vllm/v1/core/kv_cache_utils.py, vLLM 0.32):

1. every layer has the same spec → one group;
2. every layer has the same spec *type* and block size (``UniformTypeKVCacheSpecs``, e.g.
   MLA + its sparse indexer) → one group whose page is the sum of its layers' pages;
3. otherwise unify page sizes (``unify_kv_cache_spec_page_size``: grow the block size of
   smaller attention pages, pad Mamba pages) and split each spec's layers into groups of
   equal size (``_get_kv_cache_groups_uniform_page_size``). A group short of layers is
   implicitly padded: the shared block still spans ``group_size`` pages.
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


def get_kv_cache_groups(specs: dict[int, KVCacheSpec]) -> Grouping:
    if not specs:
        return Grouping((), {})
    if any(isinstance(s, CircularBufferSpec) for s in specs.values()):
        return _pooled_indexer_groups(specs)
    values = list(specs.values())
    if all(v == values[0] for v in values[1:]):
        return Grouping((Group(tuple(specs), values[0]),), dict(specs))
    uniform = _uniform_type(specs)
    if uniform is not None:
        return Grouping((Group(tuple(specs), uniform),), dict(specs))

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


def _pooled_indexer_groups(specs: dict[int, KVCacheSpec]) -> Grouping:
    """GLM-5.3-Flash: KDA states + MLA with a pooled indexer and its raw-row ring.

    vLLM ``_get_kv_cache_groups_glm5_next``: every MLA and indexer layer in one
    ``UniformTypeKVCacheSpecs`` group; the rings (``CircularBufferSpec``) in their own
    group, one block per request; the Mamba states (already padded to the MLA page) split
    into cdiv(#mamba, #MLA) groups, layer k going to group k mod n, so each group fits the
    MLA slots of a block. One block holds every MLA and indexer page.
    """
    mamba = [i for i, s in specs.items() if isinstance(s, MambaSpec)]
    rings = [i for i, s in specs.items() if isinstance(s, CircularBufferSpec)]
    attn = [i for i in specs if i not in mamba and i not in rings]
    mla = [i for i in attn if isinstance(specs[i], MLAAttentionSpec)]
    if not mamba or len(mla) != len(attn):
        raise VllmLayoutError(
            "circular-buffer caches are modelled only in vLLM's GLM-5.3-Flash layout "
            "(Mamba-style states + MLA with a pooled indexer)"
        )
    full_mla = [i for i in mla if getattr(specs[i], "tokens_per_state", 1) == 1]
    if not full_mla:
        raise VllmLayoutError("GLM-5.3-Flash layout needs MLA layers besides the indexer")
    uniform = _uniform_type({i: specs[i] for i in attn})
    if uniform is None:
        raise VllmLayoutError("MLA and pooled-indexer layers do not share one block size")
    n = ceil_div(len(mamba), len(full_mla))
    groups: list[Group] = []
    for k in range(n):
        members = tuple(i for j, i in enumerate(mamba) if j % n == k)
        groups.append(Group(members, specs[members[0]]))
    groups.append(Group(tuple(attn), uniform))
    if len({specs[i] for i in rings}) != 1:
        raise VllmLayoutError("indexer rings of different shapes are not modelled")
    groups.append(Group(tuple(rings), specs[rings[0]]))
    # Order as vLLM 0.32 reports them: state groups, the MLA group, the ring group.
    return Grouping(tuple(groups), dict(specs))

"""DeepSeek-V4's two entry classes: a paged block and a request's slot, priced in rows.

``DeepseekV4AttentionMetadataBuilder.sub_pool_specs`` (``deepseek_v4_attn.py``) declares
``page_pool(geo.block_bytes(row) + indexer block bytes)`` and ``state_pool("state",
geo.slot_bytes(row), entries_per_req=1)``, where ``geo`` is the row space of
``v4_pool_geometry.UnifiedPoolGeometry`` and ``row`` the bytes one row costs across the planes.
The rules, as read there (and in ``state_arena.py``):

- block size 256; per-layer ratios from ``compress_ratios`` (MTP layers included): 0 dense,
  4 CSA, 128 HCA.
- an *envelope* (one block) holds ``256 // ratio`` rows per compressed layer, HCA first;
  dense layers hold none.
- an *entry* holds every layer's sliding window: per class (dense, HCA, CSA, in that order)
  ``entry_rows_for(n, stride, ring) = (n − 1)·stride + ring_offset(ring − 1) + 1`` with
  ``ring_offset(q) = (q // stride)·n·stride + q % stride``; ``stride`` is ``ring`` for the
  dense class and ``256 // ratio`` otherwise; ``ring = sliding_window + mtp_k``.
- the compressor state (fp32 ``StateField``s: CSA main kv/score ``(8 + k, 2·head_dim)``, CSA
  indexer kv/score ``(8 + k, 2·index_head_dim)``, HCA main kv/score ``(128 + k, head_dim)``,
  ``k = mtp_k``) takes ``arena_rows`` off the front of a slot: ``plan_field_planes`` puts each
  field in one plane so that the rows needed, ``max over planes ceil(entry bytes / row
  width)``, is least (fields 256-B aligned, ties to the first assignment);
- ``slot_rows`` = ``arena_rows + entry rows`` rounded up to 2.
- planes: bf16 KV is one plane of ``head_dim × 2`` B; fp8 KV (only on gfx950 / gfx1250; any
  other arch falls back to bf16) is a 1-B NoPE plane of ``head_dim`` and a bf16 RoPE plane of
  ``qk_rope_head_dim``.
- indexer (CSA layers): FP4 (the default except on gfx942) ``groups = index_head_dim // 128 ×
  4 × 64`` → ``17 × groups`` B a layer; else FP8 ``64 × (index_head_dim + 4)`` B a layer.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from kvledger.declare.pools import page_pool, state_pool
from kvledger.plan.engines.atom.specs import (
    FP32,
    STATE_SLOT_CLASS,
    AtomConfigError,
    EntryClasses,
    Settings,
)

BLOCK = 256
DENSE, CSA, HCA = 0, 4, 128
_ALIGN = 256  # state_arena._ALIGN
FP8_KV_ARCHS = ("gfx950", "gfx1250")


def _align(n: int, to: int) -> int:
    return -(-n // to) * to


def entry_rows_for(layers: int, stride: int, ring: int) -> int:
    last = ring - 1
    offset = (last // stride) * (layers * stride) + last % stride
    return (layers - 1) * stride + offset + 1


def fields_bytes(sizes: Sequence[int]) -> int:
    """``state_arena.entry_bytes_for``: each field starts on a 256-B boundary, the entry
    ends on one."""
    end = 0
    for size in sizes:
        end = _align(end, _ALIGN) + size
    return _align(end, _ALIGN)


def arena_rows(sizes: Sequence[int], widths: Sequence[int]) -> int:
    """``state_arena.plan_field_planes``: the fewest rows over every field-to-plane
    assignment."""
    best: int | None = None
    for assignment in itertools.product(range(len(widths)), repeat=len(sizes)):
        rows = max(-(-fields_bytes([s for s, p in zip(sizes, assignment, strict=True)
                                    if p == plane]) // width)
                   for plane, width in enumerate(widths))
        if best is None or rows < best:
            best = rows
    return best or 0


def v4(cfg: Mapping[str, Any], s: Settings, *, platform: str) -> EntryClasses:
    ratios = cfg.get("compress_ratios")
    if not isinstance(ratios, list) or not ratios:
        raise AtomConfigError("deepseek_v4 hf_config must define compress_ratios")
    unknown = sorted(set(ratios) - {DENSE, CSA, HCA})
    if unknown:
        raise AtomConfigError(f"unknown V4 compress ratios {unknown}")
    head = int(cfg.get("kv_head_dim") or 512)  # getattr(hf, "kv_head_dim", 512)
    index_head = int(cfg.get("index_head_dim") or 128)
    window = int(cfg.get("sliding_window") or 128)
    rope = int(cfg.get("qk_rope_head_dim") or 64)
    k = s.num_spec
    fp8 = s.kv_dtype == "fp8" and platform in FP8_KV_ARCHS
    widths = [head * 1, rope * 2] if fp8 else [head * 2]
    n_csa, n_hca = ratios.count(CSA), ratios.count(HCA)
    per_csa_main = (8 + k) * 2 * head * FP32
    per_csa_idx = (8 + k) * 2 * index_head * FP32
    per_hca = (128 + k) * head * FP32
    fields = [n_csa * per_csa_main, n_csa * per_csa_main, n_csa * per_csa_idx,
              n_csa * per_csa_idx, n_hca * per_hca, n_hca * per_hca]
    arena = arena_rows(fields, widths)
    ring = window + k
    envelope = n_hca * (BLOCK // HCA) + n_csa * (BLOCK // CSA)
    entry = 0
    for ratio in (DENSE, HCA, CSA):
        n = ratios.count(ratio)
        if n:
            entry += entry_rows_for(n, ring if ratio == DENSE else BLOCK // ratio, ring)
    slot_rows = _align(arena + entry, 2)
    row = sum(widths)
    index_fp4 = (s.index_cache_dtype or ("fp8" if platform == "gfx942" else "fp4")) == "fp4" \
        and platform != "gfx942"
    if index_fp4:
        groups = index_head // 128 * 4 * (BLOCK // CSA)
        per_layer = groups * 16 + groups
    else:
        per_layer = (BLOCK // CSA) * (index_head + 4)
    terms = {
        "envelope rows = HCA layers × 2 + CSA layers × 64": envelope,
        "row bytes (sum of plane widths)": row,
        "kv block = envelope rows × row bytes": envelope * row,
        f"indexer = CSA layers × {per_layer} ({'fp4' if index_fp4 else 'fp8'})":
            n_csa * per_layer,
        "arena rows (compressor state)": arena,
        "window entry rows": entry,
        "slot rows = align2(arena + entry)": slot_rows,
        "state slot = slot rows × row bytes": slot_rows * row,
    }
    specs = (page_pool(envelope * row + n_csa * per_layer),
             state_pool(STATE_SLOT_CLASS, slot_rows * row, entries_per_req=1))
    return EntryClasses(specs, terms, BLOCK)

"""DeepSeek-V4 (``deepseek_v4``: V4-Flash, V4-Pro): a single 512-wide KV vector per token
(K and V are the same vector, one head), a sliding window on every layer, compressed KV on
most layers, a lightning indexer on the ratio-4 layers, and compressor states.

There is no vLLM oracle for V4 (../shared/oracles/README.md); the facts are read from vLLM's
model files: vllm/model_executor/models/deepseek_v4.py (``DeepseekV4Attention``),
vllm/model_executor/layers/deepseek_v4_attention.py (``DeepseekV4MultiHeadLatentAttentionWrapper``,
``DeepseekV4MLAAttention.get_kv_cache_spec``, ``DeepseekV4Indexer``),
vllm/v1/attention/backends/mla/sparse_swa.py (``DeepseekV4SWACache``),
vllm/model_executor/layers/deepseek_compressor.py (``DeepseekCompressor``,
``CompressorStateCache``) and vllm/v1/kv_cache_interface.py (``MLAAttentionSpec``).

Per backbone layer ``i`` with ``r = max(1, compress_ratios[i])``:

* every layer: a sliding-window cache of the last ``sliding_window`` tokens' KV vectors
  (``DeepseekV4SWACache``, head_dim 512, one head);
* ``r > 1``: compressed KV, one 512-wide entry per ``r`` tokens (``MLAAttentionSpec(...,
  compress_ratio=r)``), and the compressor's state: ``kv_state`` and ``score_state``, each
  ``(coff * r, coff * head_dim)`` float32 with ``coff = 2`` for the overlapping ratio-4
  compressor, else 1 (``CompressorStateCache``: state_dim = 2 * coff * head_dim, window
  coff * r, dtype asserted float32);
* ``r == 4`` only: the lightning indexer ("Only C4A uses sparse attention and hence has
  indexer"): its key cache, ``index_head_dim`` fp8 values + one fp32 scale per 128 = 132 B
  per compressed entry (same layout as V3.2), plus its own ratio-4 compressor state over
  ``index_head_dim``.

MTP layers (``num_nextn_predict_layers``) get ``compress_ratio = 1`` in vLLM ("MTP layer is
not included in the compress ratio list"): sliding window only.

KV element type (vLLM ``_resolve_dsv4_kv_cache_dtype``): fp8 is DeepSeek's ``fp8_ds_mla``
row — 448 nope values in fp8, 448/64 = 7 UE8M0 scale bytes + 1 pad byte, 64 rope values in
bf16: 448 + 8 + 128 = 584 B ("DeepseekV4: 448B NoPE + 128B RoPE + 8B fp8 scale = 584B per
token"); bf16 is a plain row, 512 x 2 = 1,024 B. Other element types fail closed.
(vLLM's FlashInfer path on SM100 can also store fp8 as a plain 512 B row; that is an engine
backend choice, noted, not modelled here.)

A ratio-128 layer at fp8 adds 584 B per 128 tokens: not a whole number of bytes per token.
``bytes_per_token`` then raises instead of rounding; use ``entry_bytes`` and
``bytes_for_positions(n)`` (exact) — the planner must size these per entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any, ClassVar, Self

from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.config import Config
from kvledger.derive.errors import (
    ConfigError,
    DeriveError,
    UnsupportedArchitecture,
)
from kvledger.derive.layers import Indexer, Kind, LayerCache, RecurrentState, Role
from kvledger.derive.registry import Derived
from kvledger.derive.states import RoleTensor, StateRole
from kvledger.records import fields, record

FAMILY = "deepseek_v4"

FP8_DS_MLA = "fp8_ds_mla"
PLAIN = "plain"
_SCALE_GROUP = 64  # one UE8M0 scale byte per 64 nope values in fp8_ds_mla
_KNOWN_RATIOS = (1, 4, 128)  # vLLM _layer_type_for: SWA-only, C4A, C128A

# The indexer key cache: fp8 values + one fp32 scale per 128 (vLLM DeepseekV4Indexer).
INDEXER_DTYPE = "fp8_e4m3"
INDEXER_QUANT_BLOCK = 128
INDEXER_SCALE_BYTES = 4


def layout_for(dtype: str) -> str:
    name = resolve_dtype(dtype).name
    if name.startswith("fp8"):
        return FP8_DS_MLA
    if name == "bfloat16":
        return PLAIN
    raise UnsupportedArchitecture(
        f"unsupported: DeepSeek-V4 KV cache in {name}: vLLM defines only bf16 rows and "
        "fp8 (fp8_ds_mla) for DeepSeek-V4; refusing to guess another layout",
        model_type="deepseek_v4",
    )


def row_bytes(dtype: str, head_dim: int, rope_dim: int) -> int:
    """Bytes of one cached KV vector (see module docstring)."""
    if layout_for(dtype) == PLAIN:
        return resolve_dtype(dtype).nbytes(head_dim)
    nope = head_dim - rope_dim
    if nope % _SCALE_GROUP:
        raise UnsupportedArchitecture(
            f"unsupported: DeepSeek-V4 fp8_ds_mla needs nope dim {nope} to be a multiple of "
            f"{_SCALE_GROUP}",
            model_type="deepseek_v4",
        )
    return nope + nope // _SCALE_GROUP + 1 + rope_dim * 2


def exact_per_token(entry: int, ratio: int, what: str) -> int:
    if entry % ratio:
        raise DeriveError(
            f"{what}: one {entry}-byte entry per {ratio} tokens is not a whole number of bytes "
            "per token; size it with entry_bytes() / bytes_for_positions(n)"
        )
    return entry // ratio


@record(frozen=True, kw_only=True)
class V4WindowKV(LayerCache):
    """The sliding-window cache every V4 layer keeps: the last ``window`` tokens' KV rows."""

    kind: ClassVar[Kind] = Kind.SLIDING
    head_dim: int
    rope_dim: int
    window: int

    @property
    def layout(self) -> str:
        return layout_for(self.dtype)

    def bytes_per_token(self) -> int:
        return row_bytes(self.dtype, self.head_dim, self.rope_dim)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "layout": self.layout, "kv_heads": 1}


@record(frozen=True, kw_only=True)
class V4CompressedKV(LayerCache):
    """Compressed KV: one row per ``ratio`` tokens (only complete groups are compressed)."""

    kind: ClassVar[Kind] = Kind.COMPRESSED
    head_dim: int
    rope_dim: int
    ratio: int

    @property
    def layout(self) -> str:
        return layout_for(self.dtype)

    def entry_bytes(self) -> int:
        return row_bytes(self.dtype, self.head_dim, self.rope_dim)

    def entries_for_positions(self, positions: int) -> int:
        return positions // self.ratio

    def bytes_for_positions(self, positions: int) -> int:
        return self.entries_for_positions(positions) * self.entry_bytes()

    def bytes_per_token(self) -> int:
        what = f"layer {self.index} (C{self.ratio})"
        return exact_per_token(self.entry_bytes(), self.ratio, what)

    def describe(self) -> dict[str, Any]:
        return _describe_per_entry(self)


@record(frozen=True, kw_only=True)
class V4CompressedIndexer(Indexer):
    """Lightning-indexer keys over compressed entries: 132 B (fp8 + fp32 scale) per entry,
    one entry per ``ratio`` tokens. Element type fixed by the architecture."""

    ratio: int

    def entry_bytes(self) -> int:
        return super().bytes_per_token()

    def entries_for_positions(self, positions: int) -> int:
        return positions // self.ratio

    def bytes_for_positions(self, positions: int) -> int:
        return self.entries_for_positions(positions) * self.entry_bytes()

    def bytes_per_token(self) -> int:
        return exact_per_token(self.entry_bytes(), self.ratio, f"layer {self.index} indexer")

    def with_dtype(self, dtype: str) -> Self:
        resolve_dtype(dtype)
        return self

    def describe(self) -> dict[str, Any]:
        return _describe_per_entry(self)


def _describe_per_entry(layer: V4CompressedKV | V4CompressedIndexer) -> dict[str, Any]:
    """``LayerCache.describe`` for per-entry kinds: the per-token figure is ``None`` where it
    is not a whole number of bytes, and the per-entry figures are always given."""
    out: dict[str, Any] = {"index": layer.index, "kind": str(layer.kind), "role": str(layer.role)}
    for f in fields(layer):
        if f.name in ("index", "role", "note"):
            continue
        value = getattr(layer, f.name)
        if value is None or value == () or value == "":
            continue
        out[f.name] = str(value) if isinstance(value, StrEnum) else value
    if layer.note:
        out["note"] = layer.note
    entry = layer.entry_bytes() if layer.owns_memory else 0
    out["bytes_per_token"] = entry // layer.ratio if entry % layer.ratio == 0 else None
    out["bytes_per_entry"] = entry
    out["tokens_per_entry"] = layer.ratio
    out["bytes_per_request"] = 0
    return out


@record(frozen=True, kw_only=True)
class CompressorState(RecurrentState):
    """A V4 compressor's running state per request: ``kv_state`` and ``score_state``, each
    ``(coff * ratio, coff * head_dim)`` float32, ``coff = 2`` for the overlapping ratio-4
    compressor (vLLM ``DeepseekCompressor``: ``overlap = compress_ratio == 4``). Replicated on
    every tensor-parallel rank; float32 whatever the KV dtype."""

    state_kind: ClassVar[str] = "deepseek_v4_compressor"
    head_dim: int
    ratio: int
    dtype: str = "float32"

    @property
    def coff(self) -> int:
        return 2 if self.ratio == 4 else 1

    def tensors(self) -> Sequence[RoleTensor]:
        shape = (self.coff * self.ratio, self.coff * self.head_dim)
        source = "architecture: compressor state is float32"
        return (
            RoleTensor("kv_state", shape, "float32", StateRole.TEMPORAL, source),
            RoleTensor("score_state", shape, "float32", StateRole.TEMPORAL, source),
        )

    def with_dtype(self, dtype: str) -> Self:
        resolve_dtype(dtype)
        return self


def _ratios(cfg: Config, num_layers: int, mtp: int) -> list[int]:
    raw = cfg.require("compress_ratios")
    if not isinstance(raw, list) or not num_layers <= len(raw) <= num_layers + mtp:
        raise ConfigError(
            f"{cfg.model}: compress_ratios must list the {num_layers} backbone layers "
            f"(plus up to {mtp} MTP layers)"
        )
    out: list[int] = []
    for i, value in enumerate(raw):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{cfg.model}: compress_ratios[{i}] must be an int")
        ratio = max(1, value)  # vLLM: max(1, compress_ratios[layer_id])
        if i >= num_layers and ratio != 1:
            raise UnsupportedArchitecture(
                f"{cfg.model}: compress_ratios[{i}] = {value} for an MTP layer; vLLM builds MTP "
                "layers with ratio 1 and ignores this entry — refusing to guess",
                model_type=cfg.model_type,
            )
        if ratio not in _KNOWN_RATIOS:
            raise UnsupportedArchitecture(
                f"{cfg.model}: compress_ratios[{i}] = {value}; DeepSeek-V4 defines ratios "
                f"{_KNOWN_RATIOS} (vLLM raises for others)",
                model_type=cfg.model_type,
            )
        out.append(ratio)
    return out[:num_layers]


def derive(text: Config, kv_dtype: str) -> Derived:
    kv_name = resolve_dtype(kv_dtype).name
    layout = layout_for(kv_name)
    num_layers = text.int("num_hidden_layers", minimum=1)
    if text.int("num_key_value_heads") != 1:
        raise UnsupportedArchitecture(
            f"{text.model}: DeepSeek-V4 caches one KV head; num_key_value_heads = "
            f"{text.int('num_key_value_heads')} is not an architecture vLLM defines",
            model_type=text.model_type,
        )
    head_dim = text.int("head_dim", minimum=1)
    rope = text.int("qk_rope_head_dim", minimum=1)
    if rope >= head_dim:
        raise ConfigError(f"{text.model}: qk_rope_head_dim {rope} must be < head_dim {head_dim}")
    window = text.int("sliding_window", minimum=1)
    mtp = text.int("num_nextn_predict_layers", 0)
    if mtp < 0:
        raise ConfigError(f"{text.model}: num_nextn_predict_layers must be >= 0")
    ratios = _ratios(text, num_layers, mtp)
    index_dim = text.int("index_head_dim", minimum=1) if 4 in ratios else 0

    layers: list[LayerCache] = []
    for i in range(num_layers + mtp):
        role = Role.DECODER if i < num_layers else Role.MTP
        ratio = ratios[i] if i < num_layers else 1
        layers.append(
            V4WindowKV(index=i, role=role, dtype=kv_name, head_dim=head_dim, rope_dim=rope,
                       window=window)
        )
        if ratio == 1:
            continue
        layers.append(
            V4CompressedKV(index=i, role=role, dtype=kv_name, head_dim=head_dim, rope_dim=rope,
                           ratio=ratio)
        )
        layers.append(CompressorState(index=i, role=role, head_dim=head_dim, ratio=ratio,
                                      note="attention compressor"))
        if ratio == 4:
            layers.append(
                V4CompressedIndexer(
                    index=i, role=role, dtype=INDEXER_DTYPE, head_dim=index_dim,
                    quant_block=INDEXER_QUANT_BLOCK, scale_bytes=INDEXER_SCALE_BYTES,
                    ratio=ratio,
                )
            )
            layers.append(CompressorState(index=i, role=role, head_dim=index_dim, ratio=ratio,
                                          note="indexer compressor"))

    counts = {r: ratios.count(r) for r in _KNOWN_RATIOS}
    notes = [
        f"DeepSeek-V4: {num_layers} layers — {counts[1]} window-only, {counts[4]} ratio-4 "
        f"(compressed KV + indexer), {counts[128]} ratio-128; every layer also keeps a "
        f"{window}-token window; KV rows are {layout} ({row_bytes(kv_name, head_dim, rope)} B)",
        "no vLLM oracle for DeepSeek-V4: facts read from vLLM's deepseek_v4 model files",
    ]
    if layout == FP8_DS_MLA and counts[128]:
        notes.append(
            "ratio-128 layers at fp8 add 584 B per 128 tokens (not whole bytes per token): "
            "size them per entry"
        )
    if mtp:
        notes.append(f"{mtp} MTP layer(s) (role mtp): sliding window only (vLLM ratio 1)")
    extras: dict[str, Any] = {"kv_layout": layout, "compress_ratios": ratios, "mtp_layers": mtp}
    return Derived(layers=layers, notes=notes, extras=extras)

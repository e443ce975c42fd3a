"""Seed protocol A: model-local KV declarations.

Some models keep attention KV in their own transformers cache objects instead of the engine's
paged manager. That memory is allocated after the profiling run that sizes the KV budget, so
nothing counts it unless the model *declares* it. A declaration describes; it never allocates.

Why a runtime query rather than a static table: geometry is often known only once weights
load. Why capacity is a resolved number rather than a formula: real caches are bounded by a
window (window - 1 positions), a decode-loop trip count, an encoder frame limit or a constant
— never by ``max_model_len``.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from kvledger.declare.counts import MAX_BYTES, require_int, require_text
from kvledger.declare.dtypes import KVDType, resolve_dtype
from kvledger.records import record


class ModelLocalKVScope(StrEnum):
    """How long a cache lives. Diagnostic only — never a multiplier.

    (An earlier design multiplied every non-MODEL scope by ``max_num_seqs``; it over-reported a
    serialized cache by that factor and used the wrong driver for a session cache. Row counts
    come from ``RowDriver`` alone.)
    """

    INVOCATION = "invocation"  # dies when the call returns
    REQUEST = "request"  # kept across the steps of one request
    SESSION = "session"  # outlives a request (duplex / streaming session)
    MODEL = "model"  # lives as long as the model (e.g. captured into a CUDA-graph pool)


class RowDriver(StrEnum):
    """What the number of rows scales with. Two values because two are all real caches need."""

    FIXED = "fixed"  # a count the model controls (captured-bucket sum, serialized call path)
    MAX_NUM_SEQS = "max_num_seqs"  # one row per in-flight sequence; only the engine knows it


@record(frozen=True)
class ModelLocalKVSpec:
    """One model-local cache of one lifetime.

    ``rows`` has no default on purpose: a default of "one row" silently understates any cache
    that holds a row per sequence. ``dtype`` accepts a registry name, a ``KVDType`` or a
    ``torch.dtype`` and is stored as the registry name.
    """

    name: str
    layers: int
    kv_heads: int
    head_dim: int
    dtype: Any
    physical_capacity_positions: int
    capacity_source: str
    scope: ModelLocalKVScope
    rows: RowDriver
    rows_fixed: int = 1
    rows_reason: str = ""
    allocation_note: str | None = None

    def __post_init__(self) -> None:
        require_text("name", self.name)
        require_int("layers", self.layers, minimum=1)
        require_int("kv_heads", self.kv_heads, minimum=1)
        require_int("head_dim", self.head_dim, minimum=1)
        require_int("physical_capacity_positions", self.physical_capacity_positions, minimum=1)
        require_text("capacity_source", self.capacity_source, blank_ok=True)
        object.__setattr__(self, "dtype", resolve_dtype(self.dtype).name)
        object.__setattr__(self, "scope", _enum(ModelLocalKVScope, "scope", self.scope))
        object.__setattr__(self, "rows", _enum(RowDriver, "rows", self.rows))
        require_int("rows_fixed", self.rows_fixed, minimum=1)
        require_text("rows_reason", self.rows_reason, blank_ok=True)
        if self.rows is RowDriver.FIXED and not self.rows_reason.strip():
            raise ValueError(
                f"{self.name}: rows=FIXED needs a non-blank rows_reason saying why the count "
                "is fixed (e.g. 'captured buckets 1+2+4', 'calls are serialized')"
            )
        if self.rows is RowDriver.MAX_NUM_SEQS and self.rows_fixed != 1:
            raise ValueError(
                f"{self.name}: rows_fixed={self.rows_fixed} would be ignored with "
                "rows=MAX_NUM_SEQS; use rows=FIXED or leave rows_fixed at 1"
            )
        if self.allocation_note is not None:
            require_text("allocation_note", self.allocation_note, blank_ok=True)
        # Each count is within MAX_BYTES (require_int's bound), but their product need not be:
        # a declaration whose one row or fixed peak exceeds 2**60 bytes is not a real cache.
        per_row = self.bytes_per_row
        if per_row > MAX_BYTES or per_row * self.rows_fixed > MAX_BYTES:
            raise ValueError(
                f"{self.name}: {self.rows_fixed} row(s) of {self.layers} layers × "
                f"{self.kv_heads} heads × {self.head_dim} × "
                f"{self.physical_capacity_positions} positions exceed 2**60 bytes"
            )

    @property
    def kv_dtype(self) -> KVDType:
        return resolve_dtype(self.dtype)

    @property
    def bytes_per_row(self) -> int:
        """2 (K and V) × layers × kv_heads × head_dim × positions, in the element type."""
        elements = (
            2 * self.layers * self.kv_heads * self.head_dim * self.physical_capacity_positions
        )
        return self.kv_dtype.nbytes(elements)

    def row_count(self, max_num_seqs: int = 1) -> int:
        """``rows_fixed`` for FIXED, else ``max(1, max_num_seqs)``."""
        require_int("max_num_seqs", max_num_seqs, minimum=0)
        if self.rows is RowDriver.FIXED:
            return self.rows_fixed
        return max(1, max_num_seqs)

    def peak_bytes(self, max_num_seqs: int = 1) -> int:
        return self.bytes_per_row * self.row_count(max_num_seqs)


def _enum(cls: Any, field: str, value: Any) -> Any:
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        try:
            return cls(value.lower())
        except ValueError:
            pass
    known = ", ".join(m.name for m in cls)
    if value is None:
        raise TypeError(f"{field} is required (one of {known})")
    raise ValueError(f"{field} must be one of {known}, got {value!r}")


@runtime_checkable
class HasModelLocalKV(Protocol):
    """Implemented by the object that *owns* a cache, usually deep in the module tree.

    Returning an empty sequence is valid: the allocating path may be inactive (stateless mode).
    """

    def model_local_kv_specs(self) -> Any: ...


_MISSING = object()


def _lookup(config: Any, key: str) -> Any:
    if isinstance(config, Mapping):
        value = config.get(key, _MISSING)
    else:
        value = getattr(config, key, _MISSING)
    return None if value is _MISSING else value


def _first(config: Any, keys: tuple[str, ...], what: str) -> int:
    for key in keys:
        value = _lookup(config, key)
        if value is not None:
            return require_int(key, value, minimum=1)
    raise ValueError(
        f"cannot find {what} in the config: tried {', '.join(keys)}; pass {what}= explicitly"
    )


def spec_from_hf_config(
    config: Any,
    *,
    name: str,
    physical_capacity_positions: int,
    capacity_source: str,
    scope: ModelLocalKVScope,
    dtype: Any,
    rows: RowDriver,
    rows_fixed: int = 1,
    rows_reason: str = "",
    allocation_note: str | None = None,
    layers: int | None = None,
    kv_heads: int | None = None,
    head_dim: int | None = None,
) -> ModelLocalKVSpec:
    """Geometry from the same config object the cache is built from.

    Look-up order — layers: ``num_hidden_layers``, ``encoder_layers``, ``num_layers``; kv heads:
    ``num_key_value_heads``, ``num_attention_heads``, ``encoder_attention_heads``; head dim:
    ``head_dim`` if set, else (``hidden_size`` or ``d_model``) // (``num_attention_heads`` or
    ``encoder_attention_heads``). Explicit arguments override. Missing attributes raise
    ``ValueError`` naming what was tried. ``rows`` is keyword-required: an earlier helper
    defaulted it and made the dataclass's guarantee decorative.

    The order finds an *encoder* cache on encoder-decoder configs (transformers' WhisperConfig
    even maps ``num_hidden_layers`` to ``encoder_layers``); a decoder-side cache of such a
    model must pass ``layers``/``kv_heads`` explicitly (e.g. ``decoder_layers``).
    """
    if layers is None:
        layers = _first(config, ("num_hidden_layers", "encoder_layers", "num_layers"), "layers")
    if kv_heads is None:
        kv_heads = _first(
            config,
            ("num_key_value_heads", "num_attention_heads", "encoder_attention_heads"),
            "kv_heads",
        )
    if head_dim is None:
        explicit = _lookup(config, "head_dim")
        if explicit is not None:
            head_dim = require_int("head_dim", explicit, minimum=1)
        else:
            width = _first(config, ("hidden_size", "d_model"), "head_dim (hidden size)")
            heads = _first(
                config,
                ("num_attention_heads", "encoder_attention_heads"),
                "head_dim (attention heads)",
            )
            if width % heads:
                raise ValueError(
                    f"hidden size {width} is not divisible by {heads} attention heads; "
                    "pass head_dim= explicitly"
                )
            head_dim = width // heads
    return ModelLocalKVSpec(
        name=name,
        layers=layers,
        kv_heads=kv_heads,
        head_dim=head_dim,
        dtype=dtype,
        physical_capacity_positions=physical_capacity_positions,
        capacity_source=capacity_source,
        scope=scope,
        rows=rows,
        rows_fixed=rows_fixed,
        rows_reason=rows_reason,
        allocation_note=allocation_note,
    )

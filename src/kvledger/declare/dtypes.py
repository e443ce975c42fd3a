"""KV element types, known by name, with exact integer byte counts.

Why a registry instead of ``torch.dtype``: the planning side must not import torch, and
sub-byte formats (nvfp4: 4-bit values plus one fp8 scale per 16 values) have no
``element_size`` at all. Every byte count here is computed in integers for a given element
count; a float ``0.5 bytes per element`` would round differently depending on where the
multiplication happens, which is exactly the kind of silently wrong number this project
exists to prevent.
"""

from __future__ import annotations

from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any


@record(frozen=True)
class KVDType:
    """One element type: ``bits`` per value, plus optional block scales.

    ``scale_group`` values share one scale of ``scale_bits`` bits (0 = no scales).
    """

    name: str
    bits: int
    scale_group: int = 0
    scale_bits: int = 0

    def nbytes(self, count: int) -> int:
        """Exact bytes for ``count`` elements (values rounded up to whole bytes, scales too)."""
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"element count must be an int, got {type(count).__name__}")
        if count < 0:
            raise ValueError(f"element count must be >= 0, got {count}")
        value_bytes = -(-count * self.bits // 8)
        if not self.scale_group:
            return value_bytes
        scales = -(-count // self.scale_group)
        return value_bytes + -(-scales * self.scale_bits // 8)

    @property
    def element_size(self) -> int:
        """Bytes per element for whole-byte types; sub-byte types raise (use ``nbytes``)."""
        if self.bits % 8 or self.scale_group:
            raise ValueError(
                f"{self.name} has no whole-byte element size; use nbytes(count) instead"
            )
        return self.bits // 8

    @property
    def is_whole_byte(self) -> bool:
        return self.bits % 8 == 0 and not self.scale_group

    def __str__(self) -> str:
        return self.name


_CANONICAL: dict[str, KVDType] = {
    d.name: d
    for d in (
        KVDType("float32", 32),
        KVDType("float16", 16),
        KVDType("bfloat16", 16),
        KVDType("fp8_e4m3", 8),
        KVDType("fp8_e5m2", 8),
        KVDType("int8", 8),
        KVDType("uint8", 8),
        # NVIDIA NVFP4: e2m1 values, one fp8 (e4m3) scale per 16 values.
        KVDType("nvfp4", 4, scale_group=16, scale_bits=8),
    )
}

_ALIASES: dict[str, str] = {
    "fp8": "fp8_e4m3",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e4m3fnuz": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
    "float8_e5m2fnuz": "fp8_e5m2",
    "fp8_inc": "fp8_e4m3",
    "fp32": "float32",
    "float": "float32",
    "fp16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
}


def known_dtypes() -> list[str]:
    """Every accepted name, canonical and alias, sorted."""
    return sorted([*_CANONICAL, *_ALIASES])


def resolve_dtype(dtype: Any) -> KVDType:
    """A registry name, a ``KVDType`` or a ``torch.dtype`` → ``KVDType``.

    A ``torch.dtype`` is recognised by its module and mapped through its name, so torch is
    never imported here. An unknown name is a ``ValueError`` listing the known ones.
    """
    if isinstance(dtype, KVDType):
        return dtype
    found = _CANONICAL.get(dtype) if isinstance(dtype, str) else None
    if found is not None:  # the common case, first: planning asks this for every page size
        return found
    if type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        dtype = str(dtype).removeprefix("torch.")
    if not isinstance(dtype, str):
        raise TypeError(
            f"dtype must be a name, KVDType or torch.dtype, got {type(dtype).__name__}"
        )
    key = dtype.strip().lower()
    key = _ALIASES.get(key, key)
    found = _CANONICAL.get(key)
    if found is None:
        raise ValueError(f"unknown KV dtype {dtype!r}; known: {', '.join(known_dtypes())}")
    return found

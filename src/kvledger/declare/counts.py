"""Validation of counts shared by the declaration types.

A count must be a real ``int``: ``True`` is not one row, ``2.0`` is not two entries, and
``"3"`` is not three layers. Accepting them would let a caller's bug turn into a plausible
looking number, so they are ``TypeError`` (wrong kind of value) and out-of-range values are
``ValueError`` (right kind, wrong value).

**Absurd sizes.** No byte amount or count a planner meets may exceed ``MAX_BYTES = 2**60``
(1 EiB: about seven thousand times the memory of the largest GPU node there is). Python's
integers never overflow, so a 400-digit budget would not crash the arithmetic; it would
produce a plan with a 400-digit block count that looks computed. One bound for bytes and
counts alike, because a count above it multiplies into bytes above it anyway (every entry is
at least one byte).
"""

from __future__ import annotations

from typing import Any

MAX_BYTES = 1 << 60


def require_int(
    name: str, value: Any, *, minimum: int | None = None, maximum: int | None = MAX_BYTES
) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(
            f"{name} must be <= {maximum:,} (2**60: larger is not a real size), "
            f"got {_short(value)}"
        )
    return value


def _short(value: int) -> str:
    """A huge number named by its size, not printed in full (a 400-digit line helps no one)."""
    text = str(value)
    return text if len(text) <= 30 else f"a {len(text)}-digit number"


def require_text(name: str, value: Any, *, blank_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not blank_ok and not value.strip():
        raise ValueError(f"{name} must not be blank")
    return value

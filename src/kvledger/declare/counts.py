"""Validation of counts shared by the declaration types.

A count must be a real ``int``: ``True`` is not one row, ``2.0`` is not two entries, and
``"3"`` is not three layers. Accepting them would let a caller's bug turn into a plausible
looking number, so they are ``TypeError`` (wrong kind of value) and out-of-range values are
``ValueError`` (right kind, wrong value).
"""

from __future__ import annotations

from typing import Any


def require_int(name: str, value: Any, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def require_text(name: str, value: Any, *, blank_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not blank_ok and not value.strip():
        raise ValueError(f"{name} must not be blank")
    return value

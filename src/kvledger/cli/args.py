"""The CLI's value types: each names what it expected (argparse adds the flag's name).

They raise ``argparse.ArgumentTypeError``, which the parser (``cli.parser``) turns into one
line naming the flag.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable


def _refused(message: str) -> Exception:
    import argparse

    return argparse.ArgumentTypeError(message)


# -- argument types: each names what it expected, argparse adds the flag -------------------


def int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise _refused(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise _refused(f"must be >= {minimum}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def block_size(text: str) -> int | None:
    """``auto`` → None (the engine picks), else a positive integer."""
    if text.strip().lower() == "auto":
        return None
    return int_at_least(1)(text)


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _refused(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or not 0 < value <= 1:
        raise _refused(f"must be in (0, 1], got {text!r}")
    return value


def _sized(unit: str, minimum: int) -> Callable[[str], int]:
    """A size flag in vLLM's forms and more (``kvledger.sizes``): 32k, 8G, 10GiB, 1e9."""

    def parse(text: str) -> int:
        plain = text.strip()
        # A plain integer in range needs no grammar: kvledger.sizes (and its regexes)
        # stays off the start-up path of the common call (bench/startup.py).
        if plain.isascii() and plain.isdigit() and len(plain) <= 18 and int(plain) >= minimum:
            return int(plain)
        from kvledger.sizes import SizeError, size

        try:
            return size(text, unit=unit, minimum=minimum)
        except SizeError as exc:
            raise _refused(str(exc)) from None

    parse.__name__ = unit
    return parse


def nonneg_bytes(text: str) -> int:
    """Bytes, >= 0: 17179869184, 16GiB, 1.5GiB, 16G (vLLM's binary G), 16GB (SI), 1e9."""
    return _sized("bytes", 0)(text)


def bytes_at_least(minimum: int) -> Callable[[str], int]:
    return _sized("bytes", minimum)


def tokens_at_least(minimum: int) -> Callable[[str], int]:
    """A token count in vLLM's forms: 32768, 32k (= 32,000), 32K (= 32,768), 1e5."""
    return _sized("tokens", minimum)


def engine_spec(text: str) -> str:
    """An engine name, optionally pinned (``vllm==0.32``): the name is checked here; the
    release is checked by the engine when the request is built (it knows its releases)."""
    from kvledger.plan.engines.registry import engine_names
    from kvledger.plan.engines.release import split_engine

    try:
        name, _ = split_engine(text)
    except ValueError as exc:
        raise _refused(f"{exc}") from None
    names = engine_names()
    if name not in names:
        raise _refused(f"expected one of {', '.join(names)} (optionally with a release, e.g. "
                       f"vllm==0.32), got {text!r}")
    return text.strip()


engine_spec.__name__ = "engine"

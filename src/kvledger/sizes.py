"""Sizes as people type them: ``32k``, ``32K``, ``8G``, ``10GiB``, ``1.5GiB``, ``1e9``.

Two grammars, kept apart on purpose:

* ``vllm_int`` / ``vllm_int_or_auto`` are vLLM 0.32's own ``human_readable_int`` and
  ``human_readable_int_or_auto`` (``vllm/utils/argparse_utils.py``), rewritten here rule for
  rule, so a pasted ``vllm serve`` line means exactly what it means to vLLM:

  - ``<number><k|m|g|t>`` is **decimal** and may have a fraction: ``32k`` = 32,000,
    ``25.6k`` = 25,600; vLLM computes ``int(float(number) * 10**n)``, so ``1.005k`` = 1,004
    (the float is 1004.99…, truncated) — kept, because that is what vLLM runs with;
  - ``<integer><K|M|G|T>`` is **binary**: ``32K`` = 32,768, ``8G`` = 8 GiB; a fraction
    (``1.5K``) is refused, as vLLM refuses it;
  - anything else goes through ``int()``: ``1_000``, ``+5``, ``-1`` parse, ``1e9`` and
    ``10GiB`` do not (vLLM rejects them too);
  - ``-1`` and ``auto`` (any case) mean "auto" for ``--max-model-len`` only.

  ``--max-model-len`` uses the ``_or_auto`` form; ``--max-num-batched-tokens`` and
  ``--kv-cache-memory-bytes`` the plain one (``engine/arg_utils.py``, ``_compute_kwargs``).

* ``size`` is kvledger's own flags' grammar: everything vLLM accepts, with the same meaning,
  plus byte units (``KiB MiB GiB TiB`` = powers of 1024; ``kB KB MB GB TB`` = powers of 1000,
  as SI defines them — note ``8G`` is vLLM's binary form but ``8GB`` is 8·10⁹) and
  scientific notation (``1e9``, which must come out a whole number). Byte units are accepted
  only where the value is bytes: ``--max-model-len 32GiB`` is a mistake, not a length.

Every refusal is a ``SizeError`` (a ``ValueError``) with one line that says what was wrong.
Values are bounded: at most ``MAX_SIZE`` (2**60, the bound ``PlanRequest`` applies to byte
counts), so a 400-digit number, ``inf`` or ``nan`` is a clean refusal, never an
``OverflowError`` later.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from decimal import Decimal

MAX_SIZE = 1 << 60
# Longer input cannot be a size below MAX_SIZE in any accepted form; refusing it first keeps
# int() and Decimal() away from pathological strings (int() refuses > 4,300 digits anyway).
_MAX_TEXT = 64

_DECIMAL_SUFFIX = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY_SUFFIX = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
# Byte units: IEC binary, SI decimal. Looked up case-insensitively ("gib", "GB", "kb").
_BYTE_UNITS = {
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15, "b": 1,
}
# vLLM's pattern: \d is Unicode-aware in both vLLM's `regex` module and Python's `re`.
_VLLM_SUFFIXED = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_BYTE_SIZED = re.compile(r"(\d+(?:\.\d+)?)\s*([A-Za-z]+)")
_SCIENTIFIC = re.compile(r"[+]?\d+(?:\.\d+)?[eE][+-]?\d+")

AUTO = -1  # vLLM's value for "--max-model-len auto"


class SizeError(ValueError):
    """A size that cannot be read; the message is one line naming the text."""


class _NotAnInteger(SizeError):
    """``vllm_int``'s last step, ``int(text)``, failed: no accepted form matched."""


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}… ({len(text)} characters)"


def vllm_int(text: str) -> int:
    """vLLM 0.32 ``human_readable_int``: see the module docstring. May return a negative int
    (``int("-5")``), as vLLM's parser does; range checks belong to the caller."""
    value = text.strip()
    if len(value) > _MAX_TEXT:
        raise SizeError(f"{_shown(text)} is too long to be a size")
    match = _VLLM_SUFFIXED.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in _DECIMAL_SUFFIX:
            product = float(number) * _DECIMAL_SUFFIX[suffix]
            if not math.isfinite(product):
                raise SizeError(f"{_shown(text)} is too large")
            return int(product)
        try:
            return int(number) * _BINARY_SUFFIX[suffix]
        except ValueError:
            raise SizeError(
                f"decimals are not allowed with binary suffixes like {suffix} "
                f"(vLLM refuses {value!r}); did you mean {number}{suffix.lower()}?"
            ) from None
    try:
        return int(value)
    except ValueError:
        raise _NotAnInteger(
            f"{_shown(text)} is not an integer vLLM accepts (forms: 32768, 32k = 32,000, "
            "32K = 32,768)"
        ) from None


_SGLANG_SUFFIXED = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)")
_SGLANG_SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_SGLANG_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def sglang_int(text: str) -> int:
    """SGLang 0.5.23 ``human_readable_int`` (``srt/utils/common.py``) — not vLLM's rules:
    SI ``k M G T`` are **decimal** (``1M`` = 1,000,000, where vLLM's ``1M`` is 1,048,576),
    IEC ``Ki Mi Gi Ti`` binary, suffixes case-sensitive (``32K`` is refused), SI fractions
    computed exactly (``Decimal``), IEC fractions refused."""
    value = text.strip()
    if len(value) > _MAX_TEXT:
        raise SizeError(f"{_shown(text)} is too long to be a size")
    match = _SGLANG_SUFFIXED.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in _SGLANG_IEC:
            if "." in number:
                raise SizeError(f"decimals are not allowed with IEC suffixes like {suffix!r} "
                                f"(SGLang refuses {value!r})")
            return int(number) * _SGLANG_IEC[suffix]
        return int(_decimal(number) * _SGLANG_SI[suffix])
    try:
        return int(value)
    except ValueError:
        raise _NotAnInteger(
            f"{_shown(text)} is not an integer SGLang accepts (forms: 32768, 32k = 32,000, "
            "32Ki = 32,768; suffixes are case-sensitive)"
        ) from None


def vllm_int_or_auto(text: str) -> int:
    """vLLM 0.32 ``human_readable_int_or_auto``: ``-1`` or ``auto`` → ``AUTO`` (-1)."""
    value = text.strip()
    if value == "-1" or value.lower() == "auto":
        return AUTO
    return vllm_int(value)


def _bounded(value: int, text: str, *, minimum: int, what: str) -> int:
    if value < minimum:
        raise SizeError(f"{what} must be >= {minimum:,}, got {_shown(text)}")
    if value > MAX_SIZE:
        raise SizeError(f"{what} must be <= {MAX_SIZE:,} (2**60), got {_shown(text)}")
    return value


def _decimal(text: str) -> Decimal:
    # decimal is imported on first use: most sizes are plain integers, and the CLI's start-up
    # path stays free of it.
    from decimal import Decimal, InvalidOperation

    try:
        return Decimal(text)
    except InvalidOperation:
        raise SizeError(f"{_shown(text)} is not a number") from None


def _scientific(value: str, text: str, what: str) -> int:
    number = _decimal(value)
    if not number.is_finite():  # pragma: no cover - the pattern admits only finite forms
        raise SizeError(f"{what} must be a finite number, got {_shown(text)}")
    if number.adjusted() > 18:  # > 10**19, far above MAX_SIZE: no big-integer arithmetic
        raise SizeError(f"{what} must be <= {MAX_SIZE:,} (2**60), got {_shown(text)}")
    if number != number.to_integral_value():
        raise SizeError(f"{what} must be a whole number, got {_shown(text)}")
    return int(number)


def size(text: str, *, unit: str = "bytes", minimum: int = 0) -> int:
    """kvledger's own size flags: vLLM's forms plus byte units (``unit="bytes"`` only) and
    scientific notation; a whole number in ``[minimum, MAX_SIZE]``.

    ``unit`` names what the number counts (``"bytes"`` or ``"tokens"``): it decides whether
    byte units are allowed and is used in the messages.
    """
    if not isinstance(text, str):
        raise SizeError(f"expected text, got {type(text).__name__}")
    value = text.strip()
    if not value:
        raise SizeError(f"expected a number of {unit}, got an empty value")
    if len(value) > _MAX_TEXT:
        digits = sum(ch.isdigit() for ch in value)
        if digits > 30 and digits >= len(value) - 2:
            raise SizeError(f"{unit} must be <= {MAX_SIZE:,} (2**60), got a {digits}-digit "
                            "number")
        raise SizeError(f"{_shown(text)} is too long to be a number of {unit}")
    lowered = value.lower().lstrip("+-")
    if lowered in ("nan", "inf", "infinity"):
        raise SizeError(f"{unit} must be a finite number, got {_shown(text)}")
    if value.startswith("-") and value[1:2].isdigit():
        raise SizeError(f"{unit} must be >= {minimum:,}, got {_shown(text)}")
    if _SCIENTIFIC.fullmatch(value):
        return _bounded(_scientific(value, text, unit), text, minimum=minimum, what=unit)
    byte_form = _BYTE_SIZED.fullmatch(value)
    if byte_form and byte_form.group(2).lower() in _BYTE_UNITS and not (
        len(byte_form.group(2)) == 1 and byte_form.group(2) in "kKmMgGtT"
    ):
        if unit != "bytes":
            raise SizeError(f"{_shown(text)} is a byte size; {unit} take a count "
                            "(e.g. 32768, 32k, 32K)")
        number = _decimal(byte_form.group(1))
        scaled = number * _BYTE_UNITS[byte_form.group(2).lower()]
        if scaled > MAX_SIZE:
            raise SizeError(f"{unit} must be <= {MAX_SIZE:,} (2**60), got {_shown(text)}")
        # A fraction of a byte (0.1GiB = 107,374,182.4) is dropped, as vLLM's int() drops it.
        return _bounded(int(scaled), text, minimum=minimum, what=unit)
    try:
        parsed = vllm_int(value)
    except _NotAnInteger:
        forms = ("17179869184, 16GiB, 1.5GiB, 16G (= 16 GiB), 1e9" if unit == "bytes"
                 else "32768, 32k (= 32,000), 32K (= 32,768), 1e5")
        raise SizeError(f"expected a number of {unit} such as {forms}; got {_shown(text)}"
                        ) from None
    return _bounded(parsed, text, minimum=minimum, what=unit)

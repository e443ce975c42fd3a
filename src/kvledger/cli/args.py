"""Argument parsing pieces for the CLI: a parser that raises instead of exiting, and value
types that each name what they expected (argparse adds the flag's name)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from kvledger.cli.errors import UsageError

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any, NoReturn


class Parser(argparse.ArgumentParser):
    """argparse, but a rejected command line raises instead of printing usage and exiting.

    argparse's default prints a multi-line usage block and calls ``sys.exit(2)``; the machine
    interface wants exactly one line on stderr, and ``main`` must return its code, not exit.
    """

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {message}", hint=f"see '{self.prog} --help'")

    # argparse's add_argument builds a formatter only to check a metavar tuple against nargs;
    # a default one reads the terminal width through shutil, whose import (zlib, bz2, lzma)
    # costs ~6 ms of every start-up. That check never uses the width, so it gets a fixed one;
    # help and usage text still get argparse's own formatter, sized to the terminal.
    _checking_argument = False

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        self._checking_argument = True
        try:
            return super().add_argument(*args, **kwargs)
        finally:
            self._checking_argument = False

    _checker: argparse.HelpFormatter | None = None

    def _get_formatter(self) -> argparse.HelpFormatter:
        if self._checking_argument:
            # One for every check of this parser: the check only formats a metavar.
            if self._checker is None:
                formatter_class: Any = self.formatter_class  # typeshed's protocol omits width
                self._checker = formatter_class(prog=self.prog, width=80)
            return self._checker
        return super()._get_formatter()


# -- argument types: each names what it expected, argparse adds the flag -------------------


def int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
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
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text!r}")
    return value


def _sized(unit: str, minimum: int) -> Callable[[str], int]:
    """A size flag in vLLM's forms and more (``kvledger.cli.sizes``): 32k, 8G, 10GiB, 1e9."""

    def parse(text: str) -> int:
        plain = text.strip()
        # A plain integer in range needs no grammar: kvledger.cli.sizes (and its regexes)
        # stays off the start-up path of the common call (bench/startup.py).
        if plain.isascii() and plain.isdigit() and len(plain) <= 18 and int(plain) >= minimum:
            return int(plain)
        from kvledger.cli.sizes import SizeError, size

        try:
            return size(text, unit=unit, minimum=minimum)
        except SizeError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

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

"""argparse's reading of a command line, to hold ``kvledger.cli.quick``'s against.

Used by tests/conftest.py (every in-process command line of the suite) and
tests/cli/test_quick.py (chosen and generated lines).
"""

from __future__ import annotations

from typing import Any

from kvledger.cli import main as cli
from kvledger.cli.errors import UsageError


def argparse_reading(name: str, args: list[str]) -> dict[str, Any] | None:
    """The namespace argparse gives, as a dict; None where it refuses the line (or --help)."""
    try:
        return vars(cli.command_parser(name).parse_args(args))
    except (UsageError, SystemExit):
        return None


def same_reading(quick: dict[str, Any], expected: dict[str, Any] | None) -> bool:
    """Equal namespaces, a NaN equal to a NaN (``--mamba-full-memory-ratio nan`` is read the
    same by both, and NaN != NaN)."""
    if expected is None or quick.keys() != expected.keys():
        return False
    return all(a == b or (a != a and b != b) for a, b in
               ((quick[k], expected[k]) for k in quick))

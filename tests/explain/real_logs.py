"""Where the test logs live, and the configs their models need.

Each ``logs/*.log`` is written here: a header (lines beginning ``# ``) names the public report
whose figures it carries; the rest is the engine's log lines in its own format with those
figures, and kvledger's own text around them, shaped as such logs are pasted (fences, quote
markers, wrapped lines). No report's text is kept.
"""

from __future__ import annotations

from pathlib import Path

from oracle_cases import CONFIGS, skip_without_shared

LOGS = Path(__file__).parent / "logs"

GIB = 1 << 30


def read(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def shared_config(name: str) -> str:
    """A config from ``../shared/configs`` (skip when the checkout has none beside it)."""
    skip_without_shared()
    return str(CONFIGS / name)

"""Where the real log excerpts live, and the configs their models need.

Each ``logs/*.log`` starts with a header (lines beginning ``# ``) naming the public page it
was copied from; the rest is that page's text, verbatim as retrieved.
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

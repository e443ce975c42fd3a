"""The SGLang releases kvledger reproduces (one profile each: ``v0_5_23.py``) and the choice.

``--engine sglang`` plans as ``NEWEST``; ``--engine sglang==0.5.23`` names it.
"""

from __future__ import annotations

from kvledger.plan.engines.release import pick
from kvledger.plan.engines.sglang.releases import v0_5_23
from kvledger.plan.engines.sglang.releases.profile import SglangRelease

RELEASES: dict[str, SglangRelease] = {r.version: r for r in (v0_5_23.RELEASE,)}
NEWEST = "0.5.23"


def sglang_release(asked: str | None = None) -> SglangRelease:
    """The profile ``asked`` names; ``None``: ``NEWEST``."""
    return pick(RELEASES, asked, NEWEST)


__all__ = ["NEWEST", "RELEASES", "SglangRelease", "sglang_release"]

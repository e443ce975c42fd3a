"""The vLLM releases kvledger reproduces, one profile each (``v0_32.py``, …), and the choice.

A profile holds what belongs to one release: its version, the defaults it ships, the
transformers release it runs with, which model types it does not serve and why
(``model_type_verdicts.py``, worded for the release), and the name of its server-flag table
(``cli/serve/vllm-<version>.json``). ``--engine vllm`` plans as ``NEWEST``;
``--engine vllm==0.32`` as that profile.
"""

from __future__ import annotations

from kvledger.plan.engines.release import pick
from kvledger.plan.engines.vllm.releases import (
    v0_20,
    v0_22,
    v0_23,
    v0_25,
    v0_26,
    v0_28,
    v0_30,
    v0_31,
    v0_32,
    v0_33,
    v0_34,
)
from kvledger.plan.engines.vllm.releases.profile import VllmRelease

RELEASES: dict[str, VllmRelease] = {
    r.version: r for r in (v0_20.RELEASE, v0_22.RELEASE, v0_23.RELEASE, v0_25.RELEASE,
                           v0_26.RELEASE, v0_28.RELEASE, v0_30.RELEASE, v0_31.RELEASE,
                           v0_32.RELEASE, v0_33.RELEASE, v0_34.RELEASE)}
NEWEST = "0.34.0"


def vllm_release(asked: str | None = None) -> VllmRelease:
    """The profile ``asked`` names (``"0.32"``, ``"0.32.0"``); ``None``: ``NEWEST``."""
    return pick(RELEASES, asked, NEWEST)


__all__ = ["NEWEST", "RELEASES", "VllmRelease", "vllm_release"]

"""The vLLM releases kvledger reproduces, one profile each (``v0_32.py``, …), and the choice.

A profile holds what belongs to one release: its version, the defaults it ships, the
transformers release it runs with, which model types it does not serve and why
(``model_type_verdicts.py``, worded for the release), and the name of its server-flag table
(``cli/serve/vllm-<version>.json``). ``--engine vllm`` plans as ``NEWEST``;
``--engine vllm==0.32`` as that profile.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, MutableMapping

from kvledger.plan.engines.release import pick
from kvledger.plan.engines.vllm.releases.profile import VllmRelease

# version -> the module that states its profile. A profile is imported when it is asked for:
# each is a replace() of the next newer one, so planning with the newest imports 0.34, 0.33
# and 0.32 only, and the older releases stay off the start-up path (bench/startup.py).
_MODULES = {"0.10.2": "v0_10", "0.19.0": "v0_19", "0.20.0": "v0_20", "0.22.0": "v0_22",
            "0.23.0": "v0_23", "0.25.0": "v0_25", "0.26.0": "v0_26", "0.28.0": "v0_28",
            "0.30.0": "v0_30", "0.31.0": "v0_31", "0.32.0": "v0_32", "0.33.0": "v0_33",
            "0.34.0": "v0_34"}


class _Profiles(MutableMapping[str, VllmRelease]):
    """The releases by version, each profile imported on first use. A profile set here (what
    ``kvledger diff`` binds for one changed field, under a version of its own) is kept beside
    them until it is deleted."""

    def __init__(self) -> None:
        self._set: dict[str, VllmRelease] = {}

    def __getitem__(self, version: str) -> VllmRelease:
        if version in self._set:
            return self._set[version]
        module = f"{__name__}.{_MODULES[version]}"
        __import__(module)  # not importlib: importing importlib costs start-up
        profile: VllmRelease = sys.modules[module].RELEASE
        return profile

    def __setitem__(self, version: str, profile: VllmRelease) -> None:
        self._set[version] = profile

    def __delitem__(self, version: str) -> None:
        del self._set[version]

    def __iter__(self) -> Iterator[str]:
        yield from _MODULES
        yield from self._set

    def __len__(self) -> int:
        return len(_MODULES) + len(self._set)


RELEASES: Mapping[str, VllmRelease] = _Profiles()
NEWEST = "0.34.0"


def vllm_release(asked: str | None = None) -> VllmRelease:
    """The profile ``asked`` names (``"0.32"``, ``"0.32.0"``); ``None``: ``NEWEST``."""
    return pick(RELEASES, asked, NEWEST)


__all__ = ["NEWEST", "RELEASES", "VllmRelease", "vllm_release"]

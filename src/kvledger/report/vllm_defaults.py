"""vLLM's defaults that changed between releases, for a start-up log that does not state them.

``gpu_memory_utilization`` (``CacheConfig``): 0.9 for most of vLLM's history, 0.92 in 0.32
(``config/cache.py``: ``Field(default=0.92, gt=0, le=1)``). Which release changed it is not
established here; what is:

- 0.9 up to v0.16.0: ``CacheConfig.gpu_memory_utilization = Field(default=0.9, ...)`` in the
  v0.16.0 API reference (docs.vllm.ai/en/v0.16.0/api/vllm/config/cache/), as in v0.10.2 and
  v0.11.1 before it;
- 0.92 from v0.25.0 at the latest: v0.25.0's ``CacheConfig`` reads
  ``Field(default=0.92, gt=0, le=1)`` (as quoted from that release's source), and so do
  v0.30.0 and 0.32.0 (the oracle's installed source).

A log from a release kvledger has a profile for takes that profile's default (read in the
release's own ``config/cache.py``: 0.9 in 0.19.0, 0.92 in 0.20.0 and after). A log from another
release in between (v0.17, v0.18, v0.21, v0.24), or one that prints no version, gets 0.92 — the
newer figure — and the check says it was assumed rather than read.
"""

from __future__ import annotations

import re

LAST_KNOWN_0_90 = (0, 19)  # 0.19.0 config/cache.py: Field(default=0.9, ...)
FIRST_KNOWN_0_92 = (0, 20)  # the 0.20 profile: 0.92 (tests/plan/engines/vllm, 0.19 vs 0.20)


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """``"0.9.1.dev705+g01220ce89"`` → (0, 9, 1); None when no version can be read."""
    if not text:
        return None
    parts = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if parts is None:
        return None
    return tuple(int(p) for p in parts.groups(default="0"))


def _profile_default(parsed: tuple[int, ...] | None) -> float | None:
    """The default utilization of the release profile of the same minor release (each read in
    that release's ``config/cache.py``: 0.9 in 0.19.0, 0.92 from 0.20.0); None without one."""
    if parsed is None:
        return None
    from kvledger.plan.engines.vllm.releases import RELEASES

    for name, profile in RELEASES.items():
        known = version_tuple(name)
        if known is not None and known[:2] == parsed[:2]:
            return profile.default_gpu_memory_utilization
    return None


def default_utilization(version: str | None) -> tuple[float, str]:
    """(the default ``gpu_memory_utilization`` of the release that wrote a log, why).

    The why is one clause for a check's explanation: which release's default it is, or that
    it was assumed because the release is unknown or lies where the change happened.
    """
    parsed = version_tuple(version)
    release = ".".join(map(str, parsed)) if parsed is not None else ""
    profiled = _profile_default(parsed)
    if profiled is not None:
        return profiled, (f"{profiled:g} is vLLM {release}'s default (config/cache.py, as its "
                          "release profile records it); the log states none")
    if parsed is not None and parsed[:2] <= LAST_KNOWN_0_90:
        return 0.9, f"0.9 is vLLM {release}'s default; the log states none"
    if parsed is not None and parsed[:2] >= FIRST_KNOWN_0_92:
        return 0.92, f"0.92 is vLLM {release}'s default; the log states none"
    where = (f"the log's vLLM {release} lies where kvledger has not established the default"
             if parsed is not None else
             "the log prints no vLLM version (the default was 0.9 up to v0.19, 0.92 from v0.20)")
    from kvledger.plan.engines.base import get_layout

    bound = get_layout("vllm").release
    newest = bound.short if bound is not None else "vLLM"
    return 0.92, f"assumed 0.92, {newest}'s default: the log states no utilization and {where}"

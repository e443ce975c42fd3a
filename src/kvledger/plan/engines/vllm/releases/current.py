"""The vLLM release being planned, for the words of a message raised deep in the layout.

``plan_vllm`` and the engine's entry points run under ``planning(release)``; a message then
names ``short()`` ("vLLM 0.33") instead of a release written into a string. Outside any
planning call it names the newest release.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

from kvledger.plan.engines.vllm.releases import vllm_release

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Iterator

    from kvledger.plan.engines.vllm.releases.profile import VllmRelease

_ASKED: ContextVar[str | None] = ContextVar("kvledger_vllm_release", default=None)


def release() -> VllmRelease:
    """The release being planned (the newest outside a planning call)."""
    return vllm_release(_ASKED.get())


def short() -> str:
    """``vLLM 0.33``: how messages name the release being planned."""
    return release().short


@contextmanager
def planning(asked: str | None) -> Iterator[VllmRelease]:
    """Plan as release ``asked`` (``"0.32"``; None: the newest) inside the block."""
    found = vllm_release(asked)
    token = _ASKED.set(found.version)
    try:
        yield found
    finally:
        _ASKED.reset(token)

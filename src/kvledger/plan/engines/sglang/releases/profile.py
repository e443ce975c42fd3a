"""What one SGLang release profile states (``SglangRelease``)."""

from __future__ import annotations

from kvledger.plan.engines.release import Release
from kvledger.records import record


@record(frozen=True, kw_only=True)
class SglangRelease(Release):
    """One SGLang release, as data."""

    flag_table: str  # cli/serve/<file>: the release's server flags


def sglang_words(release: SglangRelease | None) -> str:
    """How a message names the release it plans: ``SGLang 0.5.23`` for a bound profile; plain
    ``SGLang`` where a rule is called on its own, without one (a test of one rule)."""
    return release.short if release is not None else "SGLang"

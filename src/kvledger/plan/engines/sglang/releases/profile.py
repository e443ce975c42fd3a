"""What one SGLang release profile states (``SglangRelease``)."""

from __future__ import annotations

from kvledger.plan.engines.release import Release
from kvledger.records import record


@record(frozen=True, kw_only=True)
class SglangRelease(Release):
    """One SGLang release, as data."""

    flag_table: str  # cli/serve/<file>: the release's server flags

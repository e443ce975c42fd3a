"""Server flags an engine's older releases had and its flag table's release no longer has.

A person often launches with a line written for an older release. Such a flag is looked up
here (``<engine>-removed-flags.json``, a table: the flag, the release that dropped it, whether
it could change GPU memory, and the evidence). One that changed no memory is dropped from the
line with a warning naming it and the release that removed it; one that might have changed
memory is refused, naming the same. A flag in neither table stays "not a flag" (``scan``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from kvledger.records import record

_HERE = Path(__file__).resolve().parent


@record(frozen=True)
class Removed:
    option: str
    takes_value: bool
    removed_in: str  # the engine release that dropped it ("0.12.0")
    replaced_by: str
    memory: bool  # True: it could change GPU memory (the line is refused)
    why: str
    basis: str

    def message(self, engine: str, table_label: str) -> str:
        """``--disable-log-requests is not a vllm 0.32 flag (vllm 0.12.0 removed it; ...)``."""
        instead = f"; {self.replaced_by} replaces it" if self.replaced_by else ""
        return (f"{self.option} is not a {table_label} flag ({engine} {self.removed_in} "
                f"removed it{instead}): it {self.why}")


@cache
def removed_flags(engine: str) -> dict[str, Removed]:
    """The removed-flag table of ``engine`` by option ({} when it has none)."""
    path = _HERE / f"{engine}-removed-flags.json"
    if not path.is_file():
        return {}
    rows = json.loads(path.read_text(encoding="utf-8"))["flags"]
    out: dict[str, Removed] = {}
    for row in rows:
        item = Removed(option=str(row["option"]), takes_value=bool(row["takes_value"]),
                       removed_in=str(row["removed_in"]),
                       replaced_by=str(row.get("replaced_by") or ""),
                       memory=bool(row["memory"]), why=str(row["why"]),
                       basis=str(row["basis"]))
        out[item.option] = item
    return out

"""Server flags an engine's older releases had and its flag table's release no longer has.

A person often launches with a line written for an older release. Such a flag is looked up
here (``<engine>-removed-flags.json``, a table: the flag, the release that dropped it, whether
it could change GPU memory, and the evidence). A row is one of two kinds:

* **renamed** (``renamed_to``): the release spells the same setting another way, with the same
  values and meaning. The line is read as if it used the current spelling, with a warning
  naming it; whether the setting is planned or refused is then the current flag's rule.
* **removed** (no ``renamed_to``): one that changed no memory is dropped from the line with a
  warning naming it and the release that removed it; one that might have changed memory is
  refused, naming the same (and ``replaced_by``, a flag that took over part of its job).

A flag in neither table stays "not a flag" (``scan``).
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
    # The current spelling of the same setting (same values, same meaning): the flag is read
    # as it. Empty: removed.
    renamed_to: str = ""

    def renamed_message(self, engine: str, table_label: str) -> str:
        """``--nsa-prefill-backend is --dsa-prefill-backend in sglang 0.5.23 (renamed ...)``."""
        return (f"{self.option} is {self.renamed_to} in {table_label} ({engine} "
                f"{self.removed_in} renamed it; same values and meaning): planned as "
                f"{self.renamed_to}")

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
                       basis=str(row["basis"]),
                       renamed_to=str(row.get("renamed_to") or ""))
        out[item.option] = item
    return out

"""An engine's server flags as its own argparse parser defines them (syntax only).

The JSON files beside this module are dumped from the engines' parsers by
``scripts/serve_flag_tables.py`` (run with the engine's interpreter), so the option spellings,
value counts, types, choices and defaults are the engine's, not retyped. Which of these flags
can change memory is decided elsewhere (``vllm_flags.py``, ``sglang_flags.py``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from kvledger.records import field, record

_HERE = Path(__file__).resolve().parent
def _table_file(engine: str, version: str | None = None) -> str:
    """The flag table of ``engine``'s release ``version`` (None: the newest) or, when that
    release has none dumped, of the newest older release that has one (its profile names
    the file)."""
    from kvledger.plan.engines.base import get_layout
    from kvledger.report.vllm_defaults import version_tuple

    layout = get_layout(engine, version)
    asked = layout.release if version else None
    ceiling = version_tuple(asked.version) if asked is not None else None
    for known in sorted(layout.releases, key=lambda v: version_tuple(v) or (0,), reverse=True):
        if ceiling is not None and (version_tuple(known) or (0,)) > ceiling:
            continue
        name = getattr(layout.releases[known], "flag_table", "")
        if name:
            return str(name)
    raise ValueError(f"engine {engine!r} has no server-flag table")


@record(frozen=True)
class Flag:
    """One argparse action of the engine's parser."""

    dest: str
    options: tuple[str, ...]  # empty for a positional
    # store, store_true, store_false, store_const, boolean_optional (--x / --no-x),
    # enable_disable (vLLM 0.33: --enable-x / --disable-x, False for ``negatives``), append, ...
    kind: str
    nargs: int | str | None  # None (one value), 0, "?", "+", "*"
    type: str | None  # int, float, str, human_int, human_int_or_auto, json, json_object, ...
    optional: bool  # vLLM's optional_type: "" and "None" mean None
    choices: tuple[Any, ...] | None
    default: Any
    const: Any
    negatives: tuple[str, ...] = ()

    def switch_value(self, option: str) -> bool:
        """The value a boolean switch sets when spelt ``option``."""
        if self.kind == "enable_disable":
            return option not in self.negatives
        return not option.startswith("--no-")

    @property
    def takes_value(self) -> bool:
        return self.nargs != 0

    @property
    def name(self) -> str:
        """The flag as people know it: its longest ``--`` spelling (or the dest); for an
        enable/disable pair the spelling it was declared with."""
        if self.kind == "enable_disable" and self.options:
            return self.options[0]
        longs = [o for o in self.options if o.startswith("--") and not o.startswith("--no-")]
        return max(longs, key=len) if longs else (self.options[0] if self.options else self.dest)


@record(frozen=True)
class FlagTable:
    engine: str
    version: str
    flags: tuple[Flag, ...]
    env: frozenset[str]  # the engine's own environment variables (vLLM: envs.py)
    allow_abbrev: bool
    by_option: dict[str, Flag] = field(repr=False)
    by_dest: dict[str, Flag] = field(repr=False)

    @property
    def label(self) -> str:
        """``vllm 0.32``, ``sglang 0.5.23`` — the version as messages name it."""
        return f"{self.engine} {self.version.removesuffix('.0')}"

    def positional(self) -> Flag | None:
        return next((f for f in self.flags if not f.options), None)


def _flag(row: dict[str, Any]) -> Flag:
    choices = row.get("choices")
    return Flag(
        dest=str(row["dest"]),
        options=tuple(row.get("options") or ()),
        kind=str(row.get("kind", "store")),
        nargs=row.get("nargs"),
        type=row.get("type"),
        optional=bool(row.get("optional", False)),
        choices=None if choices is None else tuple(choices),
        default=row.get("default"),
        const=row.get("const"),
        negatives=tuple(row.get("negatives") or ()),
    )


def load(engine: str, version: str | None = None) -> FlagTable:
    """The table of ``engine`` ("vllm" or "sglang") as its release ``version`` (None: the
    newest kvledger knows; "0.32" or "0.32.0") parses a serve line, read once a file."""
    return _load_file(_table_file(engine, version))


@cache
def _load_file(name: str) -> FlagTable:
    data = json.loads((_HERE / name).read_text(encoding="utf-8"))
    flags = tuple(_flag(row) for row in data["flags"])
    by_option: dict[str, Flag] = {}
    by_dest: dict[str, Flag] = {}
    for flag in flags:
        for option in flag.options:
            by_option[option] = flag
        # A dest can have two actions (SGLang's --monokernel-backend sets enable_amd_monokernel
        # too); the first one is the field's own flag.
        by_dest.setdefault(flag.dest, flag)
    return FlagTable(
        engine=str(data["engine"]), version=str(data["version"]), flags=flags,
        env=frozenset(data.get("env") or ()), allow_abbrev=bool(data.get("allow_abbrev", True)),
        by_option=by_option, by_dest=by_dest,
    )

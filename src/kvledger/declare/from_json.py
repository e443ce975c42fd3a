"""Model-local declarations (seed A) from JSON: a list of objects in the seed's field names.

Why a file format at all: the engine-side user planning a deployment often has the numbers a
model declares (from its docs, a log, or ``kvledger audit``) but not the model code, so the CLI
takes ``--model-local-kv FILE.json``. The fields are exactly ``ModelLocalKVSpec``'s —
``name, layers, kv_heads, head_dim, dtype, physical_capacity_positions, capacity_source, scope,
rows, rows_fixed, rows_reason, allocation_note`` — with ``dtype`` a dtype name (``"bfloat16"``)
and ``scope`` / ``rows`` the enum values (``"model"``, ``"fixed"``, ``"max_num_seqs"``).

Validation is the seed's own: every object goes through the ``ModelLocalKVSpec`` constructor
(a FIXED count without ``rows_reason`` is refused, ``rows`` has no default, counts are real
integers — ``2048.0`` is not one). On top, what only a file can get wrong: an unknown field (a
typo would otherwise be silently ignored) and a missing required one are errors naming the
field and the declaration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kvledger.declare.model_local import ModelLocalKVSpec

FIELDS = (
    "name", "layers", "kv_heads", "head_dim", "dtype", "physical_capacity_positions",
    "capacity_source", "scope", "rows", "rows_fixed", "rows_reason", "allocation_note",
)
REQUIRED = FIELDS[:9]  # the fields without a default in the seed (``rows`` included)


def specs_from_json(
    data: Any, *, where: str = "model-local declarations"
) -> list[ModelLocalKVSpec]:
    """``ModelLocalKVSpec`` objects from parsed JSON (a list of objects). Errors name ``where``,
    the declaration (index and name) and the field."""
    if not isinstance(data, list):
        raise ValueError(f"{where}: expected a JSON list of declarations, got "
                         f"{type(data).__name__}")
    specs = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ValueError(f"{where}: declaration {i} must be an object, got "
                             f"{type(item).__name__}")
        label = f"{where}: declaration {i}" + (
            f" ({item['name']!r})" if isinstance(item.get("name"), str) else "")
        unknown = sorted(set(item) - set(FIELDS))
        if unknown:
            raise ValueError(f"{label}: unknown field(s) {', '.join(map(repr, unknown))}; "
                             f"the seed's fields are {', '.join(FIELDS)}")
        missing = [f for f in REQUIRED if f not in item]
        if missing:
            raise ValueError(f"{label}: missing required field(s) {', '.join(missing)}")
        if not isinstance(item["dtype"], str):
            raise TypeError(f"{label}: dtype must be a dtype name, got {item['dtype']!r}")
        try:
            specs.append(ModelLocalKVSpec(**item))
        except TypeError as exc:
            raise TypeError(f"{label}: {exc}") from None
        except ValueError as exc:
            raise ValueError(f"{label}: {exc}") from None
    return specs


def load_specs(path: str | Path) -> list[ModelLocalKVSpec]:
    """Read a declaration file (``specs_from_json`` says what it holds)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read model-local declarations: "
                         f"{exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise ValueError(f"{path}: not valid JSON ({reason})") from None
    return specs_from_json(data, where=str(path))


def spec_to_json(spec: ModelLocalKVSpec) -> dict[str, Any]:
    """The inverse: one declaration in the file's field names (for writing example files)."""
    out = {name: getattr(spec, name) for name in FIELDS}
    out["scope"], out["rows"] = str(spec.scope), str(spec.rows)
    return out

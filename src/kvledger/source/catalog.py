"""The bundled catalog: kvledger's own table of the config values it reads, per model.

``catalog.json`` beside this module holds one row per model: its Hub ids (the first is the
one kvledger names; another is the same repository under a newer Hub name), the values of
its ``config.json`` that derive and the weights estimate read — as the file states them,
never edited — and, when the checkpoint has one, its ``hf_quant_config.json`` values; each
row names the file it came from (repository, path, commit). The config a catalog id plans is
built from that row when it is asked for. scripts/catalog_facts.py wrote the table from the
real files; tests/source/test_catalog_facts.py checks it against them.

Ids match case-insensitively (the Hub treats repository names that way too). Nothing here
touches the network or imports more than ``os``/``json``: planning a catalog id is the CLI's
measured start-up path. ``difflib`` is imported only to suggest a near miss.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog.json")
# The checkpoints' weight facts (total_size, bytes per dtype, where read), keyed by a row's
# first id: a table of its own, read only when a catalog id's weights are asked for.
WEIGHTS_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog_weights.json")
_ROWS: list[dict[str, Any]] = []
_WEIGHTS: dict[str, dict[str, Any]] = {}
_BY_ID: dict[str, tuple[str, dict[str, Any]]] = {}  # lowered id → (id as listed, row)


def _index() -> dict[str, tuple[str, dict[str, Any]]]:
    if not _BY_ID:
        with open(TABLE, encoding="utf-8") as handle:
            _ROWS.extend(json.load(handle)["models"])
        for row in _ROWS:
            for model_id in row["ids"]:
                _BY_ID[model_id.lower()] = (model_id, row)
    return _BY_ID


def catalog_rows() -> list[dict[str, Any]]:
    """Every row of the table (ids, source, config, and hf_quant_config where there is one)."""
    _index()
    return list(_ROWS)


def catalog_ids() -> list[str]:
    """The bundled model ids, sorted."""
    return sorted(model_id for model_id, _ in _index().values())


def catalog_entry(
    model_id: str,
) -> tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any]] | None:
    """(the id as listed, a fresh config, a fresh hf_quant_config or None, the row's source),
    or None when ``model_id`` is not bundled."""
    if not model_id or model_id.count("/") != 1:
        return None
    found = _index().get(model_id.lower())
    if found is None:
        return None
    listed, row = found
    # A fresh copy each time: a caller may edit the config it was given.
    config: dict[str, Any] = json.loads(json.dumps(row["config"]))
    quant = row.get("hf_quant_config")
    return listed, config, json.loads(json.dumps(quant)) if quant is not None else None, \
        row["source"]


def catalog_rebuilt(model_id: str) -> str:
    """What a bundled row says when its config is a rebuild, not the checkpoint's own
    config.json (``scripts/catalog_facts.py`` ``REBUILT``); "" for every other row."""
    found = _index().get(model_id.lower()) if model_id and model_id.count("/") == 1 else None
    return str(found[1].get("rebuilt") or "") if found is not None else ""


def catalog_weight_rows() -> dict[str, dict[str, Any]]:
    """Every weight-facts row (``catalog_weights.json``), keyed by a catalog row's first id."""
    if not _WEIGHTS:
        with open(WEIGHTS_TABLE, encoding="utf-8") as handle:
            _WEIGHTS.update(json.load(handle)["models"])
    return dict(_WEIGHTS)


def catalog_weight_facts(model_id: str) -> dict[str, Any] | None:
    """The recorded weight facts of the checkpoint behind catalog id ``model_id`` (any of its
    row's ids), a fresh copy, or None: not a catalog id, or no real index was found for it."""
    found = _index().get(model_id.lower()) if model_id else None
    if found is None:
        return None
    facts = catalog_weight_rows().get(found[1]["ids"][0])
    return json.loads(json.dumps(facts)) if facts is not None else None


def is_catalog_id(model_id: str) -> bool:
    return catalog_entry(model_id) is not None


_SIZE = r"^(a?\d+(\.\d+)?[bmt]|\d+x\d+(\.\d+)?b)$"  # a size word: 7b, 1.7b, a3b, 8x7b


def _id_parts(model_id: str) -> tuple[str, str, set[str], set[str]]:
    """(org, family, sizes, words) of ``Qwen/Qwen3-Next-80B-A3B-Thinking``: ``qwen``,
    ``qwen3``, {``80b``, ``a3b``}, every word of the name."""
    import re  # only when a near miss is suggested

    org, _, name = model_id.lower().rpartition("/")
    words = [w for w in re.split(r"[-_]", name) if w]
    return org, words[0] if words else "", {w for w in words if re.match(_SIZE, w)}, set(words)


def suggestions(text: str, limit: int = 2) -> list[str]:
    """Bundled ids close to ``text`` (case-insensitive): at most ``limit``, siblings first.

    Spelling alone (difflib) put ``Qwen3-Coder-480B-A35B-Instruct`` before the
    ``Qwen3-Next-80B-A3B-Thinking`` sibling of ``Qwen3-Next-80B-A3B-Instruct``. So an id of
    another size (``24B`` against ``7B``: another model, not a typo) is never suggested; the
    rest rank by same organisation and family, then sizes and words in common, then
    spelling. Only ids about as close as the best one are kept (a list of three loose
    matches helps nobody)."""
    import difflib

    query = text.lower()
    q_org, q_family, q_sizes, q_words = _id_parts(query)
    scored = []
    for model_id in catalog_ids():
        if model_id == text:
            continue  # the id itself, as typed, is no suggestion (another case spelling is)
        org, family, sizes, words = _id_parts(model_id)
        if q_sizes and sizes and not q_sizes & sizes:
            continue
        ratio = difflib.SequenceMatcher(None, query, model_id.lower()).ratio()
        sibling = org == q_org and family == q_family and bool(q_sizes & sizes)
        if ratio >= (0.6 if sibling else 0.8):
            scored.append(((sibling, len(q_sizes & sizes), len(q_words & words), ratio),
                           model_id))
    scored.sort(key=lambda sm: (tuple(-x for x in sm[0]), sm[1]))
    if not scored:
        return []
    best = scored[0][0]
    return [model_id for score, model_id in scored[:limit]
            if score[:2] == best[:2] and score[3] >= best[3] - 0.05]


def did_you_mean(text: str) -> str:
    """`` (did you mean X?)`` or ``""``."""
    close = suggestions(text)
    if not close:
        return ""
    return " (did you mean " + " or ".join(close) + "?)"

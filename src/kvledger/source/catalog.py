"""The bundled catalog: verbatim real configs shipped as package data (``derive/catalog``).

``org--name.json`` is the config of ``org/name``; ``org--name.hf_quant_config.json`` its
companion quantization file. Ids match case-insensitively (the Hub treats repository names
that way too). Nothing here touches the network or imports more than ``os``/``json``:
planning a catalog id is the CLI's measured start-up path. ``difflib`` is imported only to
suggest a near miss.
"""

from __future__ import annotations

import os

CATALOG_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "derive", "catalog")
_QUANT_SUFFIX = ".hf_quant_config.json"


def _stems() -> list[str]:
    try:
        names = os.listdir(CATALOG_DIR)
    except OSError:
        return []
    return [n[:-5] for n in names if n.endswith(".json") and not n.endswith(_QUANT_SUFFIX)]


def catalog_ids() -> list[str]:
    """The bundled model ids (``org--name.json`` is ``org/name``), sorted."""
    return sorted(stem.replace("--", "/", 1) for stem in _stems())


def catalog_files(model_id: str) -> tuple[str, str, str | None] | None:
    """(canonical id, config path, hf_quant_config path or None), or None when not bundled."""
    if not model_id or "--" in model_id or model_id.count("/") != 1:
        return None
    stem = model_id.replace("/", "--", 1)
    path = os.path.join(CATALOG_DIR, f"{stem}.json")
    if not os.path.isfile(path):  # the exact spelling is the common case: one stat
        lowered = stem.lower()
        match = next((s for s in _stems() if s.lower() == lowered), None)
        if match is None:
            return None
        stem = match
        path = os.path.join(CATALOG_DIR, f"{stem}.json")
    quant = os.path.join(CATALOG_DIR, f"{stem}{_QUANT_SUFFIX}")
    return stem.replace("--", "/", 1), path, quant if os.path.isfile(quant) else None


def suggestions(text: str, limit: int = 2) -> list[str]:
    """Bundled ids close to ``text`` (case-insensitive): at most ``limit``, only those about
    as close as the best one (a list of three loose matches helps nobody)."""
    import difflib

    query = text.lower()
    scored = []
    for model_id in catalog_ids():
        ratio = difflib.SequenceMatcher(None, query, model_id.lower()).ratio()
        if ratio >= 0.8:
            scored.append((ratio, model_id))
    scored.sort(key=lambda rm: (-rm[0], rm[1]))
    best = scored[0][0] if scored else 0.0
    return [model_id for ratio, model_id in scored[:limit] if ratio >= best - 0.05]


def did_you_mean(text: str) -> str:
    """`` (did you mean X?)`` or ``""``."""
    close = suggestions(text)
    if not close:
        return ""
    return " (did you mean " + " or ".join(close) + "?)"

"""The suite's isolation from this machine (tests/conftest.py) holds from collection on.

Collection imports torch, transformers and huggingface_hub (tests/check) and runs module-level
code of every test file; huggingface_hub reads HF_HOME, HF_HUB_OFFLINE, HF_ENDPOINT and the
token file's place once, at import. Isolating only inside each test left collection on the
machine's own cache folders and settings — shared by every session running on it at once —
and froze huggingface_hub's constants to them for the whole run. The environment is read here
at import, i.e. while pytest collects this file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

AT_COLLECTION = {name: os.environ.get(name) for name in (
    "HF_HUB_OFFLINE", "HF_HOME", "HF_HUB_CACHE", "HF_ENDPOINT", "KVLEDGER_CACHE", "HF_TOKEN")}


def _outside_home(path: str | None) -> bool:
    return path is not None and Path.home() not in Path(path).resolve().parents


def test_collection_already_runs_isolated() -> None:
    assert AT_COLLECTION["HF_HUB_OFFLINE"] == "1"
    assert AT_COLLECTION["HF_ENDPOINT"] == "http://127.0.0.1:9"
    assert AT_COLLECTION["HF_TOKEN"] is None
    for name in ("HF_HOME", "HF_HUB_CACHE", "KVLEDGER_CACHE"):
        assert _outside_home(AT_COLLECTION[name]), (name, AT_COLLECTION[name])


def test_huggingface_hub_constants_are_the_isolated_ones() -> None:
    # Imported during collection when torch/transformers are installed (tests/check), or now.
    import huggingface_hub.constants as hub

    assert hub.HF_HUB_OFFLINE
    assert _outside_home(hub.HF_HOME) and _outside_home(hub.HF_TOKEN_PATH)
    assert "huggingface_hub" in sys.modules

"""Suite-wide isolation from this machine's Hugging Face setup and from the network.

Every test runs with ``HF_HUB_OFFLINE=1``, an empty HF cache and an empty kvledger header
cache of its own: a model id that is not a path or a catalog id then fails at once instead of
asking huggingface.co, and a developer's cached models never change a planned number. The
loopback Hub tests (tests/source) turn the network back on, pointed at their own server.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_hub(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("hf-home")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(Path(home) / "hub"))
    monkeypatch.setenv("KVLEDGER_CACHE", str(Path(home) / "kvledger"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: never the Internet
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "TRANSFORMERS_OFFLINE",
                 "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)

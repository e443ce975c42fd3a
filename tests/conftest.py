"""Suite-wide isolation from this machine's Hugging Face setup and from the network.

Every test runs with ``HF_HUB_OFFLINE=1``, an empty HF cache and an empty kvledger header
cache of its own: a model id that is not a path or a catalog id then fails at once instead of
asking huggingface.co, and a developer's cached models never change a planned number. The
loopback Hub tests (tests/source) turn the network back on, pointed at their own server.

The same isolation is in place from the start of the session, before collection: collecting
imports torch, transformers and huggingface_hub (tests/check) and runs every test file's
module-level code, and huggingface_hub reads its environment once, at import. Set only inside
each test, the isolation left collection on the machine's own cache folders (shared by every
session on the machine at the same time) and froze huggingface_hub's constants to the
machine's settings for the whole run — or not, depending on which file was collected first
(tests/test_isolation.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

# The isolated environment: a cache folder under ``home`` for everything kvledger and
# huggingface_hub write, offline, and the discard port for the Hub (never the Internet).
_UNSET = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "TRANSFORMERS_OFFLINE", "HUGGINGFACE_HUB_CACHE")


def _isolated(home: Path) -> dict[str, str]:
    return {
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(home / "hub"),
        "KVLEDGER_CACHE": str(home / "kvledger"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_ENDPOINT": "http://127.0.0.1:9",
    }


_SAVED: dict[str, str | None] = {}
_SESSION_HOME: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """Isolate the whole session (collection included); undone in ``pytest_unconfigure``."""
    home = tempfile.mkdtemp(prefix="kvledger-tests-hf-")
    _SESSION_HOME.append(home)
    changes: dict[str, str | None] = {**_isolated(Path(home)), **dict.fromkeys(_UNSET)}
    for name, value in changes.items():
        _SAVED.setdefault(name, os.environ.get(name))
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def pytest_unconfigure(config: pytest.Config) -> None:
    for name, value in _SAVED.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    _SAVED.clear()
    for home in _SESSION_HOME:
        shutil.rmtree(home, ignore_errors=True)
    _SESSION_HOME.clear()


@pytest.fixture(autouse=True)
def _no_hub(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets caches of its own (a test may fill one; the next starts empty)."""
    home = tmp_path_factory.mktemp("hf-home")
    for name, value in _isolated(home).items():
        monkeypatch.setenv(name, value)
    for name in _UNSET:
        monkeypatch.delenv(name, raising=False)


# ../shared (the shared configs and oracle cases) sits beside the repo in CI and on the
# developers' machines. A clone without it must still pass: a test that reads a file from it
# is skipped with oracle_cases.SHARED_MISSING instead of failing (tests/oracle_cases.py states
# the rule), and the summary says in one line how many were skipped and how to run them.
SHARED = (Path(__file__).resolve().parents[1] / ".." / "shared").resolve()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    try:
        return (yield)
    except Exception as exc:
        # A missing file reaches a test as FileNotFoundError, or as kvledger's one-line refusal
        # naming the path (the CLI's exit 2, a SourceError): either way it names ../shared.
        if not SHARED.is_dir() and _names_shared(exc):
            from oracle_cases import SHARED_MISSING

            pytest.skip(SHARED_MISSING)
        raise


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line: how many tests skipped for want of ../shared, and how to run them."""
    from oracle_cases import SHARED_MISSING

    skipped = terminalreporter.stats.get("skipped", [])
    count = sum(1 for report in skipped if SHARED_MISSING in str(report.longrepr))
    if count:
        terminalreporter.write_line(
            f"{count} tests skipped: they need ../shared (the team's real configs and oracle "
            f"cases); check it out beside this repository as {SHARED} and run pytest again")


def _names_shared(exc: BaseException) -> bool:
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return Path(str(exc.filename)).resolve().is_relative_to(SHARED)
    return any(f"shared/{part}/" in str(exc) for part in ("configs", "oracles"))

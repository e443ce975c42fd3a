"""A Hub that accepts the connection and never answers: the first read fails within 5 s
(hub.PROBE_TIMEOUT_S) and, past a second, one progress line says what is being read (at a
terminal only: a script's stderr stays the error alone)."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator

import pytest

from kvledger.cli.main import main

from .conftest import Online


@pytest.fixture
def silent_hub() -> Iterator[str]:
    # listen() without accept(): the kernel completes the handshake, nothing ever replies.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_a_silent_hub_fails_within_five_seconds_and_says_it_is_reading(
        online: Online, silent_hub: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", silent_hub)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a person at a terminal
    start = time.monotonic()
    code = main(["plan", "Qwen/Qwen3-0.6B", "--kv-cache-memory-bytes", "1GiB"])
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and elapsed < 5, (elapsed, err)
    assert err[0] == f"kvledger: reading Qwen/Qwen3-0.6B's config from {silent_hub} ..."
    assert len(err) == 2 and "cannot be reached" in err[1], err


def test_a_script_gets_no_progress_line(online: Online, silent_hub: str,
                                        capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", silent_hub)
    code = main(["plan", "Qwen/Qwen3-0.6B", "--kv-cache-memory-bytes", "1GiB", "--json"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith('{"error": '), err

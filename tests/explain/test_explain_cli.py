"""``kvledger explain`` through the CLI: the machine interface (ARCHITECTURE.md), stdin,
the text view, and one clear error (exit 2) for a log without KV lines."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from explain.real_logs import LOGS
from kvledger.cli.main import main

PR20707 = str(LOGS / "vllm-0.10-pr20707-llama31-8b.log")
LLAMA = "meta-llama/Meta-Llama-3.1-8B"


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(["explain", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_machine_interface_keys(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, PR20707, "--model", LLAMA)
    for key in ("engine", "engine_version", "model", "settings", "checks", "suggestions"):
        assert key in data
    assert data["engine"] == "vllm" and data["model"] == LLAMA
    names = {c["name"] for c in data["checks"]}
    # The four headline checks are always there; this log printed no weights line.
    assert {"weights_bytes", "available_kv_bytes", "kv_cache_tokens", "max_concurrency"} <= names
    weights = next(c for c in data["checks"] if c["name"] == "weights_bytes")
    assert weights["logged"] is None and weights["match"] is None
    # 8.03 B parameters × 2 B (bf16) = 14.96 GiB: kvledger's own figure is still shown.
    assert round(weights["derived"] / 2**30, 2) == 14.96
    for check in data["checks"]:
        assert set(check) >= {"name", "logged", "derived", "match", "why"}
    tokens = next(c for c in data["checks"] if c["name"] == "kv_cache_tokens")
    assert tokens["logged"] == 922_496 and tokens["match"] is True
    for s in data["suggestions"]:
        assert set(s) == {"change", "effect"}


def test_weights_check_is_named_weights_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    log = str(LOGS / "sglang-0.4.3-llmsinclouds-qwq32b-tp4.log")
    data = _json(capsys, log)
    weights = next(c for c in data["checks"] if c["name"] == "weights_bytes")
    assert weights["logged"] == int(15.54 * 2**30)
    assert weights["derived"] is None and "pass --model" in weights["why"]


def test_stdin_and_the_text_view(capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    text = (LOGS / "vllm-0.10-pr20707-llama31-8b.log").read_text(encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["explain", "-", "--model", LLAMA]) == 0
    out = capsys.readouterr().out
    assert "kv_cache_tokens: logged 922,496, derived 922,496 — match" in out
    assert "--kv-cache-dtype fp8" in out


def test_settings_the_excerpt_lacks_can_be_given(capsys: pytest.CaptureFixture[str]) -> None:
    log = str(LOGS / "vllm-0.9.1-issue19996-llama31-8b-eagle.log")
    data = _json(capsys, log, "--model", LLAMA, "--max-model-len", "8192")
    assert data["settings"]["max_model_len"] == 8192


def test_log_without_kv_lines_exits_2(capsys: pytest.CaptureFixture[str],
                                      tmp_path: Any) -> None:
    path = tmp_path / "partial.log"
    path.write_text("(APIServer pid=1) INFO [utils.py:233] non-default args: {'model': 'x'}\n")
    assert main(["explain", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no KV cache lines" in err
    assert main(["explain", str(tmp_path / "missing.log")]) == 2
    assert "cannot read" in capsys.readouterr().err


# -- input that is not one start-up log (issue #25: "explain README.md is accepted as a log") ----

# The SGLang page compares both engines' start-up lines side by side (it moved there from the
# README).
BOTH_ENGINES_PAGE = Path(__file__).resolve().parents[2] / "docs" / "sglang.md"

# A document about both engines, quoting one KV line of each (as docs/sglang.md does): it holds
# start-up lines, but not one engine's log.
TWO_ENGINES = (
    "# vLLM vs SGLang on one H100\n\n"
    "vLLM said:\n\n"
    "    INFO 06-23 14:21:48 [kv_cache_utils.py:716] GPU KV cache size: 410,128 tokens\n\n"
    "SGLang said:\n\n"
    "    [2025-07-01 10:00:00] KV Cache is allocated. #tokens: 415624, K size: 25.37 GB, "
    "V size: 25.37 GB\n"
)


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["explain", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    return captured.err


def test_a_docs_page_is_not_a_start_up_log(capsys: pytest.CaptureFixture[str]) -> None:
    # Before: exit 0, every check "not derived". The SGLang page quotes vLLM's KV line and an
    # SGLang pool line, so it holds both engines' KV lines: one line, exit 2.
    err = _refused(capsys, str(BOTH_ENGINES_PAGE))
    assert "not one start-up log" in err and "--engine" in err


def test_a_text_quoting_both_engines_is_refused_unless_one_is_chosen(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "compare.md"
    path.write_text(TWO_ENGINES, encoding="utf-8")
    err = _refused(capsys, str(path))
    # The lines it found, so the person can cut the text down to one log.
    assert "line 5" in err and "line 9" in err
    assert main(["explain", str(path), "--engine", "vllm", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["logged"]["kv_cache_tokens"] == 410_128


def test_a_text_without_any_start_up_line_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Serving notes\n\nWe run Llama 3.1 8B with a 32k context on one GPU; "
                    "the KV cache takes most of the memory.\n", encoding="utf-8")
    err = _refused(capsys, str(path))
    assert "not a vLLM or SGLang start-up log" in err
    assert main(["explain", str(path), "--json"]) == 2
    error = json.loads(capsys.readouterr().err)
    assert error["exit_code"] == 2 and "start-up log" in error["error"]

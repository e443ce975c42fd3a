"""``kvledger audit MODULE:FUNCTION``: report on stdout, exit 0 only when every verdict is ok,
one line and exit 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from kvledger.cli.audit import main

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def _tiny_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


def test_ok_declaration_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    # tiny.llama_ok: 2 rows × 8 positions, declared MAX_NUM_SEQS → checked at 2 rows.
    assert main(["tiny:llama_ok", "--max-num-seqs", "2"]) == 0
    out = capsys.readouterr().out
    assert "OK" in out and "result: ok" in out


def test_wrong_declaration_exits_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tiny:llama_short", "--max-num-seqs", "2"]) == 1
    assert "UNDER-DECLARED" in capsys.readouterr().out


def test_rows_checked_at_the_given_max_num_seqs(capsys: pytest.CaptureFixture[str]) -> None:
    # at max_num_seqs 4 the declaration promises 4 rows; the run fills 2: over-declared.
    assert main(["tiny:llama_ok", "--max-num-seqs", "4"]) == 1
    assert "OVER-DECLARED" in capsys.readouterr().out


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tiny:llama_ok", "--max-num-seqs", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["declarations"]
    # 2 rows × 2 × 2 layers × 2 heads × 16 × 8 positions × 4 B = 8,192 B
    assert (row["verdict"], row["declared_bytes"], row["logical_bytes"]) == ("ok", 8192, 8192)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["no_colon"], "expected MODULE:FUNCTION"),
        (["no_such_module_xyz:f"], "cannot import"),
        (["tiny:missing"], "no callable"),
        (["tiny:not_a_pair"], "must return (model, run_callable)"),
        (["tiny:llama_ok", "--max-num-seqs", "0"], "--max-num-seqs"),
        (["tiny:llama_ok", "--basis", "weird"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_input_is_one_line_and_exit_two(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def test_dispatched_from_the_main_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from kvledger.cli.main import main as kvledger_main

    assert kvledger_main(["audit", "tiny:llama_short", "--max-num-seqs", "2"]) == 1
    assert "UNDER-DECLARED" in capsys.readouterr().out


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_nothing_to_check_is_said_and_exits_one(
        json_flag: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    # No declaration and no cache held: an "ok" would be vacuous, and hides a wrong target.
    assert main(["tiny:nothing_declared", *json_flag]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "nothing to check" in err, err

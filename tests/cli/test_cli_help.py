"""The help a newcomer reads: every option says what it does, fit lists only what it takes,
no raw RST markup, and a misspelt flag or command is answered with the nearest real one."""

from __future__ import annotations

import argparse

import pytest

from kvledger.cli import audit
from kvledger.cli.main import COMMANDS, build_parser, command_parser, main
from kvledger.cli.plan_options import FIT_SETS


def _parsers() -> dict[str, argparse.ArgumentParser]:
    found = {"kvledger": build_parser(), "kvledger audit": audit._parser()}
    found.update({f"kvledger {name}": command_parser(name)
                  for name, (_, fill, _) in COMMANDS.items() if fill is not None})
    return found


def test_every_option_has_help_text() -> None:
    missing = [
        f"{prog} {'/'.join(action.option_strings) or action.dest}"
        for prog, parser in _parsers().items()
        for action in parser._actions
        if not (action.help or "").strip()
    ]
    assert not missing, "options without help: " + ", ".join(missing)


@pytest.mark.parametrize("prog", sorted(_parsers()))
def test_help_shows_no_rst_markup(prog: str) -> None:
    text = _parsers()[prog].format_help()
    assert "``" not in text and ":func:" not in text, text


def test_fit_help_shows_only_what_fit_takes() -> None:
    text = command_parser("fit").format_help()
    for name in FIT_SETS:
        assert "--" + name.replace("_", "-") not in text, name
    assert "--concurrency" in text and "--context" in text


def test_fit_still_refuses_a_plan_flag_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fit", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100-80GB",
                 "--concurrency", "1", "--context", "4096", "--max-model-len", "4096"])
    assert code == 2
    assert "--max-model-len is not taken by fit" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "expected"), [
    (["plan", "X", "--max-modle-len", "4096"],
     "unrecognized argument --max-modle-len; did you mean --max-model-len?"),
    (["plan", "X", "--kv-cache-memroy-bytes=10", "--json"],
     "unrecognized argument --kv-cache-memroy-bytes; did you mean --kv-cache-memory-bytes?"),
    (["inspect", "X", "--kv-cahce-dtype", "fp8"],
     "did you mean --kv-cache-dtype?"),
    (["plna", "X"], "unknown command 'plna'; did you mean 'plan'?"),
    (["inpsect", "X"], "did you mean 'inspect'?"),
])
def test_did_you_mean(argv: list[str], expected: str,
                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and expected in err, err


def test_no_suggestion_when_nothing_is_close(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "X", "--zzzzzz"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized argument" in err and "did you mean" not in err

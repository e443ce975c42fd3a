"""Under --json a failure is one JSON object on stderr: {"error", "hint", "exit_code"}, for
every command that takes --json, argparse's usage errors included."""

from __future__ import annotations

import json

import pytest

from kvledger.cli.main import COMMANDS, command_parser, main

MODEL = "meta-llama/Meta-Llama-3.1-8B"  # a catalog id: no network
# One bad line per command: a library refusal or a handler's, then argparse's own.
BAD = {
    "plan": [MODEL, "--json"],  # no budget
    "fit": [MODEL, "--gpu", "H100-80GB", "--concurrency", "1", "--json"],  # --context missing
    "inspect": ["./no/such/config.json", "--json"],
    "models": ["--json", "--no-such-flag"],
    "gpus": ["--json", "--no-such-flag"],
    "explain": ["/dev/null", "--json"],
    "audit": ["not-a-target", "--json"],
    "diff": [MODEL, "--from", "vllm==0.32", "--json"],  # --to missing
    "pd": ["--prefill", f"vllm serve {MODEL}", "--decode", f"vllm serve {MODEL}",
           "--json"],  # no GPU
    "pd-fit": ["--prefill", f"vllm serve {MODEL}", "--decode", f"vllm serve {MODEL}",
               "--context", "8192", "--json"],  # --requests missing
}


def _takes_json(name: str) -> bool:
    if COMMANDS[name][1] is None:  # audit: its own parser
        return True
    return any("--json" in a.option_strings for a in command_parser(name)._actions)


def test_every_json_command_is_covered() -> None:
    assert {name for name in COMMANDS if _takes_json(name)} == set(BAD)


@pytest.mark.parametrize("name", sorted(BAD))
@pytest.mark.parametrize("extra", [[], ["--no-such-flag"]])
def test_a_failure_is_one_json_object(name: str, extra: list[str],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code = main([name, *BAD[name], *extra])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    data = json.loads(lines[0])
    assert set(data) == {"error", "hint", "exit_code"} and data["exit_code"] == 2
    assert data["error"]


def test_without_json_it_stays_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", MODEL]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kvledger plan: error: no memory budget given (hint: ")


def test_json_after_a_serve_line_separator_is_not_ours() -> None:
    from kvledger.cli.errors import wants_json

    assert wants_json(["plan", "--js"]) and not wants_json(["plan", "--", "x", "--json"])

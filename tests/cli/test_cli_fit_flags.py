"""`kvledger fit` and the flags it chooses itself: -tp / -pp fix that size of the search (only
layouts with it are tried), and the flags fit sets from its own question (-dp, --max-model-len,
--max-num-seqs) are refused by name instead of being silently replaced.
"""

from __future__ import annotations

import json

import pytest

from kvledger.cli.main import main

BIG = "meta-llama/Meta-Llama-3.1-70B"
ASK = ["fit", BIG, "--gpu", "H100-80GB", "--concurrency", "16", "--context", "32768", "--json"]


def _fit(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    code = main([*ASK, *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, object] = json.loads(out)
    return data


def _layouts(data: dict[str, object]) -> list[tuple[int, int]]:
    attempts = data["attempts"]
    assert isinstance(attempts, list)
    return [(a["tensor_parallel_size"], a["pipeline_parallel_size"]) for a in attempts]


def test_pp_fixes_the_pipeline_size(capsys: pytest.CaptureFixture[str]) -> None:
    # Only PP 2 layouts, in fit's order (fewer GPUs first): TP 1, 2, 4 ... until one holds.
    data = _fit(capsys, "-pp", "2")
    layouts = _layouts(data)
    assert {pp for _, pp in layouts} == {2}
    assert [tp for tp, _ in layouts] == sorted(tp for tp, _ in layouts)
    chosen = data["chosen"]
    assert isinstance(chosen, dict) and chosen["pipeline_parallel_size"] == 2


def test_tp_and_pp_together_try_one_layout(capsys: pytest.CaptureFixture[str]) -> None:
    data = _fit(capsys, "--tensor-parallel-size", "4", "--pipeline-parallel-size", "2")
    assert _layouts(data) == [(4, 2)]


def test_tp_alone_fixes_the_tensor_size(capsys: pytest.CaptureFixture[str]) -> None:
    data = _fit(capsys, "-tp", "8")
    layouts = _layouts(data)
    assert layouts and {tp for tp, _ in layouts} == {8}


@pytest.mark.parametrize(("flag", "value"), [("-dp", "2"), ("--data-parallel-size", "2"),
                                             ("--max-model-len", "65536"),
                                             ("--max-num-seqs", "64")])
def test_flags_fit_sets_itself_are_refused_by_name(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*ASK, flag, value])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    named = {"-dp": "--data-parallel-size"}.get(flag, flag)
    assert named in err


def test_help_says_what_tp_and_pp_do(capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # argparse wraps at hyphens in narrower terminals
    assert main(["fit", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "only layouts with T-way tensor parallelism are tried" in out
    assert "only layouts with P pipeline stages are tried" in out

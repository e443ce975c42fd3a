"""Fuzz the CLI with mutated real configs and hostile options (issue 10, item 7).

Every case must end as a plausible plan (exit 0) or one clean line (exit 2); see
``judge.py`` for what counts. In CI the run is bounded to about a minute: cases are generated
from a fixed seed in order until ``KVLEDGER_FUZZ_SECONDS`` (default 45) have passed, so the
cases tried are always the same prefix and a failure names its index.

Longer local runs (the counts go to stdout with ``-s``):

    KVLEDGER_FUZZ_SECONDS=1800 pytest tests/fuzz -s          # half an hour
    KVLEDGER_FUZZ_SEED=7 KVLEDGER_FUZZ_SECONDS=600 pytest tests/fuzz -s
    KVLEDGER_FUZZ_ONLY=1234 pytest tests/fuzz -s             # replay one case

``KVLEDGER_FUZZ_CASES`` caps the number of cases instead of (or besides) the time.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest

from fuzz.cases import config_files, make_case
from fuzz.judge import Verdict, run_in_process, run_subprocess

SEED = int(os.environ.get("KVLEDGER_FUZZ_SEED", "20261201"))
SECONDS = float(os.environ.get("KVLEDGER_FUZZ_SECONDS", "45"))
MAX_CASES = int(os.environ.get("KVLEDGER_FUZZ_CASES", "0")) or None
ONLY = os.environ.get("KVLEDGER_FUZZ_ONLY")
CONFIGS = config_files()


def _describe(index: int, verdict: Verdict, what: list[str], argv: list[str]) -> str:
    return (f"case {index}: {verdict.detail}\n    mutations: {'; '.join(what)}\n"
            f"    argv: {' '.join(argv)}\n    replay: KVLEDGER_FUZZ_SEED={SEED} "
            f"KVLEDGER_FUZZ_ONLY={index} pytest tests/fuzz -s")


def test_fuzz_cli_in_process(tmp_path: Path) -> None:
    assert CONFIGS, "no configs to mutate (the bundled catalog is missing?)"
    counts: Counter[str] = Counter()
    failures: list[str] = []
    indices = [int(ONLY)] if ONLY else range(10**9)
    started = time.monotonic()
    for index in indices:
        if time.monotonic() - started > SECONDS or (MAX_CASES and counts.total() >= MAX_CASES):
            break
        case = make_case(SEED, index, CONFIGS)
        directory = tmp_path / f"c{index}"
        directory.mkdir()
        verdict = run_in_process(case, directory)
        counts[verdict.kind] += 1
        if verdict.kind == "bad":
            failures.append(_describe(index, verdict, case.what, case.argv))
    tried = counts.total()
    print(f"\nfuzz seed {SEED}: tried {tried}, clean refusal {counts['refusal']}, plausible "
          f"plan {counts['plan']}, anything else {counts['bad']} "
          f"({time.monotonic() - started:.0f} s)")
    assert not failures, f"{len(failures)} of {tried} cases failed:\n" + "\n".join(failures[:8])
    if not ONLY:
        # A run that tried almost nothing proves nothing; both outcomes must occur.
        assert tried >= 40 and counts["plan"] >= 10 and counts["refusal"] >= 10, counts


@pytest.mark.parametrize("index", [3, 11, 26, 47, 52])
def test_fuzz_cli_subprocess(index: int, tmp_path: Path) -> None:
    """A few cases through a real process (``python -m kvledger.cli.main``): the same
    verdicts hold when nothing is captured in-process."""
    case = make_case(SEED, index, CONFIGS)
    verdict = run_subprocess(case, tmp_path)
    assert verdict.kind != "bad", _describe(index, verdict, case.what, case.argv)

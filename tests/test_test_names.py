"""Test files are named for what they cover, never for an issue, a work round or a wave: a name
such as ``test_issue25_why.py`` or ``test_breadth5_rows.py`` says when a test was written, not
what fails when it fails."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
HISTORY = re.compile(r"issue\d|wave\d|breadth\d|round\d|_\d+\.py$")


def _named_after_history(names: list[str]) -> list[str]:
    return [name for name in names if HISTORY.search(name)]


def test_no_test_file_is_named_after_history() -> None:
    names = sorted(str(p.relative_to(TESTS)) for p in TESTS.rglob("test_*.py"))
    assert _named_after_history(names) == []


def test_the_name_check_can_fail() -> None:
    assert _named_after_history(["cli/test_issue10_why.py", "plan/test_sglang_wave3.py",
                                 "derive/test_breadth5_rows.py", "plan/test_dense_2.py",
                                 "plan/test_rules.py"]) == [
        "cli/test_issue10_why.py", "plan/test_sglang_wave3.py", "derive/test_breadth5_rows.py",
        "plan/test_dense_2.py"]

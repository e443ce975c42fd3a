"""Every ``kvledger`` command README.md and docs/ show is run here, offline, and every number
the page prints under it is compared with what the command really prints
(tests/docs/doc_examples.py has the reading rules). A page whose numbers drift from the
output fails; so does a command that stops working, or a block left unrun without one of the
fixed reasons."""

from __future__ import annotations

import atexit
import contextlib
import io
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from doc_examples import (
    REASONS,
    ROOT,
    Example,
    blocks,
    examples,
    missing_numbers,
    numbers,
    pages,
)

from kvledger.cli.main import main

_RAN: dict[tuple[str, ...], tuple[int, str]] = {}
_WORKDIR: list[Path] = []
# What a page's relative paths name (examples/…, tests/explain/logs/…), seen from the folder the
# commands run in: a temporary one, so what a command writes (report.html) lands there.
_LINKED = ("examples", "tests", "docs", "src")


def _workdir() -> Path:
    if not _WORKDIR:
        where = Path(tempfile.mkdtemp(prefix="kvledger-doc-examples-"))
        for name in _LINKED:
            (where / name).symlink_to(ROOT / name, target_is_directory=True)
        atexit.register(shutil.rmtree, where, ignore_errors=True)
        _WORKDIR.append(where)
    return _WORKDIR[0]


def run(argv: list[str]) -> tuple[int, str]:
    """``kvledger ARGV`` in this process, in a folder that sees the repository's files: (exit
    code, stdout and stderr). Wide columns, so no table folds a number (the layout is not what
    is checked)."""
    key = tuple(argv)
    if key not in _RAN:
        out, err = io.StringIO(), io.StringIO()
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(_workdir())
            mp.setenv("COLUMNS", "400")
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
        _RAN[key] = (code, out.getvalue() + err.getvalue())
    return _RAN[key]


def check(example: Example) -> list[str]:
    """What is wrong with one example: a command that fails (or succeeds where the page shows
    its refusal), and each number the page shows that the output does not print."""
    if example.not_run is not None:
        return [] if example.not_run in REASONS else [
            f"{example.where}: 'not run: {example.not_run}' is none of {sorted(REASONS)}"]
    problems = []
    refusal = example.shown is not None and re.search(r"^error:", example.shown, re.M)
    output = ""
    for argv in example.commands:
        code, text = run(argv)
        output += text
        if code != (2 if refusal else 0):
            problems.append(f"{example.where}: kvledger {' '.join(argv)} exited {code}: "
                            f"{text.strip().splitlines()[-1:] or ''}")
    if example.shown is not None:
        gone = missing_numbers(example.shown, output)
        if gone:
            problems.append(f"{example.where}: the page shows {gone}, which "
                            f"kvledger {' '.join(example.commands[-1])} does not print")
    return problems


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_runs_and_prints_the_pages_numbers(page: Path) -> None:
    problems = [p for example in examples(page) for p in check(example)]
    assert not problems, "\n".join(problems)


def test_the_readme_runs_its_examples() -> None:
    # The README's own examples are run, not marked away: its first command among them.
    readme = examples(ROOT / "README.md")
    ran = [e for e in readme if e.not_run is None]
    assert len(ran) >= 4
    assert ran[0].commands[0][:2] == ["plan", "meta-llama/Meta-Llama-3.1-8B"]
    assert all(e.shown is not None for e in ran[1:4])


def test_an_edited_number_fails(tmp_path: Path) -> None:
    """A copy of the README with one shown number changed (to one the command never prints)
    fails the check; the original passes."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    example = next(e for e in examples(ROOT / "README.md", text)
                   if e.not_run is None and e.shown)
    assert check(example) == []
    assert example.shown is not None
    printed = numbers("".join(run(argv)[1] for argv in example.commands))
    old = max(numbers(example.shown), key=len)  # e.g. "81,920"
    new = int(old.replace(",", "").split(".")[0]) + 1
    while f"{new:,}" in printed or str(new) in printed:
        new += 1
    edited_block = example.shown.replace(old, f"{new:,}", 1)
    copy = tmp_path / "README.md"
    copy.write_text(text.replace(example.shown, edited_block, 1), encoding="utf-8")
    (edited,) = [e for e in examples(copy) if e.line == example.line]
    problems = check(edited)
    assert len(problems) == 1 and f"{new:,}" in problems[0], problems


def test_a_marker_outside_the_list_fails(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# t\n\n<!-- not run: too slow -->\n```bash\nkvledger models\n```\n"
                    "\n<!-- not run: needs the Hub -->\n```bash\nkvledger plan org/x\n```\n",
                    encoding="utf-8")
    bad, good = examples(page)
    assert check(bad) and "too slow" in check(bad)[0]
    assert check(good) == []


def test_the_reader_finds_commands_shown_and_output() -> None:
    page = ("```bash\npython3 -m venv .venv && pip install . && kvledger plan m \\\n"
            "    --gpu H100  # a comment\nkvledger gpus | head\n```\n\n"
            "```text\n1,024 x 2.50\n```\n")
    (one,) = examples(Path("/x.md"), page)
    assert one.commands == [["plan", "m", "--gpu", "H100"], ["gpus"]]
    assert one.shown == "1,024 x 2.50"
    assert missing_numbers("1,024 and 2.50 and 7", "2.50 1,024") == ["7"]
    assert missing_numbers("16 16", "16") == ["16"]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fence_names_its_language(page: Path) -> None:
    # A command in a fence with no language would escape the check above: every fence says
    # what it holds (bash, text, python, yaml, json, ...).
    unnamed = [line for line, lang, _ in blocks(page.read_text(encoding="utf-8")) if not lang]
    assert not unnamed, f"{page.name}: fences without a language at lines {unnamed}"

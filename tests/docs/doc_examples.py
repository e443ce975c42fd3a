"""Read the ``kvledger …`` commands a Markdown page shows and the output it prints under them.

A page's example is a fenced ```bash block; each of its logical lines (backslash
continuations joined) is split like a shell would (``&&`` / ``;`` / ``|`` separate commands,
``#`` starts a comment) and every command starting with ``kvledger`` is one example. The
fenced ```text block that follows it directly (only blank lines between) is the output the page
claims: every number in it must be in what the commands really print (stdout and stderr
together). Numbers, not lines, because the layout (terminal width, wrapping, column order) is
free to change; a number that drifts is not.

A block that cannot run in a test carries, on the line directly above its opening fence,
``<!-- not run: REASON -->`` with REASON one of ``REASONS``.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Why a shown command may stay unrun. Each names something a test machine does not have.
REASONS = frozenset({
    "needs the Hub",            # a model id that is neither a catalog id nor a file here
    "needs a GPU",              # reads a live device
    "needs ../shared",          # the team's configs and logs, not shipped in the repository
    "needs a gated model",      # a Hub model behind a licence (HF_TOKEN)
})

FENCE = re.compile(r"^```(\S*)\s*$")
MARKER = re.compile(r"^<!--\s*not run:\s*(.*?)\s*-->\s*$")
# A number as kvledger prints it: digits with optional thousands separators and decimals.
NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


@dataclass
class Example:
    """One ```bash block of a page: its commands, the output shown below it, its marker."""

    page: Path
    line: int                     # 1-based line of the opening fence
    commands: list[list[str]]     # each ``kvledger …`` command's argv, without "kvledger"
    shown: str | None             # the ```text block right after, if any
    not_run: str | None           # the marker's reason, if the block is marked
    problems: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT) if ROOT in self.page.parents else self.page}" \
               f":{self.line}"


def pages() -> list[Path]:
    """README.md and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(text: str) -> Iterator[tuple[int, str, str]]:
    """(line of the opening fence, info string, body) of every fenced block."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang, body = i, m.group(1), []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        yield start + 1, lang, "\n".join(body)
        i += 1


def commands(body: str) -> list[list[str]]:
    """The ``kvledger`` commands of a bash block, each as the argv after ``kvledger``."""
    joined = re.sub(r"\\\n\s*", " ", body)
    found: list[list[str]] = []
    for line in joined.splitlines():
        line = re.sub(r"^\s*\$\s+", "", line)
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        for token in [*lexer, ";"]:
            if token in {";", "&&", "|", "||", "&"}:
                if words and words[0] == "kvledger":
                    found.append(words[1:])
                words = []
            else:
                words.append(token)
    return found


def examples(page: Path, text: str | None = None) -> list[Example]:
    """Every ```bash block of ``page`` that holds a ``kvledger`` command."""
    text = page.read_text(encoding="utf-8") if text is None else text
    lines = text.splitlines()
    fenced = list(blocks(text))
    found = []
    for n, (line, lang, body) in enumerate(fenced):
        if lang not in {"bash", "sh", "shell", "console"}:
            continue
        argvs = commands(body)
        if not argvs:
            continue
        above = lines[line - 2] if line >= 2 else ""
        marker = MARKER.match(above)
        shown = None
        if n + 1 < len(fenced):
            next_line, next_lang, next_body = fenced[n + 1]
            end = line + body.count("\n") + 2  # the closing fence's line (1-based)
            between = lines[end:next_line - 1]
            if next_lang == "text" and all(not x.strip() for x in between):
                shown = next_body
        found.append(Example(page, line, argvs, shown, marker.group(1) if marker else None))
    return found


def numbers(text: str) -> Counter[str]:
    return Counter(NUMBER.findall(text))


def missing_numbers(shown: str, output: str) -> list[str]:
    """The numbers the page shows that the real output does not print (as often)."""
    return sorted((numbers(shown) - numbers(output)).elements())

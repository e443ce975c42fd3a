"""How wide the text for a person may be: the terminal's width, ``COLUMNS`` when set, and 100
columns when stdout is a file or a pipe.

Why 100 for a pipe and not rich's 80 or a forced 140: a pipe is usually read later in a
terminal or an editor of about that width; 140 put every table and sentence past an 80- or
100-column window. ``COLUMNS`` wins over both, so ``COLUMNS=80 kvledger plan … | less`` is
laid out for 80. Every table keeps its numbers whole at any of these widths (``cli.render``).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TextIO

PIPE_WIDTH = 100
NARROW = 120  # below this, tables drop their low-value columns (cli.render)


def output_width(stream: TextIO) -> int:
    """``COLUMNS`` if it is a positive integer; else the terminal's width when ``stream`` is a
    terminal; else ``PIPE_WIDTH``."""
    given = os.environ.get("COLUMNS", "").strip()
    if given.isdigit() and int(given) > 0:
        return int(given)
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        pass
    return PIPE_WIDTH


def wrap_lines(lines: list[str], width: int) -> list[str]:
    """Plain lines for a person, each cut at spaces (never inside a word or a number) to
    ``width`` columns, a continuation indented as its line is, plus two."""
    import textwrap

    out: list[str] = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()))
        out += textwrap.wrap(line, width, subsequent_indent=indent + "  ",
                             break_long_words=False, break_on_hyphens=False) or [line]
    return out


def wrapped_command(argv: Sequence[str], width: int, indent: str = "") -> list[str]:
    """A shell command cut into lines of at most ``width`` characters, each but the last
    ending in `` \\`` (it still pastes as one command); a flag stays with its value; every
    line starts with ``indent``."""
    import shlex

    words = [shlex.quote(str(w)) for w in argv]
    groups: list[str] = []
    room = width - len(indent) - 6  # a continuation line's indent and " \\"
    for word in words:
        if groups and not word.startswith("-") and groups[-1].startswith("-") and \
                " " not in groups[-1] and len(groups[-1]) + 1 + len(word) <= room:
            groups[-1] += " " + word  # a flag stays with its value where the two fit
        else:
            groups.append(word)
    lines: list[str] = []
    current = indent
    for group in groups:
        candidate = f"{current} {group}" if current.strip() else current + group
        if current.strip() and len(candidate) + 2 > width:
            lines.append(current + " \\")
            current = indent + "    " + group
        else:
            current = candidate
    lines.append(current)
    return lines

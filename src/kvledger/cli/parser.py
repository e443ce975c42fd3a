"""The CLI's argparse parser, the one reader of a command line: it raises instead of exiting.

One command's parser is built per call (``cli.main.command_parser``), the whole tree only for
``--help`` and for a line that names no known command.
"""

from __future__ import annotations

import argparse

from kvledger.cli.errors import UsageError

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any, NoReturn


class Parser(argparse.ArgumentParser):
    """argparse, but a rejected command line raises instead of printing usage and exiting.

    argparse's default prints a multi-line usage block and calls ``sys.exit(2)``; the machine
    interface wants exactly one line on stderr, and ``main`` must return its code, not exit.

    ``action="boolean_optional"`` names argparse's ``BooleanOptionalAction``, so the modules
    that define options need not import argparse at their top.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "boolean_optional", argparse.BooleanOptionalAction)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {self._suggest(message)}",
                         hint=f"see '{self.prog} --help'")

    def _suggest(self, message: str) -> str:
        """argparse's ``unrecognized arguments: --max-modle-len 4096`` → ``unrecognized
        argument --max-modle-len; did you mean --max-model-len?`` when one of this parser's
        listed flags is close (``cli.flag_hints``: TP/PP/DP/EP abbreviations expanded, then
        difflib); else argparse's words."""
        prefix = "unrecognized arguments: "
        if not message.startswith(prefix):
            return message
        flags = [w.partition("=")[0] for w in message[len(prefix):].split()
                 if w.startswith("--")]
        if not flags:
            return message
        from kvledger.cli.flag_hints import closest_flag

        known = [a.option_strings for a in self._actions if a.help != argparse.SUPPRESS]
        for flag in flags:
            close = closest_flag(flag, known)
            if close:
                return f"unrecognized argument {flag}; did you mean {close}?"
        return message

    # argparse's add_argument builds a formatter only to check a metavar tuple against nargs;
    # a default one reads the terminal width through shutil, whose import (zlib, bz2, lzma)
    # costs ~6 ms of every start-up. That check never uses the width, so it gets a fixed one;
    # help and usage text still get argparse's own formatter, sized to the terminal.
    _checking_argument = False

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        self._checking_argument = True
        try:
            return super().add_argument(*args, **kwargs)
        finally:
            self._checking_argument = False

    _checker: argparse.HelpFormatter | None = None

    def _get_formatter(self) -> argparse.HelpFormatter:
        if self._checking_argument:
            # One for every check of this parser: the check only formats a metavar.
            if self._checker is None:
                formatter_class: Any = self.formatter_class  # typeshed's protocol omits width
                self._checker = formatter_class(prog=self.prog, width=80)
            return self._checker
        return super()._get_formatter()

"""One helper for tests that expect ``kvledger plan`` to refuse: exit 2, nothing on stdout, and
one line on stderr (no traceback). Returns that line for the test's own words check."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

from kvledger.cli.main import main


def refusal_line(path: str, engine: str, *extra: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["plan", path, "--engine", engine, "--kv-cache-memory-bytes", "8GiB",
                     *extra])
    assert code == 2 and out.getvalue() == "", err.getvalue()
    assert len(err.getvalue().splitlines()) == 1  # one line, no traceback
    return err.getvalue()

"""Turn any failure into one line on stderr plus a fix hint, and exit code 2.

Why one line and not a traceback: the CLI is called by scripts and by people; a script needs a
stable exit code and something it can log, a person needs to know what to change. A traceback
gives neither and hides the one number that matters. The library raises errors that carry
their numbers, each in the one tree ``kvledger.errors`` (``KvledgerError`` and its families);
this module chooses the words by the error's type, never by its text.

Why even unexpected exceptions exit 2 rather than 1: the CLI cannot tell an unanticipated
``KeyError`` deep inside a family (a config missing a field nobody guarded) from a bug, and the
machine interface promises "bad input → exit 2, never a traceback". The message says it was
unexpected so a person knows to report it.

Only the error tree is imported at module level (a leaf of a few classes); the pool
budget's error is imported when an error is being reported.
"""

from __future__ import annotations

import re
import sys

from kvledger.errors import (
    DeployFileError,
    DeriveError,
    EngineStartupRefusal,
    KvledgerError,
    SourceError,
    UnsupportedArchitecture,
)

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TextIO

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

# PlanRequest / finite_fraction name options by their Python names; people type flags.
# Only names with an underscore: plain words ("context", "gpu") also occur in prose.
_OPTION_FLAGS = {
    name: "--" + name.replace("_", "-")
    for name in (
        "kv_cache_memory_bytes", "block_size", "max_model_len", "kv_cache_dtype",
        "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "max_num_seqs",
        "max_num_batched_tokens", "enable_prefix_caching", "num_speculative_tokens",
        "speculative_method", "gpu_memory_utilization", "activation_peak_bytes",
        "cuda_graph_bytes", "non_torch_bytes", "gpu_total_bytes", "usage_context",
    )
}
# A pattern, not a compiled regex: ``re`` compiles (and caches) it on the first error, not on
# every start-up.
_OPTION_PATTERN = r"\b(" + "|".join(sorted(_OPTION_FLAGS, key=len, reverse=True)) + r")\b"


class UsageError(Exception):
    """A command line the parser rejected (unknown flag, bad type, missing argument)."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


def one_line(text: str) -> str:
    """Collapse whitespace (library messages sometimes wrap) into a single line."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _flagify(message: str) -> str:
    """``max_num_seqs must be >= 1`` → ``--max-num-seqs must be >= 1``."""
    return re.sub(_OPTION_PATTERN, lambda m: _OPTION_FLAGS[m.group(1)], message)


def _budget_hint(exc: BaseException) -> str:
    """The three-way hint for ``InsufficientPoolBudget`` when the library offers one."""
    for attr in ("hint", "fix_hint"):
        value = getattr(exc, attr, None)
        if isinstance(value, str) and value:
            return value
    reserved = getattr(exc, "reserved_bytes", None)
    available = getattr(exc, "available_bytes", None)
    if isinstance(reserved, int) and isinstance(available, int):
        return (
            f"per-request state needs {reserved:,} B but only {available:,} B are available: "
            "reduce --max-num-seqs, or give more memory (--kv-cache-memory-bytes, "
            "--gpu-memory-utilization, a larger --gpu or more --tensor-parallel-size)"
        )
    return "reduce --max-num-seqs or give the KV cache more memory"


def describe(exc: BaseException) -> tuple[str, str]:
    """(message, hint) for ``exc``. The message is one line; the hint may be empty."""
    from kvledger.declare.pools import InsufficientPoolBudget

    if isinstance(exc, UsageError):
        return one_line(str(exc)), exc.hint
    text = one_line(str(exc)) or type(exc).__name__
    if isinstance(exc, UnsupportedArchitecture):
        # The library's message already names the model type / key and why; nothing to add.
        return text, ""
    if isinstance(exc, SourceError):
        # Where MODEL was looked for and the way out (a token, --revision, --offline, a path).
        return f"error: {text}", one_line(exc.hint)
    if isinstance(exc, DeriveError):
        return f"error: {text}", "check the model's config.json, or use a catalog id"
    if isinstance(exc, InsufficientPoolBudget):
        return f"error: {text}", _flagify(one_line(_budget_hint(exc)))
    if isinstance(exc, DeployFileError):
        # A deploy file's field names are the file's own, not flags: not renamed.
        return f"error: {text}", one_line(exc.hint)
    if isinstance(exc, EngineStartupRefusal):
        # The engine's own reason, quoted as it words it: its option names stay its own.
        return f"error: {text}", one_line(exc.hint)
    if isinstance(exc, KvledgerError | TypeError | ValueError):
        # The library's messages name the option and, where there is one, the fix.
        return f"error: {_flagify(text)}", _flagify(one_line(getattr(exc, "hint", "") or ""))
    if isinstance(exc, OSError):
        return f"error: {text}", ""
    return (
        f"error: unexpected {type(exc).__name__}: {text}",
        "this is likely a kvledger bug; please report it with the command line",
    )


def wants_json(argv: Sequence[str]) -> bool:
    """Whether the command line asks for JSON: ``--json`` (or an abbreviation argparse would
    expand to it) before a ``--`` that starts a pasted serve line."""
    for arg in argv:
        if arg == "--":
            return False
        if len(arg) >= 3 and "--json".startswith(arg):
            return True
    return False


def report(exc: BaseException, stream: TextIO | None = None, *, as_json: bool = False) -> int:
    """Print ``exc`` on stderr and return the exit code: one line, or with ``as_json`` one
    JSON object ``{"error", "hint", "exit_code"}`` (a script that asked for JSON parses its
    failures too)."""
    out = stream if stream is not None else sys.stderr
    if isinstance(exc, KeyboardInterrupt):
        message, hint, code = "interrupted", "", EXIT_INTERRUPTED
    else:
        (message, hint), code = describe(exc), EXIT_USAGE
    if as_json:
        import json

        print(json.dumps({"error": message, "hint": hint, "exit_code": code}), file=out)
    else:
        print(f"{message} (hint: {hint})" if hint else message, file=out)
    return code

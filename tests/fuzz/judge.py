"""Run one fuzz case through ``kvledger``'s entry point and judge what came out.

Exactly two outcomes are acceptable:

- **plan**: exit 0 and, with ``--json``, one JSON object whose numbers are plausible — every
  number finite and >= 0, a block size and max_model_len >= 1, and a zero block count,
  token count or concurrency only with a reason (a warning, or ``vllm_refuses_to_start``
  with ``vllm_refusal_reason``);
- **refusal**: exit 2 with exactly one line on stderr that is not an internal error.

Anything else — a traceback, "unexpected ... likely a kvledger bug", another exit code, more
than one line, a NaN, a negative or unexplained zero, or a case that runs past its time
limit (a hang) — is a failure, reported with the case's index and mutations.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from fuzz.cases import Case

# The slowest legitimate case (10,000 layers x PP) takes a few CPU seconds. The limit is on
# CPU time (ITIMER_PROF), so a machine shared with other jobs does not turn into a "hang";
# a wall-clock limit several times longer catches a case that waits instead of computing.
CASE_SECONDS = 20
WALL_SECONDS = 120
INTERNAL = ("Traceback", "likely a kvledger bug", "unexpected ")
# No number a plan prints can exceed this: bytes are capped at 2**60, tokens and blocks are
# far below, and an echoed config value is bounded by derive/limits.py.
MAX_PLAUSIBLE = 1 << 64


@dataclass
class Verdict:
    kind: str  # "plan", "refusal" or "bad"
    detail: str = ""


class _CaseTimeout(BaseException):
    """Raised by the alarm; BaseException so no ``except Exception`` swallows it."""


@contextlib.contextmanager
def _alarm(cpu_seconds: int, wall_seconds: int) -> Iterator[list[str]]:
    fired: list[str] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        fired.append(f"{cpu_seconds} CPU s" if signum == signal.SIGPROF
                     else f"{wall_seconds} s")
        raise _CaseTimeout(fired[-1])

    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
    signal.setitimer(signal.ITIMER_REAL, wall_seconds)
    try:
        yield fired
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler_before in old.items():
            signal.signal(sig, handler_before)


def write_files(case: Case, directory: Path) -> list[str]:
    for name, data in case.files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return [a.replace("{dir}", str(directory)) for a in case.argv]


def run_in_process(case: Case, directory: Path) -> Verdict:
    from kvledger.cli.main import main

    argv = write_files(case, directory)
    out, err = io.StringIO(), io.StringIO()
    with _alarm(CASE_SECONDS, WALL_SECONDS) as fired, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except _CaseTimeout:
            code = -1
    if fired:
        return Verdict("bad", f"hang: no answer within {fired[0]}")
    return judge(case, code, out.getvalue(), err.getvalue())


def run_subprocess(case: Case, directory: Path) -> Verdict:
    argv = write_files(case, directory)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kvledger.cli.main", *argv], capture_output=True, text=True,
            timeout=WALL_SECONDS, check=False, env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
    except subprocess.TimeoutExpired:
        return Verdict("bad", f"hang: no answer within {WALL_SECONDS} s")
    return judge(case, done.returncode, done.stdout, done.stderr)


def judge(case: Case, code: int, stdout: str, stderr: str) -> Verdict:
    if any(mark in stderr or mark in stdout for mark in INTERNAL):
        return Verdict("bad", f"internal error (exit {code}): {stderr.strip()[:300]}")
    if code == 2:
        lines = [line for line in stderr.splitlines() if line.strip()]
        if len(lines) != 1:
            return Verdict("bad", f"exit 2 with {len(lines)} stderr lines: {stderr[:300]!r}")
        return Verdict("refusal", lines[0])
    if code != 0:
        return Verdict("bad", f"exit {code}: {stderr.strip()[:300]}")
    if not stdout.strip():
        return Verdict("bad", "exit 0 with nothing on stdout")
    if not case.json_out:
        return Verdict("plan")
    if "NaN" in stdout or "Infinity" in stdout:
        return Verdict("bad", "NaN / Infinity in the JSON")
    try:
        data = json.loads(stdout)
    except json.JSONDecodeError as exc:
        return Verdict("bad", f"stdout is not one JSON object: {exc}")
    problem = plausible(data, case.argv[0])
    return Verdict("bad", problem) if problem else Verdict("plan")


def _numbers(node: Any, path: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _numbers(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _numbers(value, f"{path}[{i}]")
    elif isinstance(node, int | float) and not isinstance(node, bool):
        yield path, node


def plausible(data: Any, command: str) -> str:
    """"" when ``data`` is a plausible answer of ``command``, else what is wrong with it."""
    if not isinstance(data, dict):
        return f"JSON is a {type(data).__name__}, not an object"
    for path, value in _numbers(data):
        if isinstance(value, int) and abs(value) > MAX_PLAUSIBLE:
            return f"{path} = a {len(str(value))}-digit number"
        if not math.isfinite(value) or value < 0:
            return f"{path} = {value}"
    if command != "plan":
        return ""
    for key in ("num_blocks", "kv_cache_tokens", "max_concurrency", "max_model_len",
                "block_size", "available_bytes"):
        if not isinstance(data.get(key), int | float) or isinstance(data.get(key), bool):
            return f"{key} missing or not a number: {data.get(key)!r}"
    if data["block_size"] < 1 or data["max_model_len"] < 1:
        return f"block_size {data['block_size']}, max_model_len {data['max_model_len']}"
    refuses = data.get("vllm_refuses_to_start") is True
    if refuses and not data.get("vllm_refusal_reason"):
        return "vllm_refuses_to_start without vllm_refusal_reason"
    zero = [k for k in ("num_blocks", "kv_cache_tokens", "max_concurrency") if data[k] == 0]
    if zero and not refuses and not data.get("warnings"):
        return f"{', '.join(zero)} = 0 with no warning and no refusal reason"
    return ""

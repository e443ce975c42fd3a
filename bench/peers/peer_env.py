"""The peers' own venv (bench/.peers/venv, git-ignored): created and filled on first use.

The peers are pinned so a rerun asks the same code the same questions. They are never kvledger
dependencies. None of the three pins needs torch (checked with ``pip install --dry-run``); if a
future pin does, it must be ``torch==2.13.0`` added here, never an unpinned torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

PINS = {"hf-mem": "0.5.6", "kvfit": "0.3.0", "vllm-wizard": "0.2.0"}

BENCH = Path(__file__).resolve().parents[1]
VENV = BENCH / ".peers" / "venv"
STAMP = VENV / "kvledger-bench-pins.json"


def python() -> Path:
    return VENV / "bin" / "python"


def ensure(*, quiet: bool = False) -> Path:
    """The venv's python, creating the venv and installing the pins if they are not there."""
    wanted = json.dumps(PINS, sort_keys=True)
    if python().exists() and STAMP.exists() and STAMP.read_text() == wanted:
        return python()
    if not python().exists():
        _say(f"creating the peers' venv at {VENV.relative_to(BENCH.parent)}", quiet)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    specs = [f"{name}=={version}" for name, version in PINS.items()]
    _say(f"installing {' '.join(specs)} into it (PyPI)", quiet)
    subprocess.run(
        [str(python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *specs],
        check=True,
    )
    STAMP.write_text(wanted)
    return python()


def _say(message: str, quiet: bool) -> None:
    if not quiet:
        print(f"[bench] {message}", file=sys.stderr)

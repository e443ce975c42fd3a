"""No file of the repository is a copy of a file in ../shared.

Fetched data (real configs, engines' source, oracle outputs) lives in the team's data library
(../shared) only; the repository holds its own code, tables and tests. A tracked file that is
byte for byte a file there is a fetched file committed by mistake.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from oracle_cases import SHARED, needs_shared

ROOT = Path(__file__).resolve().parents[1]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@needs_shared
def test_no_tracked_file_is_byte_identical_to_a_shared_file() -> None:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    tracked = [ROOT / name for name in listed if name and (ROOT / name).is_file()]
    assert len(tracked) > 100  # the walk saw the repository
    shared = [p for p in SHARED.resolve().rglob("*") if p.is_file() and not p.is_symlink()]
    sizes = {p.stat().st_size for p in shared}
    # Only a file of a size some shared file has can be its copy: hash just those.
    mine = {_digest(p): p for p in tracked if p.stat().st_size in sizes}
    copies = [f"{mine[d].relative_to(ROOT)} is {p}" for p in shared
              if p.stat().st_size in {q.stat().st_size for q in mine.values()}
              and (d := _digest(p)) in mine]
    assert not copies, "byte-identical to a file in ../shared: " + "; ".join(copies)

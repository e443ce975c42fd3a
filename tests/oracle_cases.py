"""Where the vLLM 0.32 oracle cases and the shared configs live, and one loader for them.

CI clones the repo with ``shared/`` beside it (``../shared``); tests that need the oracle skip
when it is absent rather than fail on a machine that lacks it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"
ORACLE_FILE = SHARED / "oracles" / "vllm-0.32" / "cases.jsonl"
CONFIGS = SHARED / "configs"


def load_cases() -> list[dict[str, Any]]:
    """Every oracle case in file order ([] when the oracle is not beside the repo)."""
    if not ORACLE_FILE.is_file():
        return []
    return [json.loads(line) for line in ORACLE_FILE.read_text().splitlines() if line.strip()]

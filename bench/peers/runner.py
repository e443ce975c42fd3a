"""Runs inside the peers' venv: read questions (JSON on stdin), print every peer's answers.

Output: ``{"tools": {name: {"version": str | None, "metrics": [the questions the tool has
inputs for], "answers": {question_id: answer}}}}``.
A peer whose adapter cannot even be imported is "unavailable" for every question, with the
import error as the reason; that is recorded, not raised.
"""

from __future__ import annotations

import importlib
import json
import sys
from importlib import metadata
from typing import Any

from common import guarded, unavailable

ADAPTERS = ("hf_mem_peer", "kvfit_peer", "vllm_wizard_peer")
NAMES = {"hf_mem_peer": "hf-mem", "kvfit_peer": "kvfit", "vllm_wizard_peer": "vllm-wizard"}


def main() -> int:
    questions: list[dict[str, Any]] = json.load(sys.stdin)["questions"]
    only = set(sys.argv[1:])
    tools: dict[str, Any] = {}
    for module_name in ADAPTERS:
        name = NAMES[module_name]
        if only and name not in only:
            continue
        try:
            module = importlib.import_module(module_name)
            version: str | None = metadata.version(module.DISTRIBUTION)
        except Exception as exc:
            why = f"cannot import the {name} adapter: {type(exc).__name__}: {exc}"
            tools[name] = {"version": None, "metrics": [],
                           "answers": {q["id"]: unavailable(why) for q in questions}}
            continue
        answers = {q["id"]: guarded(module.ask, q) for q in questions}
        tools[name] = {"version": version, "metrics": list(module.METRICS), "answers": answers}
    json.dump({"tools": tools}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

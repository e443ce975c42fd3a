"""Answer one question with one tool in a fresh interpreter (speed.py's library timing).

    python once.py TOOL QUESTION.json     # TOOL: kvledger | hf-mem | kvfit | vllm-wizard

Run kvledger with the project's interpreter and the peers with the peers' venv.
"""

from __future__ import annotations

import importlib
import json
import sys

MODULES = {"kvledger": "kvledger_peer", "hf-mem": "hf_mem_peer", "kvfit": "kvfit_peer",
           "vllm-wizard": "vllm_wizard_peer"}


def main() -> int:
    tool, path = sys.argv[1], sys.argv[2]
    with open(path) as handle:
        question = json.load(handle)
    module = importlib.import_module(MODULES[tool])
    if tool == "kvledger":
        result = module.ask_all([question])[question["id"]]
    else:
        from common import guarded

        result = guarded(module.ask, question)
    json.dump(result, sys.stdout)
    return 0 if result["status"] == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main())

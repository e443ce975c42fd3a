"""Ask vLLM 0.32 (the shared oracle) for the dense-2 coverage group's runs (``RUNS``) and merge
them into ``vllm-0.32-coverage-dense2.jsonl``.

A research tool, never imported by the package or the tests; it needs the oracle venv
(``../shared/oracles/tool/README.md``) and runs one case at a time (15-60 s each):

    ORACLE_PY=/work/oracle/vllm-venv/bin/python \
        python tests/oracles/run_oracle_dense2.py [SUBSTRING ...]

Each line written carries its exact ``command`` and ``why``; a rerun replaces the line with the
same command. The case format is the dense group's (``run_oracle_dense._case``), so the one
replay (tests/plan/test_vllm_oracles.py) reads both files the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_oracle_dense import AUTO, GIB16, TOOL, _case, _config_path  # noqa: E402

OUT = HERE / "vllm-0.32-coverage-dense2.jsonl"

# (config, extra oracle arguments, why)
RUNS: list[tuple[str, list[str], str]] = [
    ("nvidia--Minitron-4B-Base.CONVERTED.json", ["--max-model-len", "4096"],
     "Nemotron (Minitron-4B): 8 KV heads x 128, every layer full attention"),
    ("nvidia--Minitron-4B-Base.CONVERTED.json", [],
     "no --max-model-len: vLLM's length is max_position_embeddings (4096)"),
    ("nvidia--Minitron-4B-Base.CONVERTED.json", ["--max-model-len", "4096", "--tp", "2"],
     "Nemotron at TP 2: 8 KV heads, 4 per rank"),
    ("nvidia--Minitron-4B-Base.CONVERTED.json",
     ["--max-model-len", "4096", "--kv-cache-dtype", "fp8"],
     "Nemotron with an fp8 KV cache (nemotron.py passes cache_config to Attention)"),
    ("baidu--ERNIE-4.5-0.3B-PT.HF-ARCH.MODIFIED.json", ["--max-model-len", "32768"],
     "ERNIE-4.5-0.3B (ernie4_5, llama.py attention): 2 KV heads x head_dim 128"),
    ("baidu--ERNIE-4.5-0.3B-PT.HF-ARCH.MODIFIED.json", [],
     "no --max-model-len: vLLM's length is max_position_embeddings (131072)"),
    ("baidu--ERNIE-4.5-0.3B-PT.HF-ARCH.MODIFIED.json", ["--max-model-len", "32768", "--tp", "4"],
     "ERNIE-4.5-0.3B at TP 4: 2 KV heads replicated, 1 per rank"),
]


def _merge(new: list[dict[str, Any]]) -> None:
    """Keep every earlier line except those whose command ran again."""
    old = [json.loads(line) for line in OUT.read_text().splitlines() if line.strip()] \
        if OUT.is_file() else []
    fresh = {c["command"] for c in new}
    kept = [c for c in old if c.get("command") not in fresh]
    with open(OUT, "w") as f:
        f.writelines(json.dumps(c) + "\n" for c in [*kept, *new])


def main() -> None:
    python = os.environ.get("ORACLE_PY", "/work/oracle/vllm-venv/bin/python")
    wanted = sys.argv[1:]
    cases: list[dict[str, Any]] = []
    for name, extra, why in RUNS:
        if wanted and not any(w in name or w in why for w in wanted):
            continue
        args = [str(_config_path(name)), "--kv-cache-memory-bytes", GIB16, *AUTO, *extra]
        command = " ".join(["vllm_oracle.py", name, *args[1:]])
        print(f"running: {command}", file=sys.stderr)
        done = subprocess.run([python, str(TOOL), *args], capture_output=True, text=True,
                              check=False)
        out = json.loads(done.stdout)
        refused_with_plan = out.get("vllm_refuses_to_start") and out.get("num_blocks")
        if not out.get("ok") and not refused_with_plan:
            print(f"  failed: {out.get('error')}", file=sys.stderr)
            continue
        cases.append(_case(out, name, command, why))
    _merge(cases)


if __name__ == "__main__":
    main()

"""Ask vLLM 0.32 (the shared oracle) for the registry decoders' runs (``RUNS``: ERNIE-4.5,
Minitron; the dense-2 coverage group) and merge
them into ``vllm-0.32-coverage-dense2.jsonl``.

A research tool, never imported by the package or the tests; it needs the oracle venv
(``../shared/oracles/tool/README.md``) and runs one case at a time (15-60 s each):

    ORACLE_PY=/work/oracle/vllm-venv/bin/python \
        python tests/oracles/run_registry_decoders_oracle.py [SUBSTRING ...]

Each line written carries its exact ``command`` and ``why``; a rerun replaces the line with the
same command. The case format and the asking are the dense group's
(``run_oracle_dense.ask_runs``), so the one replay (tests/plan/engines/vllm/test_oracles.py) reads
both files the same way.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from oracle_run import merge_by_command  # noqa: E402
from run_oracle_dense import ask_runs  # noqa: E402

OUT = HERE / "vllm-0.32" / "vllm-0.32-coverage-dense2.jsonl"

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


def main() -> None:
    merge_by_command(OUT, ask_runs(RUNS, sys.argv[1:]))


if __name__ == "__main__":
    main()

"""Ask vLLM 0.32 (the shared oracle) for the dense coverage group's own runs (``RUNS``) and
merge them into ``vllm-0.32-coverage-dense.jsonl``.

A research tool, never imported by the package or the tests; it needs the oracle venv
(``../shared/oracles/tool/README.md``) and runs one case at a time (15-60 s each):

    ORACLE_PY=/work/oracle/vllm-venv/bin/python \
        python tests/oracles/run_oracle_dense.py [SUBSTRING ...]

The file's other lines (the coverage scout's runs, copied from /work/coverage/oracle-cases.jsonl
with the command in README-dense.md) carry no ``command``; lines written here carry the exact
``command`` and ``why``, and a rerun replaces the line with the same command. A run without
``--max-model-len`` records the length vLLM derived from the config itself (tested against
kvledger's ``max_position_embeddings``).

``MODIFIED`` configs are written here from a real one, with the change named in ``why``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracle_run import (
    GIB16,
    HERE,
    ask_shown,
    merge_by_command,
    plan_parts,
    selected,
    shown,
)
from oracle_run import config_path as _config_path

OUT = HERE / "vllm-0.32" / "vllm-0.32-coverage-dense.jsonl"
AUTO = ["--block-size", "auto", "--keep-layer-specs", "unique"]

# MODIFIED copies: name -> (source config, keys to set). Falcon-7B's own config is not on
# disk; Falcon-40B with new_decoder_architecture off is the Falcon-7B attention schema
# (multi_query: one KV head), at Falcon-40B's sizes.
MODIFIED: dict[str, tuple[str, dict[str, Any]]] = {
    "tiiuae--falcon-40b.MULTIQUERY.MODIFIED.json":
        ("tiiuae--falcon-40b.json", {"new_decoder_architecture": False, "multi_query": True}),
}

# (config, extra oracle arguments, why)
RUNS: list[tuple[str, list[str], str]] = [
    ("THUDM--glm-4-9b.json", ["--max-model-len", "8192", "--tp", "2"],
     "ChatGLM at TP 2: multi_query_group_num 2 KV heads split one per rank"),
    ("THUDM--chatglm3-6b.json", ["--max-model-len", "8192", "--tp", "4"],
     "ChatGLM at TP 4: 2 KV heads replicated, one per rank"),
    ("THUDM--chatglm3-6b.json", [],
     "no --max-model-len: vLLM's length is seq_length (8192)"),
    ("WizardLMTeam--WizardCoder-15B-V1.0.json", ["--max-model-len", "8192", "--tp", "2"],
     "GPT-BigCode multi_query at TP 2: the one KV head is replicated"),
    ("WizardLMTeam--WizardCoder-15B-V1.0.json", [],
     "no --max-model-len: vLLM's length is n_positions (8192)"),
    ("EleutherAI--gpt-j-6b.MODIFIED.json", [],
     "no --max-model-len: vLLM's length is n_positions (2048)"),
    ("tiiuae--falcon-40b.json", [],
     "no --max-model-len: FalconConfig's class default max_position_embeddings (2048)"),
    ("tiiuae--falcon-40b.json", ["--max-model-len", "2048", "--kv-cache-dtype", "fp8"],
     "Falcon-40B with an fp8 KV cache"),
    ("tiiuae--falcon-40b.MULTIQUERY.MODIFIED.json", ["--max-model-len", "2048"],
     "Falcon with new_decoder_architecture off and multi_query on: one KV head "
     "(falcon.py FalconAttention)"),
    ("openbmb--MiniCPM3-4B.json", ["--max-model-len", "32768", "--tp", "2"],
     "MiniCPM3 at TP 2: 20 heads x 96 per rank, and a 32768-token request now fits"),
    ("meta-models--Muse-Glimmer-30B.json", ["--max-model-len", "32768", "--tp", "2"],
     "Muse Glimmer at TP 2: 2 KV heads, one per rank"),
    ("LGAI-EXAONE--EXAONE-4.0-32B.json", ["--max-model-len", "32768", "--kv-cache-dtype", "fp8"],
     "EXAONE-4 (3 sliding : 1 full) with an fp8 KV cache"),
    ("bigcode--starcoder2.mlc.json", ["--max-model-len", "4096"],
     "StarCoder2 with max_model_len equal to its 4096 window: still a sliding window"),
    ("google--gemma-7b.json", ["--max-model-len", "8192", "--tp", "2"],
     "Gemma v1 at TP 2 (16 KV heads x 256)"),
    ("google--gemma-2b.mlc.json", ["--max-model-len", "8192"],
     "Gemma-2B: multi-query (1 KV head x 256)"),
    ("google--gemma-2b.mlc.json", ["--max-model-len", "8192", "--tp", "2"],
     "Gemma-2B at TP 2: the one KV head replicated"),
    ("CohereForAI--c4ai-command-r-v01.json", [],
     "no --max-model-len: model_max_length (131072) overrides max_position_embeddings (8192)"),
]


def _write_modified() -> None:
    for name, (source, changes) in MODIFIED.items():
        raw = json.loads(_config_path(source).read_text())
        raw.update(changes)
        (_config_path("") / name).write_text(json.dumps(raw, indent=2) + "\n")


def _case(out: dict[str, Any], name: str, command: str, why: str) -> dict[str, Any]:
    return {
        "config": name,
        "hf_quant_config": None,
        "why": why,
        "command": command,
        **plan_parts(out, refuses=out.get("vllm_refuses_to_start", False)),
    }


def ask_runs(runs: list[tuple[str, list[str], str]], wanted: list[str]) -> list[dict[str, Any]]:
    """The lines of the selected runs vLLM planned (a plan it refuses to start counts); the
    others are reported on stderr."""
    cases: list[dict[str, Any]] = []
    for name, extra, why in selected(runs, wanted):
        args = [str(_config_path(name)), "--kv-cache-memory-bytes", GIB16, *AUTO, *extra]
        command = shown(name, args)
        out = ask_shown(args, command)
        refused_with_plan = out.get("vllm_refuses_to_start") and out.get("num_blocks")
        if not out.get("ok") and not refused_with_plan:
            print(f"  failed: {out.get('error')}", file=sys.stderr)
            continue
        cases.append(_case(out, name, command, why))
    return cases


def main() -> None:
    wanted = sys.argv[1:]
    _write_modified()
    merge_by_command(OUT, ask_runs(RUNS, wanted))


if __name__ == "__main__":
    main()

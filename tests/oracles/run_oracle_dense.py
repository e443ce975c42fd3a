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
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / ".." / "shared"
TOOL = SHARED / "oracles" / "tool" / "vllm_oracle.py"
OUT = HERE / "vllm-0.32-coverage-dense.jsonl"
GIB16 = "17179869184"
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


def _config_path(name: str) -> Path:
    local = HERE / "configs" / name
    return local if local.is_file() else SHARED / "configs" / name


def _write_modified() -> None:
    for name, (source, changes) in MODIFIED.items():
        raw = json.loads(_config_path(source).read_text())
        raw.update(changes)
        (HERE / "configs" / name).write_text(json.dumps(raw, indent=2) + "\n")


def _case(out: dict[str, Any], name: str, command: str, why: str) -> dict[str, Any]:
    inp, res = out["inputs"], out["resolved"]
    return {
        "config": name,
        "hf_quant_config": None,
        "why": why,
        "command": command,
        "inputs": {
            "kv_cache_memory_bytes": inp["kv_cache_memory_bytes"],
            "block_size": inp["block_size_requested"],
            "max_model_len": res["max_model_len"],
            "kv_cache_dtype": inp["kv_cache_dtype"],
            "tensor_parallel_size": inp["tp"],
            "max_num_seqs": inp["max_num_seqs"],
            "max_num_batched_tokens": res["max_num_batched_tokens"],
            "num_speculative_tokens": inp["num_speculative_tokens"],
            "speculative_method": inp["speculative_method"],
            "enable_prefix_caching": res["enable_prefix_caching"],
        },
        "vllm_resolved": {k: res.get(k) for k in (
            "architecture", "model_dtype", "cache_dtype", "async_scheduling",
            "max_in_flight_tokens", "mamba_cache_mode", "mamba_ssm_cache_dtype",
            "mamba_cache_dtype", "mamba_block_size", "mamba_page_size_padded", "is_hybrid",
            "use_mla", "tp_kv_heads_per_rank")},
        "expected": {
            "num_blocks": out["num_blocks"],
            "kv_cache_tokens": out["gpu_kv_cache_size_tokens"],
            "max_concurrency": out["max_concurrency"],
            "block_size": out["block_size"]["final_cache_config_block_size"],
            "bytes_per_block": out["bytes_per_block"],
            "vllm_refuses_to_start": out.get("vllm_refuses_to_start", False),
            "vllm_log_line": out["vllm_log_line"],
        },
        "kv_cache_groups": [
            {k: g[k] for k in ("spec", "num_layers", "block_size", "page_size_bytes",
                               "max_memory_usage_bytes_per_request",
                               "blocks_per_request_at_max_model_len")}
            for g in out["kv_cache_groups"]
        ],
        "layer_specs": [
            {"num_layers": u["num_layers"], "first_layer": u["first_layer"],
             **{k: v for k, v in u["spec"].items() if k != "backend"}}
            for u in out["unique_layer_specs"]
        ],
    }


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
    _write_modified()
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

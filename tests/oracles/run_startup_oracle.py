"""Ask a vLLM release (the shared oracle) which start-up settings it refuses; write the answers.

A research tool, never imported by the package or the tests. It needs the oracle venv
(``../shared/oracles/tool/README.md``); each run takes 15-30 s, so they run one at a time:

    ORACLE_PY=/work/venvs/vllm032/bin/python python tests/oracles/run_startup_oracle.py
    ORACLE_PY=/work/venvs/vllm033/bin/python python tests/oracles/run_startup_oracle.py \
        --vllm 0.33                  # the 0.33 tool; vllm-0.33/vllm-0.33-startup.jsonl

It first writes two modified configs into ``configs/`` (a real config with one key changed, to
reach one rule), then writes ``vllm-<release>-startup.jsonl`` (0.33's under ``vllm-0.33/``;
make_vllm_033_cases.py wrote that file first, asking the same 13 questions in its own line
format): one line per run with the exact ``command``, ``why`` it was asked, and either vLLM's
``error`` (its exception, first line) or what it settled on (``max_model_len``, ``block_size``,
``num_blocks``). ``tests/plan/engines/vllm/test_startup.py`` replays every line against
``plan/engines/vllm/startup.py``.
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
from oracle_run import release_file, release_tool, take_release  # noqa: E402

SHARED = HERE.parents[1] / ".." / "shared"
LLAMA = "meta-llama--Meta-Llama-3.1-8B.json"

# name -> (source config, keys changed): each reaches one rule no real config shows.
MODIFIED: dict[str, tuple[str, dict[str, Any]]] = {
    # 48 query heads of 128 (hidden 6,144: LlamaConfig.validate_architecture wants hidden %
    # heads == 0; MLP 12,288, which TP 4 and 6 divide) over 3 KV heads: TP 4 divides the heads
    # but neither divides nor is a multiple of the 3 KV heads (LlamaAttention); TP 6
    # replicates each KV head twice.
    "meta-llama--Meta-Llama-3.1-8B.H48KV3.MODIFIED.json": (
        LLAMA, {"num_attention_heads": 48, "num_key_value_heads": 3, "head_dim": 128,
                "hidden_size": 6144, "intermediate_size": 12288}),
    # A linear RoPE factor 4 is applied to max_position_embeddings (llama3 is not).
    "meta-llama--Meta-Llama-3.1-8B.ROPE-LINEAR4.MODIFIED.json": (
        LLAMA, {"rope_scaling": {"rope_type": "linear", "factor": 4.0}}),
}

# (config, oracle arguments, why)
RUNS: list[tuple[str, list[str], str]] = [
    ("deepseek-ai--DeepSeek-V3.json", ["--tp", "3", "--max-model-len", "4096"],
     "-tp 3 on 128 attention heads"),
    (LLAMA, ["--tp", "3", "--max-model-len", "4096"], "-tp 3 on 32 attention heads"),
    ("meta-llama--Meta-Llama-3.1-8B.H48KV3.MODIFIED.json", ["--tp", "4", "--max-model-len",
                                                             "4096"],
     "TP 4 over 3 KV heads: neither divides the other"),
    ("meta-llama--Meta-Llama-3.1-8B.H48KV3.MODIFIED.json", ["--tp", "6", "--max-model-len",
                                                             "4096"],
     "TP 6 over 3 KV heads: each replicated twice (accepted)"),
    (LLAMA, ["--block-size", "8", "--max-model-len", "4096"],
     "--block-size 8: no SM90 attention backend takes it"),
    (LLAMA, ["--block-size", "24", "--max-model-len", "4096"],
     "--block-size 24: not a multiple of 16"),
    (LLAMA, ["--block-size", "48", "--max-model-len", "4096"],
     "--block-size 48: a multiple of 16 (accepted)"),
    (LLAMA, ["--max-model-len", "131073"], "one token above max_position_embeddings"),
    (LLAMA, ["--max-model-len", "131072"], "exactly max_position_embeddings (accepted)"),
    ("meta-llama--Meta-Llama-3.1-8B.ROPE-LINEAR4.MODIFIED.json",
     ["--max-model-len", "524288"], "linear RoPE x4: 4 x 131072 is the derived length"),
    ("meta-llama--Meta-Llama-3.1-8B.ROPE-LINEAR4.MODIFIED.json",
     ["--max-model-len", "524289"], "linear RoPE x4: one token above 4 x 131072"),
    ("CohereForAI--c4ai-command-r-v01.json", [],
     "no --max-model-len: model_max_length 131072 overrides max_position_embeddings 8192"),
    (LLAMA, ["--max-model-len", "4096", "--max-num-seqs", "512", "--max-num-batched-tokens",
             "256"], "max_num_batched_tokens below max_num_seqs"),
]
BUDGET = "214748364800"  # 200 GiB: every accepted run fits one request


def _config_path(name: str) -> Path:
    return SHARED / "configs" / name


def write_modified() -> None:
    for name, (source, changes) in MODIFIED.items():
        data = json.loads((SHARED / "configs" / source).read_text())
        data.update(changes)
        (SHARED / "configs" / name).write_text(json.dumps(data, indent=2) + "\n")


def run(name: str, extra: list[str], why: str, python: str, tool: Path) -> dict[str, Any]:
    args = [str(_config_path(name)), "--kv-cache-memory-bytes", BUDGET, *extra]
    command = " ".join(["vllm_oracle.py", name, *args[1:]])
    print(f"running: {command}", file=sys.stderr)
    done = subprocess.run([python, str(tool), *args], capture_output=True, text=True,
                          check=False)
    out = json.loads(done.stdout)
    line: dict[str, Any] = {"config": name, "why": why, "command": command,
                            "extra_args": extra}
    if out.get("ok"):
        line["ok"] = True
        line["max_model_len"] = out["resolved"]["max_model_len"]
        line["block_size"] = out["block_size"]["final_cache_config_block_size"]
        line["num_blocks"] = out["num_blocks"]
    else:
        line["ok"] = False
        # The head says what was raised; the tail, where (an assert has no message).
        error = " ".join(str(out.get("error", "")).split())
        line["error"] = error if len(error) <= 1500 else f"{error[:900]} ... {error[-500:]}"
    return line


def main() -> None:
    """``run_startup_oracle.py [--vllm 0.33] [SUBSTRING ...]``: only runs whose config or
    reason contains one (all without arguments); lines are merged by command."""
    release, wanted = take_release(sys.argv[1:])
    python = os.environ.get("ORACLE_PY", "/work/venvs/vllm032/bin/python")
    write_modified()
    path = release_file(release, "startup.jsonl")
    old = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] \
        if path.is_file() else []
    new = [run(name, extra, why, python, release_tool(release)) for name, extra, why in RUNS
           if not wanted or any(w in name or w in why for w in wanted)]
    fresh = {c["command"] for c in new}
    with open(path, "w") as f:
        f.writelines(json.dumps(c) + "\n" for c in [*(c for c in old if c["command"]
                                                       not in fresh), *new])


if __name__ == "__main__":
    main()

"""Ask vLLM 0.32 (the oracle in ../shared/oracles/tool/) for the cases in
``vllm-0.32-more.jsonl``: configs from ../shared/configs that have no case in
../shared/oracles/vllm-0.32/ because the CPU build lacks their NVFP4 weight kernels.

Research tool, never imported by the package or the tests. Each run uses a copy of the
config without its weight quantization — the inline ``quantization_config`` removed and the
``hf_quant_config.json`` companion not passed — and records ``inputs.weights_quant_stripped:
true``, as the shared coverage cases do. The KV scheme these checkpoints state (the
companion's ``kv_cache_quant_algo``) is passed as ``--kv-cache-dtype`` instead. Output
lines follow ``coverage-cases.jsonl``'s fields. Run (one run at a time, 20-60 s each)::

    ORACLE=/work/oracle/vllm-venv/bin/python
    $ORACLE tests/oracles/make_vllm_cases.py > tests/oracles/vllm-0.32-more.jsonl

or only some runs, by their index in ``RUNS`` (how lines 4-5 were added)::

    $ORACLE tests/oracles/make_vllm_cases.py 3 4 >> tests/oracles/vllm-0.32-more.jsonl
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracle_run import tool_case_line

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
TOOL = SHARED / "oracles" / "tool" / "vllm_oracle.py"
CONFIGS = SHARED / "configs"

# (config, kv_cache_dtype the checkpoint states: hf_quant_config kv_cache_quant_algo,
#  --block-size)
RUNS = [
    ("nvidia--MiniMax-M3-NVFP4.json", "auto", "auto"),  # kv_cache_quant_algo: null
    ("nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4.json", "fp8", "auto"),  # FP8
    ("nvidia--GLM-5.2-NVFP4.json", "fp8", "auto"),  # FP8
    # MiniMax-M3's 128-token sparse kernels: a user block of 256 is split into two kernel
    # blocks; an fp8 cache keeps block 128 (the sparse backends take fp8).
    ("nvidia--MiniMax-M3-NVFP4.json", "auto", "256"),
    ("nvidia--MiniMax-M3-NVFP4.json", "fp8", "auto"),
]


def case(name: str, kv_dtype: str, block_size: str = "auto") -> dict[str, Any]:
    raw = json.loads((CONFIGS / name).read_text())
    raw.pop("quantization_config", None)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_text(json.dumps(raw))
        cmd = [sys.executable, str(TOOL), str(path), "--kv-cache-memory-bytes", "16GiB",
               "--max-model-len", "32768", "--block-size", block_size, "--kv-cache-dtype", kv_dtype]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    got = json.loads(out)
    if not got.get("ok"):
        raise SystemExit(f"{name}: {got.get('error')}")
    line = tool_case_line({"config": name, "hf_quant_config": False}, got)
    line["inputs"].update(block_size=block_size if block_size == "auto" else int(block_size),
                          weights_quant_stripped=True)
    del line["spec_collection"]  # this file's lines never carried it
    return line


if __name__ == "__main__":
    chosen = [int(a) for a in sys.argv[1:]] or range(len(RUNS))
    for index in chosen:
        print(json.dumps(case(*RUNS[index])), flush=True)

"""Ask vLLM 0.32 (the shared oracle) about the moe-hybrid group's configs, one run at a time.

A research tool, never imported by the package or the tests. It needs the oracle venv
(``../shared/oracles/tool/README.md``); each run takes 15-60 s.

    python tests/oracles/run_moe_hybrid.py [SUBSTRING ...]     # default: every run below

For each run whose config or reason contains a SUBSTRING (all runs without one) it calls the
oracle with the arguments listed here, turns its answer into one line of the shared case
format (``../shared/oracles/README.md``) plus the ``command`` and ``why``, and merges the
line into ``vllm-0.32-coverage-moe-hybrid.jsonl`` by command (a rerun replaces its line).
Runs where the oracle gave no plan are printed and not written.

The first lines of that file were made by the coverage scout with the same tool and the same
default arguments (``/work/coverage/README.md``: 16 GiB, ``--block-size auto``,
``--keep-layer-specs unique``, ``--max-model-len`` min(max positions, 32768)); their command
is written out the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / ".." / "shared"
TOOL = SHARED / "oracles" / "tool" / "vllm_oracle.py"
PYTHON = os.environ.get("ORACLE_PY", "/work/oracle/vllm-venv/bin/python")
OUT = HERE / "vllm-0.32-coverage-moe-hybrid.jsonl"
GIB16 = "17179869184"
BASE = ["--kv-cache-memory-bytes", GIB16, "--block-size", "auto", "--keep-layer-specs", "unique"]

# (config file under configs/, extra oracle arguments, why)
RUNS: list[tuple[str, list[str], str]] = [
    ("baidu--ERNIE-4.5-21B-A3B-FastDeploy-TEST.NOQUANT.MODIFIED.json",
     ["--max-model-len", "32768"],
     "ERNIE-4.5-21B-A3B sizes without FastDeploy's Paddle-only quantization block: standard "
     "attention, 20 q / 4 kv heads x 2560/20 = 128"),
    ("baidu--ERNIE-4.5-21B-A3B-FastDeploy-TEST.NOQUANT.MODIFIED.json",
     ["--max-model-len", "32768", "--num-speculative-tokens", "1", "--speculative-method",
      "mtp"],
     "ERNIE MTP x 1: ernie_mtp builds num_nextn_predict_layers (1) LlamaDecoderLayer with "
     "the backbone's attention"),
    ("zai-org--GLM-4.5.json",
     ["--max-model-len", "32768", "--num-speculative-tokens", "1", "--speculative-method",
      "mtp"],
     "GLM-4.5 MTP x 1: glm4_moe_mtp builds num_nextn_predict_layers (1) Glm4MoeDecoderLayer"),
    ("zai-org--GLM-4.5.json",
     ["--max-model-len", "32768", "--tp", "2", "--kv-cache-dtype", "fp8"],
     "GLM-4.5 at TP 2 with an fp8 cache: 8 KV heads split 4 per rank, uint8 pages"),
    ("microsoft--Phi-3.5-MoE-instruct.json", ["--max-model-len", "4096"],
     "Phi-3.5-MoE window 131072 with max_model_len 4096: still a SlidingWindowSpec, charged "
     "cdiv(4096, 16) + 1 blocks"),
    ("databricks--dbrx.OME-ABRIDGED.MODIFIED.json", ["--max-model-len", "32768"],
     "dbrx.py: attn_config.kv_n_heads x d_model / n_heads on every layer (OME's abridged copy, "
     "ffn_act_fn made a dict so transformers loads it)"),
    ("ibm-granite--granite-4-8b-dense-hybrid.MAMBA.MODIFIED.json", ["--max-model-len", "32768"],
     "granitemoehybrid with Mamba2 layers (layer_types edited): MambaMixer2 state, attention "
     "block grown to hold it, prefill-checkpoint block in align mode"),
    ("ibm-granite--granite-4-8b-dense-hybrid.MAMBA.MODIFIED.json",
     ["--max-model-len", "32768", "--no-enable-prefix-caching"],
     "granitemoehybrid Mamba2 without prefix caching: mamba_cache_mode none, one state per "
     "request"),
    ("XiaomiMiMo--MiMo-V2-Flash.json",
     ["--max-model-len", "32768", "--kv-cache-dtype", "fp8"],
     "MiMo-V2-Flash with an fp8 cache: unequal K/V widths, full and sliding pages unified by "
     "a bigger full-attention block"),
    ("google--gemma-4-E2B-it.json", ["--max-model-len", "32768", "--kv-cache-dtype", "fp8"],
     "Gemma-4-E2B fp8: KV sharing (15 of 35 layers) and sliding groups at block 32"),
    ("google--gemma-4-26B-A4B.json", ["--max-model-len", "32768", "--tp", "2"],
     "Gemma-4-26B at TP 2: sliding 8 -> 4 KV heads, full (k_eq_v) 2 -> 1"),
    ("LiquidAI--LFM2.5-VL-1.6B.json", ["--max-model-len", "32768", "--kv-cache-dtype", "fp8"],
     "LFM2 with an fp8 cache: the 8 KiB short-conv state padded to a 16 KiB attention page"),
    ("LiquidAI--LFM2.5-VL-1.6B.json", ["--max-model-len", "32768",
                                       "--no-enable-prefix-caching"],
     "LFM2 without prefix caching: mamba_cache_mode none"),
]


def _config(name: str) -> Path:
    local = HERE / "configs" / name
    return local if local.is_file() else SHARED / "configs" / name


def command(name: str, extra: list[str]) -> str:
    return " ".join(["vllm_oracle.py", f"configs/{name}", *BASE, *extra])


def to_case(name: str, r: dict[str, Any]) -> dict[str, Any]:
    """The oracle's answer in the shared case format."""
    i, res = r["inputs"], r["resolved"]
    inputs = {
        "kv_cache_memory_bytes": i["kv_cache_memory_bytes"],
        "block_size": i["block_size_requested"],
        "max_model_len": res["max_model_len"],
        "kv_cache_dtype": i["kv_cache_dtype"],
        "tensor_parallel_size": i["tp"],
        "max_num_seqs": i["max_num_seqs"],
        "max_num_batched_tokens": res["max_num_batched_tokens"],
        "num_speculative_tokens": i["num_speculative_tokens"],
        "speculative_method": i["speculative_method"],
        "enable_prefix_caching": res["enable_prefix_caching"],
    }
    resolved_keys = ("architecture", "model_dtype", "cache_dtype", "async_scheduling",
                     "max_in_flight_tokens", "mamba_cache_mode", "mamba_ssm_cache_dtype",
                     "mamba_cache_dtype", "mamba_block_size", "mamba_page_size_padded",
                     "is_hybrid", "use_mla", "tp_kv_heads_per_rank")
    groups = [{k: g[k] for k in ("spec", "num_layers", "block_size", "page_size_bytes",
                                 "max_memory_usage_bytes_per_request",
                                 "blocks_per_request_at_max_model_len")}
              for g in r["kv_cache_groups"]]
    specs = []
    for unique in r["unique_layer_specs"]:
        spec = {"num_layers": unique["num_layers"], "first_layer": unique["first_layer"]}
        spec.update({k: v for k, v in unique["spec"].items() if k != "backend"})
        specs.append(spec)
    return {
        "config": name,
        "hf_quant_config": None,
        "inputs": inputs,
        "vllm_resolved": {k: res[k] for k in resolved_keys},
        "expected": {
            "num_blocks": r["num_blocks"],
            "kv_cache_tokens": r["gpu_kv_cache_size_tokens"],
            "max_concurrency": r["max_concurrency"],
            "block_size": r["block_size"]["final_cache_config_block_size"],
            "bytes_per_block": r["bytes_per_block"],
            "vllm_refuses_to_start": bool(r.get("vllm_refuses_to_start")),
            "vllm_log_line": r["vllm_log_line"],
        },
        "kv_cache_groups": groups,
        "layer_specs": specs,
        "kv_sharing_layers": len(r.get("kv_sharing_layers") or {}),
    }


def run(name: str, extra: list[str]) -> dict[str, Any] | None:
    with tempfile.TemporaryFile() as err:
        out = subprocess.run([PYTHON, str(TOOL), str(_config(name)), *BASE, *extra],
                             stdout=subprocess.PIPE, stderr=err, text=True, check=False)
    try:
        result: dict[str, Any] = json.loads(out.stdout)
    except json.JSONDecodeError:
        print(f"  no JSON from the oracle (exit {out.returncode})")
        return None
    if not result.get("ok", True) and result.get("num_blocks") is None:
        print(f"  oracle failed: {str(result.get('error'))[:300]}")
        return None
    return result


def main(argv: list[str]) -> None:
    lines: dict[str, dict[str, Any]] = {}
    if OUT.is_file():
        for line in OUT.read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                lines[case["command"]] = case
    for name, extra, why in RUNS:
        if argv and not any(s in name or s in why for s in argv):
            continue
        cmd = command(name, extra)
        print(cmd, flush=True)
        result = run(name, extra)
        if result is None:
            continue
        case = {**to_case(name, result), "command": cmd, "why": why}
        lines[cmd] = case
        e = case["expected"]
        print(f"  {e['num_blocks']} blocks, {e['kv_cache_tokens']} tokens, block "
              f"{e['block_size']}, {e['max_concurrency']:.2f}x", flush=True)
        OUT.write_text("".join(json.dumps(c) + "\n" for c in lines.values()))


if __name__ == "__main__":
    main(sys.argv[1:])

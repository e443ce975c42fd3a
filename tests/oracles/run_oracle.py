"""Ask vLLM 0.32 (the shared oracle) for the cases in ``RUNS`` and write them here.

A research tool, never imported by the package or the tests. It needs the oracle venv
(``../shared/oracles/tool/README.md``); each run takes 15-30 s, so they run one at a time.

    ORACLE_PY=/work/oracle/vllm-venv/bin/python python tests/oracles/run_oracle.py

Writes ``vllm-0.32-cases.jsonl`` (plans: the format of ../shared/oracles/vllm-0.32) and
``vllm-0.32-refusals.jsonl`` (runs where vLLM refused to start, with its message). Every line
carries the exact ``command`` that produced it.
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
GIB16 = "17179869184"

# (config, with its hf_quant_config companion?, extra oracle arguments, why)
RUNS: list[tuple[str, bool, list[str], str]] = [
    ("deepseek-ai--DeepSeek-V2-Lite.json", False,
     ["--block-size", "auto", "--max-model-len", "32768"],
     "dense MLA with --block-size auto (bf16): FLASH_ATTN_MLA's MultipleOf(16) -> 16"),
    ("deepseek-ai--DeepSeek-V3.json", False,
     ["--block-size", "auto", "--max-model-len", "32768"],
     "dense MLA with --block-size auto (bf16), the 671B config"),
    ("nvidia--Llama-3.1-70B-Instruct-FP8.json", True,
     ["--block-size", "auto", "--max-model-len", "32768", "--tp", "2"],
     "ModelOpt fp8 KV from hf_quant_config.json at TP 2"),
    ("nvidia--Llama-3.1-70B-Instruct-FP8.json", True,
     ["--block-size", "16", "--max-model-len", "32768", "--kv-cache-dtype", "bfloat16"],
     "an explicit --kv-cache-dtype beats the checkpoint's ModelOpt fp8 KV"),
    ("meta-llama--Meta-Llama-3.1-8B.CT-FP8KV.MODIFIED.json", False,
     ["--block-size", "auto", "--max-model-len", "32768"],
     "compressed-tensors kv_cache_scheme fp8: Attention.__init__ switches auto to fp8"),
    ("deepseek-ai--DeepSeek-V2-Lite.CT-FP8KV.MODIFIED.json", False,
     ["--block-size", "16", "--max-model-len", "32768"],
     "compressed-tensors kv_cache_scheme on an MLA model: MLAAttention keeps the model dtype"),
    ("mistralai--Mistral-7B-v0.1.json", False,
     ["--block-size", "auto", "--max-model-len", "32768", "--num-speculative-tokens", "3",
      "--speculative-method", "ngram"],
     "ngram speculation turns async scheduling off: sliding windows reserve 1 x 8192 "
     "in-flight tokens, not 2 x"),
    ("Qwen--Qwen3-Next-80B-A3B-Thinking.json", False,
     ["--block-size", "auto", "--max-model-len", "32768", "--num-speculative-tokens", "2",
      "--speculative-method", "mtp"],
     "MTP with 2 speculative tokens on a GDN hybrid: 2 speculative state blocks"),
    ("Qwen--Qwen3.6-35B-A3B.TEXT.MODIFIED.json", False,
     ["--block-size", "auto", "--max-model-len", "32768", "--num-speculative-tokens", "2",
      "--speculative-method", "mtp"],
     "MTP x 2 on a Qwen3.5-family GDN hybrid: Qwen3_5MTP builds mtp_num_hidden_layers (1) "
     "full-attention layers"),
    ("deepseek-ai--DeepSeek-V2-Lite.json", False,
     ["--block-size", "16", "--max-model-len", "32768", "--kv-cache-dtype", "fp8_e5m2"],
     "fp8_e5m2 on MLA: no attention backend takes it, vLLM refuses"),
    ("meta-llama--Meta-Llama-3.1-8B.CT-INT8KV.MODIFIED.json", False,
     ["--block-size", "auto", "--max-model-len", "32768"],
     "compressed-tensors int8 KV scheme: vLLM refuses"),
    ("meta-llama--Meta-Llama-3.1-8B.MIXED-HFQ.MODIFIED.json", True,
     ["--block-size", "auto", "--max-model-len", "32768"],
     "hf_quant_config.json with ModelOpt MIXED_PRECISION: vLLM refuses"),
    ("deepseek-ai--DeepSeek-V2-Lite.NVFP4KV-HFQ.MODIFIED.json", True,
     ["--block-size", "auto", "--max-model-len", "32768"],
     "ModelOpt NVFP4 KV on an MLA model: vLLM refuses"),
]


def _config_path(name: str) -> Path:
    local = HERE / "configs" / name
    return local if local.is_file() else SHARED / "configs" / name


def _case(out: dict[str, Any], name: str, hf_quant: bool, command: str, why: str
          ) -> dict[str, Any]:
    inp, res = out["inputs"], out["resolved"]
    return {
        "config": name,
        "hf_quant_config": True if hf_quant else None,
        "why": why,
        "command": command,
        "inputs": {
            "kv_cache_memory_bytes": inp["kv_cache_memory_bytes"],
            "block_size": inp["block_size_requested"],
            "max_model_len": res["max_model_len"],
            "kv_cache_dtype": inp["kv_cache_dtype"],
            "tensor_parallel_size": inp["tp"],
            "max_num_seqs": inp["max_num_seqs"],
            "max_num_batched_tokens": inp["max_num_batched_tokens"],
            "num_speculative_tokens": inp["num_speculative_tokens"],
            "speculative_method": inp["speculative_method"],
            "enable_prefix_caching": res["enable_prefix_caching"],
        },
        "vllm_resolved": {k: res.get(k) for k in (
            "architecture", "model_dtype", "cache_dtype", "async_scheduling",
            "max_in_flight_tokens", "mamba_cache_mode", "mamba_ssm_cache_dtype",
            "mamba_cache_dtype", "mamba_block_size", "mamba_page_size_padded", "is_hybrid",
            "use_mla", "kv_cache_layout", "tp_kv_heads_per_rank")},
        "expected": {
            "num_blocks": out["num_blocks"],
            "kv_cache_tokens": out["gpu_kv_cache_size_tokens"],
            "max_concurrency": out["max_concurrency"],
            "block_size": out["block_size"]["final_cache_config_block_size"],
            "bytes_per_block": out["bytes_per_block"],
            "vllm_refuses_to_start": out["vllm_refuses_to_start"],
            "vllm_log_line": out["vllm_log_line"],
        },
        "kv_cache_groups": [
            {k: g[k] for k in ("spec", "num_layers", "block_size", "page_size_bytes",
                               "max_memory_usage_bytes_per_request",
                               "blocks_per_request_at_max_model_len")}
            for g in out["kv_cache_groups"]
        ],
        "layer_specs": [
            {"num_layers": u["num_layers"], "first_layer": u["first_layer"], **u["spec"]}
            for u in out["unique_layer_specs"]
        ],
        "attention_backend_selection": out.get("attention_backend_selection"),
    }


def _merge(path: Path, new: list[dict[str, Any]]) -> None:
    """Keep earlier lines, replacing those whose command ran again."""
    old = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] \
        if path.is_file() else []
    fresh = {c["command"] for c in new}
    kept = [c for c in old if c["command"] not in fresh]
    with open(path, "w") as f:
        f.writelines(json.dumps(c) + "\n" for c in [*kept, *new])


def main() -> None:
    """``run_oracle.py [SUBSTRING ...]``: only the runs whose config or reason contains one
    of the substrings (all of them without arguments)."""
    python = os.environ.get("ORACLE_PY", "/work/oracle/vllm-venv/bin/python")
    wanted = sys.argv[1:]
    cases: list[dict[str, Any]] = []
    refusals: list[dict[str, Any]] = []
    for name, hf_quant, extra, why in RUNS:
        if wanted and not any(w in name or w in why for w in wanted):
            continue
        config = _config_path(name)
        args = [str(config), "--kv-cache-memory-bytes", GIB16, *extra]
        if hf_quant:
            companion = config.with_name(config.name.removesuffix(".json")
                                         + ".hf_quant_config.json")
            args += ["--hf-quant-config", str(companion)]
        shown = ["vllm_oracle.py", name, *args[1:]]
        if hf_quant:
            shown[-1] = Path(shown[-1]).name
        command = " ".join(shown)
        print(f"running: {command}", file=sys.stderr)
        done = subprocess.run([python, str(TOOL), *args], capture_output=True, text=True,
                              check=False)
        out = json.loads(done.stdout)
        if out.get("ok"):
            cases.append(_case(out, name, hf_quant, command, why))
        else:
            refusals.append({"config": name, "hf_quant_config": True if hf_quant else None,
                             "why": why, "command": command, "error": out.get("error"),
                             "extra_args": extra})
    _merge(HERE / "vllm-0.32-cases.jsonl", cases)
    _merge(HERE / "vllm-0.32-refusals.jsonl", refusals)


if __name__ == "__main__":
    main()

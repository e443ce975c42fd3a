"""Ask vLLM 0.32 (the shared oracle) for the cases in ``RUNS`` and write them here.

A research tool, never imported by the package or the tests. It needs the oracle venv
(``../shared/oracles/tool/README.md``); each run takes 15-30 s, so they run one at a time.

    ORACLE_PY=/work/oracle/vllm-venv/bin/python python tests/oracles/run_oracle.py

Writes ``vllm-0.32-cases.jsonl`` (plans: the format of ../shared/oracles/vllm-0.32) and
``vllm-0.32-refusals.jsonl`` (runs where vLLM refused to start, with its message). Every line
carries the exact ``command`` that produced it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracle_run import (
    GIB16,
    HERE,
    RESOLVED_KEYS,
    ask_shown,
    merge_by_command,
    plan_parts,
    selected,
    shown,
)
from oracle_run import TOOL as TOOL  # run_multimodal_oracle.py imports it from here
from oracle_run import config_path as _config_path

# run_oracle's lines also keep the KV cache layout vLLM chose.
RESOLVED = (*RESOLVED_KEYS[:-1], "kv_cache_layout", RESOLVED_KEYS[-1])

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


def _case(out: dict[str, Any], name: str, hf_quant: bool, command: str, why: str
          ) -> dict[str, Any]:
    return {
        "config": name,
        "hf_quant_config": True if hf_quant else None,
        "why": why,
        "command": command,
        **plan_parts(out, refuses=out["vllm_refuses_to_start"], batched_from="inputs",
                     resolved_keys=RESOLVED, drop=()),
        "attention_backend_selection": out.get("attention_backend_selection"),
    }


# run_multimodal_oracle.py imports it under this name.
_merge = merge_by_command


def main() -> None:
    """``run_oracle.py [SUBSTRING ...]``: only the runs whose config or reason contains one
    of the substrings (all of them without arguments)."""
    wanted = sys.argv[1:]
    cases: list[dict[str, Any]] = []
    refusals: list[dict[str, Any]] = []
    for name, hf_quant, extra, why in selected(RUNS, wanted):
        config = _config_path(name)
        args = [str(config), "--kv-cache-memory-bytes", GIB16, *extra]
        if hf_quant:
            companion = config.with_name(config.name.removesuffix(".json")
                                         + ".hf_quant_config.json")
            args += ["--hf-quant-config", str(companion)]
        # the companion by its file name only
        command = shown(name, [*args[:-1], Path(args[-1]).name] if hf_quant else args)
        out = ask_shown(args, command)
        if out.get("ok"):
            cases.append(_case(out, name, hf_quant, command, why))
        else:
            refusals.append({"config": name, "hf_quant_config": True if hf_quant else None,
                             "why": why, "command": command, "error": out.get("error"),
                             "extra_args": extra})
    merge_by_command(HERE / "vllm-0.32" / "vllm-0.32-cases.jsonl", cases)
    merge_by_command(HERE / "vllm-0.32" / "vllm-0.32-refusals.jsonl", refusals)


if __name__ == "__main__":
    main()

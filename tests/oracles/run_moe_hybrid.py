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

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracle_run import (
    GIB16,
    HERE,
    ask_json,
    config_path,
    coverage_case,
    read_by_command,
    selected,
    write_lines,
)

OUT = HERE / "vllm-0.32" / "vllm-0.32-coverage-moe-hybrid.jsonl"
BASE = ["--kv-cache-memory-bytes", GIB16, "--block-size", "auto", "--keep-layer-specs", "unique"]

# (config file under configs/, extra oracle arguments, why)
RUNS: list[tuple[str, list[str], str]] = [
    ("baidu--ERNIE-4.5-21B-A3B-FastDeploy-TEST.json",
     ["--max-model-len", "32768"],
     "ERNIE-4.5-21B-A3B, the verbatim FastDeploy file: its Paddle-only quantization block "
     "states no quant_method, which vLLM reads as no quantization (bf16); standard "
     "attention, 20 q / 4 kv heads x 2560/20 = 128"),
    ("baidu--ERNIE-4.5-21B-A3B-FastDeploy-TEST.json",
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


def command(name: str, extra: list[str]) -> str:
    return " ".join(["vllm_oracle.py", f"configs/{name}", *BASE, *extra])


def to_case(name: str, r: dict[str, Any]) -> dict[str, Any]:
    """The oracle's answer in the shared case format."""
    return coverage_case(name, r, None, strict=True)


def run(name: str, extra: list[str]) -> dict[str, Any] | None:
    result = ask_json([str(config_path(name)), *BASE, *extra])
    if result is None:
        return None
    if not result.get("ok", True) and result.get("num_blocks") is None:
        print(f"  oracle failed: {str(result.get('error'))[:300]}")
        return None
    return result


def run_all(runs: list[tuple[str, list[str], str]], argv: list[str], out: Path,
            concurrency: bool = True) -> None:
    """Each selected run's answer merged into ``out`` by command, with a one-line summary
    (the block count, tokens, block size and, when ``concurrency``, the concurrency)."""
    lines = read_by_command(out)
    for name, extra, why in selected(runs, argv):
        cmd = command(name, extra)
        print(cmd, flush=True)
        result = run(name, extra)
        if result is None:
            continue
        case = {**to_case(name, result), "command": cmd, "why": why}
        lines[cmd] = case
        e = case["expected"]
        tail = f", {e['max_concurrency']:.2f}x" if concurrency else ""
        print(f"  {e['num_blocks']} blocks, {e['kv_cache_tokens']} tokens, block "
              f"{e['block_size']}{tail}", flush=True)
        write_lines(out, lines.values())


def main(argv: list[str]) -> None:
    run_all(RUNS, argv, OUT)


if __name__ == "__main__":
    main(sys.argv[1:])

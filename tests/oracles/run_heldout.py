"""Ask vLLM 0.32 (the shared oracle) about the held-out configs, one run at a time.

The held-out set measures kvledger on checkpoints nobody fitted it to: these runs were made
*before* kvledger was asked anything about these configs (README-heldout.md). A research tool,
never imported by the package or the tests; it needs the oracle venv
(``../shared/oracles/tool/README.md``), each run takes 15-60 s.

    python tests/oracles/run_heldout.py [SUBSTRING ...]     # default: every run below

Each run's answer becomes one line of the shared case format (the same fields as
``vllm-0.32-coverage-*.jsonl``) plus its ``command`` and ``why``; a run vLLM refused becomes a
line with vLLM's ``error`` instead of ``expected`` (as in ``vllm-0.32-refusals.jsonl``). Lines
are merged into ``vllm-0.32-heldout.jsonl`` by command (a rerun replaces its line). Oracle
failures that are not vLLM's verdict (``CPU_GAPS``: kernels the CPU wheel lacks) are printed,
not written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracle_run import HERE, ask_json, coverage_case, read_by_command, selected, write_lines

OUT = HERE / "vllm-0.32" / "vllm-0.32-heldout.jsonl"
BASE = ["--kv-cache-memory-bytes", "16GiB", "--block-size", "auto",
        "--keep-layer-specs", "unique"]
QUANT = ".hf_quant_config.json"
# Oracle failures that come from the CPU wheel lacking GPU kernels, not from vLLM's rules: a
# weight kernel (NVFP4 linear) or every sparse-MLA attention backend (FlashInfer, FlashMLA).
CPU_GAPS = ("Failed to find a kernel", "No valid attention backend found")


def L(n: int) -> list[str]:
    return ["--max-model-len", str(n)]


# (config under configs/, extra oracle arguments, why). L = min(the config's max positions,
# 32768): the default question of the held-out brief; the last runs add TP / an fp8 cache.
# Three more configs were asked and got no answer for CPU-build reasons (README-heldout.md).
RUNS: list[tuple[str, list[str], str]] = [
    ("google--gemma-3-27b-it.OME.json", L(32768),
     "gemma3 release-time config: no text max_position_embeddings (class default 131072)"),
    ("google--gemma-2-9b.json", L(8192), "gemma2 9B, sliding 4096 on alternate layers"),
    ("meta-llama--Meta-Llama-3-70B.json", L(8192), "Llama-3 70B, 8192 positions"),
    ("meta-llama--Llama-3.2-1B.json", L(32768), "Llama-3.2-1B, llama3 RoPE, 8 KV x 64"),
    ("meta-llama--Llama-3.2-3B.json", L(32768), "Llama-3.2-3B, llama3 RoPE"),
    ("HuggingFaceTB--SmolLM-1.7B.json", L(2048), "SmolLM-1.7B, float32 torch_dtype, MHA"),
    ("mistralai--Mistral-7B-Instruct-v0.2.json", L(32768),
     "Mistral-7B-Instruct-v0.2, sliding_window null"),
    ("mistralai--Mistral-7B-Instruct-v0.3.json", L(32768),
     "Mistral-7B-Instruct-v0.3 (a serialized PretrainedConfig with every default)"),
    ("microsoft--Phi-3-mini-128k-instruct.json", L(32768),
     "Phi-3-mini-128k, longrope, sliding_window 262144"),
    ("microsoft--phi-4.json", L(16384), "phi-4 (phi3 type), 10 KV heads"),
    ("Qwen--Qwen2.5-0.5B.json", L(32768), "Qwen2.5-0.5B, 2 KV heads x 64"),
    ("Qwen--Qwen2.5-1.5B.json", L(32768), "Qwen2.5-1.5B"),
    ("Qwen--Qwen2.5-3B.json", L(32768), "Qwen2.5-3B"),
    ("Qwen--Qwen2.5-14B.json", L(32768), "Qwen2.5-14B"),
    ("Qwen--Qwen2.5-32B.json", L(32768), "Qwen2.5-32B"),
    ("Qwen--Qwen2.5-72B.json", L(32768), "Qwen2.5-72B"),
    ("Qwen--Qwen2-VL-7B-Instruct.json", L(32768), "Qwen2-VL-7B wrapper"),
    ("Qwen--Qwen2.5-VL-7B-Instruct.json", L(32768), "Qwen2.5-VL-7B wrapper"),
    ("Qwen--Qwen3-4B.json", L(32768), "Qwen3-4B, 40960 positions"),
    ("Qwen--Qwen3-8B-FP8.json", L(32768), "Qwen3-8B-FP8 block-fp8 weights, no KV scheme"),
    ("Qwen--Qwen3.5-9B.json", L(32768), "Qwen3.5-9B (gated DeltaNet hybrid, 3:1)"),
    ("meta-llama--Llama-4-Maverick-17B-128E-Instruct-FP8.json", L(32768),
     "Llama-4-Maverick FP8 (compressed-tensors weights), chunked local attention"),
    ("meta-llama--Meta-Llama-3.1-405B-Instruct-FP8.json", L(32768),
     "Llama-3.1-405B-Instruct-FP8 (fbgemm_fp8 weights)"),
    ("hf-internal-testing--tiny-random-PhiModel.json", L(512), "tiny phi, 512 positions"),
    ("humain-ai--ALLaM-7B-Instruct-preview.json", L(4096), "ALLaM-7B (llama), MHA"),
    ("nvidia--Kimi-K2.6-NVFP4.json", L(32768), "Kimi-K2.6 NVFP4 (kimi_k25 wrapper, MLA), KV FP8"),
    ("nvidia--Gemma-4-26B-A4B-NVFP4.json", L(32768), "Gemma-4-26B-A4B NVFP4, KV FP8"),
    ("zai-org--GLM-5.1-FP8.json", L(32768), "GLM-5.1-FP8 block-fp8 weights, DSA"),
    # second runs
    ("Qwen--Qwen2.5-0.5B.json", [*L(32768), "--tp", "2"], "TP 2 over 2 KV heads"),
    ("Qwen--Qwen2.5-72B.json", [*L(32768), "--tp", "4", "--kv-cache-dtype", "fp8"],
     "TP 4 with an fp8 cache"),
    ("google--gemma-2-9b.json", [*L(8192), "--kv-cache-dtype", "fp8"], "gemma2 with fp8 KV"),
    ("microsoft--phi-4.json", [*L(16384), "--tp", "2"], "phi-4 TP 2: 10 KV heads, 5 per rank"),
    ("HuggingFaceTB--SmolLM-1.7B.json", [*L(2048), "--kv-cache-dtype", "fp8"],
     "float32 config with an fp8 cache"),
    ("meta-llama--Llama-3.2-3B.json", [*L(32768), "--tp", "2"], "Llama-3.2-3B TP 2"),
]


def _config(name: str) -> Path:
    return HERE.parents[1] / ".." / "shared" / "configs" / name


def _companion(name: str) -> Path | None:
    path = _config(name).with_name(name.removesuffix(".json") + QUANT)
    return path if path.is_file() else None


def _args(name: str, extra: list[str]) -> list[str]:
    quant = _companion(name)
    return [*BASE, *extra, *(["--hf-quant-config", f"configs/{quant.name}"] if quant else [])]


def command(name: str, extra: list[str]) -> str:
    return " ".join(["vllm_oracle.py", f"configs/{name}", *_args(name, extra)])


def to_case(name: str, r: dict[str, Any]) -> dict[str, Any]:
    """The oracle's answer in the shared case format."""
    return coverage_case(name, r, _companion(name) is not None)


def run(name: str, extra: list[str]) -> dict[str, Any] | None:
    return ask_json([f"configs/{name}", *_args(name, extra)], cwd=HERE)


def main(argv: list[str]) -> None:
    lines = read_by_command(OUT)
    for name, extra, why in selected(RUNS, argv):
        cmd = command(name, extra)
        print(cmd, flush=True)
        result = run(name, extra)
        if result is None:
            continue
        if not result.get("ok", True) and result.get("num_blocks") is None:
            error = str(result.get("error"))
            print(f"  oracle failed: {error[:300]}", flush=True)
            if any(gap in error for gap in CPU_GAPS):
                continue  # the CPU wheel's gap, not vLLM's verdict
            lines[cmd] = {"config": name, "hf_quant_config": _companion(name) is not None,
                          "why": why, "command": cmd, "error": error,
                          "extra_args": [a for a in _args(name, extra)
                                         if a not in ("--keep-layer-specs", "unique")]}
        else:
            case = {**to_case(name, result), "command": cmd, "why": why}
            lines[cmd] = case
            e = case["expected"]
            print(f"  {e['num_blocks']} blocks, {e['kv_cache_tokens']} tokens, block "
                  f"{e['block_size']}, {e['max_concurrency']:.2f}x", flush=True)
        write_lines(OUT, lines.values())


if __name__ == "__main__":
    main(sys.argv[1:])

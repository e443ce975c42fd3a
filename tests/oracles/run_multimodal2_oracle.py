r"""Ask vLLM 0.32 (the shared oracle) for the multimodal-2 group's cases and write them to
``vllm-0.32-coverage-multimodal2.jsonl`` (replayed by tests/plan/test_vllm_oracles.py).

A research tool, never imported by the package or the tests; one run at a time (15-60 s each):

    ORACLE_PY=/work/oracle/vllm-venv/bin/python \
        python tests/oracles/run_multimodal2_oracle.py [SUBSTRING ...]

Each line carries the exact ``command`` and ``why``. ``--hf-overrides`` in a command is passed
to vLLM as is (the oracle builds the model on the meta device; see each run's ``why``). A run
that fails is reported on stderr and written nowhere. Lines are merged by command, so a subset
can be re-run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from oracle_run import GIB16, ask_shown, config_path, merge_by_command, selected, shown  # noqa: E402
from run_oracle import _case  # noqa: E402

OUT = HERE / "vllm-0.32" / "vllm-0.32-coverage-multimodal2.jsonl"
L32K = ["--block-size", "auto", "--max-model-len", "32768"]
# Gemma 3n's first 10 layers use GeluAndMulSparse, whose __init__ calls Tensor.item() — which
# the oracle's meta-device build cannot run. Activation sparsity shapes the MLP's output, not
# any cache, so the runs turn it off (30 layers of the E2B text config).
NO_SPARSITY = ["--hf-overrides", json.dumps({"activation_sparsity_pattern": [0.0] * 30})]

# (config, extra oracle arguments, why)
RUNS: list[tuple[str, list[str], str]] = [
    ("unsloth--gemma-3n-E2B-it.TEXT.MODIFIED.json", [*L32K, *NO_SPARSITY],
     "gemma3n_text (the language model Gemma3nForConditionalGeneration builds): 24 sliding "
     "(512) + 6 full layers, the last 10 read layers 18 / 19's caches (fixed offsets)"),
    ("unsloth--gemma-3n-E2B-it.TEXT.MODIFIED.json", [*L32K, "--tp", "2", *NO_SPARSITY],
     "gemma3n_text at TP 2: 2 KV heads, one per rank"),
    ("unsloth--gemma-3n-E2B-it.TEXT.MODIFIED.json",
     [*L32K, "--kv-cache-dtype", "fp8", *NO_SPARSITY],
     "gemma3n_text with an fp8 KV cache"),
    ("google--paligemma-3b-pt-224.json", ["--block-size", "auto", "--max-model-len", "8192"],
     "paligemma: sparse gemma text_config (GemmaConfig: head_dim 256, 8192 positions), "
     "1 KV head, float32 served as bfloat16"),
    ("google--paligemma-3b-pt-224.json",
     ["--block-size", "auto", "--max-model-len", "8192", "--tp", "2"],
     "paligemma at TP 2: its one KV head replicated on both ranks"),
]


def main() -> None:
    cases: list[dict[str, Any]] = []
    for name, extra, why in selected(RUNS, sys.argv[1:]):
        args = [str(config_path(name)), "--kv-cache-memory-bytes", GIB16, "--keep-layer-specs",
                "unique", *extra]
        command = shown(name, args)
        out = ask_shown(args, command)
        if out.get("ok"):
            cases.append(_case(out, name, False, command, why))
        else:
            print(f"FAILED: {command}: {out.get('error')}", file=sys.stderr)
    merge_by_command(OUT, cases)


if __name__ == "__main__":
    main()

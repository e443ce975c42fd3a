"""Ask vLLM 0.33 (../shared/oracles/tool-0.33/vllm_oracle.py) how it plans DeepSeek-V4, and
write the answers to ``tests/oracles/vllm-0.33/vllm-0.33-dsv4.jsonl``.

Research tool, never imported by the package or the tests. The questions vary what can move
vLLM's V4 numbers: the budget, ``max_model_len`` (up to a request that does not fit),
prefix caching, tensor parallelism, ``--kv-cache-dtype``, ``max_num_batched_tokens`` (the
sliding-window and compressor-state caches hold ``max_in_flight_tokens``), the emulated SM100,
an explicit ``--block-size`` (256, and 16, which stops vLLM) and the second real V4 config
(V4-Pro). Each runs on a copy without ``quantization_config``
(the CUDA wheel has no CPU kernel for its fp8 weights: ``inputs.weights_quant_stripped``), as
``make_vllm_033_cases.py`` does for the existing V4-Flash question, whose helpers it reuses.
Runs go one at a time through the shared lock (``/tmp/oracle.lock``)::

    ORACLE33_VENV=/work/venvs/vllm033 nice -n 19 python3 tests/oracles/run_dsv4_oracle.py

A question already in the output file (same command) is skipped, so a stopped run resumes.
"""

from __future__ import annotations

import fcntl
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_vllm_cases import Question, ask, configure, line_of, resolve_path, venv_python

configure("0.33")
from make_vllm_cases import OUT_DIR  # noqa: E402  (set by configure)

OUT = OUT_DIR / "vllm-0.33-dsv4.jsonl"
LOCK = Path("/tmp/oracle.lock")
FLASH = "deepseek-ai--DeepSeek-V4-Flash.json"
PRO = "deepseek-ai--DeepSeek-V4-Pro.json"
G16 = "17179869184"
BASE = ["--block-size", "auto", "--keep-layer-specs", "unique"]

# (config, arguments, why)
ASKED: list[tuple[str, list[str], str]] = [
    (FLASH, ["--kv-cache-memory-bytes", G16, "--max-model-len", "32768"],
     "the new-behaviour question again (16 GiB, 32k)"),
    (FLASH, ["--kv-cache-memory-bytes", "8589934592", "--max-model-len", "131072"],
     "smaller budget, longer requests"),
    (FLASH, ["--kv-cache-memory-bytes", G16, "--max-model-len", "32768",
             "--no-enable-prefix-caching"], "prefix caching off"),
    (FLASH, ["--kv-cache-memory-bytes", G16, "--max-model-len", "32768", "--tp", "2"],
     "tensor parallel 2: V4's caches are one head, max_tp_shards 1"),
    (FLASH, ["--kv-cache-memory-bytes", G16, "--max-model-len", "32768",
             "--kv-cache-dtype", "fp8"], "explicit fp8: the fp8_ds_mla layout, as auto"),
    (FLASH, ["--kv-cache-memory-bytes", G16, "--max-model-len", "32768",
             "--kv-cache-dtype", "bfloat16"], "bfloat16: refused by the fp8_ds_mla layout"),
    (FLASH, ["--kv-cache-memory-bytes", G16, "--max-model-len", "32768",
             "--max-num-batched-tokens", "2048"],
     "fewer batched tokens: the window and state caches hold max_in_flight_tokens"),
    (FLASH, ["--kv-cache-memory-bytes", G16, "--max-model-len", "32768",
             "--gpu-capability", "10.0"], "emulated SM100 (FlashMLA stays the default)"),
    (FLASH, ["--kv-cache-memory-bytes", "8589934592", "--max-model-len", "1048576"],
     "the config's full length on 8 GiB: one request does not fit"),
    (PRO, ["--kv-cache-memory-bytes", "25769803776", "--max-model-len", "65536"],
     "DeepSeek-V4-Pro (61 layers, ratio-128 first layers)"),
    (FLASH, ["--kv-cache-memory-bytes", G16, "--max-model-len", "32768", "--block-size", "256"],
     "an explicit --block-size 256, the size auto picks"),
    (FLASH, ["--kv-cache-memory-bytes", G16, "--max-model-len", "32768", "--block-size", "16"],
     "an explicit --block-size 16, which V4's sparse backends do not take"),
    (FLASH, ["--kv-cache-memory-bytes", G16, "--max-model-len", "32768", "--tp", "4"],
     "tensor parallel 4"),
]


def main() -> None:
    py = venv_python(None if len(sys.argv) < 2 else sys.argv[1])
    done = set()
    if OUT.is_file():
        done = {json.loads(t)["command"] for t in OUT.read_text().splitlines() if t.strip()}
    for n, (name, args, why) in enumerate(ASKED):
        base = BASE[2:] if "--block-size" in args else BASE
        full = [*args[:2], *base, *args[2:]]
        q = Question("a", OUT, "run_dsv4_oracle.py", n, str(resolve_path(name)), name, full,
                     {"config": name, "hf_quant_config": None, "why": why}, strip=True)
        if q.shown in done:
            continue
        t0 = time.time()
        with LOCK.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            got, stripped = ask(py, q)
        line = line_of(q, got, stripped)
        exp = line.get("expected") or {}
        print(f"{n} {q.shown[:100]} -> {exp.get('num_blocks')} blocks, "
              f"{exp.get('kv_cache_tokens')} tokens {str(line.get('error') or '')[:100]} "
              f"({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
        with OUT.open("a") as f:
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()

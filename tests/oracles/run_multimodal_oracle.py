r"""Ask vLLM 0.32 (the shared oracle) for the multimodal model types' cases and write them to
``vllm-0.32-coverage-multimodal.jsonl`` (replayed by tests/plan/test_vllm_oracles.py).

A research tool, never imported by the package or the tests; one run at a time (15-60 s each):

    ORACLE_PY=/work/oracle/vllm-venv/bin/python \
        python tests/oracles/run_multimodal_oracle.py [SUBSTRING ...]

Each line carries the exact ``command`` and ``why``. A run marked ``strip`` ran on a copy of the
config without its ``quantization_config`` (the CPU build has no kernel for those weights; the
block carries no KV scheme) and says so in ``inputs.weights_quant_stripped``. A run that
fails is reported on stderr and written nowhere. Lines are merged by command, so a subset can
be re-run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_oracle import GIB16, TOOL, _case, _config_path, _merge  # noqa: E402

OUT = HERE / "vllm-0.32" / "vllm-0.32-coverage-multimodal.jsonl"
L32K = ["--block-size", "auto", "--max-model-len", "32768"]

# (config, extra oracle arguments, strip quantization_config?, why)
RUNS: list[tuple[str, list[str], bool, str]] = [
    ("llava-hf--llava-1.5-7b-hf.json", ["--block-size", "auto", "--max-model-len", "4096"],
     False, "llava: sparse llama text_config, LlamaConfig's 32 x 32 x 4096 sizes, fp16"),
    ("llava-hf--llava-v1.6-mistral-7b-hf.TEST.json", L32K, False,
     "llava_next: sparse mistral text_config; float16 at the top beats the text config's "
     "bfloat16 (vLLM reads the root dtype first)"),
    ("HuggingFaceTB--SmolVLM2-500M-Video-Instruct.CONVERTED.json",
     ["--block-size", "auto", "--max-model-len", "8192"], False,
     "smolvlm (Idefics3 LlamaModel): float32 at the top, downcast to bfloat16"),
    ("mistralai--Devstral-Small-2-24B-Instruct.json", L32K, False,
     "mistral3 wrapper around ministral3 (fp8 weights, no KV scheme)"),
    ("Qwen--Qwen2-VL-2B-Instruct.json", L32K, False,
     "qwen2_vl with its text keys at the top level (no text_config), AWQ, fp16"),
    ("Qwen--Qwen2-VL-2B-Instruct.json", [*L32K, "--tp", "2"], False,
     "qwen2_vl at TP 2: 2 KV heads, one per rank"),
    ("allenai--olmOCR-2-7B-1025.json", L32K, False,
     "qwen2_5_vl: text_config wins over the top-level copies (sliding_window 32768 unused)"),
    ("Qwen--Qwen2.5-Omni-7B.json", L32K, False,
     "qwen2_5_omni: thinker_config.text_config; vLLM builds the thinker only"),
    ("Qwen--Qwen2.5-Omni-7B.json", [*L32K, "--kv-cache-dtype", "fp8"], False,
     "qwen2_5_omni with an fp8 KV cache"),
    ("Qwen--Qwen2-Audio-7B-Instruct.json", ["--block-size", "auto", "--max-model-len", "8192"],
     False, "qwen2_audio: sparse qwen2 text_config, Qwen2Config's sizes and 32 KV heads"),
    ("Qwen--Qwen3-ASR-0.6B.json", L32K, False, "qwen3_asr: thinker_config.text_config"),
    ("zai-org--GLM-4.1V-9B-Thinking.json", L32K, False,
     "glm4v with its text keys at the top level"),
    ("zai-org--GLM-4.1V-9B-Thinking.json", [*L32K, "--tp", "4"], False,
     "glm4v at TP 4: 2 KV heads replicated to one per rank"),
    ("moonshotai--Kimi-K2.5.json", L32K, False, "kimi_k25: MLA text model (kimi_k2)"),
    ("LGAI-EXAONE--EXAONE-4.5-33B.json", L32K, False,
     "exaone4_5: per-layer windows from layer_types (LLLG)"),
    ("LGAI-EXAONE--EXAONE-4.5-33B.json", [*L32K, "--tp", "2"], False,
     "exaone4_5 at TP 2"),
    ("openbmb--MiniCPM-V-4_6.json", L32K, True,
     "minicpmv4_6: qwen3_5_text GDN hybrid; SSM state not float32 (no Qwen3.5 config hook)"),
    ("openbmb--MiniCPM-V-4_6.json", [*L32K, "--kv-cache-dtype", "fp8"], True,
     "minicpmv4_6 with an fp8 KV cache: the attention page halves, the block grows"),
]


def main() -> None:
    python = os.environ.get("ORACLE_PY", "/work/oracle/vllm-venv/bin/python")
    wanted = sys.argv[1:]
    cases = []
    for name, extra, strip, why in RUNS:
        if wanted and not any(w in name or w in why for w in wanted):
            continue
        config = _config_path(name)
        with tempfile.TemporaryDirectory() as tmp:
            if strip:
                raw = json.loads(config.read_text())
                raw.pop("quantization_config")
                config = Path(tmp) / name
                config.write_text(json.dumps(raw))
            args = [str(config), "--kv-cache-memory-bytes", GIB16, "--keep-layer-specs",
                    "unique", *extra]
            command = " ".join(["vllm_oracle.py", name + (" (quantization_config removed)"
                                                          if strip else ""), *args[1:]])
            print(f"running: {command}", file=sys.stderr)
            done = subprocess.run([python, str(TOOL), *args], capture_output=True, text=True,
                                  check=False)
        out = json.loads(done.stdout)
        if out.get("ok"):
            case = _case(out, name, False, command, why)
            if strip:
                case["inputs"]["weights_quant_stripped"] = True
            cases.append(case)
        else:
            print(f"FAILED: {command}: {out.get('error')}", file=sys.stderr)
    _merge(OUT, cases)


if __name__ == "__main__":
    main()

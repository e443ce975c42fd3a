"""Ask one vLLM release's oracle (``../shared/oracles/tool[-<release>]/vllm_oracle.py``) the
questions of the previous release's case files, and write its answers under
``tests/oracles/vllm-<release>/``: one script for every release (``--release``).

Research tool, never imported by the package or the tests. It reads every case file of the
release asked before (``--from``, by default the release before ``--release`` in
``RELEASE_ORDER``) that ``vllm_oracle.py`` answered — ``tests/oracles/vllm-<from>/*.jsonl`` and,
for 0.32, ``../shared/oracles/vllm-0.32/*.jsonl`` — turns each line back into the tool's
command line, runs it with the release's tool, and appends one line to the output file of the
same stem with ``vllm-<from>`` replaced by ``vllm-<release>`` (``cases.jsonl`` and
``coverage-cases.jsonl`` keep their names). The questions only one release makes interesting
(``EXTRA[release]``) go to that release's own file (``EXTRA_FILE[release]``). ``--files NAME``
re-asks only the named input files (e.g. ``cases.jsonl``); ``--block-auto`` asks every question
of those files whose config is in ``BLOCK_AUTO`` (its first question) again with
``--block-size auto`` (0.34's ``block-auto-cases.jsonl``).

How a line becomes a command: a line with a ``command`` starting ``vllm_oracle.py`` is re-run
with those exact flags (``configs/X`` and a bare name are found by ``oracle_run.config_path``,
``class-default-configs/X`` in ``tests/data/``). A line without one is rebuilt from its
``inputs`` (``--kv-cache-memory-bytes``, ``--block-size``, ``--max-model-len``,
``--kv-cache-dtype``, ``--tp``, ``--max-num-seqs``, ``--max-num-batched-tokens``, the
speculative pair when ``num_speculative_tokens`` > 0, ``--no-enable-prefix-caching`` when vLLM
had resolved it off, ``--hf-quant-config`` when ``hf_quant_config`` is true).
``inputs.weights_quant_stripped`` runs on a copy without ``quantization_config``. A config
with quantized weights the CUDA wheel cannot build on CPU is retried on such a copy (a
compressed-tensors config with a ``kv_cache_scheme`` keeps it, only ``config_groups``/``ignore``
go), as the tools' READMEs say; the line then records ``inputs.weights_quant_stripped``.

Output lines: ``config``, ``hf_quant_config``, ``why`` (the asked line's), ``command`` (what
ran), ``source`` (input file and 0-based line), ``inputs``, ``vllm_resolved``, ``expected``,
``kv_cache_groups``, ``layer_specs``, ``provenance`` and ``warnings`` as the tool printed them
(``oracle_run.tool_case_line``'s fields). A run that gave no plan is a line with ``ok: false``
and the tool's ``error``; a plan vLLM would refuse to start with also carries ``error``.

Order: (a) GDN / Mamba / linear-attention hybrids, ``EXTRA``, and the speculative-decoding and
explicit float16/bfloat16 KV questions, (b) the shared case files, (c) the rest, (d) the
start-up and refusal files. Results are appended as they come; a question whose (file, line)
is already in its output file is skipped, so a stopped run resumes where it was, and a
command already answered elsewhere is copied, not re-run. Run it with any Python >= 3.11 (it
only starts the oracle), one run at a time, at low priority::

    ORACLE_VENV=/work/venvs/vllm033 nice -n 19 python3 tests/oracles/make_vllm_cases.py \
        --release 0.33                      # 0.32's questions, asked of 0.33
    ORACLE_VENV=$ORACLE34_VENV python3 tests/oracles/make_vllm_cases.py --release 0.34 \
        --files cases.jsonl                 # tests/oracles/vllm-0.34/cases.jsonl
    ORACLE_VENV=$ORACLE34_VENV python3 tests/oracles/make_vllm_cases.py --release 0.34 \
        --files cases.jsonl --block-auto    # tests/oracles/vllm-0.34/block-auto-cases.jsonl
    ORACLE_VENV=/work/oracle/vllm-venv python3 tests/oracles/make_vllm_cases.py \
        --release 0.32                      # 0.32's EXTRA: vllm-0.32/vllm-0.32-more.jsonl
    # options: --venv PATH [--only SUBSTR ...] [--limit N] [--stop-at HH:MM] [--list]

``--only`` keeps the questions whose config, source file or ``why`` contains a SUBSTR;
``--limit`` stops after N oracle runs; ``--stop-at`` launches no run after that UTC time;
``--list`` prints the ordered work list and runs nothing. An ``EXTRA`` entry's
``--env NAME=VALUE`` pair is not passed to the tool: the run gets that environment variable.
Set-up of the venv: the release's tool README (``../shared/oracles/tool-0.34/README.md``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracle_run import HERE, SHARED, config_path, tool_case_line

# The releases with oracle cases, oldest first: --from defaults to the one before --release.
RELEASE_ORDER = ("0.32", "0.33", "0.34")
SHARED_032 = SHARED / "oracles" / "vllm-0.32"
# Set by configure(): the release asked, its tool and output folder, the release re-asked.
TOOL = SHARED / "oracles" / "tool-0.33" / "vllm_oracle.py"
OUT_DIR = HERE / "vllm-0.33"
FROM = "0.32"
RELEASE = "0.33"


def tool_of(release: str) -> Path:
    """The release's oracle: ../shared/oracles/tool/ for 0.32, tool-<release>/ after."""
    folder = "tool" if release == "0.32" else f"tool-{release}"
    return SHARED / "oracles" / folder / "vllm_oracle.py"


def configure(release: str, asked_before: str | None = None) -> None:
    """Point the module at ``release`` (and the release whose questions it re-asks)."""
    global TOOL, OUT_DIR, FROM, RELEASE
    if release not in RELEASE_ORDER:
        raise SystemExit(f"--release {release}: not one of {', '.join(RELEASE_ORDER)}")
    index = RELEASE_ORDER.index(release)
    RELEASE = release
    FROM = asked_before or (RELEASE_ORDER[index - 1] if index else release)
    TOOL = tool_of(release)
    OUT_DIR = HERE / f"vllm-{release}"
# 0.32 files whose lines are other runners' (in-process remote code, Transformers backend,
# PP support, tokenizer lengths): not answered by vllm_oracle.py's command line.
OTHER_RUNNERS = ("remote", "tfbackend", "pp-startup", "pp-support", "tokenizer-len")
# start-up and refusal files: asked last.
LAST = ("startup", "refusals")
HYBRID_ARCHS = ("Qwen3Next", "Qwen3_5", "NemotronH", "Jamba", "FalconH1", "FalconMamba",
                "Mamba", "GraniteMoeHybrid", "Lfm2", "KimiLinear", "KimiK3",
                "Zamba", "Bamba", "Plamo", "Glm5Next", "MiniCPMV4_6", "MiniMaxText01",
                "MiniMaxM1", "MiniMaxM3")
RUN_TIMEOUT_S = 1200
# Each release's own questions go to this file of its folder.
EXTRA_FILE = {"0.32": "vllm-0.32-more.jsonl", "0.33": "vllm-0.33-new-behaviour.jsonl",
              "0.34": "vllm-0.34-new-behaviour.jsonl"}
# 0.34: the configs asked again with --block-size auto (--block-auto), one per kind: dense,
# sliding-window, chunked-local, MLA, MoE, Gated-DeltaNet and Mamba hybrids.
BLOCK_AUTO_FILE = "block-auto-cases.jsonl"
BLOCK_AUTO = ("Qwen--Qwen3-Next-80B-A3B-Thinking.json", "Qwen--Qwen3.6-35B-A3B.json",
              "nvidia--Nemotron-H-56B-Base-8K.json", "CohereForAI--c4ai-command-r-v01.json",
              "MiniMaxAI--MiniMax-M2.5.json", "Qwen--Qwen3-8B.json",
              "deepseek-ai--DeepSeek-V2-Lite.json", "google--gemma-2-2b-it.json",
              "google--gemma-3-27b-it.json", "meta-llama--Llama-4-Scout-17B-16E-Instruct.json",
              "meta-llama--Meta-Llama-3.1-8B.json", "mistralai--Mistral-7B-v0.1.json",
              "mistralai--Mixtral-8x7B-v0.1.json", "openai--gpt-oss-20b.json")
# 0.32's own runs (the former make_vllm_cases.py RUNS): NVFP4 checkpoints without their
# weight quantization (the CPU build lacks the kernels), the KV scheme the companion states
# (kv_cache_quant_algo) passed as --kv-cache-dtype; MiniMax-M3's 128-token sparse kernels
# with a user block of 256 and an fp8 cache. Marked "strip" (run on a stripped copy).
_MORE = [("nvidia--MiniMax-M3-NVFP4.json", "auto", "auto"),
         ("nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4.json", "fp8", "auto"),
         ("nvidia--GLM-5.2-NVFP4.json", "fp8", "auto"),
         ("nvidia--MiniMax-M3-NVFP4.json", "auto", "256"),
         ("nvidia--MiniMax-M3-NVFP4.json", "fp8", "auto")]
# (config, tool arguments after the config, why); "strip" in why: a stripped copy.
EXTRA: dict[str, list[tuple[str, list[str], str]]] = {"0.32": [
    (name, ["--kv-cache-memory-bytes", "16GiB", "--max-model-len", "32768", "--block-size",
            block, "--kv-cache-dtype", kv], "NVFP4 checkpoint, weights stripped (strip)")
    for name, kv, block in _MORE], "0.34": [
    ("deepseek-ai--DeepSeek-V2-Lite.json",
     ["--kv-cache-memory-bytes", "8GiB", "--block-size", "auto", "--max-model-len", "32768",
      "--gpu-capability", "10.0"],
     "dense MLA on SM100: FLASHINFER_MLA (kernel blocks [32, 64]) keeps 0.34's default block "
     "of 64 (0.33: 32, vllm-0.33-new-behaviour.jsonl)"),
    ("mistralai--Mistral-7B-v0.1.json",
     ["--kv-cache-memory-bytes", "17179869184", "--block-size", "16", "--max-model-len",
      "32768", "--num-speculative-tokens", "3", "--speculative-method", "ngram"],
     "ngram without Model Runner V1 (gone in 0.34): async scheduling stays on, two batches in "
     "flight (0.33's oracle ran the V1 runner and turned it off)"),
], "0.33": [
    ("Qwen--Qwen3-Next-80B-A3B-Thinking.json",
     ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "32768", "--enable-prefix-caching",
      "--gpu-capability", "9.0"],
     "GDN hybrid, prefix caching on, SM90: FlashInfer GDN prefill's checkpoint alignment "
     "(64) enters the hybrid block size (tool README: block 576, 606 blocks)"),
    ("Qwen--Qwen3-Next-80B-A3B-Thinking.json",
     ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "32768", "--enable-prefix-caching",
      "--gpu-capability", "10.0"],
     "same at SM100: FlashInfer GDN prefill only when linear_key_head_dim == 128"),
    ("Qwen--Qwen3-Next-80B-A3B-Thinking.json",
     ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "32768",
      "--no-enable-prefix-caching", "--gpu-capability", "9.0"],
     "same, prefix caching off: no align mode, so no checkpoint alignment"),
    ("Qwen--Qwen3.6-35B-A3B.json",
     ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "32768", "--enable-prefix-caching",
      "--gpu-capability", "10.0"],
     "Qwen3.6 GDN hybrid at SM100"),
    ("meta-llama--Meta-Llama-3.1-8B.json",
     ["--kv-cache-memory-bytes", "10GiB", "--max-model-len", "32768",
      "--kv-cache-dtype", "float16"],
     "bf16 model, explicit float16 KV dtype: 0.33 rejects a float KV dtype that differs "
     "from the model dtype"),
    ("meta-llama--Meta-Llama-3.1-8B.json",
     ["--kv-cache-memory-bytes", "10GiB", "--max-model-len", "32768",
      "--kv-cache-dtype", "bfloat16"],
     "bf16 model, explicit bfloat16 KV dtype (same as the model's): accepted"),
    ("stepfun-ai--Step-3.7-Flash.json",
     ["--kv-cache-memory-bytes", "16GiB", "--max-model-len", "32768", "--block-size", "auto",
      "--keep-layer-specs", "unique"],
     "Step-3.7-Flash: 0.32 could not run its architecture; does 0.33?"),
    ("zai-org--GLM-5.3-Flash.json",
     ["--kv-cache-memory-bytes", "8589934592", "--block-size", "auto", "--max-model-len",
      "32768", "--gpu-capability", "10.0"],
     "GLM-5.3-Flash (index_topk set) under --kv-cache-dtype auto on SM100: 0.33's "
     "Glm5NextModelConfig takes an fp8 KV cache (compare ../shared cases.jsonl line 78, SM90)"),
    ("deepseek-ai--DeepSeek-V4-Flash.json",
     ["--kv-cache-memory-bytes", "17179869184", "--block-size", "auto", "--max-model-len",
      "32768", "--keep-layer-specs", "unique"],
     "DeepSeek-V4-Flash: no 0.32 case (the CPU build had only a CPU implementation); the "
     "0.33 CUDA wheel may build its CUDA model"),
    ("deepseek-ai--DeepSeek-V2-Lite.json",
     ["--kv-cache-memory-bytes", "8GiB", "--block-size", "auto", "--max-model-len", "32768",
      "--gpu-capability", "10.0"],
     "dense MLA on SM100: FLASHINFER_MLA first in the priority list, kernel blocks [32, 64], "
     "so --block-size auto takes 32"),
    ("deepseek-ai--DeepSeek-V2-Lite.json",
     ["--kv-cache-memory-bytes", "8GiB", "--block-size", "auto", "--max-model-len", "32768",
      "--kv-cache-dtype", "fp8", "--gpu-capability", "10.0"],
     "dense MLA with an fp8 cache on SM100: FLASHINFER_MLA takes fp8, block 32"),
    ("deepseek-ai--DeepSeek-V2-Lite.json",
     ["--kv-cache-memory-bytes", "8GiB", "--block-size", "auto", "--max-model-len", "32768",
      "--gpu-capability", "8.0"],
     "dense MLA on SM80: no FA-MLA / FlashMLA / FlashInfer-MLA kernel, TRITON_MLA, block 16"),
    ("deepseek-ai--DeepSeek-V2-Lite.json",
     ["--kv-cache-memory-bytes", "8GiB", "--block-size", "16", "--max-model-len", "32768",
      "--gpu-capability", "10.0"],
     "dense MLA on SM100 with --block-size 16: FLASHINFER_MLA and CUTLASS_MLA refuse 16, "
     "TRITON_MLA takes it"),
    ("class-default-configs/moss_transcribe_diarize.json",
     ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "4096", "--block-size", "auto"],
     "a type only 0.33 serves (transformers 5.20 class defaults): Qwen3 text on text_config"),
    ("class-default-configs/qianfan_ocr.json",
     ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "4096", "--block-size", "auto"],
     "QianfanOCRConfig's defaults: does InternVLChatModel start without force_image_size?"),
    ("class-default-configs/nemotron_h_omni.json",
     ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "4096", "--block-size", "auto"],
     "NemotronH Omni class defaults: patch_size only inside vision_config"),
    # #26 leftovers (runners033): types kvledger refused in its own words
    ("class-default-configs/beam.json",
     ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "4096", "--block-size", "auto"],
     "Beam (0.33 registers BeamForCausalLM, vllm/models/beam/): what vLLM builds from "
     "transformers 5.20's BeamConfig defaults, read by vLLM's own BeamConfig"),
    ("class-default-configs/kolibri1.json",
     ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "4096", "--block-size", "auto"],
     "Kolibri1 (0.33: Transformers MoE backend, _TRANSFORMERS_SUPPORTED_MODELS)"),
    ("class-default-configs/qwen3_omni_moe.head-dim.json",
     ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "4096", "--block-size", "auto"],
     "Qwen3-Omni class defaults with head_dim stated: does the vision tower build?"),
    ("class-default-configs/cohere_compass.json",
     ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "4096", "--block-size", "auto"],
     "CohereCompassConfig's defaults: the bare AssertionError, with its traceback"),
    # SM10x sparse MLA (sparse_mla_backends.py): which backend, which layout, which stride.
    ("zai-org--GLM-5.3-Flash.json",
     ["--kv-cache-memory-bytes", "8589934592", "--block-size", "auto", "--max-model-len",
      "32768", "--kv-cache-dtype", "bfloat16", "--gpu-capability", "10.0"],
     "sparse MLA on SM10x: GLM-5.3-Flash (head 512, no RoPE) at an explicit bfloat16 cache "
     "takes FLASHINFER_MLA_SPARSE, whose blocks align to 32 rows (32,768 B)"),
    ("zai-org--GLM-5.3-Flash.json",
     ["--kv-cache-memory-bytes", "8589934592", "--block-size", "auto", "--max-model-len",
      "32768", "--kv-cache-dtype", "fp8", "--gpu-capability", "10.0"],
     "sparse MLA on SM10x: GLM-5.3-Flash at fp8 (what Glm5NextModelConfig sets under auto on "
     "a real SM100): FLASHINFER_MLA_SPARSE keeps one-byte fp8 rows, 32-row alignment"),
    ("deepseek-ai--DeepSeek-V3.2.json",
     ["--kv-cache-memory-bytes", "8GiB", "--block-size", "auto", "--max-model-len", "32768",
      "--kv-cache-dtype", "fp8", "--gpu-capability", "10.0"],
     "sparse MLA on SM10x: DeepSeek-V3.2 at fp8: FLASHINFER_MLA_SPARSE first for a quantized "
     "cache, standard fp8 rows (not fp8_ds_mla), 32-row alignment"),
    ("deepseek-ai--DeepSeek-V3.2.json",
     ["--kv-cache-memory-bytes", "8GiB", "--block-size", "auto", "--max-model-len", "32768",
      "--gpu-capability", "10.0"],
     "sparse MLA on SM10x: DeepSeek-V3.2 at bf16, 128 heads a rank: FLASHMLA_SPARSE first "
     "(one-row alignment); the emulation may lack its kernel"),
    # "--env NAME=VALUE" is no tool flag: run_tool sets it for the run.
    ("mistralai--Mistral-7B-v0.1.json",
     ["--kv-cache-memory-bytes", "17179869184", "--block-size", "auto", "--max-model-len",
      "32768", "--num-speculative-tokens", "3", "--speculative-method", "ngram",
      "--env", "VLLM_USE_V2_MODEL_RUNNER=1"],
     "ngram under Model Runner V2 (forced: the CPU platform has no Triton, and the env var "
     "is read before that check, VllmConfig.use_v2_model_runner): 0.33 keeps async "
     "scheduling on (compare vllm-0.33-cases.jsonl, V1 runner, async off)"),
]}


@dataclass
class Question:
    """One question: where it came from, the tool arguments, and the head of its line."""

    priority: str
    out: Path
    source: str
    line: int
    config: str
    written: str
    args: list[str]
    head: dict[str, Any]
    strip: bool = False
    old: dict[str, Any] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        return " ".join(["vllm_oracle.py", self.written, *self.args])


def venv_python(cli: str | None) -> str:
    venv = cli or os.environ.get("ORACLE_VENV") or os.environ.get("ORACLE33_VENV")
    if not venv:
        raise SystemExit(f"give the vLLM {RELEASE} venv: --venv PATH or ORACLE_VENV=PATH")
    py = Path(venv) / "bin" / "python"
    if not py.is_file():
        raise SystemExit(f"no interpreter at {py}")
    return str(py)


def out_name(path: Path) -> str:
    return path.name.replace(f"vllm-{FROM}", f"vllm-{RELEASE}")


def split_command(command: str) -> tuple[str, list[str]]:
    """(config path as written, arguments) of a ``vllm_oracle.py CONFIG --flag value ...``
    command; a flag's value may hold spaces (``--hf-overrides`` JSON)."""
    rest = command.split(" ", 1)[1].replace(" (quantization_config removed)", "", 1)
    cfg, _, flags = rest.partition(" ")
    args: list[str] = []
    for piece in re.split(r" (?=--[a-z])", flags) if flags else []:
        flag, _, value = piece.partition(" ")
        args.append(flag)
        if value:
            args.append(value)
    return cfg, args


CLASS_DEFAULTS = HERE.parent / "data" / "class-default-configs"


def resolve_path(written: str) -> Path:
    """A config (or companion) named in a command: ``configs/X`` and a bare name are
    ../shared/configs' (the 0.32 runs' ``tests/oracles/configs/`` moved there),
    ``class-default-configs/X`` the project's own class-default configs (tests/data/)."""
    if written.startswith("class-default-configs/"):
        return CLASS_DEFAULTS / written.removeprefix("class-default-configs/")
    return config_path(written.removeprefix("configs/"))


def args_from_inputs(case: dict[str, Any]) -> list[str]:
    i = case["inputs"]
    args = ["--kv-cache-memory-bytes", str(i["kv_cache_memory_bytes"]),
            "--block-size", str(i["block_size"])]
    if i.get("max_model_len") is not None:
        args += ["--max-model-len", str(i["max_model_len"])]
    args += ["--kv-cache-dtype", str(i["kv_cache_dtype"]),
             "--tp", str(i["tensor_parallel_size"]),
             "--max-num-seqs", str(i["max_num_seqs"]),
             "--max-num-batched-tokens", str(i["max_num_batched_tokens"])]
    if i.get("num_speculative_tokens"):
        args += ["--num-speculative-tokens", str(i["num_speculative_tokens"]),
                 "--speculative-method", str(i["speculative_method"])]
    if i.get("enable_prefix_caching") is False:
        args.append("--no-enable-prefix-caching")
    if case.get("hf_quant_config") is True:
        stem = case["config"].removesuffix(".json")
        args += ["--hf-quant-config", f"{stem}.hf_quant_config.json"]
    return args


def is_hybrid(case: dict[str, Any]) -> bool:
    res = case.get("vllm_resolved") or {}
    if res.get("is_hybrid") or "Mamba" in json.dumps(case.get("layer_specs")):
        return True
    arch = str(res.get("architecture") or "")
    name = case.get("config", "")
    return any(a in arch for a in HYBRID_ARCHS) or any(
        k in name for k in ("Qwen3-Next", "Qwen3.5", "Qwen3.6", "Nemotron-H", "Nemotron-3",
                            "Jamba", "Falcon-H1", "granite-4", "LFM2", "Kimi-Linear",
                            "MiniMax-M1", "MiniMax-M3", "falcon-mamba", "Zamba", "Bamba"))


def shows_change(args: list[str]) -> bool:
    """Questions that touch a documented change besides the hybrids (speculative decoding and
    async scheduling, an explicit float KV dtype): asked with the hybrids."""
    joined = " ".join(args)
    return "--speculative-method" in joined or any(
        f"--kv-cache-dtype {d}" in joined for d in ("float16", "bfloat16"))


def questions(only_files: list[str] | None = None, block_auto: bool = False) -> list[Question]:
    files = sorted((HERE / f"vllm-{FROM}").glob("*.jsonl")) if FROM != RELEASE else []
    if FROM == "0.32" and FROM != RELEASE:
        files += sorted(SHARED_032.glob("*.jsonl"))
    if only_files:
        files = [f for f in files if f.name in only_files]
    qs: list[Question] = []
    for path in files:
        if any(k in path.name for k in OTHER_RUNNERS):
            continue
        shared = path.parent == SHARED_032
        source = f"../shared/oracles/vllm-0.32/{path.name}" if shared else \
            f"tests/oracles/vllm-{FROM}/{path.name}"
        for n, text in enumerate(path.read_text().splitlines()):
            if not text.strip():
                continue
            case = json.loads(text)
            command = case.get("command") or ""
            if command.startswith("vllm_oracle.py"):
                written, args = split_command(command)
            elif "inputs" in case:
                written, args = case["config"], args_from_inputs(case)
            else:
                continue
            if block_auto:  # each BLOCK_AUTO config's first question, with auto
                if case["config"] not in BLOCK_AUTO or "--block-size" not in args or \
                        any(q.config.endswith(case["config"]) for q in qs):
                    continue
                args[args.index("--block-size") + 1] = "auto"
            cfg = resolve_path(written)
            if any(k in path.name for k in LAST):
                prio = "d"
            elif is_hybrid(case) or shows_change(args):
                prio = "a"
            elif shared:
                prio = "b"
            else:
                prio = "c"
            head = {"config": case["config"], "hf_quant_config": case.get("hf_quant_config")}
            if "why" in case:
                head["why"] = case["why"]
            strip = bool((case.get("inputs") or {}).get("weights_quant_stripped")) or \
                "(quantization_config removed)" in command
            out = OUT_DIR / (BLOCK_AUTO_FILE if block_auto else out_name(path))
            qs.append(Question(prio, out, source, n, str(cfg), written, args, head, strip, case))
    if block_auto or only_files:
        return sorted(qs, key=lambda q: q.line)
    for n, (name, args, why) in enumerate(EXTRA.get(RELEASE, [])):
        qs.append(Question("a", OUT_DIR / EXTRA_FILE[RELEASE], "EXTRA", n,
                           str(resolve_path(name)), name, args,
                           {"config": name, "hf_quant_config": None, "why": why},
                           strip="(strip)" in why))
    order = {"a": 0, "b": 1, "c": 2, "d": 3}
    # EXTRA first within (a): the README's checked Qwen3-Next case anchors the rest; within a
    # priority, runs of more than two TP ranks (one process each, slow here) go last.
    return sorted(qs, key=lambda q: (order[q.priority], q.source != "EXTRA", tp_of(q) > 2))


def tp_of(q: Question) -> int:
    return int(q.args[q.args.index("--tp") + 1]) if "--tp" in q.args else 1


def stripped_copy(cfg: Path, tmp: Path, keep_kv_scheme: bool) -> Path:
    """A copy of ``cfg`` without its weight quantization (the KV scheme kept if asked)."""
    raw = json.loads(cfg.read_text())
    qc = raw.get("quantization_config")
    if keep_kv_scheme and isinstance(qc, dict) and qc.get("kv_cache_scheme"):
        raw["quantization_config"] = {k: v for k, v in qc.items()
                                      if k not in ("config_groups", "ignore")}
    else:
        raw.pop("quantization_config", None)
    out = tmp / cfg.name
    out.write_text(json.dumps(raw))
    return out


def run_tool(py: str, cfg: Path, args: list[str]) -> dict[str, Any]:
    """The tool's JSON answer; the companion named by ``--hf-quant-config`` is looked up next
    to the config the same way as the config itself."""
    real: list[str] = []
    env = dict(os.environ)
    for prev, a in zip(["", *args[:-1]], args, strict=True):
        if a == "--env":
            continue
        if prev == "--env":  # "--env NAME=VALUE": the tool runs with it set (not a tool flag)
            name, _, value = a.partition("=")
            env[name] = value
            continue
        real.append(str(resolve_path(a)) if prev == "--hf-quant-config" else a)
    try:
        proc = subprocess.run([py, str(TOOL), str(cfg), *real], capture_output=True,
                              text=True, timeout=RUN_TIMEOUT_S,
                              check=False, env=env)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"oracle run timed out after {RUN_TIMEOUT_S} s"}
    try:
        got: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        tail = proc.stderr.strip().splitlines()[-1:] or [""]
        return {"ok": False, "error": f"no JSON from the oracle (exit {proc.returncode}): "
                                      f"{tail[0][:500]}"}
    return got


def quant_weights(cfg: Path) -> bool:
    try:
        raw = json.loads(cfg.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(raw.get("quantization_config"), dict)


def ask(py: str, q: Question) -> tuple[dict[str, Any], Any]:
    """(answer, weights_quant_stripped value or None)."""
    cfg = Path(q.config)
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        if q.strip:
            args = drop_companion(q.args)
            return run_tool(py, stripped_copy(cfg, tmp, False), args), True
        got = run_tool(py, cfg, q.args)
        if has_plan(got) or not quant_weights(cfg):
            return got, None
        raw = json.loads(cfg.read_text())
        keep = bool((raw.get("quantization_config") or {}).get("kv_cache_scheme")) and \
            (raw["quantization_config"].get("quant_method") == "compressed-tensors")
        retry = run_tool(py, stripped_copy(cfg, tmp, keep), q.args if keep else
                         drop_companion(q.args))
        if not has_plan(retry):  # the verbatim config's error stands; the copy's is kept
            return {**got, "stripped_copy_error": retry.get("error")}, None
        retry["first_error"] = got.get("error")
        return retry, "weights part only" if keep else True


def drop_companion(args: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "--hf-quant-config":
            skip = True
            continue
        out.append(a)
    return out


def has_plan(got: dict[str, Any]) -> bool:
    return "num_blocks" in got and "kv_cache_groups" in got


def line_of(q: Question, got: dict[str, Any], stripped: Any) -> dict[str, Any]:
    head = {**q.head, "command": q.shown, "source": {"file": q.source, "line": q.line}}
    if not has_plan(got):
        line = {**head, "ok": False, "error": got.get("error"),
                "inputs": got.get("inputs"), "vllm_version": got.get("vllm_version")}
        if got.get("stripped_copy_error"):
            line["stripped_copy_error"] = got["stripped_copy_error"]
        if got.get("traceback_tail"):  # where a bare error (an assert) was raised
            line["traceback_tail"] = got["traceback_tail"]
        return line
    line = tool_case_line(head, got)
    del line["spec_collection"]  # in provenance
    if stripped is not None:
        line["inputs"]["weights_quant_stripped"] = stripped
    line["provenance"] = {**got["provenance"], "vllm_version": got.get("vllm_version"),
                          "gpu_capability_emulated": got.get("gpu_capability_emulated")}
    line["warnings"] = got.get("warnings")
    if got.get("error"):
        line["error"] = got["error"]
    if got.get("first_error"):
        line["first_error"] = got["first_error"]
    if "ok" in q.old and "vllm_resolved" not in q.old:  # a start-up file's own fields
        line.update(ok=not got.get("vllm_refuses_to_start") and not got.get("error"),
                    max_model_len=got["resolved"]["max_model_len"],
                    block_size=got["block_size"]["final_cache_config_block_size"],
                    num_blocks=got["num_blocks"])
    return line


def done_lines() -> tuple[set[tuple[str, int]], dict[str, dict[str, Any]]]:
    """(source, line) pairs already answered, and each answered command's line."""
    done: set[tuple[str, int]] = set()
    by_command: dict[str, dict[str, Any]] = {}
    for path in OUT_DIR.glob("*.jsonl"):
        if any(path.stem.endswith(f"-{other}") for other in OTHER_RUNNERS):
            continue  # written by those runners themselves (run_*_oracle.py --vllm <release>)
        for text in path.read_text().splitlines():
            if text.strip():
                case = json.loads(text)
                if "source" not in case:  # a line made before lines named their question
                    continue
                done.add((case["source"]["file"], case["source"]["line"]))
                by_command.setdefault(case["command"], case)
    return done, by_command


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--release", required=True, choices=RELEASE_ORDER,
                   help="the release whose oracle answers")
    p.add_argument("--from", dest="asked_before", default=None, choices=RELEASE_ORDER,
                   help="the release whose questions are re-asked (default: the one before)")
    p.add_argument("--files", nargs="*", default=[], help="only these input files")
    p.add_argument("--block-auto", action="store_true",
                   help="ask BLOCK_AUTO's questions again with --block-size auto")
    p.add_argument("--venv", default=None, help="the release's venv (else ORACLE_VENV)")
    p.add_argument("--only", nargs="*", default=[])
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--stop-at", default=None, help="UTC HH:MM after which no run starts")
    p.add_argument("--list", action="store_true")
    a = p.parse_args()
    configure(a.release, a.asked_before)
    qs = [q for q in questions(a.files, a.block_auto) if not a.only or any(
        w in q.config or w in q.source or w in str(q.head.get("why", "")) for w in a.only)]
    done, by_command = done_lines()
    todo = [q for q in qs if (q.source, q.line) not in done]
    if a.list:
        for q in todo:
            print(q.priority, q.source, q.line, q.shown)
        print(f"{len(todo)} to do, {len(qs) - len(todo)} done", file=sys.stderr)
        return
    py = venv_python(a.venv)
    OUT_DIR.mkdir(exist_ok=True)
    runs = 0
    for q in todo:
        if not Path(q.config).exists():
            print(f"[{q.priority}] {q.source}:{q.line} not asked: no {q.config}", file=sys.stderr)
            continue
        cached = by_command.get(q.shown)
        if cached is not None and not q.strip:
            line = {**cached, **q.head, "source": {"file": q.source, "line": q.line}}
            if "why" not in q.head:
                line.pop("why", None)
        else:
            if a.limit is not None and runs >= a.limit:
                break
            if a.stop_at and dt.datetime.now(dt.UTC).strftime("%H:%M") >= a.stop_at:
                print("stop time reached", file=sys.stderr)
                break
            t0 = time.time()
            got, stripped = ask(py, q)
            runs += 1
            line = line_of(q, got, stripped)
            exp = line.get("expected") or {}
            print(f"[{q.priority}] {q.source}:{q.line} {q.shown[:110]} -> "
                  f"{exp.get('num_blocks')} blocks, {exp.get('kv_cache_tokens')} tokens, "
                  f"block {exp.get('block_size')} {str(line.get('error') or '')[:80]} "
                  f"({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
            by_command.setdefault(q.shown, line)
        with open(q.out, "a") as f:
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()

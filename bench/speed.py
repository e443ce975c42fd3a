"""Cold start: wall time of one fresh process answering one sizing question.

    python bench/speed.py [--runs 7]

The question: Meta-Llama-3.1-8B, max_model_len 32768, an 8 GiB KV budget, TP 1 (an oracle
case). Each command runs ``--runs`` times (after one untimed warm-up that fills the OS file
cache and writes bytecode); the median wall time is reported, beside a bare
``python -c pass`` of the same interpreter. Two kinds of rows:
- CLI: the tool's own command line, where it can answer offline. hf-mem and kvfit cannot (their
  CLIs fetch config.json and weight headers from the hub), so they have no CLI row.
  vllm-wizard's CLI reads a local directory but takes GPU memory, not a KV budget, so its row
  times the nearest question it accepts (8 GiB of VRAM).
- library: a fresh interpreter importing the tool and answering through the same adapter the
  accuracy benchmark uses (bench/peers/once.py).
Writes bench/results/speed.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(BENCH), str(BENCH / "peers")]

import peer_env  # noqa: E402

import cases  # noqa: E402

MODEL = "meta-llama/Meta-Llama-3.1-8B"
BUDGET = 8 * 2**30
LENGTH = 32768
PEERS = ("hf-mem", "kvfit", "vllm-wizard")
NO_OFFLINE_CLI = {
    "hf-mem": "CLI fetches config.json and safetensors headers from the hub (no local input)",
    "kvfit": "CLI fetches config.json and repository metadata from the hub (no local input)",
}


def _question() -> dict[str, object]:
    for q in cases.oracle_cases():
        if (q["model"], q["kv_cache_memory_bytes"], q["max_model_len"],
                q["tensor_parallel_size"], q["kv_cache_dtype"]) == (MODEL, BUDGET, LENGTH, 1,
                                                                     "auto"):
            return {k: v for k, v in q.items() if k != "truth"}
    raise SystemExit(f"no oracle case for {MODEL} at {LENGTH} tokens, 8 GiB, TP 1")


def _kvledger_cli(python: Path) -> tuple[list[str], dict[str, str]]:
    """The installed console script if there is one, else the same entry point from src/."""
    args = ["plan", MODEL, "--engine", "vllm", "--kv-cache-memory-bytes", str(BUDGET),
            "--max-model-len", str(LENGTH), "--json"]
    script = python.parent / "kvledger"
    if script.exists():
        return [str(script), *args], {}
    code = "import sys; from kvledger.cli.main import main; sys.exit(main())"
    return [str(python), "-c", code, *args], {"PYTHONPATH": str(ROOT / "src")}


def _time(cmd: list[str], runs: int, env: dict[str, str]) -> dict[str, object]:
    # Bytecode on, as for any user: pip compiled the peers' .pyc files at install time, and
    # with PYTHONDONTWRITEBYTECODE set (as on our dev machines) an editable kvledger would
    # recompile every module from source on every run. The warm-up run writes them.
    full_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    full_env.update(env)
    samples = []
    cpu = []
    status = None
    for i in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env=full_env, check=False)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        status = done.returncode
        if i:
            samples.append(elapsed)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {"median_s": statistics.median(samples), "min_s": min(samples),
            "max_s": max(samples), "cpu_s": statistics.median(cpu), "runs": runs,
            "exit": status,
            "stderr": " ".join(done.stderr.split())[:200]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="cold-start wall time, kvledger vs peers")
    parser.add_argument("--runs", type=int, default=7)
    ns = parser.parse_args(argv)
    if ns.runs < 5:
        parser.error("--runs must be >= 5")
    project_python = Path(sys.executable)
    peer_python = peer_env.ensure()
    once = str(BENCH / "peers" / "once.py")
    rows: list[tuple[str, str, dict[str, object] | str]] = []
    with tempfile.TemporaryDirectory(prefix="kvledger-speed-") as tmp:
        question = _question()
        qfile = Path(tmp) / "question.json"
        qfile.write_text(json.dumps(question))
        model_dir = Path(tmp) / "model"  # a neutral name: vllm-wizard matches names to sizes
        model_dir.mkdir()
        (model_dir / "config.json").write_text(json.dumps(question["config"]))
        src_env = {"PYTHONPATH": str(ROOT / "src")}
        kv_cmd, kv_env = _kvledger_cli(project_python)
        wizard = peer_python.parent / "vllm-wizard"
        plan = [
            ("python -c pass", "baseline", [str(project_python), "-c", "pass"], {}),
            ("kvledger", "CLI", kv_cmd, kv_env),
            ("vllm-wizard", "CLI", [str(wizard), "plan", "--model", str(model_dir), "--gpu",
                                    "custom", "--vram-gb", "8", "--max-model-len",
                                    str(LENGTH), "--json"], {}),
            ("python -c pass (peers' venv)", "baseline", [str(peer_python), "-c", "pass"], {}),
            ("kvledger", "library", [str(project_python), once, "kvledger", str(qfile)],
             src_env),
            *[(p, "library", [str(peer_python), once, p, str(qfile)], {}) for p in PEERS],
        ]
        for name, kind, cmd, env in plan:
            rows.append((name, kind, _time(cmd, ns.runs, env)))
        rows[3:3] = [(p, "CLI", why) for p, why in NO_OFFLINE_CLI.items()]
    lines = _render(rows, ns.runs)
    (BENCH / "results").mkdir(exist_ok=True)
    (BENCH / "results" / "speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def _render(rows: list[tuple[str, str, dict[str, object] | str]], runs: int) -> list[str]:
    base = next(r[2] for r in rows if r[0] == "python -c pass")
    assert isinstance(base, dict)
    lines = [
        "# Cold-start speed: one fresh process, one sizing question", "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M UTC} on kvledger commit {_commit()}, "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs; median of {runs} runs "
        f"after one warm-up. Question: {MODEL}, max_model_len {LENGTH}, "
        f"{BUDGET // 2**30} GiB KV budget, TP 1. Bytecode caching on for every tool (the "
        "warm-up writes it). CPU is the child's user + system time, which a loaded machine "
        "distorts less than wall time. Reproduce: `python bench/speed.py`.", "",
        "| tool | how | median wall | min | max | × bare python | median CPU | exit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, kind, r in rows:
        if isinstance(r, str):
            lines.append(f"| {name} | {kind} | unavailable offline: {r} | | | | | |")
            continue
        ratio = float(r["median_s"]) / float(base["median_s"])  # type: ignore[arg-type]
        lines.append(
            f"| {name} | {kind} | {1000 * float(r['median_s']):.0f} ms | "  # type: ignore[arg-type]
            f"{1000 * float(r['min_s']):.0f} ms | {1000 * float(r['max_s']):.0f} ms | "  # type: ignore[arg-type]
            f"{ratio:.1f}× | {1000 * float(r['cpu_s']):.0f} ms | {r['exit']} |"  # type: ignore[arg-type]
        )
    failed = [(n, k, r) for n, k, r in rows if isinstance(r, dict) and r["exit"] != 0]
    if failed:
        lines += ["", "Non-zero exits (a failed run is timed as it ran):", ""]
        lines += [f"- {n} ({k}): exit {r['exit']}: {r['stderr']}" for n, k, r in failed]
    return lines


if __name__ == "__main__":
    shutil.which("git")
    raise SystemExit(main())

"""kvledger's available-KV figure against real vLLM start-up logs, before and after the
per-release reserve rules (``src/kvledger/plan/engines/vllm/reserves.py``).

    python bench/whole_budget.py                 # from the repo root, ../shared beside it
    python bench/whole_budget.py --before d09a878

The facts are ``bench/data/vllm_startup_logs.csv`` (numbers copied from public issue threads,
each row naming its URL; no log text is kept). Per row, two comparisons with the log's
"Available KV cache memory":

- whole: kvledger's own budget (its weights too), for rows whose checkpoint is the config's;
- reserves: the log's own weights ("Model loading took") minus kvledger's reserves
  (activation peak + CUDA graphs + non-torch), for rows that log their weights — the part
  this change is about.

A row's ``graphs_subtracted`` says whether its release took a CUDA-graph estimate from the
budget (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` defaults to 1 since v0.21.0, and no graph
is captured under ``--enforce-eager``); where it did not, kvledger is asked with a zero graph
reserve, so both sides count the same terms. Where the log prints its breakdown (peak
activation, non-torch, graph estimate), ``--breakdown`` sets kvledger's line beside each.

``--logs DIR`` measures ``kvledger explain`` on a folder of real start-up logs instead (kept
outside the repository: ``DIR/index.csv`` has ``file,model,release,gpu,source`` rows, ``model``
a catalog id or a config path). Per log: the logged available KV memory; explain's
``available_kv_bytes`` (the budget re-derived with the log's own figures substituted); and its
``kv_budget`` line (kvledger's own estimate of every reserve: only the settings, the device total
and the utilization come from the log); each with its error, and whether it is within
max(5 %, 1 GiB).

"before" runs this same script under the kvledger of commit ``--before`` (default d09a878,
main before the change), unpacked with ``git archive`` into a temporary folder. The logs come
from older vLLM releases than the two kvledger reproduces (the table's ``vllm`` column); the
V0 rows profile differently (their non-torch includes the CUDA context), which is why they are
reported apart.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
TABLE = BENCH / "data" / "vllm_startup_logs.csv"
SHARED_CONFIGS = ROOT.parent / "shared" / "configs"
GIB = 1 << 30
RESERVE_KEYS = ("activation_peak", "cuda_graphs", "non_torch")


def _rows() -> list[dict[str, str]]:
    # --table names another file of the same columns (kept outside the repository), with an
    # optional ``engine`` column (``vllm==0.20``: the release kvledger plans the row with).
    table = Path(os.environ.get("KVLEDGER_BENCH_TABLE", "") or TABLE)
    with table.open(newline="") as f:
        return list(csv.DictReader(f))


def _gib(text: str) -> float | None:
    return float(text) if text.strip() else None


def _request(row: dict[str, str]) -> Any:
    from kvledger.plan.request import PlanRequest

    util = float(row["util"])
    total = _gib(row["total_gib"])
    requested = _gib(row["requested_gib"])
    if total is None and requested is not None:
        total = requested / util
    graphs = None if row["graphs_subtracted"] == "yes" else 0
    engine = row.get("engine") or PlanRequest().engine
    return PlanRequest(
        engine=engine, gpu=row["gpu"] or None, cuda_graph_bytes=graphs,
        gpu_total_bytes=None if total is None else int(total * GIB),
        gpu_memory_utilization=util, tensor_parallel_size=int(row["tp"]),
        max_num_seqs=int(row["max_num_seqs"]),
        max_num_batched_tokens=int(row["max_num_batched_tokens"]),
        max_model_len=int(row["max_model_len"]), allow_long_max_model_len=True)


def _budget_lines(row: dict[str, str]) -> tuple[dict[str, int], int]:
    """({key: bytes}, available bytes) of kvledger's budget for the row; a budget too small
    to plan carries its lines too."""
    from kvledger.plan.api import plan_model
    from kvledger.plan.budget import BudgetTooSmall

    config = str(SHARED_CONFIGS / row["config"])
    try:
        plan = plan_model(config, _request(row))
    except BudgetTooSmall as exc:
        return {ln.key: ln.bytes for ln in exc.lines}, exc.available_bytes
    return {ln.key: ln.bytes for ln in plan.budget.lines}, plan.available_bytes


def measure() -> dict[str, dict[str, float | None]]:
    """Per row id: kvledger's whole available GiB and the reserves-only available GiB."""
    out: dict[str, dict[str, float | None]] = {}
    for row in _rows():
        try:
            lines, available = _budget_lines(row)
        except ValueError:  # a release the measured kvledger does not know ("before")
            out[row["id"]] = {"whole": None, "reserves": None, "reserve_gib": None,
                              **{key: None for key in RESERVE_KEYS}}
            continue
        reserves = sum(lines.get(k, 0) for k in RESERVE_KEYS)
        usable = lines["utilization"]
        requested = _gib(row["requested_gib"])
        if requested is not None:
            usable = int(requested * GIB)
        weights = _gib(row["weights_gib"])
        out[row["id"]] = {
            "whole": available / GIB if row["weights_from_config"] == "yes" else None,
            "reserves": None if weights is None else (usable - weights * GIB - reserves) / GIB,
            "reserve_gib": reserves / GIB,
            **{key: lines.get(key, 0) / GIB for key in RESERVE_KEYS},
        }
    return out


def _before(commit: str) -> dict[str, dict[str, float | None]]:
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src")}
        done = subprocess.run([sys.executable, __file__, "--json"], env=env, check=True,
                              capture_output=True, text=True)
    result: dict[str, dict[str, float | None]] = json.loads(done.stdout)
    return result


def _errors(rows: list[dict[str, str]], got: dict[str, dict[str, float | None]], kind: str,
            v0: bool) -> list[float]:
    out = []
    for row in rows:
        value = got[row["id"]][kind]
        if value is None or ("V0" in row["vllm"]) != v0:
            continue
        out.append(value - float(row["available_gib"]))
    return out


def _summary(errors: list[float]) -> str:
    if not errors:
        return "-"
    worst = max(errors, key=abs)
    return f"median |error| {statistics.median(abs(e) for e in errors):.2f} GiB, " \
           f"worst {worst:+.2f} GiB (n={len(errors)})"


LOGGED = (("activation_peak", "activation_gib"), ("non_torch", "non_torch_gib"),
          ("cuda_graphs", "cuda_graph_gib"))


def _breakdown(rows: list[dict[str, str]], got: dict[str, dict[str, float | None]]) -> None:
    """kvledger's reserve lines (after) beside the log's own, where the log prints them."""
    print(f"{'log':44} {'activation: kvledger':>20} {'logged':>7} | {'non-torch':>9} "
          f"{'logged':>7} | {'graphs':>6} {'logged':>7}")
    for row in rows:
        if not any(row[col].strip() for _, col in LOGGED):
            continue
        cells = []
        for key, col in LOGGED:
            mine = got[row["id"]][key]
            logged = "-" if not row[col].strip() else f"{float(row[col]):.2f}"
            cells.append((f"{mine:.2f}" if mine is not None else "-", logged))
        (a, la), (n, ln), (g, lg) = cells
        print(f"{row['id']:44} {a:>20} {la:>7} | {n:>9} {ln:>7} | {g:>6} {lg:>7}")


def _with_release(text: str, release: str) -> str:
    """The log, with the index's release given as a version line when the excerpt prints
    none (a write-up that names the release beside the log, not in it). Without it explain
    replays the log as the newest release kvledger has."""
    from kvledger.report.logparse import parse_log

    if not re.fullmatch(r"[0-9]+\.[0-9]+(?:\.[0-9]+)?\S*", release):
        return text
    parsed = parse_log(text)
    if parsed.engine_version is not None or parsed.engine != "vllm":
        return text  # SGLang's checks have one release (0.5.23) and read no version line
    return f"vLLM API server version {release}\n{text}"


# The full memory report: vLLM 0.10+'s "Free memory on device … Actual usage is …" (the total
# and the peak activation); SGLang's four lines ("Load weight begin/end. avail mem", "KV Cache
# is allocated", "Memory pool end") with its mem_fraction_static.
_VLLM_REPORT = ("gpu_total_gib", "activation_gib")
_SGLANG_REPORT = ("load_begin_avail_gib", "load_end_avail_gib", "weights_gib",
                  "pool_end_avail_gib")


def _full_report(engine: str, figures: dict[str, Any], settings: dict[str, Any]) -> bool:
    if engine == "sglang":
        return all(k in figures for k in _SGLANG_REPORT) and \
            any(k in figures for k in ("k_size_gib", "kv_size_gib")) and \
            isinstance(settings.get("mem_fraction_static"), float)
    return all(k in figures for k in _VLLM_REPORT)


def measure_logs(folder: Path) -> dict[str, dict[str, Any]]:
    """Per log file: what the log says and what explain derives (module docstring)."""
    from kvledger.report.explain import explain_log

    out: dict[str, dict[str, Any]] = {}
    with (folder / "index.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        text = (folder / row["file"]).read_text(encoding="utf-8", errors="replace")
        text = _with_release(text, row["release"])
        result: dict[str, Any] = {"release": row["release"], "model": row["model"],
                                  "gpu": row["gpu"]}
        try:
            # The index's GPU names the preset: the device total for a log that prints none,
            # and the GPU's kind (SM count, attention backend) for every log; a total the log
            # prints still wins ("15.55GiB" names no preset and is not passed).
            gpu = None if row["gpu"].endswith("GiB") else row["gpu"]
            e = explain_log(text, model=row["model"], gpu=gpu)
        except Exception as exc:  # a bench row, not a test: say why and go on
            result["error"] = f"{type(exc).__name__}: {exc}"
            out[row["file"]] = result
            continue
        checks = {c.name: c for c in e.checks}
        # The full memory report (_full_report): the logs issue 34's bar counts.
        result["engine"] = e.engine
        result["full_report"] = _full_report(e.engine, e.figures, e.settings)
        for name in ("available_kv_bytes", "kv_budget"):
            c = checks.get(name)
            result[name] = None if c is None else {"logged": c.logged, "derived": c.derived}
        out[row["file"]] = result
    return out


def _within(logged: int, derived: int | None) -> bool | None:
    if derived is None:
        return None
    return abs(derived - logged) <= max(0.05 * logged, GIB)


def _logs_table(after: dict[str, dict[str, Any]], before: dict[str, dict[str, Any]]) -> None:
    print(f"{'log':42} {'release':8} {'gpu':10} {'logged':>7} | {'explain before':>14} "
          f"{'after':>7} | {'kv_budget before':>16} {'error':>7} | {'after':>7} {'error':>7} "
          f"{'ok':>3}")
    hits = total = 0
    report = {"logs": 0, "within": 0, "missed": 0, "not derived": 0}
    for name, a in after.items():
        b = before.get(name, {})
        if "error" in a:
            print(f"{name:42} error: {a['error']}")
            continue
        avail = a.get("available_kv_bytes") or {}
        logged = avail.get("logged")
        if logged is None:
            continue

        def g(v: Any) -> str:
            return "-" if v is None else f"{v / GIB:.2f}"

        before_avail = (b.get("available_kv_bytes") or {}).get("derived")
        own = (a.get("kv_budget") or {}).get("derived")
        ok = _within(logged, own)
        if ok is not None:
            total += 1
            hits += ok
        if a.get("full_report"):
            report["logs"] += 1
            report["within" if ok else "missed" if ok is not None else "not derived"] += 1
        err = "-" if own is None else f"{(own - logged) / GIB:+.2f}"
        own_before = (b.get("kv_budget") or {}).get("derived")
        err_before = "-" if own_before is None else f"{(own_before - logged) / GIB:+.2f}"
        print(f"{name[:42]:42} {a['release'][:8]:8} {a['gpu'][:10]:10} {g(logged):>7} | "
              f"{g(before_avail):>14} {g(avail.get('derived')):>7} | {g(own_before):>16} "
              f"{err_before:>7} | {g(own):>7} {err:>7} "
              f"{'yes' if ok else 'no' if ok is not None else '-':>3}")
    print(f"kv_budget within max(5 %, 1 GiB): {hits} of {total}")
    print(f"logs with the full memory report: {report['logs']}; kv_budget within "
          f"{report['within']}, outside {report['missed']}, not derived "
          f"{report['not derived']}")


def _before_logs(commit: str, folder: Path) -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src")}
        done = subprocess.run([sys.executable, __file__, "--json", "--logs", str(folder)],
                              env=env, check=True, capture_output=True, text=True)
    result: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="d09a878", help="commit of the 'before' rules")
    parser.add_argument("--breakdown", action="store_true",
                        help="also set kvledger's reserve lines beside the logged ones")
    parser.add_argument("--table", type=Path, default=None, metavar="CSV",
                        help="rows of logged figures in bench/data/vllm_startup_logs.csv's "
                             "columns (plus an optional engine column), kept outside the "
                             "repository; default: that file")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--logs", type=Path, default=None, metavar="DIR",
                        help="measure explain on a folder of start-up logs (DIR/index.csv)")
    args = parser.parse_args()
    if args.table is not None:
        if not args.table.is_file():
            print(f"whole_budget.py: {args.table} not found", file=sys.stderr)
            return 2
        # An environment variable, so the "before" run in a subprocess reads it too.
        os.environ["KVLEDGER_BENCH_TABLE"] = str(args.table.resolve())
    if args.logs is not None:
        if not (args.logs / "index.csv").is_file():
            print(f"whole_budget.py: {args.logs}/index.csv not found", file=sys.stderr)
            return 2
        if args.json:
            print(json.dumps(measure_logs(args.logs)))
            return 0
        sys.path.insert(0, str(ROOT / "src"))
        _logs_table(measure_logs(args.logs), _before_logs(args.before, args.logs))
        return 0
    if not SHARED_CONFIGS.is_dir():
        print(f"whole_budget.py: needs ../shared/configs beside the repository ({SHARED_CONFIGS})",
              file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(measure()))
        return 0
    sys.path.insert(0, str(ROOT / "src"))
    rows = _rows()
    after, before = measure(), _before(args.before)
    print(f"{'log':40} {'vLLM':22} {'logged':>7} | {'whole before':>12} {'after':>7} | "
          f"{'reserves before':>15} {'after':>7}")
    for row in rows:
        b, a = before[row["id"]], after[row["id"]]

        def cell(v: float | None) -> str:
            return "-" if v is None else f"{v:.2f}"

        print(f"{row['id']:40} {row['vllm'][:22]:22} {float(row['available_gib']):7.2f} | "
              f"{cell(b['whole']):>12} {cell(a['whole']):>7} | {cell(b['reserves']):>15} "
              f"{cell(a['reserves']):>7}")
    for v0, name in ((False, "V1 logs"), (True, "V0 logs")):
        for kind in ("whole", "reserves"):
            print(f"{name}, {kind:8}: before {_summary(_errors(rows, before, kind, v0))}; "
                  f"after {_summary(_errors(rows, after, kind, v0))}")
    if args.breakdown:
        _breakdown(rows, after)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

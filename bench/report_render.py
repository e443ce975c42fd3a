"""CPU seconds to render the HTML report of one model (issue 35: under 3 s for one model).

Runs ``kvledger report MODEL --gpu GPU -o FILE`` as a fresh process N times (matplotlib,
planning and SVG included: what a user waits for) and prints the median and fastest CPU time
(user + system of the child) and wall time, then, in this process, the CPU time of each
phase: the data (``build_report_data``: the plan, each layout's curve, the GPU grid) and the
drawing (``render_report``). The target is on CPU time, which a loaded machine does not
inflate the way it does wall time.

Usage: python bench/report_render.py [--model ID] [--gpu NAME] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_CPU_S = 3.0


def _child_run(model: str, gpu: str, out: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one ``kvledger report`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    script = Path(sys.executable).with_name("kvledger")  # the console script beside python
    subprocess.run([str(script), "report", model, "--gpu", gpu,
                    "-o", str(out)], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def _phases(model: str, gpu: str) -> dict[str, float]:
    from kvledger.plan.request import PlanRequest
    from kvledger.report.html import render_report
    from kvledger.report.series import build_report_data

    request = PlanRequest(gpu=gpu)
    start = time.process_time()
    data = build_report_data(model, request)
    mid = time.process_time()
    render_report(data)
    end = time.process_time()
    return {"data (plans, curves, grid)": mid - start, "drawing (matplotlib, SVG)": end - mid}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="meta-llama/Meta-Llama-3.1-8B")
    parser.add_argument("--gpu", default="H100-80GB")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [_child_run(args.model, args.gpu, Path(tmp) / "report.html")
                for _ in range(args.runs)]
    cpu = [c for c, _ in runs]
    wall = [w for _, w in runs]
    print(f"kvledger report {args.model} --gpu {args.gpu}: {args.runs} runs")
    print(f"  CPU  median {statistics.median(cpu):.2f} s, fastest {min(cpu):.2f} s "
          f"(target < {TARGET_CPU_S:g} s)")
    print(f"  wall median {statistics.median(wall):.2f} s, fastest {min(wall):.2f} s")
    print("in-process, after imports of the first phase:")
    for phase, seconds in _phases(args.model, args.gpu).items():
        print(f"  {phase}: {seconds:.2f} CPU s")


if __name__ == "__main__":
    main()

"""``kvledger explain LOGFILE|- [--model MODEL] [--gpu NAME] [--json]``.

Reads a vLLM or SGLang start-up log (a file, or ``-`` for stdin), re-derives its KV numbers
and prints the checks and suggestions: one JSON object with ``--json`` (the machine
interface in ARCHITECTURE.md), else plain text for a person. A log without KV lines, or an
unreadable file, is one line on stderr and exit 2 (``cli.errors``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kvledger.cli.args import int_at_least, tokens_at_least
from kvledger.plan.request import KV_CACHE_DTYPES

GPU_HELP = "GPU preset for the budget estimate when the log prints no device total"


def fill_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("logfile", metavar="LOGFILE", help="a vLLM or SGLang start-up log; - reads "
                   "stdin")
    p.add_argument("--model", default=None, metavar="MODEL",
                   help="the model (catalog id, config.json or directory); default: the one "
                   "the log names")
    p.add_argument("--gpu", default=None, metavar="NAME", help=GPU_HELP)
    p.add_argument("--engine", choices=("vllm", "sglang"), default=None,
                   help="default: detected from the log")
    given = p.add_argument_group("settings the log does not show (they win over the log)")
    given.add_argument("--tensor-parallel-size", "-tp", type=int_at_least(1), default=None,
                       metavar="T", help="GPUs each layer was split across")
    given.add_argument("--max-model-len", type=tokens_at_least(1), default=None, metavar="L",
                       help="longest request in tokens the server was started with")
    given.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPES, default=None,
                       help="KV element type the server was started with")
    p.add_argument("--json", action="store_true", help="one JSON object for machines")


def read_log(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError as exc:
        raise OSError(f"{path}: cannot read ({exc.strerror})") from None


def run(ns: argparse.Namespace, emit_json: Any) -> int:
    from kvledger.report.explain import explain_log

    overrides = {name: getattr(ns, name) for name in (
        "tensor_parallel_size", "max_model_len", "kv_cache_dtype") if getattr(ns, name)}
    result = explain_log(read_log(ns.logfile), model=ns.model, gpu=ns.gpu, engine=ns.engine,
                         overrides=overrides)
    data = result.to_json()
    if ns.json:
        emit_json(data)
    else:
        from kvledger.cli.terminal import output_width

        sys.stdout.write(render_text(data, width=output_width(sys.stdout)))
    return 0


# The checks whose numbers are bytes besides the ``*_bytes`` ones: the budget keys
# (report/budget_checks.py) and the start-up checks.
_BYTE_CHECKS = frozenset({"gpu_total", "utilization", "weights", "non_torch", "activation_peak",
                          "cuda_graphs", "kv_budget", "free_memory_at_start",
                          "headroom_after_kv", "headroom"})


def _value(name: str, value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, int) and (name.endswith("_bytes") or name in _BYTE_CHECKS):
        return f"{value / (1 << 30):.2f} GiB"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _verdict(checks: list[dict[str, Any]]) -> str:
    """``4 checks match, 1 MISMATCH (kv_cache_tokens)``: the answer, for the first line."""
    matched = [c["name"] for c in checks if c["match"] is True]
    missed = [c["name"] for c in checks if c["match"] is False]
    out = f"{len(matched)} of {len(checks)} checks match"
    if missed:
        out += f", {len(missed)} MISMATCH ({', '.join(missed)})"
    return out


def render_text(data: dict[str, Any], width: int | None = None) -> str:
    """The explanation for a person: the verdict and header, settings, one block per check,
    suggestions; each line wrapped at spaces to ``width`` columns (None: unwrapped), so no
    number is split."""
    version = f" {data['engine_version']}" if data.get("engine_version") else ""
    lines = [f"{data['engine']}{version} start-up log — model: {data.get('model') or '?'}: "
             f"{_verdict(data['checks'])}"]
    if data.get("engine_release"):
        lines.append(f"replayed as {data['engine_release']}")
    settings = data.get("settings") or {}
    if settings:
        lines.append("settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()
                                              if k != "model"))
    lines.append("")
    for check in data["checks"]:
        name = check["name"]
        if check["match"] is not None:
            mark = "match" if check["match"] else "MISMATCH"
        else:
            mark = "not in the log" if check["derived"] is not None else "not derived"
        lines.append(f"{name}: logged {_value(name, check['logged'])}, derived "
                     f"{_value(name, check['derived'])} — {mark}")
        lines.append(f"    {check['why']}")
    if data.get("suggestions"):
        lines.append("")
        lines.append("suggestions (re-planned on the logged KV budget):")
        for s in data["suggestions"]:
            lines.append(f"  {s['change']}: {s['effect']}")
    for note in data.get("notes") or ():
        lines.append(f"note: {note}")
    if width is not None:
        from kvledger.cli.terminal import wrap_lines

        lines = wrap_lines(lines, width)
    return "\n".join(lines) + "\n"


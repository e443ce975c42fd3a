"""``kvledger diff MODEL --from vllm==0.32 --to vllm==0.33 [plan flags | -- serve line]``.

Two plans of one model side by side (``kvledger.plan.diff.diff_plans``), each line that differs
named with what caused it: a release profile's field and the source it was read in, the
engine, the GPU, or another flag given to one side only. ``--from`` / ``--to`` take what
``plan --engine`` takes (``vllm``, ``vllm==0.32``, ``sglang``); ``--from-gpu`` / ``--to-gpu``
give each side its own GPU preset (``--gpu`` gives both the same one). Every other flag is
``plan``'s, given to both sides, and so is a serve line after ``--`` (then no MODEL before it:
the line names it).
"""

from __future__ import annotations

import sys

from kvledger.cli.errors import UsageError

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

    from kvledger.plan.diff import PlanDiff


def _own_parser() -> argparse.ArgumentParser:
    from kvledger.cli.args import engine_spec
    from kvledger.cli.parser import Parser

    p = Parser(prog="kvledger diff", add_help=False)
    p.add_argument("--from", dest="side_a", type=engine_spec, default=None, metavar="ENGINE")
    p.add_argument("--to", dest="side_b", type=engine_spec, default=None, metavar="ENGINE")
    p.add_argument("--from-gpu", default=None, metavar="NAME")
    p.add_argument("--to-gpu", default=None, metavar="NAME")
    p.add_argument("--json", action="store_true")
    p.add_argument("--help", "-h", action="store_true")
    return p


HELP = """\
usage: kvledger diff MODEL --from ENGINE --to ENGINE [--from-gpu NAME] [--to-gpu NAME]
                     [--json] [plan options] [-- SERVE LINE]

Two plans of one model side by side, each difference named with its cause (a release
profile's field and the source it was read in, the engine, the GPU, or a flag).

  --from ENGINE     the first side: vllm, vllm==0.32, sglang, ... (as plan --engine)
  --to ENGINE       the second side
  --from-gpu NAME   the first side's GPU preset (default: --gpu, for both)
  --to-gpu NAME     the second side's GPU preset (default: --gpu, for both)
  --json            one JSON object for machines
  plan options      every 'kvledger plan' option, given to both sides ('kvledger plan --help')
  -- SERVE LINE     a vllm serve / sglang launch line, planned on both sides (no MODEL then)

example: kvledger diff Qwen/Qwen3-Next-80B-A3B-Thinking --from vllm==0.32 --to vllm==0.33 \\
             --kv-cache-memory-bytes 8GiB --max-model-len 32768
"""


def _side_args(rest: list[str], line: list[str] | None, engine: str, gpu: str | None,
               plan_parser: Callable[[], argparse.ArgumentParser]) -> tuple[list[str], Any]:
    """``plan`` argv for one side (and the serve line's translation, or None)."""
    side = [*rest, "--engine", engine, *(["--gpu", gpu] if gpu else [])]
    if line is None:
        return side, None
    from kvledger.cli.serve.cli import plan_args

    return plan_args([*side, "--", *line], plan_parser)


def _request(args: list[str],
             plan_parser: Callable[[], argparse.ArgumentParser]) -> tuple[Any, Any]:
    """(the model, the ``PlanRequest``) ``plan`` builds from ``args``."""
    from kvledger.cli.plan_options import build_request
    from kvledger.cli.source_args import model_source

    ns = plan_parser().parse_args(args)
    if ns.omni_deploy is not None:
        raise UsageError("kvledger diff: error: --omni-deploy plans a deploy file, not one "
                         "model", hint="diff one stage's model with its launch flags")
    if ns.kv_cache_memory_bytes is None and ns.gpu is None and ns.gpu_total_bytes is None:
        raise UsageError("kvledger diff: error: no memory budget given",
                         hint="pass --kv-cache-memory-bytes N, --gpu NAME (or --from-gpu / "
                              "--to-gpu), or --gpu-total-bytes N")
    return model_source(ns), build_request(ns)


def run(argv: list[str], emit_json: Callable[[Any], None],
        plan_parser: Callable[[], argparse.ArgumentParser]) -> int:
    """``kvledger diff`` (``argv`` after ``diff``; ``plan_parser()``: the ``plan`` command's
    parser, which reads each side's flags)."""
    line: list[str] | None = None
    if "--" in argv:
        cut = argv.index("--")
        argv, line = argv[:cut], argv[cut + 1:]
    own, rest = _own_parser().parse_known_args(argv)
    if own.help:
        sys.stdout.write(HELP)
        return 0
    if "--engine" in rest or any(a.startswith("--engine=") for a in rest):
        raise UsageError("kvledger diff: error: --engine: each side names its engine with "
                         "--from / --to", hint="e.g. --from vllm==0.32 --to vllm==0.33")
    missing = [flag for flag, value in (("--from", own.side_a), ("--to", own.side_b))
               if value is None]
    if missing:
        raise UsageError(f"kvledger diff: error: the following arguments are required: "
                         f"{', '.join(missing)}", hint="e.g. --from vllm==0.32 --to vllm==0.33")
    args_a, serve_a = _side_args(rest, line, own.side_a, own.from_gpu, plan_parser)
    args_b, _ = _side_args(rest, line, own.side_b, own.to_gpu, plan_parser)
    model, request_a = _request(args_a, plan_parser)
    _, request_b = _request(args_b, plan_parser)
    from kvledger.plan.diff import diff_plans

    result = diff_plans(model, request_a, request_b)
    if own.json:
        data = result.to_json()
        if serve_a is not None:
            data["serve_line"] = serve_a.to_json()
        emit_json(data)
    else:
        sys.stdout.write(render(result))
    return 0


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


def render(result: PlanDiff, width: int | None = None) -> str:
    """The diff as text for a person: every line (a differing one marked ``*`` with its
    change and causes), then each cause with its citations, sized to ``width`` columns (the
    terminal's, ``cli.terminal``): a table when it fits, else each line as a short block whose
    sentences wrap at spaces, so no number is split."""
    from kvledger.cli.terminal import output_width, wrap_lines

    width = width or output_width(sys.stdout)
    rows = [("", "line", result.side_a, result.side_b, "change", "because")]
    for line in result.lines:
        if line.a is None and line.b is None:
            continue
        change = ""
        if line.differs and isinstance(line.a, int | float) and \
                isinstance(line.b, int | float) and not isinstance(line.a, bool):
            delta = line.b - line.a
            change = (f"{delta:+,}" if isinstance(delta, int) else f"{delta:+,.2f}") + \
                (f" ({100.0 * delta / line.a:+.1f} %)" if line.a else "")
        rows.append(("*" if line.differs else "", line.label, _cell(line.a), _cell(line.b),
                     change, ", ".join(line.causes)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    out = [f"kvledger diff {result.model}: {result.side_a} -> {result.side_b}"]
    # A side asked as a release kvledger does not know is planned as the nearest known one:
    # say so before any number, as plan does.
    out += [f"note ({side}): {plan.release_note}"
            for side, plan in (("from", result.a), ("to", result.b)) if plan.release_note]
    out.append("")
    table = [("  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)) +
              ("  " + r[5] if r[5] else "")).rstrip() for r in rows]
    if max(len(line) for line in table) <= width:
        out += table
    else:  # narrow: one block a line, the two sides and the change on a line of their own
        for mark, label, a, b, change, because in rows[1:]:
            out.append(f"{mark or ' '} {label}")
            sides = f"{a}" if a == b else f"{a} -> {b}"
            out.append(f"    {sides}" + (f"  ({change})" if change else ""))
            if because:
                out.append(f"    because: {because}")
    if not result.differences:
        out += ["", "the two plans are the same, line for line"]
    moving = [c for c in result.causes if c.moves != ()]
    still = [c for c in result.causes if c.moves == ()]
    if moving:
        out += ["", "what moved them:"]
        for cause in moving:
            out.append(f"  {cause.name} ({cause.kind}): {_short(cause.a)} -> {_short(cause.b)}")
            out += [f"      {cite}" for cite in cause.cites]
    if still:
        out += ["", "also different, moving no line of this plan: " +
                ", ".join(c.name for c in still)]
    if not result.attributed:
        out += ["", "note: a cause that cannot be planned alone (the engine) is named on "
                "every line that differs and no other cause moves"]
    return "\n".join(wrap_lines(out, width)) + "\n"


def _short(value: Any) -> str:
    text = str(sorted(value) if isinstance(value, frozenset | set) else value)
    if hasattr(value, "items"):
        text = f"{len(value)} entries"
    return text if len(text) <= 60 else text[:57] + "..."

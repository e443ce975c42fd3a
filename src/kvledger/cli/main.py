"""``kvledger`` command line: parse flags, call the library, print a table or JSON.

A thin shell by design (docs/ARCHITECTURE.md): every number comes from the library,
and the machine interface (``kvledger plan MODEL ... --json``) is kept stable because external
checks call it.

Start-up cost matters (``bench/startup.py`` measures ``kvledger plan <catalog model> --json``
against a bare ``python -c pass``). So only ``json``, ``math`` and ``sys`` are imported here;
the library is imported inside the command that needs it; only the called command's argparse
parser is built (``command_parser``), argparse being the one reader of a command line; and
``rich`` (via ``cli.render``) is imported only when a table is printed for a person. Rejected:
a second, argparse-free reader of plain command lines (it saved about 3.5 ms of a 38 ms run,
at the price of a second parser that had to agree with argparse on every line), and a
click/typer app — both import far more at start-up than argparse, for no gain in a CLI this
size.

Errors never escape as tracebacks: everything is turned into one line on stderr and exit 2 by
``cli.errors``.
"""

from __future__ import annotations

import json
import math
import sys

from kvledger.cli.args import int_at_least, tokens_at_least
from kvledger.cli.errors import UsageError, report, wants_json
from kvledger.cli.plan_options import (
    FIT_SETS,
    add_engine_options,
    add_model_local_options,
    add_omni_options,
    build_request,
)
from kvledger.cli.source_args import add_model as _add_model
from kvledger.cli.source_args import model_source
from kvledger.plan.request import KV_CACHE_DTYPES

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any



# -- parser ---------------------------------------------------------------------------------


def _fill_plan(plan: argparse.ArgumentParser) -> None:
    _add_model(plan)
    add_engine_options(plan)
    add_model_local_options(plan)
    plan.add_argument("--concurrency", type=int_at_least(1), default=None, metavar="N",
                      help="also answer: the longest context N concurrent requests can hold")
    add_omni_options(plan)
    plan.add_argument("--quiet", "-q", action="store_true",
                      help="print the summary only: fits or not, tokens, concurrency, the KV "
                      "budget and the bytes per token (--json still prints everything)")
    plan.add_argument("--json", action="store_true", help="one JSON object for machines")
    plan.add_argument("--require-fit", action="store_true",
                      help="exit 1 (not 0) when one max_model_len request does not fit, or "
                      "--concurrency N requests do not fit at any context: a status a script "
                      "can gate on (the plan is still printed)")
    plan.set_defaults(handler=_cmd_plan)


def _fill_fit(fit: argparse.ArgumentParser) -> None:
    _add_model(fit)
    fit.add_argument("--gpu", required=True, metavar="NAME", help="GPU preset, e.g. H100-80GB")
    # Required, unless a serve line after '--' states them (--max-num-seqs, --max-model-len).
    fit.add_argument("--concurrency", type=int_at_least(1), default=None, metavar="N",
                     help="requests that must run at once (required, unless a serve line "
                     "after '--' gives its max_num_seqs)")
    fit.add_argument("--context", type=tokens_at_least(1), default=None, metavar="L",
                     help="tokens per request (required, unless a serve line after '--' "
                     "gives its max_model_len)")
    fit.add_argument("--max-gpus", type=int_at_least(1), default=None, metavar="N",
                     help="try no layout of more than N GPUs (default: no limit)")
    fit.add_argument("--gpus-per-node", type=int_at_least(1), default=8, metavar="G",
                     help="GPUs in one node (default 8): TP stays inside a node, PP spans "
                     "nodes, and a layout over more GPUs says it needs several nodes")
    add_engine_options(fit, for_fit=True)
    add_model_local_options(fit)
    fit.add_argument("--json", action="store_true", help="one JSON object for machines")
    fit.add_argument("--require-fit", action="store_true",
                     help="exit 1 (not 0) when no layout holds the load: a status a script "
                     "can gate on (the answer is still printed)")
    fit.set_defaults(handler=_cmd_fit, command_name="fit")


def _fill_inspect(inspect: argparse.ArgumentParser) -> None:
    _add_model(inspect)
    inspect.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPES, default="auto",
                         help="KV element type (auto: the checkpoint's KV scheme, else the "
                         "dtype it is served in; a float32 checkpoint is served in bfloat16)")
    inspect.add_argument("--json", action="store_true", help="one JSON object for machines")
    inspect.set_defaults(handler=_cmd_inspect)


def _fill_explain(explain: argparse.ArgumentParser) -> None:
    from kvledger.cli.explain import fill_parser

    fill_parser(explain)
    explain.set_defaults(handler=_explain)


def _explain(ns: argparse.Namespace) -> int:
    from kvledger.cli.explain import run

    return run(ns, _emit_json)


def _fill_models(models: argparse.ArgumentParser) -> None:
    models.add_argument("--json", action="store_true",
                        help="one JSON object for machines (catalog ids and model types)")
    models.set_defaults(handler=_cmd_models)


def _fill_gpus(gpus: argparse.ArgumentParser) -> None:
    gpus.add_argument("--json", action="store_true", help="one JSON object for machines")
    gpus.set_defaults(handler=_cmd_gpus)


def _fill_report(report: argparse.ArgumentParser) -> None:
    from kvledger.cli.report import fill_report  # only when 'report' is the command

    fill_report(report)


def _fill_pd(pd: argparse.ArgumentParser) -> None:
    from kvledger.cli.pd import fill

    fill(pd)
    pd.set_defaults(handler=lambda ns: _pd(ns, "pd"))


def _fill_pd_fit(pd: argparse.ArgumentParser) -> None:
    from kvledger.cli.pd import fill

    fill(pd, for_fit=True)
    pd.set_defaults(handler=lambda ns: _pd(ns, "pd-fit"))


def _pd(ns: argparse.Namespace, command: str) -> int:
    from kvledger.cli.pd import run

    return run(ns, _emit_json, command=command, plan_parser=lambda: command_parser("plan"))


# command → (help line, filler, aliases). 'audit' has no filler: main() hands it its argv.
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None] | None,
                          tuple[str, ...]]] = {
    "plan": ("KV blocks, tokens and concurrency for a model", _fill_plan, ()),
    "fit": ("the GPU layout that holds N requests of L tokens, and its serve line", _fill_fit,
            ()),
    "inspect": ("per-layer cache facts of a model", _fill_inspect, ()),
    "models": ("list the bundled catalog ids and the supported model types", _fill_models,
               ("catalog",)),
    "gpus": ("list the GPU presets: memory, compute capability, nvidia-smi names", _fill_gpus,
             ()),
    "explain": ("re-derive the KV numbers of a vLLM / SGLang start-up log", _fill_explain, ()),
    "report": ("write a self-contained HTML report with plots (needs kvledger[report])",
               _fill_report, ()),
    "pd": ("a disaggregated prefill/decode pair from its two serve lines: pools, KV "
           "transfer and host tiers", _fill_pd, ()),
    "pd-fit": ("the decode instances that hold N requests of L tokens behind a prefill line",
               _fill_pd_fit, ()),
    "audit": ("audit live caches against declarations (needs torch)", None, ()),
    "diff": ("two plans of one model side by side (releases, engines, GPUs), each change "
             "named with its cause", None, ()),
}
_ALIASES = {alias: name for name, (_, _, aliases) in COMMANDS.items() for alias in aliases}


def build_parser() -> argparse.ArgumentParser:
    """The whole CLI (for ``--help`` and for anything that is not a known command)."""
    from kvledger.cli.parser import Parser

    parser = Parser(
        prog="kvledger",
        description="Every byte of attention-cache memory: derived from real configs, "
        "planned against a GPU budget, and checked.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser,
                                help="'kvledger COMMAND --help' lists its options")
    for name, (help_line, fill, aliases) in COMMANDS.items():
        if fill is None:  # listed for --help only
            sub.add_parser(name, help=help_line, add_help=False)
            continue
        fill(sub.add_parser(name, help=help_line, description=help_line, aliases=aliases))
    return parser


def command_parser(name: str) -> argparse.ArgumentParser:
    """Just one command's parser: what a normal call builds.

    Why not always the whole tree: building every subcommand's parser costs several
    milliseconds of start-up for options the call cannot use (measured by bench/startup.py).
    """
    from kvledger.cli.parser import Parser

    name = _ALIASES.get(name, name)
    help_line, fill, _ = COMMANDS[name]
    parser = Parser(prog=f"kvledger {name}", description=help_line)
    assert fill is not None
    fill(parser)
    return parser


# -- commands ---------------------------------------------------------------------------------


def _finite(value: Any) -> Any:
    """JSON has no inf/NaN (``json.dumps`` would write the invalid tokens ``Infinity``/``NaN``);
    a non-finite float becomes ``null`` so every consumer can still parse the object."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _emit_json(data: Any) -> None:
    try:
        text = json.dumps(data, indent=2, default=str, allow_nan=False)
    except ValueError:  # an inf/NaN somewhere: only then walk the whole object to null it
        text = json.dumps(_finite(data), indent=2, default=str, allow_nan=False)
    sys.stdout.write(text + "\n")


def _cmd_plan(ns: argparse.Namespace) -> int:
    if ns.omni_deploy is not None:
        from kvledger.cli import omni

        return omni.run(ns, _emit_json)
    if ns.kv_cache_memory_bytes is None and ns.gpu is None and ns.gpu_total_bytes is None:
        raise UsageError(
            "kvledger plan: error: no memory budget given",
            hint="pass --kv-cache-memory-bytes N, --gpu NAME (e.g. --gpu H100-80GB), or "
                 "--gpu-total-bytes N",
        )
    request = build_request(ns)
    from kvledger.plan.api import plan_model

    result = plan_model(model_source(ns), request)
    data = result.to_json()
    slip = _unit_slip(ns.kv_cache_memory_bytes)
    if slip:
        data["warnings"] = [slip, *data.get("warnings", [])]
    serve_line = getattr(ns, "serve_line", None)
    if ns.json:
        if serve_line is not None:
            data["serve_line"] = serve_line.to_json()
        _emit_json(data)
    else:
        from kvledger.cli import render

        render.render_plan(data, quiet=ns.quiet)
        if slip and ns.quiet:  # the tables (and their warnings) are not printed
            sys.stderr.write(f"warning: {slip}\n")
        for line in serve_line.warnings if serve_line is not None else ():
            sys.stderr.write(f"warning: {line}\n")
        for line in serve_line.summary() if serve_line is not None else ():
            sys.stderr.write(f"note: {line}\n")
    return 1 if ns.require_fit and not _plan_fits(data) else 0


# Exit statuses (README, "Exit status"): 0 an answer was printed; 1 only with --require-fit,
# the answer is "does not fit"; 2 bad input or a refusal (one line on stderr, cli.errors).
_MIB = 1 << 20


def _unit_slip(kv_bytes: int | None) -> str:
    """A KV budget under 1 MiB is planned as given, with a warning: no model's KV cache fits
    in it, so it is almost certainly a unit slip (``10`` meant ``10GiB``)."""
    if kv_bytes is None or kv_bytes >= _MIB:
        return ""
    return (f"--kv-cache-memory-bytes {kv_bytes} is {kv_bytes:,} bytes, under 1 MiB: almost "
            "certainly a unit slip (the value is bytes; write e.g. 10GiB or 10737418240)")


def _plan_fits(data: dict[str, Any]) -> bool:
    """One max_model_len request fits and the engine starts; with --concurrency N, N requests
    fit at some context."""
    concurrency = data.get("max_concurrency")
    if data.get("vllm_refuses_to_start") or not isinstance(concurrency, int | float) \
            or concurrency < 1:
        return False
    answers = data.get("answers") or {}
    return answers.get("concurrency") is None or \
        answers.get("max_context_at_concurrency") is not None


def _cmd_fit(ns: argparse.Namespace) -> int:
    from kvledger.plan.answers import PP_SIZES, TP_SIZES
    from kvledger.plan.fit import fit_model

    for name, why in FIT_SETS.items():
        if getattr(ns, name) is not None:
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"kvledger fit: error: {flag} is {why}",
                             hint=f"drop {flag}")
    missing = [flag for flag in ("--concurrency", "--context")
               if getattr(ns, flag.lstrip("-")) is None]
    if missing:
        raise UsageError(f"kvledger fit: error: the following arguments are required: "
                         f"{', '.join(missing)}",
                         hint="give them, or paste a serve line after '--' that sets "
                         "--max-num-seqs and --max-model-len")
    tp, pp = ns.tensor_parallel_size, ns.pipeline_parallel_size
    pp_sizes = (pp,) if pp is not None else PP_SIZES
    # A --model-local-kv-stage is checked against the most stages fit tries (a candidate with
    # fewer stages puts the declaration on its last).
    request = build_request(ns, tensor_parallel_size=tp or 1, data_parallel_size=1,
                       max_num_seqs=ns.concurrency, enable_expert_parallel=False,
                       pipeline_parallel_size=max(pp_sizes) if ns.model_local_kv_stage else 1)
    result = fit_model(model_source(ns), request, context=ns.context,
                       tp_sizes=(tp,) if tp is not None else TP_SIZES, pp_sizes=pp_sizes,
                       gpus_per_node=ns.gpus_per_node, max_gpus=ns.max_gpus,
                       expert_parallel=ns.enable_expert_parallel)
    data = result.to_json()
    given_line = getattr(ns, "serve_line", None)
    if given_line is not None:
        data["from_serve_line"] = given_line.to_json()
    if result.request is not None:
        data.update(_fit_serve_line(ns.model, result))
    if ns.json:
        _emit_json(data)
    else:
        from kvledger.cli import render

        render.render_fit(data)
        for note in given_line.summary() if given_line is not None else ():
            sys.stderr.write(f"note: {note}\n")
    return 1 if ns.require_fit and not result.fits else 0


def _fit_serve_line(model: str, result: Any) -> dict[str, Any]:
    """The chosen layout's launch line (``cli/serve/emit.py``) as fit's JSON keys; null with
    a note for a layout no engine launches (native) or one without a line (ATOM)."""
    from kvledger.cli.serve.emit import EmitError, serve_line
    from kvledger.plan.gpus import gpu_preset

    preset = gpu_preset(result.gpu)
    try:
        line = serve_line(model, result.request, preset.total_bytes, preset.name)
    except EmitError as exc:
        return {"serve_line": None, "serve_line_argv": None, "serve_line_kvledger_options": [],
                "serve_line_notes": [str(exc)]}
    return {"serve_line": line.text, "serve_line_argv": list(line.argv),
            "serve_line_kvledger_options": list(line.kvledger_options),
            "serve_line_notes": list(line.notes)}


def inspect_payload(model: Any, kv_cache_dtype: str = "auto") -> dict[str, Any]:
    """``kvledger.cli.inspect.inspect_payload``, imported when ``inspect`` runs, not at every
    start-up (bench/startup.py)."""
    from kvledger.cli.inspect import inspect_payload as payload

    return payload(model, kv_cache_dtype)


def _cmd_inspect(ns: argparse.Namespace) -> int:
    data = inspect_payload(model_source(ns), ns.kv_cache_dtype)
    if ns.json:
        _emit_json(data)
    else:
        from kvledger.cli import render

        render.render_inspect(data)
    return 0


def _cmd_models(ns: argparse.Namespace) -> int:
    from kvledger.cli.models import models_payload, render_models

    data = models_payload()
    if ns.json:
        _emit_json(data)
    else:
        sys.stdout.write(render_models(data))
    return 0


def _cmd_gpus(ns: argparse.Namespace) -> int:
    from kvledger.cli.gpus import gpus_payload, render_gpus

    data = gpus_payload()
    if ns.json:
        _emit_json(data)
    else:
        sys.stdout.write(render_gpus(data))
    return 0


def _cmd_audit(argv: list[str]) -> int:
    """Hand ``kvledger audit ...`` to the check helper's CLI, imported only when asked for."""
    try:
        from kvledger.cli import audit
    except ModuleNotFoundError as exc:
        if exc.name not in ("kvledger.cli.audit", "torch"):
            raise
        missing = "torch" if exc.name == "torch" else "kvledger.cli.audit"
        raise UsageError(
            f"kvledger audit: error: not available ({missing} is not installed)",
            hint="pip install 'kvledger[torch]'" if missing == "torch" else
            "this kvledger build has no audit command yet",
        ) from None
    code = audit.main(argv)
    return int(code or 0)


def _unknown_command(word: str) -> UsageError:
    """``kvledger plna``: the nearest command by spelling (difflib), if one is close."""
    import difflib

    close = difflib.get_close_matches(word, [*COMMANDS, *_ALIASES], n=1, cutoff=0.6)
    guess = f"; did you mean {close[0]!r}?" if close else ""
    return UsageError(f"kvledger: error: unknown command {word!r}{guess}",
                      hint="see 'kvledger --help' (commands: " + ", ".join(COMMANDS) + ")")


def _run(argv: list[str]) -> int:
    if argv and argv[0] == "audit":
        return _cmd_audit(argv[1:])
    if argv and argv[0] == "diff":  # its own argv: --from / --to, plan's options, a serve line
        from kvledger.cli.diff import run as run_diff

        return run_diff(argv[1:], _emit_json, lambda: command_parser("plan"))
    if argv and argv[0] == "plan" and "--" in argv[1:]:
        # `kvledger plan [options] -- vllm serve MODEL …`: the serve line becomes plan argv.
        from kvledger.cli.serve.cli import plan_args

        args, serve_line = plan_args(argv[1:], lambda: command_parser("plan"))
        ns = command_parser("plan").parse_args(args)
        ns.serve_line = serve_line
        planned: int = ns.handler(ns)
        return planned
    if argv and argv[0] == "fit" and "--" in argv[1:]:
        # `kvledger fit [options] -- vllm serve MODEL …`: the line states the question.
        from kvledger.cli.serve.cli import fit_args

        args, given = fit_args(argv[1:], lambda: command_parser("fit"))
        ns = command_parser("fit").parse_args(args)
        ns.serve_line = given
        fitted: int = ns.handler(ns)
        return fitted
    if argv and (argv[0] in COMMANDS or argv[0] in _ALIASES):
        ns = command_parser(argv[0]).parse_args(argv[1:])
        result: int = ns.handler(ns)
        return result
    if argv and not argv[0].startswith("-"):
        raise _unknown_command(argv[0])
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.version:
        from kvledger import __version__

        sys.stdout.write(f"kvledger {__version__}\n")
        return 0
    handler = getattr(ns, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    code: int = handler(ns)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point. Returns the exit code; never lets a traceback out."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(args)
    except SystemExit as exc:  # --help, or a library that exits on its own
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except BrokenPipeError:  # `kvledger models | head`: the reader left; not an error
        import os

        # Point stdout at /dev/null so the interpreter's final flush does not complain.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except BaseException as exc:
        return report(exc, as_json=wants_json(args))


def console() -> int:
    """The ``kvledger`` console script: ``main`` on ``sys.argv``, for a process about to exit.

    Start-up (bench/startup.py): the interpreter's exit runs full garbage collections over
    every object the imports created — about 5 ms, an eighth of a catalog plan's run, and a
    one-shot command leaves no cyclic garbage worth it. ``gc.freeze`` moves those objects out
    of the collector's sight, so the exit skips them (memory is returned to the OS either way).
    The imports also create some 10,000 objects that live until exit, which the collector's
    default (a pass every 700 new objects) walks over and over: about 2 ms. It runs every
    50,000 instead, so a long command (a report's hundreds of plans, ``audit``'s model) still
    collects its garbage. Not in ``main``: a program that calls ``main`` keeps running, with
    its own collector settings.
    """
    import gc

    gc.set_threshold(50_000)
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":
    raise SystemExit(console())

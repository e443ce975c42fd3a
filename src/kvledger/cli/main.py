"""``kvledger`` command line: parse flags, call the library, print a table or JSON.

A thin shell by design (see ARCHITECTURE.md, "cli/"): every number comes from the library,
and the machine interface (``kvledger plan MODEL ... --json``) is kept stable because external
checks call it.

Start-up cost matters: the target for ``kvledger plan <catalog model> --json`` is at most 3× a
bare ``python -c pass`` (``bench/startup.py`` measures it). So only ``json``, ``math`` and
``sys`` are imported here; the library is imported inside the command that needs it; a plain
command line is read by ``cli.quick`` from the same definitions without importing argparse,
and only when it declines is the called command's argparse parser built (``cli.parser``); and
``rich`` (via ``cli.render``) is imported only when a table is printed for a person. Tempting
alternative rejected: a click/typer app — both import far more at start-up than argparse, for
no gain in a CLI this size.

Errors never escape as tracebacks: everything is turned into one line on stderr and exit 2 by
``cli.errors``.
"""

from __future__ import annotations

import json
import math
import sys

from kvledger.cli.args import (
    block_size,
    bytes_at_least,
    engine_spec,
    fraction,
    int_at_least,
    nonneg_bytes,
    tokens_at_least,
)
from kvledger.cli.errors import UsageError, report
from kvledger.cli.source_args import add_model as _add_model
from kvledger.cli.source_args import model_source
from kvledger.plan.engines.registry import (
    DEFAULT_ENGINE,
    DEFAULT_MAX_NUM_SEQS,
    LAYOUTS,
    engine_label,
)

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any

    from kvledger.cli.quick import Flags

KV_CACHE_DTYPES = (
    "auto", "bfloat16", "float16", "float32", "fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4",
)
ENGINES = tuple(LAYOUTS)  # the engine registry (kvledger.plan.engines.registry) is the one list


# -- parser ---------------------------------------------------------------------------------


# Flags fit answers from its own question: given to fit, each is refused by name (one line,
# exit 2) rather than silently replaced.
FIT_SETS = {
    "data_parallel_size": "not taken by fit: it sizes one replica (data parallelism repeats "
                          "it; plan each replica with 'kvledger plan -dp D')",
    "max_model_len": "not taken by fit: it plans max_model_len = --context",
    "max_num_seqs": "not taken by fit: it plans max_num_seqs = --concurrency",
}


def _add_engine_options(p: Flags, *, for_fit: bool = False) -> None:
    """vLLM's option names and defaults, shared by ``plan`` and ``fit``.

    ``fit`` searches GPU layouts, so it takes neither a direct byte budget nor a GPU total:
    the preset is the question (its ``--gpu`` is required and added by ``fit`` itself).
    """
    p.add_argument("--engine", type=engine_spec, default=DEFAULT_ENGINE, metavar="ENGINE",
                   help="{" + ",".join(ENGINES) + "}, optionally pinned to a release as pip "
                   "writes it (vllm==0.32; default: the newest kvledger knows); " + "; ".join(
                       f"{name}: {engine_label(name)}" for name in ENGINES))
    if not for_fit:
        p.add_argument("--kv-cache-memory-bytes", type=nonneg_bytes, default=None,
                       metavar="N", help="KV budget per GPU in bytes (skips the GPU budget)")
        p.add_argument("--gpu", default=None, metavar="NAME",
                       help="GPU preset (H100-80GB, H200, B200, MI300X, ...)")
    p.add_argument("--gpu-memory-utilization", type=fraction, default=None, metavar="U",
                   help="fraction of GPU memory the engine may use (default: the engine "
                   "release's, e.g. vLLM's 0.92)")
    # Not given = vLLM's own default: 16, unless the attention backend needs another size
    # (FlashMLA sparse: 64). A fixed 16 would make sparse-MLA models fail by default.
    p.add_argument("--block-size", "--page-size", type=block_size, default=None,
                   metavar="B|auto",
                   help="tokens per KV block (default: 16, or what the attention backend "
                        "needs, e.g. 64 for sparse MLA; same as auto)")
    p.add_argument("--max-model-len", "--context-length", type=tokens_at_least(1),
                   default=None, metavar="L",
                   help=FIT_SETS["max_model_len"] if for_fit else
                   "longest request in tokens (default: the config's)")
    p.add_argument("--allow-long-max-model-len", action="store_true",
                   help="plan a --max-model-len above the config's, as vLLM does with "
                   "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (default: refused, as vLLM refuses it)")
    p.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPES, default="auto",
                   help="KV element type (auto: the checkpoint's KV scheme, else its dtype)")
    # fit searches TP × PP itself: a size given there fixes that axis of the search.
    p.add_argument("--tensor-parallel-size", "-tp", type=int_at_least(1),
                   default=None if for_fit else 1, metavar="T",
                   help="fit: only layouts with T-way tensor parallelism are tried (default: "
                        "1, 2, 4, 8)" if for_fit else None)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int_at_least(1),
                   default=None if for_fit else 1, metavar="P",
                   help="fit: only layouts with P pipeline stages are tried (default: 1, 2, "
                        "4, 8, 16)" if for_fit else None)
    p.add_argument("--data-parallel-size", "-dp", type=int_at_least(1),
                   default=None if for_fit else 1, metavar="D",
                   help=FIT_SETS["data_parallel_size"] if for_fit else None)
    # None = not given: vLLM then takes min(256, --max-num-batched-tokens) (EngineArgs.
    # _set_default_max_num_seqs_and_batched_tokens), so a small token budget is no refusal.
    p.add_argument("--max-num-seqs", type=int_at_least(1), default=None, metavar="S",
                   help=FIT_SETS["max_num_seqs"] if for_fit else
                   "concurrent requests the engine admits (default 256, or "
                   "--max-num-batched-tokens if smaller)")
    p.add_argument("--max-num-batched-tokens", type=tokens_at_least(1), default=8192,
                   metavar="N", help="tokens per scheduler step (default 8192)")
    p.add_argument("--enable-prefix-caching", action="boolean_optional",
                   default=None, help="default: the engine's choice for the model")
    p.add_argument("--num-speculative-tokens", type=int_at_least(0), default=0, metavar="K")
    p.add_argument("--speculative-method", default=None, metavar="METHOD",
                   help="mtp, eagle3, ... (needed with --num-speculative-tokens)")
    _add_sglang_options(p)
    reserves = p.add_argument_group(
        "GPU budget reserves (default: documented estimates, labelled 'estimated')")
    reserves.add_argument("--activation-peak-bytes", type=nonneg_bytes, default=None,
                          metavar="N", help="peak activation memory of one forward pass")
    reserves.add_argument("--cuda-graph-bytes", type=nonneg_bytes, default=None, metavar="N",
                          help="CUDA graph pool (vLLM logs it after capture)")
    reserves.add_argument("--non-torch-bytes", type=nonneg_bytes, default=None, metavar="N",
                          help="CUDA context, NCCL buffers, fragmentation")
    if not for_fit:
        reserves.add_argument("--gpu-total-bytes", type=bytes_at_least(1), default=None,
                              metavar="N", help="the GPU's memory as the device reports it "
                              "(overrides the preset)")


def _add_sglang_options(p: Flags) -> None:
    """SGLang's own server arguments (``--engine sglang`` only), under SGLang's names."""
    g = p.add_argument_group("SGLang options (--engine sglang; SGLang's names and defaults)")
    g.add_argument("--mem-fraction-static", type=fraction, default=None, metavar="F",
                   help="default: SGLang's formula from the GPU's memory")
    g.add_argument("--max-running-requests", type=int_at_least(1), default=None, metavar="N")
    g.add_argument("--max-total-tokens", type=int_at_least(1), default=None, metavar="N")
    g.add_argument("--chunked-prefill-size", type=int_at_least(1), default=None, metavar="N")
    g.add_argument("--cuda-graph-max-bs", type=int_at_least(1), default=None, metavar="N")
    g.add_argument("--swa-full-tokens-ratio", type=fraction, default=None, metavar="R",
                   help="SWA pool tokens per full pool token (default 0.8)")
    g.add_argument("--mamba-full-memory-ratio", type=float, default=None, metavar="R",
                   help="state pool memory per KV memory (default 0.9)")
    g.add_argument("--disable-radix-cache", action="store_true", default=None)
    g.add_argument("--disable-overlap-schedule", action="store_true", default=None)
    g.add_argument("--enable-dp-attention", action="store_true", default=None)
    g.add_argument("--mamba-ssm-dtype", choices=("float32", "bfloat16", "float16"),
                   default=None)


SGLANG_FLAGS = ("mem_fraction_static", "max_running_requests", "max_total_tokens",
                "chunked_prefill_size", "cuda_graph_max_bs", "swa_full_tokens_ratio",
                "mamba_full_memory_ratio", "disable_radix_cache", "disable_overlap_schedule",
                "enable_dp_attention", "mamba_ssm_dtype")


def _sglang_options(ns: argparse.Namespace) -> Any:
    given = {k: getattr(ns, k) for k in SGLANG_FLAGS if getattr(ns, k, None) is not None}
    if ns.engine.partition("==")[0] != "sglang":
        if given:
            flags = ", ".join("--" + k.replace("_", "-") for k in given)
            raise UsageError(f"kvledger: error: {flags} apply to --engine sglang only",
                             hint="add --engine sglang")
        return None
    if not given:
        return None
    from kvledger.plan.engines.sglang.options import SglangOptions

    return SglangOptions(**given)


def _add_model_local_options(p: Flags) -> None:
    """Seed A's declarations (read by ``cli.model_local`` only when one is given)."""
    group = p.add_argument_group(
        "model-local KV caches (seed A: caches a model keeps itself, planned inside the "
        "engine's budget)")
    group.add_argument("--model-local-kv", default=None, metavar="FILE.json",
                       help="a JSON list of declarations in the seed's field names "
                       "(see examples/omni-talker-kv.json)")
    group.add_argument("--model-local-kv-from", default=None, metavar="MODULE:FUNCTION",
                       help="build the model (FUNCTION returns it, or (model, run) as for "
                       "'kvledger audit') and collect its declarations (needs torch)")
    group.add_argument("--model-local-kv-charged", action="append", default=[],
                       metavar="NAME", help="a declaration the engine's profiling already "
                       "paid for: listed, not subtracted (repeatable)")
    group.add_argument("--model-local-kv-stage", action="append", default=[],
                       metavar="NAME=STAGE", help="the pipeline stage whose GPUs hold this "
                       "declaration's module (default 0, the first; repeatable)")


def _fill_plan(plan: Flags) -> None:
    _add_model(plan)
    _add_engine_options(plan)
    _add_model_local_options(plan)
    plan.add_argument("--concurrency", type=int_at_least(1), default=None, metavar="N",
                      help="also answer: the longest context N concurrent requests can hold")
    plan.add_argument("--json", action="store_true", help="one JSON object for machines")
    plan.set_defaults(handler=_cmd_plan)


def _fill_fit(fit: Flags) -> None:
    _add_model(fit)
    fit.add_argument("--gpu", required=True, metavar="NAME", help="GPU preset, e.g. H100-80GB")
    fit.add_argument("--concurrency", type=int_at_least(1), required=True, metavar="N")
    fit.add_argument("--context", type=tokens_at_least(1), required=True, metavar="L",
                     help="tokens per request")
    _add_engine_options(fit, for_fit=True)
    _add_model_local_options(fit)
    fit.add_argument("--json", action="store_true", help="one JSON object for machines")
    fit.set_defaults(handler=_cmd_fit, command_name="fit")


def _fill_inspect(inspect: Flags) -> None:
    _add_model(inspect)
    inspect.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPES, default="auto")
    inspect.add_argument("--json", action="store_true", help="one JSON object for machines")
    inspect.set_defaults(handler=_cmd_inspect)


def _fill_explain(explain: argparse.ArgumentParser) -> None:
    from kvledger.cli.explain import fill_parser

    fill_parser(explain)
    explain.set_defaults(handler=_explain)


def _explain(ns: argparse.Namespace) -> int:
    from kvledger.cli.explain import run

    return run(ns, _emit_json)


def _fill_models(models: Flags) -> None:
    models.add_argument("--json", action="store_true",
                        help="one JSON object for machines (catalog ids and model types)")
    models.set_defaults(handler=_cmd_models)


def _fill_report(report: argparse.ArgumentParser) -> None:
    from kvledger.cli.report import fill_report  # only when 'report' is the command

    fill_report(report)


# command → (help line, filler, aliases). 'audit' has no filler: main() hands it its argv.
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None] | None,
                          tuple[str, ...]]] = {
    "plan": ("KV blocks, tokens and concurrency for a model", _fill_plan, ()),
    "fit": ("smallest TP×PP on a GPU that holds N requests of L tokens", _fill_fit, ()),
    "inspect": ("per-layer cache facts of a model", _fill_inspect, ()),
    "models": ("list the bundled catalog ids and the supported model types", _fill_models,
               ("catalog",)),
    "explain": ("re-derive the KV numbers of a vLLM / SGLang start-up log", _fill_explain, ()),
    "report": ("write a self-contained HTML report with plots (needs kvledger[report])",
               _fill_report, ()),
    "audit": ("audit live caches against declarations (needs torch)", None, ()),
}
_ALIASES = {alias: name for name, (_, _, aliases) in COMMANDS.items() for alias in aliases}
# The commands whose plain command lines cli.quick reads without argparse (their fillers use
# only what it models). explain and report import their own modules to build a parser anyway.
QUICK: dict[str, Callable[[Flags], None]] = {
    "plan": _fill_plan, "fit": _fill_fit, "inspect": _fill_inspect, "models": _fill_models,
}


def build_parser() -> argparse.ArgumentParser:
    """The whole CLI (for ``--help`` and for anything that is not a known command)."""
    from kvledger.cli.parser import Parser

    parser = Parser(
        prog="kvledger",
        description="Every byte of attention-cache memory: derived from real configs, "
        "planned against a GPU budget, and checked.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
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


def quick_parse(name: str, args: list[str]) -> Any:
    """The namespace of a plain command line, read by ``cli.quick`` without building argparse
    (about a tenth of a catalog plan's start-up), or None: then ``command_parser`` reads it."""
    fill = QUICK.get(_ALIASES.get(name, name))
    if fill is None:
        return None
    from kvledger.cli.quick import read

    return read(fill, args)


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


def _as_dict(payload: Any) -> dict[str, Any]:
    """``to_json()`` may hand back a dict or a JSON string; the CLI wants the dict."""
    if isinstance(payload, str):
        payload = json.loads(payload)
    if not isinstance(payload, dict):
        raise TypeError(f"planner returned {type(payload).__name__}, expected a JSON object")
    return payload


def _request(ns: argparse.Namespace, **overrides: Any) -> Any:
    """The one ``PlanRequest``, field for field from the flags (``fit`` has no
    ``--kv-cache-memory-bytes`` / ``--gpu-total-bytes``: they stay unset)."""
    from kvledger.plan.request import PlanRequest

    fields: dict[str, Any] = dict(
        engine=ns.engine,
        kv_cache_memory_bytes=getattr(ns, "kv_cache_memory_bytes", None),
        gpu=ns.gpu,
        gpu_memory_utilization=ns.gpu_memory_utilization,
        gpu_total_bytes=getattr(ns, "gpu_total_bytes", None),
        activation_peak_bytes=ns.activation_peak_bytes,
        cuda_graph_bytes=ns.cuda_graph_bytes,
        non_torch_bytes=ns.non_torch_bytes,
        concurrency=ns.concurrency,
        block_size=ns.block_size,
        max_model_len=ns.max_model_len,
        allow_long_max_model_len=ns.allow_long_max_model_len,
        kv_cache_dtype=ns.kv_cache_dtype,
        tensor_parallel_size=ns.tensor_parallel_size,
        pipeline_parallel_size=ns.pipeline_parallel_size,
        data_parallel_size=ns.data_parallel_size,
        max_num_seqs=ns.max_num_seqs if ns.max_num_seqs is not None else
        DEFAULT_MAX_NUM_SEQS.get(ns.engine.partition("==")[0], min(256, ns.max_num_batched_tokens)),
        max_num_batched_tokens=ns.max_num_batched_tokens,
        enable_prefix_caching=ns.enable_prefix_caching,
        num_speculative_tokens=ns.num_speculative_tokens,
        speculative_method=ns.speculative_method,
        sglang=_sglang_options(ns),
    )
    if getattr(ns, "model_local_kv", None) is not None or \
            getattr(ns, "model_local_kv_from", None) is not None or \
            getattr(ns, "model_local_kv_charged", None) or \
            getattr(ns, "model_local_kv_stage", None):
        from kvledger.cli import model_local

        fields.update(model_local.request_fields(ns))
    fields.update(overrides)
    return PlanRequest(**fields)


def _cmd_plan(ns: argparse.Namespace) -> int:
    if ns.kv_cache_memory_bytes is None and ns.gpu is None:
        raise UsageError(
            "kvledger plan: error: no memory budget given",
            hint="pass --kv-cache-memory-bytes N, or --gpu NAME (e.g. --gpu H100-80GB)",
        )
    request = _request(ns)
    from kvledger.plan.api import plan_model

    result = plan_model(model_source(ns), request)
    data = _as_dict(result.to_json())
    serve_line = getattr(ns, "serve_line", None)
    if ns.json:
        if serve_line is not None:
            data["serve_line"] = serve_line.to_json()
        _emit_json(data)
    else:
        from kvledger.cli import render

        render.render_plan(data)
        for line in serve_line.summary() if serve_line is not None else ():
            sys.stderr.write(f"note: {line}\n")
    return 0


def _cmd_fit(ns: argparse.Namespace) -> int:
    from kvledger.plan.answers import PP_SIZES, TP_SIZES
    from kvledger.plan.fit import fit_model

    for name, why in FIT_SETS.items():
        if getattr(ns, name) is not None:
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"kvledger fit: error: {flag} is {why}",
                             hint=f"drop {flag}")
    tp, pp = ns.tensor_parallel_size, ns.pipeline_parallel_size
    pp_sizes = (pp,) if pp is not None else PP_SIZES
    # A --model-local-kv-stage is checked against the most stages fit tries (a candidate with
    # fewer stages puts the declaration on its last).
    request = _request(ns, tensor_parallel_size=tp or 1, data_parallel_size=1,
                       max_num_seqs=ns.concurrency,
                       pipeline_parallel_size=max(pp_sizes) if ns.model_local_kv_stage else 1)
    result = fit_model(model_source(ns), request, context=ns.context,
                       tp_sizes=(tp,) if tp is not None else TP_SIZES, pp_sizes=pp_sizes)
    data = _as_dict(result.to_json())
    if ns.json:
        _emit_json(data)
    else:
        from kvledger.cli import render

        render.render_fit(data)
    return 0


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


def _cmd_audit(argv: list[str]) -> int:
    """Hand ``kvledger audit ...`` to the check helper's CLI, imported only when asked for."""
    import importlib

    try:
        audit = importlib.import_module("kvledger.cli.audit")
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


def _run(argv: list[str]) -> int:
    if argv and argv[0] == "audit":
        return _cmd_audit(argv[1:])
    if argv and argv[0] == "plan" and "--" in argv[1:]:
        # `kvledger plan [options] -- vllm serve MODEL …`: the serve line becomes plan argv.
        from kvledger.cli.serve.cli import plan_args

        args, serve_line = plan_args(argv[1:], lambda: command_parser("plan"))
        ns = command_parser("plan").parse_args(args)
        ns.serve_line = serve_line
        planned: int = ns.handler(ns)
        return planned
    if argv and (argv[0] in COMMANDS or argv[0] in _ALIASES):
        ns = quick_parse(argv[0], argv[1:])
        if ns is None:
            ns = command_parser(argv[0]).parse_args(argv[1:])
        result: int = ns.handler(ns)
        return result
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
        return report(exc)


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

"""``kvledger plan [kvledger options] -- SERVE LINE``: the serve line becomes ``plan`` argv.

Why argv and not a request object: the translated options go through the same ``plan``
parser as typed ones, so every check, default and error message is the CLI's own, and this
module does not depend on how ``PlanRequest`` is built.

Options before ``--`` are kvledger's (``--gpu``, ``--json``, ``--concurrency``, reserves …).
One that the serve line also sets, to another value, is refused — which of the two was meant
is a guess. The engine's own defaults where kvledger's differ (vLLM 0.32's GPU-dependent
``max_num_seqs`` and ``max_num_batched_tokens``) are added unless the options before ``--``
set them; a utilization the line does not state stays unset (kvledger's default is vLLM's,
and the budget then says it was not given).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from kvledger.cli.serve.checks import check_model
from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.translate import translate
from kvledger.cli.serve.translation import Context, Translation

_PLACEHOLDER = "__model_from_the_serve_line__"
_LAYOUT_MISSING = ("the SGLang layout is not available in this kvledger yet; plan the "
                   "deployment with --engine vllm, or paste a vllm serve line")


def _choices(parser: argparse.ArgumentParser, dest: str) -> tuple[str, ...]:
    for action in parser._actions:
        if action.dest == dest and action.choices is not None:
            return tuple(str(c) for c in action.choices)
    return ()


def _context(ns: argparse.Namespace, kv_dtypes: tuple[str, ...]) -> Context:
    total: int | None = getattr(ns, "gpu_total_bytes", None)
    name = None
    if getattr(ns, "gpu", None):
        from kvledger.plan.gpus import gpu_preset

        preset = gpu_preset(ns.gpu)
        name = preset.name
        total = total or preset.total_bytes
    from kvledger.cli.plan_options import installed_release

    spec = installed_release(str(getattr(ns, "engine", "") or "vllm"), warn=False)
    return Context(kv_budget_given=getattr(ns, "kv_cache_memory_bytes", None) is not None,
                   gpu_total_bytes=total, gpu_name=name, kv_cache_dtypes=kv_dtypes,
                   engine_spec=spec,
                   draft_config_given=getattr(ns, "draft_config", None) is not None)


def plan_args(argv: list[str],
              make_parser: Callable[[], argparse.ArgumentParser]) -> tuple[list[str], Any]:
    """``argv`` after ``plan``, holding a ``--`` → (``plan`` argv, the ``Translation``)."""
    cut = argv.index("--")
    before, line = argv[:cut], argv[cut + 1:]
    if not line:
        raise ServeLineError("kvledger plan: nothing after '--'; paste a serve line such as "
                             "'vllm serve MODEL --tensor-parallel-size 4'")
    parser = make_parser()
    baseline = parser.parse_args([_PLACEHOLDER])
    user = parser.parse_args([_PLACEHOLDER, *before])
    if getattr(user, "usage_context", None) == "llm":
        raise ServeLineError("kvledger plan: --usage-context llm plans the offline LLM(...) "
                             "class, and a serve line is the API server's launch; drop one")
    out = translate(line, _context(user, _choices(parser, "kv_cache_dtype")))
    from kvledger.plan.engines.registry import engine_names

    if out.engine not in engine_names():
        raise ServeLineError(f"{out.launcher}: {_LAYOUT_MISSING}")
    check_model(out)
    # The release the user pinned before '--' (--engine vllm==0.32) is the line's context.
    asked = str(getattr(user, "engine", "") or "")
    engine = asked if asked.partition("==")[0].strip().lower() == out.engine else out.engine
    from_line = [*out.argv(), "--engine", engine]
    _refuse_conflicts(parser.parse_args(from_line), user, baseline, out)
    defaults: list[str] = []
    for flag, value in list(out.defaults.items()):
        dest = flag.lstrip("-").replace("-", "_")
        if getattr(user, dest, None) == getattr(baseline, dest, None):
            defaults += [flag, value]
        else:
            del out.defaults[flag]  # the user's own value wins; the JSON says what was applied
    return [*from_line, *defaults, *before], out


def _refuse_conflicts(line: argparse.Namespace, user: argparse.Namespace,
                      baseline: argparse.Namespace, out: Translation) -> None:
    clashes = []
    for dest, value in vars(line).items():
        if dest in ("model", "handler"):
            continue
        base = getattr(baseline, dest, None)
        mine = getattr(user, dest, None)
        if value != base and mine != base and mine != value:
            flag = "--" + dest.replace("_", "-")
            clashes.append(f"{flag} (the line: {value}, before '--': {mine})")
    if clashes:
        raise ServeLineError(f"{out.launcher}: given twice with different values: "
                             f"{'; '.join(clashes)}; keep one")


# The line's sizes that fit answers itself: the layout is what fit searches.
_FIT_SEARCHES = ("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size")
# The line's sizes that state fit's question (fit flag ← the line's kvledger flag).
_FIT_ASKS = {"--context": "--max-model-len", "--concurrency": "--max-num-seqs"}


def fit_args(argv: list[str],
             make_parser: Callable[[], argparse.ArgumentParser]) -> tuple[list[str], Any]:
    """``argv`` after ``fit``, holding a ``--`` → (``fit`` argv, the ``Translation``).

    The line's model, KV dtype, block size, utilization, prefix caching, speculation and
    batch sizes are kept; its ``--max-model-len`` and ``--max-num-seqs`` are fit's
    ``--context`` and ``--concurrency`` unless given before ``--``; its TP / PP / DP sizes
    are what fit searches (dropped, with a note: fix one with ``-tp`` / ``-pp`` before
    ``--``); its ``--enable-expert-parallel`` asks fit to search DP × EP layouts."""
    cut = argv.index("--")
    before, line = argv[:cut], argv[cut + 1:]
    if not line:
        raise ServeLineError("kvledger fit: nothing after '--'; paste a serve line such as "
                             "'vllm serve MODEL --max-model-len 32768 --max-num-seqs 64'")
    parser = make_parser()
    user = parser.parse_args([_PLACEHOLDER, *before])
    out = translate(line, _context(user, _choices(parser, "kv_cache_dtype")))
    from kvledger.plan.engines.registry import engine_names

    if out.engine not in engine_names():
        raise ServeLineError(f"{out.launcher}: {_LAYOUT_MISSING}")
    check_model(out)
    if "--kv-cache-memory-bytes" in out.options:
        raise ServeLineError(f"{out.launcher}: --kv-cache-memory-bytes fixes the KV budget; "
                             "fit sizes it from the GPU — drop it from the line")
    options = dict(out.options)
    dropped = [f"{flag} {options.pop(flag)}" for flag in _FIT_SEARCHES if flag in options]
    if dropped:
        out.notes.append(f"fit searches the layout: the line's {', '.join(dropped)} not kept "
                         "(fix a size with -tp / -pp before '--')")
    asked: list[str] = []
    for fit_flag, line_flag in _FIT_ASKS.items():
        value = options.pop(line_flag, None)
        mine = getattr(user, fit_flag.lstrip("-"))
        if value is None:
            continue
        if mine is not None and str(mine) != value:
            raise ServeLineError(f"{out.launcher}: given twice with different values: "
                                 f"{line_flag} {value} in the line, {fit_flag} {mine} before "
                                 "'--'; keep one")
        if mine is None:
            asked += [fit_flag, value]
    if options.pop("--enable-expert-parallel", "absent") is None and \
            not getattr(user, "enable_expert_parallel", False):
        asked.append("--enable-expert-parallel")
    asked_engine = str(getattr(user, "engine", "") or "")
    engine = asked_engine if asked_engine.partition("==")[0].strip().lower() == out.engine \
        else out.engine
    from_line = [out.model]
    for flag, value in options.items():
        from_line += [flag] if value is None else [flag, value]
    from_line += ["--engine", engine]
    _refuse_conflicts(parser.parse_args([*from_line, "--gpu", str(user.gpu)]), user,
                      parser.parse_args([_PLACEHOLDER, "--gpu", str(user.gpu)]), out)
    defaults: list[str] = []
    baseline = parser.parse_args([_PLACEHOLDER, "--gpu", str(user.gpu)])
    for flag, value in list(out.defaults.items()):
        dest = flag.lstrip("-").replace("-", "_")
        if flag == "--max-num-seqs" or getattr(user, dest, None) != getattr(baseline, dest, None):
            del out.defaults[flag]  # fit's --concurrency, or the user's own value, wins
        else:
            defaults += [flag, value]
    return [*from_line, *asked, *defaults, *before], out

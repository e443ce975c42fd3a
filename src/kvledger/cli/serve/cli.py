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
    return Context(kv_budget_given=getattr(ns, "kv_cache_memory_bytes", None) is not None,
                   gpu_total_bytes=total, gpu_name=name, kv_cache_dtypes=kv_dtypes)


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

"""``kvledger report MODEL [plan options] -o FILE.html``: the plan as a page with plots.

Takes exactly ``kvledger plan``'s options (the same parser pieces, so a flag means the same in
both) plus ``-o``. Imported only when ``report`` is the command: its plotting extra
(matplotlib) is checked first, before any planning, so a missing extra costs one line and exit
2 instead of a plan computed for nothing.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

from kvledger.cli.args import int_at_least
from kvledger.cli.errors import UsageError
from kvledger.cli.plan_options import (
    add_engine_options,
    add_model_local_options,
    add_omni_options,
    build_request,
)
from kvledger.cli.source_args import add_model, model_source

HELP = "write a self-contained HTML report (plan, budget, plots) for a model"


def fill_report(p: argparse.ArgumentParser) -> None:
    add_model(p)
    add_engine_options(p)
    add_model_local_options(p)
    add_omni_options(p)
    p.add_argument("--concurrency", type=int_at_least(1), default=None, metavar="N",
                   help="also answer: the longest context N concurrent requests can hold")
    p.add_argument("-o", "--output", required=True, metavar="FILE.html",
                   help="where to write the page (one file, viewable offline)")
    p.set_defaults(handler=cmd_report, parser=p, command_name="report")


def command_line(ns: argparse.Namespace) -> str:
    """The command that makes this report again: the model, the engine, and every other
    option not at its default, spelled with its long flag (printed in the page so a reader
    can re-run it)."""
    parser: argparse.ArgumentParser = ns.parser
    words = ["kvledger", "report", ns.model]
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "model"):
            continue
        value: Any = getattr(ns, action.dest, None)
        # The engine always: its default has changed before, and the page must still say
        # which layout it shows when re-run by a later kvledger.
        if value == action.default and action.dest != "engine":
            continue
        flag = next(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse.BooleanOptionalAction):
            words.append(flag if value else "--no-" + flag.removeprefix("--"))
        elif action.nargs == 0:  # a switch (--offline)
            words.append(flag)
        elif isinstance(value, list):  # a repeatable flag (--model-local-kv-charged)
            for item in value:
                words += [flag, str(item)]
        else:
            words += [flag, "auto" if value is None else str(value)]
    return shlex.join(words)


def cmd_report(ns: argparse.Namespace) -> int:
    from kvledger.report.charts import INSTALL_HINT, MatplotlibMissing, require_matplotlib

    try:
        require_matplotlib()
    except MatplotlibMissing:
        raise UsageError("kvledger report: error: matplotlib is not installed (the report's "
                         "plots need it)", hint=INSTALL_HINT) from None
    if ns.kv_cache_memory_bytes is None and ns.gpu is None and \
            getattr(ns, "gpu_total_bytes", None) is None:
        raise UsageError(
            "kvledger report: error: no memory budget given",
            hint="pass --gpu NAME (e.g. --gpu H100-80GB), --gpu-total-bytes N, or "
                 "--kv-cache-memory-bytes N",
        )
    folder = os.path.dirname(os.path.abspath(ns.output))
    if not os.path.isdir(folder):  # say so before minutes of planning, not after
        raise UsageError(f"kvledger report: error: cannot write {ns.output}: no directory "
                         f"{folder}", hint="create it, or choose another -o path")
    from kvledger.report.html import write_report

    omni = None
    if ns.omni_deploy is not None:
        # The deployment's own section; the page's plan is the checkpoint as plain vLLM serves
        # it, and --model-local-kv-stage names deployment stages, not pipeline stages.
        from kvledger.cli.omni import omni_plan

        omni = omni_plan(ns)
        request = build_request(ns, model_local_stages=())
    else:
        request = build_request(ns)
    data = write_report(model_source(ns), request, ns.output, command=command_line(ns),
                        omni=omni)
    plan = data.plan
    sys.stdout.write(
        f"wrote {ns.output}: {plan.model}, {plan.engine} layout, {plan.kv_cache_tokens:,} KV "
        f"tokens, max concurrency {plan.max_concurrency:,.2f} at {plan.max_model_len:,} tokens\n"
    )
    return 0

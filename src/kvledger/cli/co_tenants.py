"""``kvledger plan A --co-tenant "B --engine X --gpu-memory-utilization U" ...``: several engines
or models on one GPU, planned together.

Each ``--co-tenant`` is the rest of a ``kvledger plan`` line (a model and its own flags; the
GPU, ``--gpu-total-bytes`` and what was given as held by others come from the outer line
unless it names its own). They start in the order given, then the outer model: each is planned
with what the ones before it hold (``--gpu-memory-in-use``), so each meets its own engine's
admission rule against what the others leave (``plan/startup_memory.py``):

- vLLM: ``ceil(total × utilization)`` must be free at its snapshot — a fraction of the total,
  so a co-tenant changes whether it starts, not its KV budget; once up it holds that plus its
  own context (``vllm_holding``, estimated);
- SGLang: ``mem_fraction_static`` of what is free before its weights load — a co-tenant
  shrinks its pools; once up it holds its context, its pools and weights, and its run-time
  activations and graphs (``sglang_holding``, estimated).

One line per co-tenant on stderr says what it plans and holds; a co-tenant that its engine
would refuse stops the plan with that refusal, naming the co-tenant.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from typing import Any

from kvledger.cli.errors import UsageError

GIB = 1 << 30
INHERITED = ("gpu", "gpu_total_bytes")


def held_by_co_tenants(ns: argparse.Namespace, others: int, *,
                       parser: Callable[[], argparse.ArgumentParser],
                       build: Callable[[argparse.Namespace], Any]) -> int:
    """Bytes the ``--co-tenant`` engines hold together once up (module docstring), each
    planned with ``others`` (held before any of them) plus what the earlier ones hold.
    ``parser`` makes the parser of one co-tenant's line, ``build`` its ``PlanRequest``
    (``cli/plan_options.py`` passes both: this module imports no command's module)."""
    from kvledger.cli.source_args import model_source
    from kvledger.errors import PlanError
    from kvledger.plan.api import plan_model

    held = 0
    for number, spec in enumerate(ns.co_tenant, start=1):
        sub = _parse(parser(), spec, number)
        for name in INHERITED:
            if getattr(sub, name, None) is None:
                setattr(sub, name, getattr(ns, name, None))
        if sub.gpu is None and sub.gpu_total_bytes is None:
            raise UsageError(f"kvledger plan: error: --co-tenant {number} ({spec!r}) has no GPU",
                             hint="give --gpu NAME or --gpu-total-bytes N on the outer line")
        sub.co_tenant = []
        sub.concurrency = None  # plan's own question, not a co-tenant's
        sub.gpu_free_bytes = None
        sub.gpu_memory_in_use = others + held
        request = build(sub)
        try:
            result = plan_model(model_source(sub), request)
        except PlanError as exc:  # the engine's own refusal, naming the co-tenant
            exc.args = (f"co-tenant {number} ({spec}): {exc}",)
            raise
        holding = _holding(result, request, others + held)
        sys.stderr.write(
            f"co-tenant {number}: {spec} — KV budget {result.available_bytes / GIB:.2f} GiB, "
            f"{result.kv_cache_tokens:,} tokens; holds {holding.bytes / GIB:.2f} GiB "
            f"({holding.detail})\n")
        held += holding.bytes
    return held


def _parse(parser: argparse.ArgumentParser, spec: str, number: int) -> argparse.Namespace:
    try:
        words = shlex.split(spec)
    except ValueError as exc:
        raise UsageError(f"kvledger plan: error: --co-tenant {number}: {exc}") from exc
    if not words or words[0].startswith("-"):
        raise UsageError(f"kvledger plan: error: --co-tenant {number} ({spec!r}) names no model",
                         hint='write it as a plan line: --co-tenant "MODEL --engine vllm '
                              '--gpu-memory-utilization 0.4"')
    return parser.parse_args(words)


def _holding(result: Any, request: Any, others: int) -> Any:
    from kvledger.plan.startup_memory import sglang_holding, vllm_holding

    budget = result.budget
    if str(request.engine).startswith("sglang"):
        return sglang_holding(budget, others)
    total = budget.total_bytes
    if total is None or budget.gpu_memory_utilization is None:
        raise UsageError("kvledger plan: error: a co-tenant needs a GPU budget, not "
                         "--kv-cache-memory-bytes")
    multi = request.tensor_parallel_size * request.pipeline_parallel_size > 1
    return vllm_holding(total, budget.gpu_memory_utilization, multi_gpu=multi)

"""Every memory line an SGLang start-up log prints, against kvledger's SGLang budget line of
the same key.

SGLang 0.5.23 prints (``model_executor/model_runner.py`` and ``mem_cache/memory_pool.py``)::

    Load weight begin. avail mem=B GB
    Load weight end. type=..., dtype=..., avail mem=A GB, mem usage=W GB.
    KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB
    Memory pool end. avail mem=P GB

B is ``pre_model_load_memory`` (free before the weights, after the CUDA context and the
communicators), so against kvledger's SGLang budget (``plan/engines/sglang/budget.py``):

- ``non_torch`` = total − B (what was in use before the weights; needs the device total:
  ``--gpu``, SGLang prints none);
- ``utilization`` = B × ``mem_fraction_static`` (what the pools and the weights may take);
- ``weights`` = W;
- ``kv_budget`` = A − B × (1 − ``mem_fraction_static``) (``profile_max_num_token``'s
  ``rest``);
- ``headroom`` = P, the memory left beside the pools for activations and CUDA graphs at run
  time; kvledger's line is B × (1 − ``mem_fraction_static``) (what the pools leave when they
  take their whole budget).

kvledger's side is its own SGLang budget for the deployment (the layout's ``gpu_budget``, the
same as ``kvledger plan --engine sglang``): only the GPU total and the fraction come from the
log. Tolerances: the printed rounding (two decimals; SGLang's "GB" are GiB, divided by
``1 << 30``) widened as ``budget_checks`` widens the vLLM lines; ``utilization`` by the
in-use line's ± 0.25 GiB (B rests on it), ``headroom`` as ``kv_budget`` (max(5 %, 1 GiB)).
"""

from __future__ import annotations

from typing import Any

from kvledger import records
from kvledger.report.budget_checks import TOLERANCE, Tolerance
from kvledger.report.findings import Check, Context, gib
from kvledger.report.logparse import GIB, Gib

SGLANG_KEYS = ("non_torch", "utilization", "weights", "kv_budget", "headroom")
# ``utilization`` is B × fraction, and kvledger's B rests on its estimated in-use line, so
# it is allowed that line's ± 0.25 GiB; ``headroom`` the budget's max(5 %, 1 GiB).
SGLANG_TOLERANCE = {**TOLERANCE, "utilization": Tolerance(0.0, GIB // 4),
                    "headroom": Tolerance(0.05, GIB)}


def sglang_logged_lines(ctx: Context) -> dict[str, tuple[int, int, int, str]]:
    """{key: (nominal, low, high, what the log printed)} for each key the log states."""
    f = ctx.log.figures
    before, after = f.get("load_begin_avail_gib"), f.get("load_end_avail_gib")
    weights, pool_end = f.get("weights_gib"), f.get("pool_end_avail_gib")
    fraction = ctx.log.settings.get("mem_fraction_static")
    out: dict[str, tuple[int, int, int, str]] = {}
    if isinstance(weights, Gib):
        out["weights"] = (weights.bytes, weights.low, weights.high,
                          f"'Load weight end' mem usage {weights}")
    if isinstance(pool_end, Gib):
        out["headroom"] = (pool_end.bytes, pool_end.low, pool_end.high,
                           f"'Memory pool end' avail mem {pool_end}")
    if not isinstance(before, Gib):
        return out
    total = ctx.gpu.total_bytes if ctx.gpu is not None else None
    if total is not None:
        out["non_torch"] = (total - before.bytes, total - before.high, total - before.low,
                            f"the device total {gib(total)} − 'Load weight begin' avail mem "
                            f"{before}")
    if isinstance(fraction, float):
        out["utilization"] = (int(before.bytes * fraction), int(before.low * fraction),
                              int(before.high * fraction),
                              f"'Load weight begin' avail mem {before} × {fraction:g}")
        if isinstance(after, Gib):
            keep = 1.0 - fraction
            out["kv_budget"] = (
                after.bytes - int(before.bytes * keep), after.low - int(before.high * keep),
                after.high - int(before.low * keep),
                f"'Load weight end' avail mem {after} − {before} × (1 − {fraction:g})")
    return out


def sglang_budget_checks(ctx: Context) -> list[Check]:
    """One check per key the log prints (module docstring); none for a log without them."""
    logged = sglang_logged_lines(ctx)
    if not logged:
        return []
    ours = _kvledger_lines(ctx)
    checks = []
    for key in SGLANG_KEYS:
        if key not in logged:
            continue
        nominal, low, high, what = logged[key]
        name = key
        if isinstance(ours, str):
            checks.append(Check(name, nominal, None, None, f"{what}; not derived: {ours}"))
            continue
        if key not in ours:
            checks.append(Check(name, nominal, None, None,
                                f"{what}; kvledger's SGLang budget has no {key} line here"))
            continue
        derived, basis = ours[key]
        tol = SGLANG_TOLERANCE[key]
        slack = max(int(tol.relative * nominal), tol.absolute)
        ok = low - slack <= derived <= high + slack
        why = (f"{what}; kvledger's {key} line {gib(derived)} ({basis}), "
               f"{(derived - nominal) / GIB:+.2f} GiB; allowed: the printed rounding ± "
               f"{gib(slack)}")
        checks.append(Check(name, nominal, derived, ok, why, range=(low, high)))
    return checks


def _kvledger_lines(ctx: Context) -> dict[str, tuple[int, str]] | str:
    """{key: (bytes, basis)} of kvledger's SGLang budget for the log's deployment, or why
    not (the same ``gpu_budget`` ``kvledger plan --engine sglang`` runs)."""
    if ctx.gpu is None:
        return "the log states no GPU total (SGLang prints none); pass --gpu NAME"
    if not ctx.ready or ctx.facts is None or ctx.request is None:
        return ctx.why_not()
    from kvledger.plan.budget import BudgetTooSmall
    from kvledger.plan.engines.base import GpuBudgetInput, get_layout
    from kvledger.plan.engines.sglang.options import SglangOptions
    from kvledger.plan.weights import Weights
    from kvledger.report.memory_checks import weights_estimate

    est = weights_estimate(ctx)
    if isinstance(est, str):
        return est
    weights = Weights(est[0], est[0], est[1], est[1], est[2])
    s = ctx.log.settings
    fraction = s.get("mem_fraction_static")
    options: Any = None
    if isinstance(fraction, float):
        options = SglangOptions(mem_fraction_static=fraction)
    request = records.replace(ctx.request, engine="sglang", kv_cache_memory_bytes=None,
                              sglang=options, startup_admission=False)
    inp = GpuBudgetInput(ctx.facts, request, ctx.gpu, weights, ctx.facts.language_config())
    try:
        budget = get_layout("sglang").gpu_budget(inp)
        lines = budget.lines + budget.after_kv
    except BudgetTooSmall as exc:
        lines = exc.lines
    except ValueError as exc:
        return str(exc)
    return {ln.key: (ln.bytes, ln.basis) for ln in lines}

"""Every memory line a vLLM start-up log prints, against kvledger's budget line of the same key.

vLLM 0.28-0.33 (``v1/worker/gpu_worker.py``, the same wording in all of them) print, besides
"Model loading took W GiB" and "Available KV cache memory: K GiB":

    Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (U, D GiB).
    Actual usage is C GiB for consumed memory (weights + non-torch), A GiB for peak
    activation, and G GiB for CUDAGraph memory. ...
    CUDA graph pool memory: G GiB (actual), Y GiB (estimated), ...

which map onto kvledger's budget keys (``plan/budget.py``) as:

- ``gpu_total`` = T; ``utilization`` = D (``request_memory``: ``ceil(T × U)``);
- ``weights`` = W; ``non_torch`` = C − W (``total_consumed`` is the free memory lost between
  the start-up snapshot and the end of the profile run);
- ``activation_peak`` = A − Y and ``cuda_graphs`` = Y: ``determine_available_memory`` logs
  ``peak_activation_memory = transient_peak_headroom + cudagraph_memory_estimate_applied``.
  Without the "CUDA graph pool memory" line, A is compared with kvledger's activation and
  graph lines together (the sum is what vLLM subtracted), and ``cuda_graphs`` is not logged;
- ``kv_budget`` = K.

G, the graphs actually captured after the cache was allocated, is in no budget line: it is the
start-up headroom's (``startup_checks``).

kvledger's side is its own plan of the deployment — the engine layout's ``gpu_budget`` with
nothing taken from the log but the settings, the GPU total and the utilization — so each check
says how far kvledger's estimate of that line is from what vLLM measured. (The
``available_kv_bytes`` check beside them re-derives the budget with the log's own figures
substituted.)

Tolerances (``match``): the printed rounding (``Gib.low``/``high``) widened by what the line's
basis allows: nothing for ``gpu_total``, and for ``utilization`` only what the printed total's
rounding carries through ``× U``; 5 % for ``weights`` (as
``weights_bytes``); for the estimated reserves, the error bars ``engines/vllm/reserves.py``
states: ``non_torch`` ± 0.25 GiB, ``activation_peak`` a factor of 2 (at least 0.25 GiB),
``cuda_graphs`` the logged range 0.13–2.44 GiB around its 0.5 GiB (± 0.5 GiB, or 50 %);
``kv_budget`` max(5 %, 1 GiB), the accuracy the budget is held to (issue 34).
"""

from __future__ import annotations

from typing import Any

from kvledger.records import record
from kvledger.report.findings import Check, Context, gib
from kvledger.report.logparse import GIB, Gib

BUDGET_KEYS = ("gpu_total", "utilization", "weights", "non_torch", "activation_peak",
               "cuda_graphs", "kv_budget")


@record(frozen=True)
class Tolerance:
    """How far kvledger's line may be from the logged interval: max(rel × logged, abs)."""

    relative: float
    absolute: int


TOLERANCE: dict[str, Tolerance] = {
    "gpu_total": Tolerance(0.0, 0),
    "utilization": Tolerance(0.0, 0),
    "weights": Tolerance(0.05, 0),
    "non_torch": Tolerance(0.0, GIB // 4),
    "activation_peak": Tolerance(1.0, GIB // 4),
    "cuda_graphs": Tolerance(0.5, GIB // 2),
    "kv_budget": Tolerance(0.05, GIB),
}


def logged_lines(ctx: Context) -> dict[str, tuple[int, int, int, str]]:
    """{key: (nominal, low, high, what the log printed)} for every budget key the log states."""
    f = ctx.log.figures
    out: dict[str, tuple[int, int, int, str]] = {}

    def one(key: str, value: Any, what: str) -> None:
        if isinstance(value, Gib):
            out[key] = (value.bytes, value.low, value.high, f"{what} {value}")

    one("gpu_total", f.get("gpu_total_gib"), "the device total")
    one("utilization", f.get("requested_gib"), "the desired memory (ceil(total × U))")
    one("weights", f.get("weights_gib"), "the weights loaded")
    one("kv_budget", f.get("available_kv_gib"), "the available KV cache memory")
    weights, consumed = f.get("weights_gib"), f.get("consumed_gib")
    if isinstance(f.get("non_torch_gib"), Gib):
        one("non_torch", f["non_torch_gib"], "non_torch_memory")
    elif isinstance(weights, Gib) and isinstance(consumed, Gib):
        out["non_torch"] = _difference(consumed, weights,
                                       f"consumed {consumed} − weights {weights}")
    activation, estimate = f.get("activation_gib"), f.get("cuda_graphs_estimate_gib")
    if isinstance(activation, Gib) and isinstance(estimate, Gib) and \
            isinstance(consumed, Gib):
        out["activation_peak"] = _difference(
            activation, estimate, f"peak activation {activation} − CUDA graph estimate "
            f"{estimate}")
        one("cuda_graphs", estimate, "the CUDA graph estimate")
    else:
        one("activation_peak", activation, "peak activation")
        one("cuda_graphs", estimate, "the CUDA graph estimate")
    return out


def _difference(a: Gib, b: Gib, what: str) -> tuple[int, int, int, str]:
    return (max(0, a.bytes - b.bytes), max(0, a.low - b.high), max(0, a.high - b.low), what)


def budget_line_checks(ctx: Context) -> list[Check]:
    """One check per budget key the log prints (module docstring); none for a log without
    a memory report."""
    logged = logged_lines(ctx)
    if not logged:
        return []
    ours = _kvledger_lines(ctx)
    unsized = _unsized_quantization(ctx)
    checks = []
    graphs_in_activation = "activation_peak" in logged and "cuda_graphs" not in logged and \
        "consumed_gib" in ctx.log.figures
    for key in BUDGET_KEYS:
        if key not in logged:
            continue
        nominal, low, high, what = logged[key]
        if isinstance(ours, str):
            checks.append(Check(key, nominal, None, None, f"{what}; not derived: {ours}"))
            continue
        if unsized and key in ("weights", "kv_budget"):
            checks.append(Check(key, nominal, None, None, f"{what}; not derived: {unsized}"))
            continue
        line = ours.get(key)
        if line is None:
            checks.append(Check(key, nominal, None, None,
                                f"{what}; kvledger's budget has no {key} line here"))
            continue
        derived, basis = line
        label = f"kvledger's {key} line"
        if key == "activation_peak" and graphs_in_activation and "cuda_graphs" in ours:
            derived += ours["cuda_graphs"][0]
            label = "kvledger's activation_peak + cuda_graphs lines (the log prints their sum)"
        tol = TOLERANCE[key]
        slack = max(int(tol.relative * nominal), tol.absolute)
        if key == "utilization":
            slack += _total_rounding_share(ctx)
        ok = low - slack <= derived <= high + slack
        why = (f"{what}; {label} {gib(derived)} ({basis}), {(derived - nominal) / GIB:+.2f} "
               f"GiB; allowed: the printed rounding ± {gib(slack)}")
        checks.append(Check(key, nominal, derived, ok, why, range=(low, high)))
    return checks


def _unsized_quantization(ctx: Context) -> str:
    """Why kvledger cannot size the weights the log's run loaded ("" when it can): a
    ``quantization`` the log names that is neither declared by the config kvledger read nor an
    online method it sizes (``engines/vllm/online_quant.py``) — an online method of another
    build, or a stand-in config without the checkpoint's quantization."""
    from kvledger.plan.engines.vllm.online_quant import ONLINE

    method = str(ctx.log.settings.get("quantization") or "")
    if not method or method.lower() == "none" or method.replace("-", "_").lower() in ONLINE:
        return ""
    facts = ctx.facts
    declared = facts is not None and bool(
        facts.config.get("quantization_config") or facts.hf_quant_config
        or facts.language_config().get("quantization_config"))
    if declared:
        return ""
    return (f"the run loaded its weights with quantization {method}, which the config kvledger "
            "read does not declare and kvledger does not size as an online method; pass the "
            "checkpoint's own config with --model")


def _total_rounding_share(ctx: Context) -> int:
    """What the printed total's rounding (2 decimals of GiB) carries into ``ceil(T × U)``:
    kvledger multiplies the printed total, vLLM the exact one (184.31 GiB at 0.92 is anywhere
    in 169.56–169.57 GiB)."""
    total, util = ctx.log.figures.get("gpu_total_gib"), ctx.log.settings.get(
        "gpu_memory_utilization")
    if not isinstance(total, Gib) or not isinstance(util, float):
        return 0
    return int((total.high - total.bytes) * util) + 1


def _kvledger_lines(ctx: Context) -> dict[str, tuple[int, str]] | str:
    """{key: (bytes, basis)} of kvledger's own budget for the log's deployment, or why not."""
    if ctx.gpu is None:
        return "the log states no GPU total; pass --gpu NAME"
    if not ctx.ready:
        return ctx.why_not()
    from kvledger.plan.budget import BudgetTooSmall
    from kvledger.plan.weights import Weights
    from kvledger.report.memory_checks import layout_budget, logged_utilization, weights_estimate

    est = weights_estimate(ctx)
    if isinstance(est, str):
        w = ctx.log.figures.get("weights_gib")
        if not isinstance(w, Gib):
            return est
        weights = Weights(w.bytes, w.bytes, "given", "given", "as logged")
    else:
        weights = Weights(est[0], est[0], est[1], est[1], est[2])
    util, _ = logged_utilization(ctx)
    try:
        budget = layout_budget(ctx, weights, util, _no_graph_estimate(ctx))
        lines = budget.lines
    except BudgetTooSmall as exc:
        lines = exc.lines
    except ValueError as exc:
        return str(exc)
    return {ln.key: (ln.bytes, ln.basis) for ln in lines}


def _no_graph_estimate(ctx: Context) -> Any:
    """``Reserves(cuda_graph_bytes=0)`` where the logged run took no CUDA-graph estimate from
    its budget, else None: under ``--enforce-eager`` (cudagraph_mode NONE: nothing is
    captured; the log prints "0.0 GiB for CUDAGraph memory"), and before v0.21.0, where
    ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` did not exist (the log's own words: "CUDA
    graph memory profiling is enabled (default since v0.21.0)"; the graphs were captured
    after sizing and subtracted from nothing)."""
    from kvledger.plan.budget import Reserves
    from kvledger.report.vllm_defaults import version_tuple

    version = version_tuple(ctx.log.engine_version)
    if ctx.log.settings.get("enforce_eager") or (version is not None and version < (0, 21)):
        return Reserves(cuda_graph_bytes=0)
    return None


def startup_checks(ctx: Context) -> list[Check]:
    """Will it start, and stay up, from the log's own figures (``plan/startup_memory.py``):

    - ``free_memory_at_start``: vLLM starts only when the free memory at its snapshot F is at
      least ``ceil(total × U)`` (``request_memory``); logged F, derived the request;
    - ``headroom_after_kv``: what the graph capture took beyond the estimate vLLM took from
      the budget (G − Y; before 0.21 all of G, nothing was taken) against what the request
      left outside it (F − D): the capture runs after the cache is allocated."""
    f = ctx.log.figures
    free, total = f.get("gpu_free_gib"), f.get("gpu_total_gib")
    if not isinstance(free, Gib) or not isinstance(total, Gib):
        return []
    requested = f.get("requested_gib")
    util = ctx.log.settings.get("gpu_memory_utilization")
    if isinstance(requested, Gib):
        need, need_low, need_high = requested.bytes, requested.low, requested.high
        what = f"the desired {requested} (ceil(total × {util}))"
    elif util:
        from kvledger.plan.startup_memory import vllm_requested

        need = vllm_requested(total.bytes, float(util))
        need_low, need_high = vllm_requested(total.low, float(util)), \
            vllm_requested(total.high, float(util))
        what = f"ceil({total} × {util}) = {gib(need)}"
    else:
        return []
    refused = bool(f.get("refused_free_memory"))
    starts = free.high >= need_low
    certain = free.low >= need_high or free.high < need_low
    why = (f"free memory at vLLM's start-up snapshot {free} against {what} "
           "(v1/worker/utils.py request_memory)")
    if refused:
        most = max(0.0, free.value / total.value)
        why += (f": vLLM refused to start; lower --gpu-memory-utilization to "
                f"{int(most * 100) / 100:.2f} or less, or free the GPU")
        starts = False
    elif not certain:
        why += ": too close to call at the printed rounding"
    checks = [Check("free_memory_at_start", free.bytes, need, starts if certain or refused
                    else None, why, range=(free.low, free.high))]
    graphs, estimate = f.get("cuda_graphs_gib"), f.get("cuda_graphs_estimate_gib")
    if refused or not isinstance(graphs, Gib):
        return checks
    from kvledger.report.vllm_defaults import version_tuple

    version = version_tuple(ctx.log.engine_version)
    if isinstance(estimate, Gib):
        beyond = max(0, graphs.bytes - estimate.bytes)
        how = f"the capture {graphs} − the estimate {estimate} taken from the budget"
    elif version is not None and version < (0, 21):
        beyond = graphs.bytes
        how = f"the whole capture {graphs} (this release took no estimate from the budget)"
    else:
        return checks
    outside = free.bytes - need
    ok = beyond <= outside
    checks.append(Check(
        "headroom_after_kv", outside, beyond, ok,
        f"left outside the requested memory: free {free} − {gib(need)} = {gib(outside)}; "
        f"needed after the cache was allocated: {how} = {gib(beyond)}"
        + ("" if ok else "; the capture ran into memory vLLM did not request (another "
           "process there would have made it fail)")))
    return checks

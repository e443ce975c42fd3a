"""The memory checks of a start-up log: the weights and the KV budget, against kvledger's
estimates (engine-neutral weights; vLLM's budget rule), with the log's own figures
substituted wherever it printed them.

The budget rule (vLLM ``gpu_worker.determine_available_memory``): ``ceil(total ×
gpu_memory_utilization) − weights − activation peak − CUDA graphs − non-torch``, each reserve by
the engine layout's own rules (``layout_budget``: the same path as ``kvledger plan``). CUDA graphs
are subtracted only since the CUDA-graph memory profiling that 0.21 turned on by default (the
0.32 log says so); before, graphs were captured after the cache was sized.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvledger import records
from kvledger.report.findings import Check, Context, gib
from kvledger.report.logparse import GIB, Gib
from kvledger.report.vllm_defaults import default_utilization, version_tuple

# Tolerances for the figures kvledger can only estimate (weights from a parameter count, the
# memory budget's reserves).
WEIGHTS_TOLERANCE = 0.05
BUDGET_TOLERANCE_BYTES = GIB // 2
NOT_LOGGED = "the log does not print it"

if TYPE_CHECKING:
    from kvledger.source.headers import SafetensorsTotals


def _layout(ctx: Context) -> Any:
    """The engine layout the log is replayed with (None for a log of no engine kvledger has)."""
    from kvledger.plan.engines.base import get_layout

    engine = ctx.log.engine
    if engine is None:
        return None
    release = ctx.request.engine_release if ctx.request is not None else None
    return get_layout(engine, release)


def weights_estimate(ctx: Context) -> tuple[int, str, str] | str:
    """(bytes per GPU, basis, how) from kvledger's weight model, or why not."""
    if ctx.facts is None:
        return ctx.why_not()
    from kvledger.plan.speculative import speculates_with_mtp
    from kvledger.plan.weights import WeightsError, model_weights

    tp = ctx.request.tensor_parallel_size if ctx.request else 1
    pp = ctx.request.pipeline_parallel_size if ctx.request else 1
    try:
        text = ctx.facts.language_config()
        # The same arguments as plan/api.py _budget: the whole config (a multimodal model's
        # towers are loaded too), the engine's serving dtype and its expert split, so explain's
        # weights line is the one `plan` prints for the same settings.
        layout = _layout(ctx)
        directory = ctx.source.directory if ctx.source else None
        serving = layout.serving_dtype(ctx.facts) if layout is not None else None
        w = model_weights(
            text, model_dtype=ctx.facts.model_dtype, serving=serving, directory=directory,
            exact=_logged_checkpoint(ctx, serving) if directory is None else None,
            hf_quant=ctx.source.hf_quant_config if ctx.source else None,
            tensor_parallel_size=tp, pipeline_parallel_size=pp,
            speculative_mtp=ctx.request is not None and speculates_with_mtp(ctx.request),
            config=ctx.facts.config or None,
            split=layout.weight_split(ctx.facts, ctx.request)
            if layout is not None and ctx.request is not None else None,
        )
    except (WeightsError, ValueError) as exc:
        return f"kvledger cannot size these weights ({exc})"
    return w.per_rank_bytes, w.per_rank_basis, w.detail


def _logged_checkpoint(ctx: Context, serving: str | None) -> SafetensorsTotals | None:
    """The checkpoint's size the log printed ("Checkpoint size: X GiB", the safetensors files
    vLLM loads: ``weight_utils._get_checkpoints_size_bytes``), as an index's total would give
    it, where kvledger has no checkpoint of its own: what a model directory would tell ``plan``.
    The files' sizes hold their headers too (kilobytes a file: inside the printed rounding).

    A total has no split by dtype, so it is served as stored: taken only where the config's
    dtype is as wide as the one the engine serves in (a float32 checkpoint served in bfloat16
    holds half its size on the GPU; that one keeps the estimate). A quantized config stores
    its quantized tensors as served."""
    logged = ctx.log.figures.get("checkpoint_gib")
    if not isinstance(logged, Gib) or ctx.facts is None:
        return None
    from kvledger.declare.dtypes import resolve_dtype
    from kvledger.plan.weights import serving_dtype

    quantized = bool(ctx.facts.config.get("quantization_config")) or bool(
        ctx.source and ctx.source.hf_quant_config)
    served = serving or serving_dtype(ctx.facts.model_dtype)
    if not quantized and resolve_dtype(ctx.facts.model_dtype).nbytes(1) != \
            resolve_dtype(served).nbytes(1):
        return None
    from kvledger.source.headers import SafetensorsTotals

    return SafetensorsTotals(round(logged.value * GIB), {}, 0,
                             f"the log's checkpoint size ({logged}, line "
                             f"{ctx.log.lines.get('checkpoint_gib', '?')})")


def weights_check(ctx: Context) -> Check:
    logged: Gib = ctx.log.figures["weights_gib"]
    est = weights_estimate(ctx)
    if isinstance(est, str):
        return Check("weights_bytes", logged.bytes, None, None, f"not derived: {est}")
    derived, basis, how = est
    delta = logged.bytes - derived
    rel = delta / derived if derived else 0.0
    ok = abs(rel) <= WEIGHTS_TOLERANCE
    why = (f"{basis}: {how} = {gib(derived)} per GPU; the log measured {logged} "
           f"({delta / GIB:+.2f} GiB, {rel:+.1%})")
    if not ok:
        quant = ctx.log.settings.get("quantization")
        cfg_quant = bool(ctx.facts and ctx.facts.config.get("quantization_config")) or bool(
            ctx.source and ctx.source.hf_quant_config)
        if quant and str(quant) not in ("None", "none") and not cfg_quant:
            why += (f"; the log serves a {quant}-quantized checkpoint but the config kvledger "
                    "read declares no quantization: pass the checkpoint's own config (--model)")
        elif rel > 0:
            product = "SGLang" if ctx.log.engine == "sglang" else "vLLM"
            why += (f"; {product}'s figure is the memory the load took, which also holds "
                    "buffers (rotary caches, a vision tower, padding) a parameter count does "
                    "not see")
        else:
            why += "; the checkpoint is smaller than its parameter count at the config's dtype"
    return Check("weights_bytes", logged.bytes, derived, ok, why)


def available_check(ctx: Context) -> Check:
    logged: Gib = ctx.log.figures["available_kv_gib"]
    derived = estimate_budget(ctx)
    if isinstance(derived, str):
        return Check("available_kv_bytes", logged.bytes, None, None, f"not derived: {derived}")
    budget, lines, guessed = derived
    delta = logged.bytes - budget
    ok = logged.low - BUDGET_TOLERANCE_BYTES <= budget <= logged.high + BUDGET_TOLERANCE_BYTES
    why = f"{lines} = {gib(budget)}; the log has {logged} ({delta / GIB:+.2f} GiB)"
    if not ok:
        why += "; " + _budget_cause(delta, guessed)
    return Check("available_kv_bytes", logged.bytes, budget, ok, why)


def _budget_cause(delta: int, guessed: list[str]) -> str:
    """Which estimated budget lines most likely differ from what vLLM measured."""
    if delta < 0:
        what = " / ".join(guessed) or "the reserves"
        return (f"the memory is {-delta / GIB:.2f} GiB below the estimate: {what} larger than "
                "kvledger's estimate, or other processes on the GPU")
    what = " / ".join(guessed) or "the reserves"
    return (f"the memory is {delta / GIB:.2f} GiB above the estimate: {what} smaller than "
            "kvledger's estimate (vLLM measured them)")


def estimate_budget(ctx: Context) -> tuple[int, str, list[str]] | str:
    """kvledger's estimate of the KV budget on the log's GPU, with the log's own figures
    substituted wherever it printed them; (bytes, the arithmetic, the lines that are
    estimates) or why not."""
    if ctx.gpu is None:
        return ("the log states no GPU memory total (vLLM prints 'Free memory on device "
                "(free/total GiB)' from release 0.11 on); pass --gpu NAME")
    if ctx.facts is None or ctx.request is None:
        return ctx.why_not()

    from kvledger.plan.budget import BudgetTooSmall
    from kvledger.plan.weights import Weights

    f = ctx.log.figures
    util, util_note = logged_utilization(ctx)
    w: Any = f.get("weights_gib")
    if isinstance(w, Gib):
        ranks = ctx.request.tensor_parallel_size * ctx.request.pipeline_parallel_size
        weights = Weights(w.bytes * ranks, w.bytes, "given", "given", "as logged")
    else:
        est = weights_estimate(ctx)
        if isinstance(est, str):
            return est
        weights = Weights(est[0], est[0], est[1], est[1], est[2])
    reserves = _logged_reserves(ctx, weights.per_rank_bytes)
    try:
        b = layout_budget(ctx, weights, util, reserves)
    except BudgetTooSmall as exc:
        return f"kvledger's estimate leaves no KV memory ({exc})"
    except ValueError as exc:
        return str(exc)
    total, usable, *minus = [ln for ln in b.lines if ln.key != "kv_budget"]
    arithmetic = f"int({total.bytes / GIB:.2f} GiB × {util:g}) = {usable.bytes / GIB:.2f}"
    if util_note:
        arithmetic += f" ({util_note})"
    arithmetic += "".join(f" − {_short(ln.label)} {ln.bytes / GIB:.2f} ({ln.basis})"
                          for ln in minus)
    guessed = [_short(ln.label).replace(" per GPU", "") for ln in minus
               if ln.basis == "estimated"]
    return b.available_bytes, arithmetic, guessed


def layout_budget(ctx: Context, weights: Any, util: float, reserves: Any = None) -> Any:
    """The engine layout's own GPU budget for the log's deployment — the same rules, reserve
    by reserve, that ``kvledger plan`` runs (``plan.api._budget`` → ``layout.gpu_budget``:
    vLLM's per-release profile, ``engines/vllm/profile_budget.py``), so ``plan`` and
    ``explain`` give the same lines for the same deployment. ``reserves`` the log printed
    are passed as given, as ``--activation-peak-bytes`` etc. would be.

    Rejected: the engine-neutral ``plan.budget.gpu_budget`` with its generic defaults (1 GiB
    of graphs, 0.5 GiB non-torch): that is what explain used before, and it disagreed with
    ``plan`` on every reserve of the same deployment."""
    from kvledger.plan.budget import Reserves
    from kvledger.plan.engines.base import GpuBudgetInput, get_layout

    assert ctx.facts is not None and ctx.request is not None and ctx.gpu is not None
    given = reserves or Reserves()
    request = records.replace(
        ctx.request, kv_cache_memory_bytes=None, gpu_memory_utilization=util,
        activation_peak_bytes=given.activation_peak_bytes,
        cuda_graph_bytes=given.cuda_graph_bytes, non_torch_bytes=given.non_torch_bytes,
        # The log says whether vLLM started (budget_checks.startup_checks): kvledger's
        # estimate of its free-memory admission is not applied to a replay.
        startup_admission=False)
    layout = get_layout(request.engine, request.engine_release)
    inp = GpuBudgetInput(ctx.facts, request, ctx.gpu, weights, ctx.facts.language_config())
    return layout.gpu_budget(inp)


def logged_utilization(ctx: Context) -> tuple[float, str]:
    """(the log's gpu_memory_utilization, ""), or its release's default and why
    (report/vllm_defaults.py) when the log states none."""
    stated = ctx.log.settings.get("gpu_memory_utilization")
    if stated:
        return float(stated), ""
    return default_utilization(ctx.log.engine_version)


def _short(label: str) -> str:
    """'− model weights per GPU (...)' → 'model weights per GPU'."""
    return label.lstrip("−×= ").split(" (")[0]


def _logged_reserves(ctx: Context, weights_bytes: int) -> Any:
    """The reserves the log printed, else None (kvledger's own rule for that line).

    0.28-0.33 print, after the cache is sized, "Actual usage is W GiB for consumed memory
    (weights + non-torch), A GiB for peak activation, and G GiB for CUDAGraph memory" and
    "CUDA graph pool memory: X GiB (actual), Y GiB (estimated)" (``gpu_worker.py
    compile_or_warm_up_model``). ``determine_available_memory`` sets
    ``peak_activation_memory = transient_peak_headroom + cudagraph_memory_estimate_applied``
    and ``available = requested − total_consumed − transient_peak_headroom −
    cudagraph_estimate``: so W − weights is the non-torch line, A − Y the activation line
    and Y the CUDA-graph line; G (captured after the cache was allocated) is not in the
    budget at all. Without the estimate line, A holds both and graphs are taken as 0 (the sum
    is what the budget subtracts). 0.8-0.10 print activation and non-torch directly; before
    0.21 graphs were captured after sizing (nothing subtracted). ``weights_bytes``: the
    weights per GPU the budget subtracts — the logged figure where the log prints one, else
    kvledger's — so with a consumed figure the non-torch line is what it leaves beside them
    and their sum is the log's.
    """
    from kvledger.plan.budget import Reserves

    f = ctx.log.figures
    activation = f.get("activation_gib")
    non_torch = f.get("non_torch_gib")
    consumed = f.get("consumed_gib")
    estimate = f.get("cuda_graphs_estimate_gib")
    graphs: int | None = None
    activation_bytes = activation.bytes if isinstance(activation, Gib) else None
    non_torch_bytes = non_torch.bytes if isinstance(non_torch, Gib) else None
    if isinstance(consumed, Gib):
        graphs = 0
        non_torch_bytes = max(0, consumed.bytes - weights_bytes)
        if isinstance(estimate, Gib) and activation_bytes is not None:
            graphs = estimate.bytes
            activation_bytes = max(0, activation_bytes - estimate.bytes)
    elif isinstance(non_torch, Gib) and isinstance(activation, Gib) and \
            isinstance(f.get("cuda_graphs_gib"), Gib):
        # "... for weight, A for peak activation, N for non-torch memory, and G for CUDAGraph
        # memory": A is the transient peak alone. A graph estimate was subtracted beside it
        # only where the log prints it ("CUDA graph pool memory: ... (estimated)": the line
        # is printed whenever the estimate is above 0, gpu_worker.compile_or_warm_up_model).
        graphs = estimate.bytes if isinstance(estimate, Gib) else 0
    version = version_tuple(ctx.log.engine_version)
    if version is not None and version < (0, 21):
        graphs = 0  # captured after the cache was sized
    return Reserves(activation_peak_bytes=activation_bytes, cuda_graph_bytes=graphs,
                    non_torch_bytes=non_torch_bytes)


def unlogged_weights(ctx: Context) -> Check:
    est = weights_estimate(ctx)
    if isinstance(est, str):
        return Check("weights_bytes", None, None, None, f"{NOT_LOGGED}; not derived: {est}")
    return Check("weights_bytes", None, est[0], None,
                 f"{NOT_LOGGED}; kvledger's {est[1]} figure: {est[2]} = {gib(est[0])} per GPU")


def unlogged_budget(ctx: Context) -> Check:
    est = estimate_budget(ctx)
    if isinstance(est, str):
        return Check("available_kv_bytes", None, None, None,
                     f"{NOT_LOGGED}; not derived: {est}")
    return Check("available_kv_bytes", None, est[0], None,
                 f"{NOT_LOGGED}; kvledger's estimate: {est[1]} = {gib(est[0])}")

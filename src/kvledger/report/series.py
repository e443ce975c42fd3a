"""The numbers behind ``kvledger report``: one plan, then the curves around it.

Everything here is computed through the library (``plan_model``) so a report can never show a
number ``kvledger plan`` would not: the headline plan is exactly ``plan_model(model, request,
gpu=...)``; every curve point is ``plan_model`` again with one option changed. The model is
read and derived once per layout; the hundreds of re-plans behind the curves reuse those facts
(a re-derive per point would dominate the report's run time).

Why a curve point is planned on the *given* budget of the headline plan instead of the GPU
again: the budget per GPU (total × utilization − weights − reserves) barely depends on
``max_model_len`` — the activation estimate depends on ``max_num_batched_tokens`` and
``max_num_seqs`` only — so re-running it per point would mostly repeat the same subtraction.
The exception, left out of the curves: under vLLM an MLA model's profile reserves grow with the
length (engines/vllm/reserves.py: the MLA profiling tensor's ``W = min(max(8 × max_model_len,
…), 65536)`` rows and the Triton MLA split count), so a curve point far from the headline
length keeps the headline's reserve, a difference of at most that tensor's size.
The GPU × TP grid does need a budget per cell; it is computed by the planner's own budget step
(``plan.api._budget``: weights, then the layout's ``gpu_budget``) on the already-derived facts,
and a test holds each cell equal to a plain ``plan_model(..., gpu=...)`` call so the two
cannot drift apart.

Model-local declarations (seed A) land where ``plan_model`` puts them: on a GPU budget, a
layout that does not pool them (vLLM) plans what is left once their peak bytes are taken off,
and one that does (native) plans them inside its own pools; so each curve point and grid cell
gets the budget *before* the declarations plus the declarations (pooling layouts), or the
budget *after* them without the declarations (the others) — ``_on_given_budget``. A test holds
both equal to plain ``plan_model`` calls. With pipeline parallelism the declarations shrink one
stage only, which one given budget cannot express: that case is refused, not approximated.

No matplotlib here: this module is pure data, tested without the plotting extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvledger import records
from kvledger.records import field, record

if TYPE_CHECKING:
    from kvledger.derive.layers import ModelFacts
    from kvledger.plan.budget import Budget, BudgetLine
    from kvledger.plan.request import PlanRequest
    from kvledger.plan.result import PlanResult
    from kvledger.source.model_source import ModelSource

# Tensor-parallel sizes of the GPU grid: the sizes one node usually offers (fit uses the same).
GRID_TP_SIZES = (1, 2, 4, 8)
# Layouts in the order a reader meets them: the engines people deploy, then kvledger's own.
_LAYOUT_ORDER = ("vllm", "sglang", "native")
# At most this many context lengths per curve: doubling steps, or quadrupling past it.
_MAX_POINTS = 12

FITS = "fits"  # at least one request of max_model_len tokens fits
SHORT = "short"  # the budget is positive, but less than one request fits
NO_WEIGHTS = "weights"  # weights and reserves leave no KV memory at all
INVALID = "invalid"  # the layout refuses this TP size (or model) outright


@record(frozen=True)
class MemoryBar:
    """One GPU of one pipeline stage, split the way the budget splits it (bytes)."""

    label: str
    weights: int
    reserves: int
    kv: int
    free: int
    given: bool  # True: the budget was given directly; the bar is that budget, not a GPU

    @property
    def total(self) -> int:
        return self.weights + self.reserves + self.kv + self.free


@record(frozen=True)
class Curve:
    """Max concurrency against context length for one layout (or one GPU × TP cell).

    ``points`` pairs a context length with the concurrency the planner gave, or ``None`` when
    it planned nothing at that length (``note`` says why).
    """

    label: str
    points: tuple[tuple[int, float | None], ...]
    note: str = ""
    # The max_num_seqs the curve was planned with (a layout that caps its count at it says
    # so in the caption from this number, not the headline plan's).
    max_num_seqs: int | None = None

    def at(self, context: int) -> float | None:
        return dict(self.points).get(context)


@record(frozen=True)
class GridCell:
    """One GPU preset at one TP size: does ``max_model_len`` fit, and the curve around it."""

    gpu: str
    tp: int
    status: str  # FITS, SHORT, NO_WEIGHTS or INVALID
    concurrency: float | None  # at the headline max_model_len
    kv_budget_bytes: int | None
    curve: Curve
    reason: str = ""


@record(frozen=True)
class KindBytes:
    """Bytes one GPU keeps per token (and per request) for every layer of one kind."""

    label: str
    layers: int
    bytes_per_token: int  # summed over the layers of this kind
    bytes_per_request: int


@record(frozen=True)
class ReportData:
    model: str
    engine: str
    gpu: str | None
    plan: PlanResult
    plan_json: dict[str, Any]
    contexts: tuple[int, ...]
    memory: tuple[MemoryBar, ...]
    layouts: tuple[Curve, ...]
    grid: tuple[GridCell, ...]
    tp_sizes: tuple[int, ...]
    kinds: tuple[KindBytes, ...]
    notes: tuple[str, ...] = field(default=())


# -- inputs ------------------------------------------------------------------------------------


def layout_names() -> tuple[str, ...]:
    """The registered layouts (``kvledger.plan.engines.registry.LAYOUTS``), known ones in reading
    order, any other after them.

    Read from the registry rather than written here, so a layout registered with the planner
    (SGLang) appears in the report without a change to it.
    """
    from kvledger.plan.engines.registry import engine_names

    names = engine_names()
    known = [name for name in _LAYOUT_ORDER if name in names]
    return (*known, *(name for name in names if name not in known))


def context_points(max_model_len: int, longest: int) -> tuple[int, ...]:
    """Context lengths for the curves: powers of two up to ``longest``, plus the plan's own
    ``max_model_len`` and ``longest`` themselves (so the plan's point is on every curve)."""
    start = 1024 if longest > 8192 else 128
    step = 2
    while True:
        points = {max_model_len, longest}
        value = start
        while value < longest:
            points.add(value)
            value *= step
        if len(points) <= _MAX_POINTS or step >= 16:
            break
        step *= 2
    return tuple(sorted(p for p in points if 0 < p <= longest))


# -- memory per rank ---------------------------------------------------------------------------


def _line_role(line: BudgetLine, index: int) -> str:
    """``total``, ``usable``, ``weights``, ``reserve`` or ``kv_budget`` for one budget line.

    Uses the line's machine ``key`` (``kvledger.plan.budget``); a budget line without one
    falls back on the order and signs of ``gpu_budget``'s lines (total, × utilization,
    − weights, − reserves…, = budget). LoRA slots count with the weights; ``cpu_offload``
    (weights moved off the GPU) is ``info``, in no bar. Every other subtracted key (activation
    peak, CUDA graphs, non-torch, and any a later engine adds) is a reserve.
    """
    key = getattr(line, "key", None)
    if isinstance(key, str) and key:
        return {"gpu_total": "total", "per_gpu_total": "total", "utilization": "usable",
                "weights": "weights", "lora": "weights", "kv_budget": "kv_budget",
                "cpu_offload": "info"}.get(key, "reserve")
    if index == 0:
        return "total"
    label = line.label.lstrip()
    if label.startswith("×"):
        return "usable"
    if label.startswith("="):
        return "kv_budget"
    if "weights" in label:
        return "weights"
    return "reserve"


def memory_bars(plan: PlanResult) -> tuple[MemoryBar, ...]:
    """One bar per pipeline stage: weights, reserves, the KV it allocates, and what is left."""
    budget: Budget = plan.budget
    tp = plan.tensor_parallel_size
    bars = []
    for rank in plan.ranks:
        name = f"stage {rank.stage}" if len(plan.ranks) > 1 else "GPU"
        if tp > 1:
            name += f" (each of {tp} TP ranks)"
        kv = rank.reserved_bytes
        if budget.total_bytes is None:
            bars.append(MemoryBar(name, 0, 0, kv, max(0, budget.available_bytes - kv), True))
            continue
        roles = [_line_role(line, i) for i, line in enumerate(budget.lines)]
        weights = sum(ln.bytes for ln, r in zip(budget.lines, roles, strict=True)
                      if r == "weights")
        reserves = sum(ln.bytes for ln, r in zip(budget.lines, roles, strict=True)
                       if r == "reserve")
        free = budget.total_bytes - weights - reserves - kv
        bars.append(MemoryBar(name, weights, reserves, kv, free, False))
    return tuple(bars)


# -- bytes per layer kind ----------------------------------------------------------------------


def kind_bytes(layers: Sequence[dict[str, Any]]) -> tuple[KindBytes, ...]:
    """The plan's per-layer rows (per GPU, after the TP split) summed per kind of layer.

    A kind is its name plus what changes its size (window, chunk, state kind), so Gemma's
    sliding and full layers, or a hybrid's attention and recurrent layers, are separate bars.
    """
    out: dict[str, list[int]] = {}
    for row in layers:
        label = str(row.get("kind", "?"))
        if row.get("state_kind") is not None:
            label += f" ({row['state_kind']})"
        for key, word in (("window", "window "), ("chunk", "chunk ")):
            if row.get(key) is not None:
                value = row[key]
                label += f", {word}{value:,}" if isinstance(value, int) else f", {value}"
        if row.get("role") not in (None, "decoder"):
            label = f"{row['role']} {label}"
        count = int(row.get("count", 1))
        acc = out.setdefault(label, [0, 0, 0])
        acc[0] += count
        acc[1] += int(row.get("bytes_per_token", 0)) * count
        acc[2] += int(row.get("bytes_per_request", 0)) * count
    return tuple(KindBytes(label, n, tok, req) for label, (n, tok, req) in out.items())


# -- curves ------------------------------------------------------------------------------------


def _plan_errors() -> tuple[type[BaseException], ...]:
    """What a layout raises when it cannot plan an option set: a ValueError naming it, or the
    pool planner's ``InsufficientPoolBudget`` (per-request state alone exceeds the budget)."""
    from kvledger.declare.pools import InsufficientPoolBudget

    return (ValueError, InsufficientPoolBudget)


def _local_taken(request: PlanRequest) -> int:
    """Bytes the declarations take off a GPU budget for a layout that does not pool them (one
    pipeline stage): their peak bytes at ``max_num_seqs``, less the ones already charged. 0
    when the KV budget is given (they sit beside it)."""
    if not request.model_local_kv or request.kv_cache_memory_bytes is not None:
        return 0
    from kvledger.plan.model_local import SUBTRACTED, local_rows

    rows = local_rows(request, budget_given=False, pooled=False)
    return sum(r.peak_bytes for r in rows if r.status == SUBTRACTED)


def _on_given_budget(request: PlanRequest, pools: bool, before: int, taken: int
                     ) -> PlanRequest:
    """``request`` on a given KV budget, its declarations where ``plan_model`` would put them
    on the GPU budget ``before`` (module docstring)."""
    if not request.model_local_kv or pools:
        return records.replace(request, kv_cache_memory_bytes=before)
    return records.replace(request, kv_cache_memory_bytes=before - taken, model_local_kv=(),
                               model_local_already_charged=(), model_local_stages=())


def _curve(label: str, facts: ModelFacts, base: PlanRequest,
           contexts: Sequence[int]) -> Curve:
    from kvledger.plan.api import plan_model

    points: list[tuple[int, float | None]] = []
    failed: dict[str, list[int]] = {}  # message → the context lengths it was raised at
    seqs: int | None = None
    for context in contexts:
        try:
            result = plan_model(facts, records.replace(base, max_model_len=context))
        except _plan_errors() as exc:
            points.append((context, None))
            failed.setdefault(str(exc), []).append(context)
            continue
        points.append((context, result.max_concurrency))
        seqs = result.max_num_seqs
    notes = [message if len(at) == len(contexts) else
             f"at {', '.join(f'{c:,}' for c in at)} tokens: {message}"
             for message, at in failed.items()]
    return Curve(label, tuple(points), "; ".join(notes), seqs)


def refuses_gpu(name: str, gpu: str | None) -> str:
    """Why layout ``name`` will not run on preset ``gpu`` at all ("" when it may): ATOM runs on
    AMD Instinct GPUs only (``plan/engines/atom/budget.py``), so the report draws no ATOM
    curve for an NVIDIA GPU — ``plan --engine atom`` refuses that GPU."""
    if gpu is None or name != "atom":
        return ""
    from kvledger.plan.gpus import gpu_preset

    preset = gpu_preset(gpu)
    return "" if preset.vendor == "amd" else f"ATOM runs on AMD GPUs only, not {preset.name}"


def layout_curves(source: ModelSource, request: PlanRequest, available_bytes: int,
                  contexts: Sequence[int], *, taken: int = 0) -> tuple[Curve, ...]:
    """Each layout's max concurrency at each context length, on the headline KV budget
    (``available_bytes``: before any model-local declarations; ``taken``: what they take off
    it for a layout that does not pool them)."""
    from kvledger.plan.api import load_facts
    from kvledger.plan.engines.base import get_layout

    curves = []
    for name in layout_names():
        if refuses_gpu(name, request.gpu):
            continue  # not drawn: the engine would not run there (ReportData.notes says so)
        # A release pinned for the report's engine (--engine vllm==0.33) is that engine's:
        # every other layout plans its own default release.
        release = request.engine_release if name == request.engine else None
        base = _on_given_budget(
            records.replace(request, engine=name, engine_release=release, gpu=None,
                            gpu_total_bytes=None, concurrency=None),
            get_layout(name).pools_model_local, available_bytes, taken)
        try:
            facts, _ = load_facts(source, base)
        except _plan_errors() as exc:
            curves.append(Curve(name, tuple((c, None) for c in contexts), str(exc)))
            continue
        curves.append(_curve(name, facts, base, contexts))
    return tuple(curves)


def gpu_grid(
    facts: ModelFacts,
    source: ModelSource,
    request: PlanRequest,
    contexts: Sequence[int],
    max_model_len: int,
    *,
    gpus: Sequence[str],
    tp_sizes: Sequence[int] = GRID_TP_SIZES,
    chosen_gpu: str | None = None,
) -> tuple[GridCell, ...]:
    """The headline layout on every GPU preset × TP size: fits at max_model_len or not, and
    its concurrency curve. The request's measured ``gpu_total_bytes`` applies to
    ``chosen_gpu`` only, as it does in the headline plan."""
    from kvledger.plan.api import _budget
    from kvledger.plan.budget import BudgetTooSmall
    from kvledger.plan.engines.base import get_layout

    layout = get_layout(request.engine, request.engine_release)
    taken = 0 if layout.pools_model_local else _local_taken(
        records.replace(request, kv_cache_memory_bytes=None))
    cells = []
    for gpu in gpus:
        for tp in tp_sizes:
            req = records.replace(
                request, tensor_parallel_size=tp, kv_cache_memory_bytes=None, gpu=gpu,
                gpu_total_bytes=request.gpu_total_bytes if gpu == chosen_gpu else None,
                concurrency=None)
            label = f"{gpu} TP{tp}"
            empty = Curve(label, tuple((c, None) for c in contexts))
            try:
                budget, _, _ = _budget(layout, facts, source, req)
            except BudgetTooSmall as exc:
                cells.append(GridCell(gpu, tp, NO_WEIGHTS, None, None, empty,
                                      f"weights and reserves leave "
                                      f"{exc.available_bytes / (1 << 30):.2f} GiB for KV"))
                continue
            except _plan_errors() as exc:
                cells.append(GridCell(gpu, tp, INVALID, None, None, empty, str(exc)))
                continue
            kv_bytes = budget.available_bytes - taken
            if kv_bytes <= 0:
                cells.append(GridCell(gpu, tp, NO_WEIGHTS, None, None, empty, (
                    f"weights, reserves and the model-local caches ({taken:,} B) leave "
                    f"{kv_bytes / (1 << 30):.2f} GiB for KV")))
                continue
            base = records.replace(
                _on_given_budget(req, layout.pools_model_local, budget.available_bytes, taken),
                gpu=None, gpu_total_bytes=None)
            curve = _curve(label, facts, base, contexts)
            if all(value is None for _, value in curve.points):
                cells.append(GridCell(gpu, tp, INVALID, None, kv_bytes, curve, curve.note))
                continue
            at = curve.at(max_model_len)
            status = FITS if at is not None and at >= 1 else SHORT
            reason = "" if status == FITS else (
                f"less than one request of {max_model_len:,} tokens fits"
                if at is not None else curve.note)
            cells.append(GridCell(gpu, tp, status, at, kv_bytes, curve, reason))
    return tuple(cells)


# -- the whole report --------------------------------------------------------------------------


def build_report_data(
    model: Any,
    request: PlanRequest,
    *,
    gpus: Sequence[str] | None = None,
    tp_sizes: Sequence[int] = GRID_TP_SIZES,
) -> ReportData:
    """Plan ``model`` as ``kvledger plan`` does (everything is in ``request``, the CLI's one
    request type), then compute every curve the report draws. ``gpus`` limits the grid to
    some presets (default: all of ``kvledger.plan.gpus``)."""
    from kvledger.plan.api import load_facts, plan_model
    from kvledger.plan.gpus import gpu_names, gpu_preset
    from kvledger.source.resolve import load_source

    if request.model_local_kv and request.pipeline_parallel_size > 1 and \
            request.kv_cache_memory_bytes is None:
        # They shrink one stage's budget; the curves share one budget over stages.
        raise ValueError("the report plans model-local declarations on a GPU budget with one "
                         "pipeline stage only; use kvledger plan for pipeline_parallel_size > 1")
    from kvledger.plan.engines.base import get_layout

    source = load_source(model)
    plan = plan_model(source, request)
    taken = _local_taken(request)
    pooled = get_layout(request.engine, request.engine_release).pools_model_local
    before = plan.available_bytes + (0 if pooled
                                     else taken)
    facts, _ = load_facts(source, request)
    longest = max(plan.max_model_len, facts.max_position_embeddings or 0)
    contexts = context_points(plan.max_model_len, longest)
    chosen = gpu_preset(request.gpu).name if request.gpu is not None else None
    presets = tuple(gpu_preset(g).name for g in gpus) if gpus is not None else tuple(gpu_names())
    grid = gpu_grid(facts, source, request, contexts, plan.max_model_len, gpus=presets,
                    tp_sizes=tp_sizes, chosen_gpu=chosen)
    notes = [f"{name} not drawn: {why}" for name in layout_names()
             if (why := refuses_gpu(name, request.gpu))]
    if request.kv_cache_memory_bytes is not None:
        notes.append("the KV budget was given directly: the memory bars show that budget, "
                     "not a GPU; the GPU grid plans each preset's own budget")
    if request.model_local_kv:
        names = ", ".join(r.name for r in plan.model_local_kv)
        notes.append(f"model-local KV caches ({names}): beside the given KV pool for vLLM, "
                     "inside it for the native layout; the GPU grid takes them off each "
                     "preset's budget" if request.kv_cache_memory_bytes is not None else
                     f"model-local KV caches ({names}): {taken:,} B off every GPU budget "
                     "before a layout that does not pool them plans (vLLM); the native layout "
                     "pools them")
    return ReportData(
        model=plan.model, engine=plan.engine, gpu=chosen, plan=plan, plan_json=plan.to_json(),
        contexts=contexts, memory=memory_bars(plan),
        layouts=layout_curves(source, request, before, contexts, taken=taken), grid=grid,
        tp_sizes=tuple(tp_sizes), kinds=kind_bytes(plan.to_json()["layers"]), notes=tuple(notes),
    )

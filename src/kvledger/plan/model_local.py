"""Seed A inside the engine's own budget: where each model-local declaration's bytes go.

A model-local cache (a talker's ``StaticCache``, a codec decoder's window) is allocated after
the profiling run that sizes an engine's KV pool, so the engine never counts it. A
declaration's peak bytes at the plan's ``max_num_seqs`` — exactly
``ModelLocalKVSpec.peak_bytes(max_num_seqs)``: FIXED rows, or one row per sequence — go to
one of four places, the row's ``status``:

- ``subtracted`` — GPU budget (the profiling path), layout that does not pool them (vLLM,
  SGLang): one budget line, ``key: model_local_kv``, ``basis: declared``, taken off the KV
  budget of the stage that holds the owning module *before* the engine plans, so
  ``available_bytes`` drops by exactly those bytes and the blocks follow from the rest.
- ``charged`` — named in ``model_local_already_charged``: the engine's profiling already paid
  for it (it was allocated before profiling, e.g. captured into a CUDA-graph pool). Listed,
  never subtracted twice.
- ``beside_pool`` — the KV pool given directly (``kv_cache_memory_bytes``): the engine takes
  exactly that pool, so the declarations are memory beside it. They are reported, added to a
  ``per_gpu_total`` line, and a warning with the numbers says when the total exceeds the GPU
  (when one is named). Charged or not: with a given pool there is no profiling to have paid.
- ``pooled`` — the native layout plans them as classes of its own pools (one ledger; FIXED
  declarations a FIXED class, MAX_NUM_SEQS ones a STATE class).

**Stage.** Each declaration sits on the pipeline stage whose GPUs hold its owning module:
the first (0) unless ``PlanRequest.model_local_stages`` names another
(``--model-local-kv-stage NAME=K``). Only that stage's budget shrinks; vLLM then uses the
smallest block count over stages (``get_kv_cache_configs`` takes each worker's own available
memory), so the other stages follow. The budget lines show the stage with the most declared
bytes (the binding GPU); every stage's own figure is in ``ranks``.

**Refusal.** When the declarations leave a stage no room for one ``max_model_len`` request
(but that stage would hold one without them), planning stops with
``ModelLocalBudgetError`` — an ``InsufficientPoolBudget`` carrying the numbers and the seed's
three-way fix (fewer rows, shorter capacity, more memory: ``declare.hints``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvledger import records
from kvledger.declare.pools import InsufficientPoolBudget
from kvledger.plan.budget import (
    DECLARED,
    GIVEN,
    KV_BUDGET,
    MODEL_LOCAL_KV,
    PER_GPU_TOTAL,
    Budget,
    BudgetLine,
)
from kvledger.records import record

if TYPE_CHECKING:
    from kvledger.declare.model_local import ModelLocalKVSpec
    from kvledger.plan.request import PlanRequest

SUBTRACTED = "subtracted"
CHARGED = "charged"
BESIDE_POOL = "beside_pool"
POOLED = "pooled"


@record(frozen=True)
class LocalRow:
    """One declaration as the plan reports it (JSON ``model_local_kv``, one object each)."""

    name: str
    owner: str | None  # the module path it was collected from; None when given as a spec
    rows: str  # the driver: "fixed" or "max_num_seqs"
    row_count: int
    bytes_per_row: int
    peak_bytes: int
    status: str  # SUBTRACTED, CHARGED, BESIDE_POOL or POOLED
    stage: int
    scope: str
    capacity_positions: int
    capacity_source: str

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in records.fields(self)}


def declarations(request: PlanRequest) -> list[tuple[str | None, ModelLocalKVSpec]]:
    """The request's declarations as (owner path or None, spec)."""
    out: list[tuple[str | None, ModelLocalKVSpec]] = []
    for item in request.model_local_kv:
        if isinstance(item, tuple):
            out.append((item[0], item[1]))
        else:
            out.append((None, item))
    return out


def local_rows(
    request: PlanRequest, *, budget_given: bool, pooled: bool, max_num_seqs: int | None = None
) -> tuple[LocalRow, ...]:
    """Every declaration with its bytes at ``max_num_seqs`` (default: the request's) and where
    they go (module docstring)."""
    seqs = request.max_num_seqs if max_num_seqs is None else max_num_seqs
    charged = set(request.model_local_already_charged)
    rows = []
    for owner, spec in declarations(request):
        if pooled:
            status = POOLED
        elif budget_given:
            status = BESIDE_POOL
        else:
            status = CHARGED if spec.name in charged else SUBTRACTED
        rows.append(LocalRow(
            name=spec.name, owner=owner, rows=str(spec.rows), row_count=spec.row_count(seqs),
            bytes_per_row=spec.bytes_per_row, peak_bytes=spec.peak_bytes(seqs), status=status,
            stage=request.stage_of(spec.name), scope=str(spec.scope),
            capacity_positions=spec.physical_capacity_positions,
            capacity_source=spec.capacity_source,
        ))
    return tuple(rows)


def _on_stage(rows: Sequence[LocalRow], status: str, stage: int) -> int:
    return sum(r.peak_bytes for r in rows if r.status == status and r.stage == stage)


def _names(rows: Sequence[LocalRow], status: str, stage: int | None = None) -> str:
    return ", ".join(r.name for r in rows
                     if r.status == status and (stage is None or r.stage == stage))


def apply_to_budget(
    budget: Budget, rows: Sequence[LocalRow], request: PlanRequest
) -> tuple[Budget, tuple[int, ...], list[str]]:
    """The budget with the declarations' line(s), each stage's KV bytes, and warnings."""
    pp = request.pipeline_parallel_size
    available = budget.available_bytes
    if not rows or all(r.status == POOLED for r in rows):
        return budget, (available,) * pp, []
    if any(r.status == BESIDE_POOL for r in rows):
        return _beside_pool(budget, rows, request)
    taken = [_on_stage(rows, SUBTRACTED, k) for k in range(pp)]
    binding = max(range(pp), key=lambda k: (taken[k], -k))
    stage_budgets = tuple(available - t for t in taken)
    for k, left in enumerate(stage_budgets):
        if left <= 0:
            raise ModelLocalBudgetError(rows, request, stage=k, budget=budget,
                                        local_bytes=taken[k], needed_bytes=None,
                                        max_model_len=None)
    where = f" on stage {binding}" if pp > 1 else ""
    label = f"− model-local KV caches{where} ({_names(rows, SUBTRACTED, binding) or 'none'})"
    charged = [r for r in rows if r.status == CHARGED]
    if charged:
        label += (f"; {sum(r.peak_bytes for r in charged):,} B already charged by profiling "
                  f"({_names(rows, CHARGED)}), not subtracted")
    lines = [ln for ln in budget.lines if ln.key != KV_BUDGET]
    final = budget.line(KV_BUDGET)
    lines.append(BudgetLine(MODEL_LOCAL_KV, label, taken[binding], DECLARED))
    lines.append(BudgetLine(KV_BUDGET, final.label if final else "= KV cache budget per GPU",
                            stage_budgets[binding], final.basis if final else DECLARED))
    changed = records.replace(
        budget, available_bytes=stage_budgets[binding], lines=tuple(lines),
        non_kv_bytes=budget.non_kv_bytes + taken[binding],
    )
    return changed, stage_budgets, []


def _beside_pool(
    budget: Budget, rows: Sequence[LocalRow], request: PlanRequest
) -> tuple[Budget, tuple[int, ...], list[str]]:
    pp = request.pipeline_parallel_size
    beside = [_on_stage(rows, BESIDE_POOL, k) for k in range(pp)]
    binding = max(range(pp), key=lambda k: (beside[k], -k))
    where = f" on stage {binding}" if pp > 1 else ""
    total = budget.available_bytes + beside[binding]
    lines = (
        *budget.lines,
        BudgetLine(MODEL_LOCAL_KV, f"+ model-local KV caches{where} beside the KV pool "
                   f"({_names(rows, BESIDE_POOL, binding)}; not in kv_cache_memory_bytes)",
                   beside[binding], DECLARED),
        BudgetLine(PER_GPU_TOTAL, "= KV pool + model-local caches per GPU", total, GIVEN),
    )
    warnings = []
    gpu_total, gpu_name = _gpu_total(request)
    if gpu_total is not None and total > gpu_total:
        warnings.append(
            f"the KV pool ({budget.available_bytes:,} B) and the model-local caches "
            f"({beside[binding]:,} B) need {total:,} B per GPU, more than the {gpu_name}'s "
            f"{gpu_total:,} B (and the weights are not counted yet)"
        )
    return records.replace(budget, lines=lines), (budget.available_bytes,) * pp, warnings


def _gpu_total(request: PlanRequest) -> tuple[int | None, str]:
    if request.gpu_total_bytes is not None:
        return request.gpu_total_bytes, "GPU"
    if request.gpu is None:
        return None, ""
    from kvledger.plan.gpus import gpu_preset

    preset = gpu_preset(request.gpu)
    return preset.total_bytes, preset.name


def check_room(
    rows: Sequence[LocalRow],
    request: PlanRequest,
    budget_before: Budget,
    stage_budgets: Sequence[int],
    one_request_bytes: Sequence[int],
    refuses_to_start: bool,
    max_model_len: int,
) -> None:
    """Raise ``ModelLocalBudgetError`` when the declarations, and only they, leave a stage no
    room for one ``max_model_len`` request (module docstring)."""
    if not refuses_to_start or not one_request_bytes:
        return
    for k, left in enumerate(stage_budgets):
        taken = _on_stage(rows, SUBTRACTED, k)
        needed = one_request_bytes[k] if k < len(one_request_bytes) else 0
        if taken and left < needed <= budget_before.available_bytes:
            raise ModelLocalBudgetError(rows, request, stage=k, budget=budget_before,
                                        local_bytes=taken, needed_bytes=needed,
                                        max_model_len=max_model_len)


class ModelLocalBudgetError(InsufficientPoolBudget):
    """Model-local declarations leave a stage no room for one request.

    An ``InsufficientPoolBudget`` (``reserved_bytes`` = the declarations' bytes on the stage,
    ``available_bytes`` = the KV budget before them) with ``hint``: the three-way fix.
    """

    def __init__(
        self,
        rows: Sequence[LocalRow],
        request: PlanRequest,
        *,
        stage: int,
        budget: Budget,
        local_bytes: int,
        needed_bytes: int | None,
        max_model_len: int | None,
    ) -> None:
        from kvledger.declare.hints import model_local_fix_hint

        on_stage = [r for r in rows if r.status == SUBTRACTED and r.stage == stage]
        by_class = {f"local:{r.name}": r.row_count for r in on_stage}
        super().__init__(local_bytes, budget.available_bytes, sum(by_class.values()),
                         entries_by_class=by_class)
        self.stage = stage
        self.needed_bytes = needed_bytes
        where = f" on stage {stage}" if request.pipeline_parallel_size > 1 else ""
        detail = "; ".join(
            f"{r.name} {r.row_count} {r.rows} row(s) × {r.bytes_per_row:,} B = "
            f"{r.peak_bytes:,} B" for r in on_stage)
        need = ("" if needed_bytes is None else
                f", and one {max_model_len:,}-token request needs {needed_bytes:,} B")
        self.message = (
            f"model-local KV caches{where} take {local_bytes:,} B ({detail}) of the "
            f"{budget.available_bytes:,} B KV budget, leaving "
            f"{budget.available_bytes - local_bytes:,} B{need}"
        )
        self.hint = model_local_fix_hint(
            [(r.name, r.rows, r.row_count, r.bytes_per_row) for r in on_stage],
            local_bytes=local_bytes, budget_bytes=budget.available_bytes,
            needed_bytes=needed_bytes or 1, max_num_seqs=request.max_num_seqs,
            total_bytes=budget.total_bytes, gpu_memory_utilization=budget.gpu_memory_utilization,
        )
        self.args = (self.message,)

    def __str__(self) -> str:
        return self.message

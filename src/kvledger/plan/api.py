"""The library call behind ``kvledger plan``: ``plan_model(model, request) -> PlanResult``.

It joins derive (per-layer facts), the budget (given, or a GPU preset as the engine computes
it), model-local declarations (seed A: ``kvledger.plan.model_local``), the engine's layout
(``kvledger.plan.engines.base``: looked up by ``request.engine`` in the registry — this module knows
no engine by name) and the answers. ``fit_model`` (``kvledger.plan.fit``) calls it per
candidate.

Errors are exceptions that carry their numbers: ``InsufficientPoolBudget`` (with a ``hint``
attribute: the three-way fix of the seeds' engine, or its given-budget equivalent; its
subclass ``ModelLocalBudgetError`` when model-local caches leave no room for one request),
``BudgetTooSmall`` (every budget line), ``ValueError`` naming the option, and derive's
``UnsupportedArchitecture`` / ``ConfigError``.
"""

from __future__ import annotations

from kvledger import records
from kvledger.derive.layers import ModelFacts
from kvledger.plan.budget import Budget, Reserves, given_budget
from kvledger.plan.engines.base import GpuBudgetInput, Layout, LayoutInput, engine_label, get_layout
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PlanResult
from kvledger.source.model_source import ModelSource
from kvledger.source.resolve import load_source

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from kvledger.plan.model_local import LocalRow

# -- inputs ------------------------------------------------------------------------------------


def load_facts(model: Any, request: PlanRequest) -> tuple[ModelFacts, ModelSource | None]:
    """The model's facts as ``request.engine`` serves them, and where the config came from."""
    if isinstance(model, ModelFacts):
        return model, None
    source = load_source(model)
    return get_layout(request.engine, request.engine_release).derive(source, request), source


def _max_model_len(layout: Layout, facts: ModelFacts, request: PlanRequest) -> int:
    length = layout.max_model_len(facts, request)
    if length:
        return length
    raise ValueError(
        f"{facts.model}: the config states no max_position_embeddings; pass max_model_len"
    )


def _budget(
    layout: Layout, facts: ModelFacts, source: ModelSource | None, request: PlanRequest
) -> tuple[Budget, list[str], dict[str, Any] | None]:
    """(the budget, notes, the per-GPU weight parts where the engine divides the experts over
    other GPUs than TP: ``Weights.split``)."""
    notes: list[str] = []
    split = layout.weight_split(facts, request)  # refuses EP where the layout has no rule
    if request.kv_cache_memory_bytes is not None:
        if request.gpu is not None:
            notes.append(f"kv_cache_memory_bytes given: the {request.gpu} budget (weights, "
                         "reserves, utilization) is not computed")
        return given_budget(request.kv_cache_memory_bytes), notes, None
    from kvledger.plan.gpus import ASSUMED_NOTE, given_total_preset, gpu_preset
    from kvledger.plan.speculative import speculates_with_mtp
    from kvledger.plan.weights import model_weights

    if request.gpu is not None:
        preset = gpu_preset(request.gpu)
        notes.extend(layout.budget_notes(preset))
    elif request.gpu_total_bytes is not None:  # the total alone is a complete budget
        preset = given_total_preset(request.gpu_total_bytes)
        notes.append(ASSUMED_NOTE)
    else:
        raise ValueError("no memory budget: pass kv_cache_memory_bytes, a gpu preset, or "
                         "gpu_total_bytes")
    text = facts.language_config()
    weights = model_weights(
        text,
        model_dtype=facts.model_dtype,
        serving=layout.serving_dtype(facts),
        exact=source.safetensors() if source is not None else None,
        hf_quant=source.hf_quant_config if source is not None else None,
        tensor_parallel_size=request.tensor_parallel_size,
        pipeline_parallel_size=request.pipeline_parallel_size,
        speculative_mtp=speculates_with_mtp(request),
        config=facts.config or None,
        split=split,
    )
    budget = layout.gpu_budget(GpuBudgetInput(facts, request, preset, weights, text))
    notes.extend(budget.notes)  # start-up verdicts (plan/startup_memory.py)
    if weights.basis != "exact":
        why = source.weights_note() if source is not None else "no checkpoint given"
        notes.append(f"weights estimated from the config's parameter count ({why})")
    return budget, notes, None if weights.split is None else dict(weights.split)


def _with_overrides(request: PlanRequest | None, overrides: dict[str, Any]) -> PlanRequest:
    """Keyword shorthands of ``plan_model`` folded into the one request (None = not given)."""
    request = request or PlanRequest()
    given = {k: v for k, v in overrides.items() if v is not None and v != ()}
    if "reserves" in given:
        reserves: Reserves = given.pop("reserves")
        given.update({f.name: getattr(reserves, f.name) for f in records.fields(reserves)
                      if getattr(reserves, f.name) is not None})
    if "total_memory_bytes" in given:
        given["gpu_total_bytes"] = given.pop("total_memory_bytes")
    for name, field in (("model_local_specs", "model_local_kv"),
                        ("model_local_already_charged", "model_local_already_charged")):
        if name in given:
            given[field] = tuple(given.pop(name))
    return records.replace(request, **given) if given else request


# -- the entry point ---------------------------------------------------------------------------


def plan_model(
    model: Any,
    request: PlanRequest | None = None,
    *,
    gpu: str | None = None,
    gpu_memory_utilization: float | None = None,
    reserves: Reserves | None = None,
    total_memory_bytes: int | None = None,
    concurrency: int | None = None,
    model_local_specs: Any = (),
    model_local_already_charged: Any = (),
) -> PlanResult:
    """Plan ``model`` (catalog id, config path, model directory, dict, or ``ModelFacts``).

    Everything is in ``request`` (``PlanRequest``: the same object the CLI builds from its
    flags). The keyword arguments are shorthands for its fields (``total_memory_bytes`` is
    ``gpu_total_bytes``, ``model_local_specs`` is ``model_local_kv``, ``reserves`` its three
    byte fields); a given keyword replaces the request's value.

    The budget is ``request.kv_cache_memory_bytes`` when set, else the GPU preset as the
    engine computes it (vLLM: ``gpu`` × ``gpu_memory_utilization`` (default 0.92) − weights −
    reserves, the reserves documented estimates when not given). Model-local declarations are
    planned inside that budget (``kvledger.plan.model_local``). ``concurrency`` adds the
    answer "max context at N concurrent requests".
    """
    request = _with_overrides(request, {
        "gpu": gpu, "gpu_memory_utilization": gpu_memory_utilization, "reserves": reserves,
        "total_memory_bytes": total_memory_bytes, "concurrency": concurrency,
        "model_local_specs": model_local_specs,
        "model_local_already_charged": model_local_already_charged,
    })
    # The release is bound here, once: the layout holds its profile and every rule reads it.
    layout = get_layout(request.engine, request.engine_release)
    layout.check(request)
    facts, source = load_facts(model, request)
    spec_warnings: list[str] = []
    if request.num_speculative_tokens:  # the check's module is imported only when it applies
        from kvledger.plan.speculative import check_speculation

        spec_warnings = check_speculation(facts, request)
    budget, notes, weight_split = _budget(layout, facts, source, request)
    local: tuple[LocalRow, ...] = ()
    stage_budgets = (budget.available_bytes,) * request.pipeline_parallel_size
    local_notes: list[str] = []
    plain_budget = budget
    if request.model_local_kv:
        from kvledger.plan.model_local import apply_to_budget, local_rows

        local = local_rows(request, budget_given=request.kv_cache_memory_bytes is not None,
                           pooled=layout.pools_model_local)
        budget, stage_budgets, local_notes = apply_to_budget(budget, local, request)
    inp = LayoutInput(
        facts=facts, request=request, budget=budget,
        max_model_len=_max_model_len(layout, facts, request),
        stage_budgets=stage_budgets,
        model_local=request.model_local_kv if layout.pools_model_local else (),
    )
    planned = layout.plan(inp)
    if local and not layout.pools_model_local and plain_budget.total_bytes is not None:
        from kvledger.plan.model_local import check_room

        check_room(local, request, plain_budget, stage_budgets, planned.one_request_bytes,
                   planned.refuses_to_start, planned.max_model_len)
    if local and planned.model_local_seqs not in (None, request.max_num_seqs):
        # The engine holds the declarations at another row count than the request asked
        # (native: the state slots it could give): the rows say the bytes at that count.
        from kvledger.plan.model_local import local_rows

        local = local_rows(request, budget_given=request.kv_cache_memory_bytes is not None,
                           pooled=layout.pools_model_local, max_num_seqs=planned.model_local_seqs)
    answers: dict[str, Any] = dict(planned.answers)
    answers["max_concurrency_at_max_model_len"] = planned.max_concurrency
    if request.concurrency is not None:
        answers.update(_max_context(layout, inp, request.concurrency,
                                    max(planned.max_model_len, facts.max_position_embeddings or 0)))
    binding = max(planned.ranks, key=lambda r: r.reserved_bytes)
    warnings = [*((layout.release_note,) if layout.release_note else ()),
                *(source.warnings if source is not None else ()), *notes, *spec_warnings,
                *local_notes, *planned.warnings,
                *facts.warnings]  # a size the config states two ways (derived as vLLM does)
    tp, pp, dp = (request.tensor_parallel_size, request.pipeline_parallel_size,
                  request.data_parallel_size)
    return PlanResult(
        model=facts.model, engine=request.engine, block_size=planned.block_size,
        num_blocks=planned.num_blocks, kv_cache_tokens=planned.kv_cache_tokens,
        max_concurrency=planned.max_concurrency, max_model_len=planned.max_model_len,
        available_bytes=budget.available_bytes, reserved_bytes=binding.reserved_bytes,
        pools=binding.pools, layers=planned.layers, warnings=tuple(dict.fromkeys(warnings)),
        budget=budget, ranks=planned.ranks, tensor_parallel_size=tp,
        pipeline_parallel_size=pp, data_parallel_size=dp, max_num_seqs=request.max_num_seqs,
        kv_cache_dtype=planned.kv_cache_dtype, answers=answers,
        engine_label=engine_label(request.engine,
                                  layout.release.label if layout.release else None),
        engine_release=layout.release.version if layout.release else "",
        release_note=layout.release_note, refuses_to_start=planned.refuses_to_start,
        engine_fields=dict(planned.engine_fields), model_local_kv=local,
        attention_dp_size=planned.attention_dp_size,
        stored_bytes_per_token=planned.stored_bytes_per_token,
        source=source.describe() if source is not None else None,
        enable_expert_parallel=request.enable_expert_parallel, weight_split=weight_split,
        batch_defaults=request.batch_defaults.to_json()
        if request.batch_defaults is not None else None,
    )


def _max_context(layout: Layout, inp: LayoutInput, concurrency: int, hi: int) -> dict[str, Any]:
    """The answer to ``--concurrency N``: the longest context N requests can hold."""
    from kvledger.plan.answers import max_context_at

    best = max_context_at(concurrency, lambda ctx: layout.concurrency_at(inp, ctx), hi=hi)
    out: dict[str, Any] = {"concurrency": concurrency, "max_context_at_concurrency": best}
    if best == hi:
        out["max_context_note"] = f"capped at {hi} (the longest context considered)"
    elif best is None:
        out["max_context_note"] = (f"{concurrency} concurrent requests do not fit even at "
                                   "one token each")
    return out


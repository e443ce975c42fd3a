"""The split of a device's memory between the stages on it, for N concurrent requests.

For each stage with a paged KV cache: the smallest ``gpu_memory_utilization``, in hundredths
(as deploy files write them), whose plan holds ``concurrency`` requests of the stage's
``max_model_len`` (``max_concurrency >= N``, vLLM's "Maximum concurrency" figure) — planned at
``max_num_seqs`` of at least N, since a stage never runs more sequences than that (its
``MAX_NUM_SEQS`` model-local rows are counted at that number). The planned KV budget grows
with the fraction, so the smallest is found by bisection. A stage without paged KV keeps the
fraction the deploy file gives it. Then, per device, the admission sum
(``kvledger.plan.omni.admission``) of those fractions: the split fits, or the reasons it
cannot — a stage that no fraction up to 1 serves, or a device whose sum is over capacity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kvledger import records
from kvledger.plan.omni.admission import Demand, admit
from kvledger.plan.omni.pipelines import LLM_AR, Pipeline
from kvledger.plan.omni.result import DeviceSplit

if TYPE_CHECKING:
    from kvledger.plan.omni.deploy import OmniDeploy, StageDeploy
    from kvledger.plan.omni.result import StagePlan
    from kvledger.plan.request import PlanRequest

STEPS = 100  # fractions in hundredths


def smallest_fraction(holds: Any) -> int | None:
    """The smallest k in 1..STEPS with ``holds(k)`` true (monotone), or None."""
    if not holds(STEPS):
        return None
    lo, hi = 0, STEPS  # holds(hi) is true; holds(lo) is taken false
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return hi


def split_for(config: Mapping[str, Any], label: str, pipeline: Pipeline, deploy: OmniDeploy,
              request: PlanRequest, release: str, local: Mapping[int, list[Any]],
              capacity: int, planned: Sequence[StagePlan], concurrency: int
              ) -> tuple[DeviceSplit, ...]:
    fractions: dict[int, float] = {}
    reasons: dict[int, str] = {}
    by_id = {s.stage_id: s for s in deploy.stages}
    for stage in planned:
        part = pipeline.stage(stage.stage_id)
        if part is None or part.execution_type != LLM_AR:
            fractions[stage.stage_id] = stage.gpu_memory_utilization
            continue
        need = _need(config, label, pipeline, by_id[stage.stage_id], request, release,
                     local.get(stage.stage_id, []), concurrency,
                     max(stage.max_num_seqs, concurrency))
        if need is None:
            reasons[stage.stage_id] = (f"stage {stage.stage_id} ({stage.role}) does not hold "
                                       f"{concurrency} requests even with the whole device")
        else:
            fractions[stage.stage_id] = need / STEPS
    out = []
    for dev in sorted({d for s in planned for d in (s.devices or (0,))}):
        on = [s for s in planned if dev in (s.devices or (0,))]
        why = [reasons[s.stage_id] for s in on if s.stage_id in reasons]
        split = {s.stage_id: fractions[s.stage_id] for s in on if s.stage_id in fractions}
        required: int | None = None
        if not why:
            ledger = admit([Demand(s.stage_id, (dev,), split[s.stage_id], s.graph_reserve_bytes)
                            for s in on], capacity)[0]
            required = ledger.required_bytes
            if not ledger.ok:
                why.append(f"device {dev}: the stages need {required:,} B with vLLM-Omni's "
                           f"reserves, more than its {capacity:,} B")
        out.append(DeviceSplit(device=dev, concurrency=concurrency, fractions=split,
                               required_bytes=required, capacity_bytes=capacity, ok=not why,
                               reasons=tuple(why)))
    return tuple(out)


def _need(config: Mapping[str, Any], label: str, pipeline: Pipeline, stage: StageDeploy,
          request: PlanRequest, release: str, local: list[Any], concurrency: int,
          seqs: int) -> int | None:
    from kvledger.plan.omni.stage import plan_stage, stage_part, stage_request

    part = pipeline.stage(stage.stage_id)
    assert part is not None
    sub = stage_part(config, part)

    def holds(k: int) -> bool:
        req = stage_request(request, stage, release, local, max_num_seqs=seqs, util=k / STEPS)
        # A hypothetical fraction: vLLM-Omni admits the stages together (admission.py).
        req = records.replace(req, startup_admission=False)
        plan, _ = plan_stage(sub, req, label)
        return plan is not None and not plan.refuses_to_start and \
            plan.max_concurrency >= concurrency

    return smallest_fraction(holds)

"""What explain's checks share: ``Check`` (one logged number against its re-derivation),
``Suggestion`` (a re-planned change and its effect) and ``Context`` (the parsed log, its
request, the model, the GPU). The checks of each engine (``vllm_checks``, ``sglang_checks``,
``memory_checks``, ``suggest``) take a ``Context`` and return these; ``explain`` builds the
context and gathers what they return.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvledger import records
from kvledger.records import field, record
from kvledger.report.logparse import GIB, ParsedLog

if TYPE_CHECKING:
    from kvledger.derive.layers import ModelFacts
    from kvledger.plan.gpus import GpuPreset
    from kvledger.plan.request import PlanRequest
    from kvledger.plan.result import PlanResult
    from kvledger.source.model_source import ModelSource


@record(frozen=True)
class Check:
    """One logged number against its re-derivation. ``derived``/``match`` are None when it
    cannot be derived (``why`` says what is missing); ``range`` is the derived interval when
    the logged input was rounded."""

    name: str
    logged: Any
    derived: Any
    match: bool | None
    why: str
    range: tuple[Any, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name, "logged": self.logged, "derived": self.derived,
            "match": self.match, "why": self.why,
        }
        if self.range is not None:
            out["range"] = list(self.range)
        return out


@record(frozen=True)
class Suggestion:
    change: str
    effect: str

    def to_json(self) -> dict[str, str]:
        return {"change": self.change, "effect": self.effect}


# -- context: the log, its request, the model ------------------------------------------------


@record()
class Context:
    """The parsed log plus what the checks share: the request, the model's facts, the GPU."""

    log: ParsedLog
    request: PlanRequest | None
    facts: ModelFacts | None
    source: ModelSource | None
    model: str | None
    gpu: GpuPreset | None
    problems: list[str] = field(default_factory=list)  # why derivations are impossible
    notes: list[str] = field(default_factory=list)
    _plans: dict[tuple[Any, ...], PlanResult | None] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return self.request is not None and self.facts is not None

    def why_not(self) -> str:
        return "; ".join(self.problems) or "nothing to derive from"

    def plan(self, budget: int, **changes: Any) -> PlanResult | None:
        """kvledger's plan of this log's settings (with ``changes``) on ``budget`` bytes."""
        if self.request is None or self.facts is None:
            return None
        key = (budget, *sorted(changes.items()))
        if key not in self._plans:
            from kvledger.plan.api import plan_model

            request = records.replace(self.request, kv_cache_memory_bytes=budget, **changes)
            try:
                self._plans[key] = plan_model(self.facts, request)
            except ValueError as exc:  # the layout refuses these settings (it says why)
                self._plans[key] = None
                if not changes:
                    self.problems.append(str(exc))
        return self._plans[key]


def gib(n: float) -> str:
    """Bytes as GiB with two decimals, the way vLLM prints them."""
    return f"{n / GIB:.2f} GiB"

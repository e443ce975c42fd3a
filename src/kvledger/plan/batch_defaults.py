"""What a launch that sets neither ``max_num_seqs`` nor ``max_num_batched_tokens`` runs with,
engine-neutrally: the record every engine's rule returns (``BatchDefaults``), the usage contexts
a request may name, and the engine's rule looked up by name.

The rules themselves are engine policy and live with their engine: vLLM's device-memory tiers
in ``plan/engines/vllm/batch_defaults.py``. The registry (``plan/engines/registry.py``
``BATCH_DEFAULT_RULES``) names each rule as ``module:function``; it is imported on first use,
the way layouts are (``engines/base.get_layout``), so this core module imports no engine.
"""

from __future__ import annotations

import sys

from kvledger.plan.engines.registry import BATCH_DEFAULT_RULES
from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    # (usage_context, device total bytes, device name, the release asked) → the defaults.
    Rule: TypeAlias = Callable[[str, int | None, str | None, str | None], "BatchDefaults"]

SERVE = "serve"  # UsageContext.OPENAI_API_SERVER: `vllm serve`, the API server
LLM = "llm"  # UsageContext.LLM_CLASS: the offline LLM(...) class
USAGE_CONTEXTS = (SERVE, LLM)


@record(frozen=True)
class BatchDefaults:
    """The tier's numbers, and why (one clause for the JSON); ``applied``: the fields the
    request took from it (the others were given)."""

    max_num_seqs: int
    max_num_batched_tokens: int
    usage_context: str | None
    basis: str
    applied: tuple[str, ...] = ()
    # (max_num_seqs, max_num_batched_tokens) as the request resolved them: a ``replace`` that
    # leaves a defaulted field at this value takes the new request's default instead.
    resolved: tuple[int, int] = (0, 0)

    def to_json(self) -> dict[str, object]:
        return {"max_num_seqs": self.max_num_seqs,
                "max_num_batched_tokens": self.max_num_batched_tokens,
                "usage_context": self.usage_context, "basis": self.basis,
                "applied": list(self.applied)}


def check_usage_context(value: str | None) -> None:
    if value is not None and value not in USAGE_CONTEXTS:
        raise ValueError(f"usage_context must be one of {', '.join(USAGE_CONTEXTS)}, got "
                         f"{value!r}")


def batch_rule(engine: str) -> Rule | None:
    """The engine's batch-default rule (``usage_context``, device total bytes, device name,
    the release asked → ``BatchDefaults``), or None for an engine that keeps fixed
    defaults."""
    spec = BATCH_DEFAULT_RULES.get(engine)
    if spec is None:
        return None
    module, _, name = spec.partition(":")
    __import__(module)  # not importlib.import_module: importing importlib costs start-up
    rule: Rule = getattr(sys.modules[module], name)
    return rule

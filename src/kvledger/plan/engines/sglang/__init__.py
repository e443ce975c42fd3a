"""The SGLang layout: reproduce the KV pool SGLang 0.5.23 allocates, from the config alone.

Entry point: ``plan_sglang(facts, request, available_bytes, options=...) -> SglangPlan``.
One module per concept: ``options`` (SGLang-only server arguments), ``model`` (SGLang's view
of the model from kvledger's facts), ``cells`` (bytes per token), ``states`` (the
recurrent-state pool), ``pools`` (tokens, state slots and request cap from a budget),
``memory`` (GPU defaults and ``mem_fraction_static``), ``log`` (the lines SGLang prints),
``layout`` (the plan), ``budget`` (the KV budget on a GPU preset).

Names are imported on first use, so ``PlanRequest`` can name ``SglangOptions`` without
loading the layout.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "SglangLayoutError": "kvledger.plan.engines.sglang.model",
    "SglangOptions": "kvledger.plan.engines.sglang.options",
    "SglangPlan": "kvledger.plan.engines.sglang.result",
    "plan_sglang": "kvledger.plan.engines.sglang.layout",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

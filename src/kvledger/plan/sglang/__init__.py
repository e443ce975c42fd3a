"""The SGLang layout: reproduce the KV pool SGLang 0.5.23 allocates, from the config alone.

Entry point: ``plan_sglang(facts, request, available_bytes, options=...) -> SglangPlan``.
One module per concept: ``options`` (SGLang-only server arguments), ``model`` (SGLang's view
of the model from kvledger's facts), ``cells`` (bytes per token), ``states`` (the
recurrent-state pool), ``pools`` (tokens, state slots and request cap from a budget),
``memory`` (GPU defaults and ``mem_fraction_static``), ``log`` (the lines SGLang prints),
``layout`` (the plan), ``budget`` (the KV budget on a GPU preset).
"""

from kvledger.plan.sglang.layout import SglangPlan, plan_sglang
from kvledger.plan.sglang.model import SglangLayoutError
from kvledger.plan.sglang.options import SglangOptions

__all__ = ["SglangLayoutError", "SglangOptions", "SglangPlan", "plan_sglang"]

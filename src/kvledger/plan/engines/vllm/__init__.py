"""The vLLM layout: reproduce what vLLM 0.32 allocates, from the config alone.

Entry point: ``plan_vllm(facts, request, available_bytes) -> VllmPlan``. One module per
concept: ``specs`` (spec kinds and their arithmetic), ``resolve`` (settings vLLM decides),
``convert`` (facts → specs), ``hybrid`` (block size, Mamba alignment), ``grouping`` (KV
cache groups), ``blocks`` (block count and the logged numbers), ``layout`` (the plan).
"""

from kvledger.plan.engines.vllm.layout import (
    GroupInfo,
    VllmLayoutError,
    VllmPlan,
    plan_vllm,
    plan_vllm_stage,
    pp_stages,
)

__all__ = ["GroupInfo", "VllmLayoutError", "VllmPlan", "plan_vllm", "plan_vllm_stage", "pp_stages"]

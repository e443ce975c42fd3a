"""Refuse a speculative-decoding request the model cannot serve, instead of planning it quietly.

An MTP method (``mtp``, ``deepseek_mtp``, ...) drafts with next-n layers shipped inside the
checkpoint. A model without such layers, or one whose MTP layers derive could not describe
(``extras["mtp_unsupported"]``), would otherwise be planned as if speculation cost nothing —
a silently low number.
"""

from __future__ import annotations

from kvledger.derive.layers import ModelFacts, Role
from kvledger.errors import UnsupportedArchitecture
from kvledger.plan.request import (
    DRAFT_MODEL_METHODS,
    MTP_METHODS,
    PARALLEL_DRAFT_METHODS,
    PlanRequest,
)


def speculates_with_mtp(request: PlanRequest) -> bool:
    """Whether the engine drafts with the checkpoint's MTP layers (so loads their weights)."""
    return request.num_speculative_tokens > 0 and \
        (request.speculative_method or "").lower() in MTP_METHODS


def check_speculation(facts: ModelFacts, request: PlanRequest) -> list[str]:
    """Raise when the model cannot serve the requested speculation; else warnings to show."""
    if request.num_speculative_tokens <= 0:
        return []
    method = (request.speculative_method or "").lower()
    if method in PARALLEL_DRAFT_METHODS and request.engine.partition("==")[0] != "vllm":
        # The vLLM layout adds the draft's layers (plan/engines/vllm/parallel_draft.py).
        raise ValueError(
            f"speculative method {method!r}: kvledger plans DFlash / DSpark drafts for "
            "--engine vllm only; plan without --speculative-method to size the target alone")
    if method in DRAFT_MODEL_METHODS and not facts.by_role(Role.DRAFT) \
            and request.engine.partition("==")[0] != "sglang":
        # SGLang's layout says itself what it counts of the draft (sglang/draft_layers.py).
        return [
            f"speculative method {method!r} runs a separate draft model whose KV cache is not "
            "in this plan; plan the draft's config too (e.g. an EAGLE3 config from the catalog)"
        ]
    if method not in MTP_METHODS:
        return []
    reason = facts.extras.get("mtp_unsupported")
    if reason:
        raise UnsupportedArchitecture(
            f"unsupported: {facts.model} with speculative method {method!r}: {reason}",
            model_type=facts.model_type,
            architectures=facts.architectures,
        )
    if not facts.by_role(Role.MTP):
        raise ValueError(
            f"{facts.model} ships no MTP (next-n) layers, so speculative method {method!r} "
            "cannot run; use a draft-model method such as eagle3, or no speculation"
        )
    return []

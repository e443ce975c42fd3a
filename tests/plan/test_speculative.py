"""MTP speculation on a model that cannot serve it is refused, not planned at zero cost."""

from __future__ import annotations

import pytest

from kvledger.derive import UnsupportedArchitecture, derive_model
from kvledger.plan.request import PlanRequest
from kvledger.plan.speculative import check_speculation

MTP = PlanRequest(num_speculative_tokens=1, speculative_method="mtp")


def test_model_without_mtp_layers_refused() -> None:
    with pytest.raises(ValueError, match="no MTP"):
        check_speculation(derive_model("meta-llama/Meta-Llama-3.1-8B"), MTP)


def test_underived_mtp_layers_fail_closed() -> None:
    with pytest.raises(UnsupportedArchitecture, match="MiniMax-M3"):
        check_speculation(derive_model("MiniMaxAI/MiniMax-M3"), MTP)


def test_model_with_mtp_layers_accepted() -> None:
    check_speculation(derive_model("deepseek-ai/DeepSeek-V3"), MTP)  # num_nextn_predict_layers 1


def test_no_speculation_or_draft_method_not_checked() -> None:
    facts = derive_model("meta-llama/Meta-Llama-3.1-8B")
    check_speculation(facts, PlanRequest())
    check_speculation(facts, PlanRequest(num_speculative_tokens=3, speculative_method="eagle3"))

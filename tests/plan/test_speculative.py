"""MTP speculation on a model that cannot serve it is refused, not planned at zero cost."""

from __future__ import annotations

import pytest

from kvledger.derive import UnsupportedArchitecture, derive_model
from kvledger.plan.request import PlanRequest
from kvledger.plan.speculative import check_speculation
from oracle_cases import CONFIGS

MTP = PlanRequest(num_speculative_tokens=1, speculative_method="mtp")


def test_model_without_mtp_layers_refused() -> None:
    with pytest.raises(ValueError, match="no MTP"):
        check_speculation(derive_model("meta-llama/Meta-Llama-3.1-8B"), MTP)


def test_underived_mtp_layers_fail_closed() -> None:
    with pytest.raises(UnsupportedArchitecture, match="MiniMax-M3"):
        check_speculation(derive_model("MiniMaxAI/MiniMax-M3"), MTP)


def test_model_with_mtp_layers_accepted() -> None:
    check_speculation(derive_model("deepseek-ai/DeepSeek-V3"), MTP)  # num_nextn_predict_layers 1


def test_no_speculation_not_checked() -> None:
    facts = derive_model("meta-llama/Meta-Llama-3.1-8B")
    assert check_speculation(facts, PlanRequest()) == []
    assert check_speculation(facts, PlanRequest(num_speculative_tokens=3,
                                                speculative_method="ngram")) == []


def test_unknown_method_rejected_naming_it() -> None:
    with pytest.raises(ValueError, match="'foo'"):
        PlanRequest(num_speculative_tokens=1, speculative_method="foo")


def test_draft_model_method_warns_that_draft_kv_is_outside_the_plan() -> None:
    facts = derive_model("meta-llama/Meta-Llama-3.1-8B")
    warnings = check_speculation(facts, PlanRequest(num_speculative_tokens=3,
                                                    speculative_method="eagle3"))
    assert len(warnings) == 1 and "draft" in warnings[0]
    draft = derive_model(str(CONFIGS / "sgl-project--SpecForge-llama3-8B-eagle3.json"))
    assert check_speculation(draft, PlanRequest(num_speculative_tokens=3,
                                                speculative_method="eagle3")) == []

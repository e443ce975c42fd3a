"""vLLM 0.10.2's rules where its own answers need the question as asked, not as resolved.

``tests/oracles/vllm-0.10/release-questions.jsonl`` holds vLLM 0.10.2's answers (its command in
each line). Its ``inputs`` record what vLLM resolved, so a setting vLLM overrode is stored as
the override: the Qwen3-Next question asked with ``--enable-prefix-caching`` records
``enable_prefix_caching`` False, because 0.10.2's ``MambaModelConfig.verify_and_update_config``
(model_executor/models/config.py) sets it off for every hybrid model. Here it is planned as
asked, and must still give vLLM's answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from oracle_cases import assert_plan_is, case_model, hf_quant_config, request_of

ANSWERS = Path(__file__).resolve().parents[3] / "oracles" / "vllm-0.10" / \
    "release-questions.jsonl"


def _asked_with_prefix_caching() -> dict[str, Any]:
    for line in ANSWERS.read_text().splitlines():
        case = json.loads(line)
        if "expected" in case and "--enable-prefix-caching" in case["command"] and \
                case["config"].startswith("Qwen--Qwen3-Next"):
            return dict(case)
    raise AssertionError("the 0.10.2 answer to Qwen3-Next with --enable-prefix-caching is gone")


def test_a_hybrid_asked_for_prefix_caching_is_planned_without_it() -> None:
    case = _asked_with_prefix_caching()
    assert case["inputs"]["enable_prefix_caching"] is False  # what vLLM resolved
    inputs = {**case["inputs"], "enable_prefix_caching": True}  # what the command asked
    facts = derive_model(case_model(case), hf_quant_config=hf_quant_config(case))
    plan = plan_vllm(facts, request_of(inputs, engine="vllm==0.10.2"),
                     inputs["kv_cache_memory_bytes"])
    # vLLM 0.10.2: 642 blocks, 87,040 tokens, 10.03x (0.19 keeps prefix caching: "align",
    # 9.58x).
    assert_plan_is(plan, case)
    assert plan.resolved.mamba_cache_mode == "none"
    assert any("turns prefix caching off" in w for w in plan.warnings)
    later = plan_vllm(facts, request_of(inputs, engine="vllm==0.19"),
                      inputs["kv_cache_memory_bytes"])
    assert later.resolved.mamba_cache_mode == "align"

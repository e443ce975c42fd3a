"""Each rule that moved between two vLLM releases kvledger names, shown by the question that
moved it: the plan under each release equals that release's own oracle answer, so the same
plan under the neighbour release fails it.

vLLM 0.31's answers: ``tests/oracles/vllm-0.31/release-questions.jsonl``; vLLM 0.32's:
``../shared/oracles/vllm-0.32/cases.jsonl`` (the line each 0.31 answer names as its source).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from oracle_cases import ORACLE_FILE, case_model, request_of, skip_without_shared

ORACLES = Path(__file__).resolve().parents[1] / "oracles"


def _answer(release: str, source_line: int) -> dict[str, Any]:
    path = ORACLES / f"vllm-{release}" / "release-questions.jsonl"
    for line in path.read_text().splitlines():
        case: dict[str, Any] = json.loads(line)
        if case["source"]["line"] == source_line:
            return case
    raise AssertionError(f"no answer to line {source_line} in {path}")


def _planned(case: dict[str, Any], release: str) -> tuple[int, int, int]:
    plan = plan_vllm(derive_model(case_model(case)),
                     request_of(case["inputs"], engine=f"vllm=={release}"),
                     case["inputs"]["kv_cache_memory_bytes"])
    return plan.num_blocks, plan.kv_cache_tokens, plan.blocks_per_request


def _expected(case: dict[str, Any]) -> tuple[int, int, int]:
    exp = case["expected"]
    per_request = sum(g["blocks_per_request_at_max_model_len"] for g in case["kv_cache_groups"])
    return exp["num_blocks"], exp["kv_cache_tokens"], per_request


@pytest.mark.parametrize("release", ["0.31", "0.30"])
def test_mamba2_prefill_checkpoint_page_arrives_in_032(release: str) -> None:
    # Nemotron-H-56B, 8 GiB, 8,192 tokens, block 16 → 4,128 (line 46 of the 0.32 cases).
    # Before 0.32 (mamba2_prefill_checkpoint_blocks 0): each of the 6 Mamba groups charges
    # 2 pages and the attention group cdiv(8,192, 4,128) = 2: 14 blocks a request, and
    # 50 / 14 = 3.571 → int(3.571 × 8,192) = 29,257 tokens. 0.32's MambaMixer2 adds a
    # prefill checkpoint page: 6 × 3 + 2 = 20 blocks, 2.5 → 20,480 tokens.
    skip_without_shared()
    old = _answer(release, 46)
    new = [json.loads(line) for line in ORACLE_FILE.read_text().splitlines()][46]
    assert old["config"] == new["config"] == "nvidia--Nemotron-H-56B-Base-8K.json"
    assert _expected(old) == (50, 29257, 14)
    assert _expected(new) == (50, 20480, 20)
    assert _planned(old, release) == _expected(old)
    assert _planned(old, "0.32") == _expected(new) != _expected(old)


def _llama_shaped(architecture: str) -> dict[str, Any]:
    """A small Llama-shaped config (written here) naming ``architecture``."""
    return {"architectures": [architecture], "model_type": "llama", "hidden_size": 1024,
            "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8,
            "intermediate_size": 2048, "vocab_size": 32000, "max_position_embeddings": 4096,
            "torch_dtype": "bfloat16"}


def test_an_architecture_a_later_registry_adds_is_refused_by_name() -> None:
    # ExaoneMoEForCausalLM is in vLLM 0.32's model_executor/models/registry.py and not in
    # 0.31's or 0.30's (which spell it ExaoneMoeForCausalLM).
    from kvledger.plan.engines.vllm.errors import VllmLayoutError
    from kvledger.plan.request import PlanRequest

    facts = derive_model(_llama_shaped("ExaoneMoEForCausalLM"))
    ask = {"kv_cache_memory_bytes": 1 << 30, "max_model_len": 4096}
    for release in ("0.31", "0.30"):
        with pytest.raises(VllmLayoutError, match=rf"vLLM {release}'s model registry .* has "
                           "no ExaoneMoEForCausalLM"):
            plan_vllm(facts, PlanRequest(engine=f"vllm=={release}", **ask), 1 << 30)
    # 2 layers x 2 (K, V) x 8 heads x 128 x 2 B = 8,192 B a token, 131,072 B a block of 16:
    # 1 GiB holds 8,192 blocks.
    assert plan_vllm(facts, PlanRequest(engine="vllm==0.32", **ask), 1 << 30).num_blocks == 8192
    # Another architecture 0.30 lists plans as before.
    assert plan_vllm(derive_model(_llama_shaped("LlamaForCausalLM")),
                     PlanRequest(engine="vllm==0.30", **ask), 1 << 30).num_blocks == 8192


def test_an_architecture_030_adds_is_refused_under_028() -> None:
    # Glm5NextForCausalLM (GLM-5.3-Flash) is in vLLM 0.30's model_executor/models/
    # registry.py and not in 0.28's.
    from kvledger.plan.engines.vllm.errors import VllmLayoutError
    from kvledger.plan.request import PlanRequest

    facts = derive_model(_llama_shaped("Glm5NextForCausalLM"))
    ask = {"kv_cache_memory_bytes": 1 << 30, "max_model_len": 4096}
    with pytest.raises(VllmLayoutError, match="vLLM 0.28's model registry .* has no "
                       "Glm5NextForCausalLM"):
        plan_vllm(facts, PlanRequest(engine="vllm==0.28", **ask), 1 << 30)
    assert plan_vllm(facts, PlanRequest(engine="vllm==0.30", **ask), 1 << 30).num_blocks == 8192

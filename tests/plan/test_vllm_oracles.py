"""Every vLLM 0.32 oracle case, planned through the library, must match vLLM exactly.

The expected numbers are vLLM's own (``../shared/oracles/vllm-0.32/cases.jsonl`` and
``coverage-cases.jsonl``, plus the cases this repo ran in ``tests/oracles/``), computed by
vLLM 0.32.0's planner; nothing here is computed by the code under test. A case whose model
family is not implemented fails (it is a real gap), it is not skipped.

Cases whose ``hf_quant_config`` is true are planned with the companion
``<stem>.hf_quant_config.json`` as vLLM saw it. Cases with ``inputs.weights_quant_stripped``
are planned from the *verbatim* config (with its quantization_config): the oracle dropped
that block only because its CPU build has no kernel for those weights, and the block
carries no KV scheme, so vLLM's numbers hold for the file as published.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.request import PlanRequest
from oracle_cases import (
    SHARED_MISSING,
    case_model,
    hf_quant_config,
    load_cases,
    load_coverage_cases,
    load_local_cases,
    request_of,
)

SOURCES = {
    "cases": load_cases(),
    "coverage": load_coverage_cases(),
    "local": load_local_cases(),
}
CASES = [
    pytest.param(case, id=f"{name}-{i:03d}-{case['config'].removesuffix('.json')}"
                          f"-tp{case['inputs']['tensor_parallel_size']}"
                          f"-{case['inputs']['kv_cache_dtype']}"
                          f"-{case['inputs']['max_model_len']}-bs{case['inputs']['block_size']}")
    for name, cases in SOURCES.items()
    for i, case in enumerate(cases)
]
pytestmark = pytest.mark.skipif(not SOURCES["cases"],
                                reason=SHARED_MISSING)


def _request(inputs: dict[str, Any]) -> PlanRequest:
    request: PlanRequest = request_of(inputs)
    return request


_PLANS: dict[int, Any] = {}


def _plan(case: dict[str, Any]) -> Any:
    # One plan per case for the four tests below (planning DeepSeek-scale models is not free).
    key = id(case)
    if key not in _PLANS:
        facts = derive_model(case_model(case), hf_quant_config=hf_quant_config(case))
        _PLANS[key] = plan_vllm(facts, _request(case["inputs"]),
                                case["inputs"]["kv_cache_memory_bytes"])
    return _PLANS[key]


@pytest.mark.parametrize("case", CASES)
def test_matches_vllm(case: dict[str, Any]) -> None:
    plan = _plan(case)
    want = case["expected"]
    got = {
        "num_blocks": plan.num_blocks,
        "kv_cache_tokens": plan.kv_cache_tokens,
        "block_size": plan.block_size,
        "max_concurrency": round(plan.max_concurrency, 2),
        "vllm_refuses_to_start": plan.vllm_refuses_to_start,
    }
    expected = {
        "num_blocks": want["num_blocks"],
        "kv_cache_tokens": want["kv_cache_tokens"],
        "block_size": want["block_size"],
        "max_concurrency": round(want["max_concurrency"], 2),
        "vllm_refuses_to_start": want["vllm_refuses_to_start"],
    }
    assert got == expected


@pytest.mark.parametrize("case", CASES)
def test_bytes_per_block_matches_vllm(case: dict[str, Any]) -> None:
    """Bytes one block spans across all layers (stronger than the block count alone)."""
    assert _plan(case).bytes_per_block == case["expected"]["bytes_per_block"]


@pytest.mark.parametrize("case", CASES)
def test_groups_match_vllm(case: dict[str, Any]) -> None:
    plan = _plan(case)
    got = [
        (g.spec, g.num_layers, g.block_size, g.page_size_bytes,
         g.max_memory_usage_bytes_per_request)
        for g in plan.groups
    ]
    expected = [
        (g["spec"], g["num_layers"], g["block_size"], g["page_size_bytes"],
         g["max_memory_usage_bytes_per_request"])
        for g in case["kv_cache_groups"]
    ]
    assert got == expected


@pytest.mark.parametrize("case", CASES)
def test_resolved_settings_match_vllm(case: dict[str, Any]) -> None:
    """The settings vLLM resolved (the KV cache dtype among them), computed from the config
    and options, never read from the case."""
    plan = _plan(case)
    want = case["vllm_resolved"]
    mine = plan.resolved.as_vllm_resolved()
    mine["mamba_block_size"] = plan.mamba_block_size
    mine["mamba_page_size_padded"] = plan.mamba_page_size_padded
    mine["tp_kv_heads_per_rank"] = plan.tp_kv_heads_per_rank
    assert mine == {k: want[k] for k in mine}

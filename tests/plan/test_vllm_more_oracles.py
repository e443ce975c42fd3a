"""The vLLM 0.32 oracle cases in tests/oracles/vllm-0.32-more.jsonl (made by
tests/oracles/make_vllm_cases.py: NVFP4 checkpoints run with their weight quantization
stripped and their KV scheme passed as --kv-cache-dtype), planned through the library from the
same stripped config: vLLM's own numbers, exact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.plan.request import PlanRequest
from kvledger.plan.vllm import plan_vllm
from oracle_cases import CONFIGS

MORE = Path(__file__).parents[1] / "oracles" / "vllm-0.32-more.jsonl"
CASES = [json.loads(line) for line in MORE.read_text().splitlines() if line.strip()]
pytestmark = pytest.mark.skipif(not CONFIGS.is_dir(), reason="../shared/configs not present")

def _plan(case: dict[str, Any]) -> Any:
    raw = json.loads((CONFIGS / case["config"]).read_text())
    assert case["inputs"]["weights_quant_stripped"]
    raw.pop("quantization_config", None)  # the weights-only part the CPU oracle lacks
    inp = case["inputs"]
    block = inp["block_size"]
    request = PlanRequest(
        engine="vllm", kv_cache_memory_bytes=inp["kv_cache_memory_bytes"],
        block_size=None if block == "auto" else int(block),
        max_model_len=inp["max_model_len"], kv_cache_dtype=inp["kv_cache_dtype"],
        tensor_parallel_size=inp["tensor_parallel_size"], max_num_seqs=inp["max_num_seqs"],
        max_num_batched_tokens=inp["max_num_batched_tokens"],
        enable_prefix_caching=inp["enable_prefix_caching"],
        num_speculative_tokens=inp["num_speculative_tokens"],
        speculative_method=inp["speculative_method"],
    )
    return plan_vllm(derive_model(raw), request, inp["kv_cache_memory_bytes"])


IDS = [f"{c['config'].removesuffix('.json')}-{c['inputs']['kv_cache_dtype']}"
       f"-bs{c['inputs']['block_size']}" for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_vllm(case: dict[str, Any]) -> None:
    plan = _plan(case)
    want = case["expected"]
    got = (plan.num_blocks, plan.kv_cache_tokens, plan.block_size,
           round(plan.max_concurrency, 2), plan.vllm_refuses_to_start, plan.bytes_per_block)
    assert got == (want["num_blocks"], want["kv_cache_tokens"], want["block_size"],
                   round(want["max_concurrency"], 2), want["vllm_refuses_to_start"],
                   want["bytes_per_block"])
    groups = [(g.spec, g.num_layers, g.block_size, g.page_size_bytes,
               g.max_memory_usage_bytes_per_request) for g in plan.groups]
    assert groups == [(g["spec"], g["num_layers"], g["block_size"], g["page_size_bytes"],
                       g["max_memory_usage_bytes_per_request"])
                      for g in case["kv_cache_groups"]]

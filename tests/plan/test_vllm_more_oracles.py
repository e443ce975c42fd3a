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
from kvledger.plan.engines.vllm import plan_vllm
from oracle_cases import CONFIGS, SHARED_MISSING, assert_plan_is, request_of

MORE = Path(__file__).parents[1] / "oracles" / "vllm-0.32-more.jsonl"
CASES = [json.loads(line) for line in MORE.read_text().splitlines() if line.strip()]
pytestmark = pytest.mark.skipif(not CONFIGS.is_dir(), reason=SHARED_MISSING)

def _plan(case: dict[str, Any]) -> Any:
    raw = json.loads((CONFIGS / case["config"]).read_text())
    assert case["inputs"]["weights_quant_stripped"]
    raw.pop("quantization_config", None)  # the weights-only part the CPU oracle lacks
    inp = case["inputs"]
    return plan_vllm(derive_model(raw), request_of(inp), inp["kv_cache_memory_bytes"])


IDS = [f"{c['config'].removesuffix('.json')}-{c['inputs']['kv_cache_dtype']}"
       f"-bs{c['inputs']['block_size']}" for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_vllm(case: dict[str, Any]) -> None:
    plan = _plan(case)
    assert_plan_is(plan, case)

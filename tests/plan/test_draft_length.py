"""A separate draft model shorter than the target lowers ``max_model_len`` in vLLM 0.33 under
Model Runner V2 (``config/vllm.py VllmConfig._limit_max_model_len_to_draft``; not in 0.32),
unless the draft shares the target's positions (``SpeculativeConfig.
draft_shares_target_positions``: not ``draft_model``, and every RoPE type cache-only).

The shared oracle tool takes no draft model, and its CPU platform has no Triton, so
``use_v2_model_runner`` is false there and the limit never runs. ``tests/oracles/
run_draft_oracle.py`` asks vLLM 0.33's own config instead, with the draft put in
``speculative_config`` and ``VLLM_USE_V2_MODEL_RUNNER=1``; its answers
(``vllm-0.33-draft-limit.jsonl``) are replayed at the end. The other expected numbers are the
configs' own values worked by hand.

Target Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a token, a
16-token block 2,097,152 B; 10 GiB / 2,097,152 = 5,120 blocks. Draft: SpecForge's EAGLE3
draft for it, ``max_position_embeddings`` 2,048, no ``rope_scaling`` (RoPE "default").
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.draft_length import draft_fields, limited_max_model_len
from kvledger.plan.engines.vllm.launch import VllmLaunch
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS

TARGET = CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"
DRAFT = CONFIGS / "sgl-project--SpecForge-llama3-8B-eagle3.json"
GIB10 = 10 << 30


def _configs() -> tuple[dict[str, Any], dict[str, Any]]:
    if not (TARGET.is_file() and DRAFT.is_file()):
        pytest.skip("the configs are in ../shared/configs")
    return json.loads(TARGET.read_text()), json.loads(DRAFT.read_text())


def _plan(method: str, draft: dict[str, Any], engine: str = "vllm==0.33") -> Any:
    target, _ = _configs()
    request = PlanRequest(engine=engine, kv_cache_memory_bytes=GIB10, max_model_len=32768,
                          speculative_method=method, num_speculative_tokens=3,
                          vllm_launch=VllmLaunch(**draft_fields(draft)))
    return plan_vllm(derive_model(target), request, GIB10)


def test_draft_fields_of_the_eagle3_config() -> None:
    _, draft = _configs()
    assert draft_fields(draft) == {"draft_max_model_len": 2048,
                                   "draft_rope_types": ("default",)}


def test_draft_model_method_lowers_max_model_len() -> None:
    _, draft = _configs()
    plan = _plan("draft_model", draft)
    # 2,048 tokens = 128 blocks a request; 5,120 / 128 = 40.0x; 40 x 2,048 = 81,920 tokens.
    assert (plan.max_model_len, plan.num_blocks, plan.max_concurrency,
            plan.kv_cache_tokens) == (2048, 5120, 40.0, 81920)
    assert any("reducing max_model_len to 2048" in w for w in plan.warnings)


def test_vllm_032_keeps_the_target_length() -> None:
    _, draft = _configs()
    plan = _plan("draft_model", draft, engine="vllm==0.32")
    # 32,768 tokens = 2,048 blocks a request: 5,120 / 2,048 = 2.5x.
    assert (plan.max_model_len, plan.max_concurrency) == (32768, 2.5)


def test_eagle3_with_default_rope_shares_the_target_positions() -> None:
    _, draft = _configs()
    plan = _plan("eagle3", draft)
    assert plan.max_model_len == 32768
    assert not any("reducing max_model_len" in w for w in plan.warnings)


def test_eagle3_with_yarn_rope_is_limited() -> None:
    # The same draft config with a yarn rope_scaling added (a test variant, not a published
    # config): "yarn" is not in _CACHE_ONLY_ROPE_TYPES, so vLLM keeps the draft's length —
    # 2,048, yarn's factor not applied (_get_and_verify_max_len) — and limits to it.
    _, draft = _configs()
    yarn = {**draft, "rope_scaling": {"rope_type": "yarn", "factor": 2.0,
                                      "original_max_position_embeddings": 2048}}
    assert _plan("eagle3", yarn).max_model_len == 2048
    # "dynamic" is not cache-only either, and its factor applies: 2,048 x 2 = 4,096.
    dynamic = {**draft, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
    assert _plan("eagle3", dynamic).max_model_len == 4096


def test_rule_alone() -> None:
    # A draft at least as long as the target, or no draft length: nothing changes.
    assert limited_max_model_len(4096, "draft_model", 8192, (), "vLLM 0.33") == (4096, None)
    assert limited_max_model_len(4096, "draft_model", None, (), "vLLM 0.33") == (4096, None)
    assert limited_max_model_len(4096, "mtp", 1024, (), "vLLM 0.33") == (4096, None)
    length, note = limited_max_model_len(4096, "eagle", 1024, ("dynamic",), "vLLM 0.33")
    assert length == 1024 and note is not None and "(1024)" in note and "(4096)" in note


def test_unreadable_draft_config_is_one_line_exit_2(tmp_path: Any,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    _configs()
    bad = tmp_path / "draft.json"
    bad.write_text("{not json")
    code = main(["plan", str(TARGET), "--kv-cache-memory-bytes", "10GiB", "--max-model-len",
                 "32768", "--speculative-method", "draft_model", "--num-speculative-tokens",
                 "3", "--draft-config", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and "--draft-config" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


DRAFT_CASES = Path(__file__).parents[1] / "oracles" / "vllm-0.33-draft-limit.jsonl"


def _draft_cases() -> list[dict[str, Any]]:
    if not DRAFT_CASES.is_file():
        return []
    return [json.loads(line) for line in DRAFT_CASES.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("case", _draft_cases(), ids=lambda c: c["command"][15:70])
def test_matches_vllm_033_draft_limit(case: dict[str, Any]) -> None:
    # vLLM 0.33's own config (tests/oracles/run_draft_oracle.py: create_engine_config with
    # the draft in speculative_config and VLLM_USE_V2_MODEL_RUNNER=1). Only max_model_len is
    # compared: vLLM's KV plan would hold the draft's own layers too, which kvledger does not
    # plan; the budget here is only large enough for one request at the target's length.
    assert "resolved" in case, case.get("error")
    target, draft = CONFIGS / case["target"], CONFIGS / case["draft"]
    if not (target.is_file() and draft.is_file()):
        pytest.skip("the configs are in ../shared/configs")
    found = re.search(r"--max-model-len (\d+)", case["command"])
    budget = 40 << 30
    request = PlanRequest(
        engine="vllm", kv_cache_memory_bytes=budget,
        max_model_len=int(found[1]) if found else None,
        speculative_method=case["method"], num_speculative_tokens=3,
        vllm_launch=VllmLaunch(**draft_fields(json.loads(draft.read_text()))))
    plan = plan_vllm(derive_model(json.loads(target.read_text())), request, budget)
    assert case["resolved"]["use_v2_model_runner"] is True
    assert plan.max_model_len == case["resolved"]["max_model_len"]
    if not found:  # Qwen3-32B at its own 40,960: vLLM lowered it and said so
        # (the run's log: "The draft model's max_model_len (32768) is smaller than the
        # target model's (40960) and ... reducing max_model_len to 32768.")
        assert any("The draft model's max_model_len (32768) is smaller than the target "
                   "model's (40960)" in w for w in plan.warnings)


def test_there_are_draft_limit_cases() -> None:
    cases = _draft_cases()
    assert cases and all("resolved" in c for c in cases)

"""What vLLM 0.33 does with the oracle questions it could not plan: the runs that stopped at
start-up on a config key its model class reads (kvledger refuses naming the key) or on a bare
``assert`` (kvledger quotes it), and the verbatim fbgemm_fp8 checkpoint it refuses as
deprecated. The planned cases themselves are replayed by ``test_vllm_oracles.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.errors import VllmRefusesToStart
from kvledger.plan.engines.vllm.resolve import VllmLayoutError
from kvledger.plan.request import PlanRequest
from oracle_cases import CLASS_DEFAULT_CONFIGS, case_model, real_config, request_of

HERE = Path(__file__).resolve().parents[1] / "oracles" / "vllm-0.33"


def _startup_stops() -> list[Any]:
    """The new-behaviour runs vLLM 0.33 stopped on a config key its model class reads."""
    path = HERE / "vllm-0.33-new-behaviour.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
    return [c for c in lines if "has no attribute" in str(c.get("error", ""))]


@pytest.mark.parametrize("case", _startup_stops(), ids=lambda c: c["config"])
def test_startup_stops_are_refused_naming_the_key(case: dict[str, Any]) -> None:
    # vLLM 0.33's own error: "'QianfanOCRConfig' object has no attribute 'force_image_size'".
    key = re.search(r"has no attribute '(\w+)'", case["error"])
    assert key is not None
    config = json.loads((CLASS_DEFAULT_CONFIGS / case["config"].removeprefix(
        "class-default-configs/")).read_text())
    with pytest.raises(VllmRefusesToStart, match=key[1]):
        plan_vllm(derive_model(config), PlanRequest(engine="vllm==0.33", max_model_len=4096,
                                                    kv_cache_memory_bytes=8 << 30), 8 << 30)


def test_there_is_a_startup_stop_case() -> None:
    assert any("qianfan_ocr" in c["config"] for c in _startup_stops())


def _bare_asserts() -> list[Any]:
    """The new-behaviour runs vLLM 0.33 stopped on a bare ``assert`` (no message: the traceback
    the oracle printed says which)."""
    path = HERE / "vllm-0.33-new-behaviour.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
    return [c for c in lines if str(c.get("error", "")).startswith("AssertionError")
            and c.get("traceback_tail")]


@pytest.mark.parametrize("case", _bare_asserts(), ids=lambda c: c["config"])
def test_bare_asserts_are_refused_quoting_the_assert(case: dict[str, Any]) -> None:
    # The traceback's last source line is vLLM's assert: "assert config.tie_word_embeddings"
    # (cohere_compass.py CohereCompassForCausalLM.__init__); kvledger quotes it.
    said = [line.strip() for line in case["traceback_tail"].splitlines()
            if line.strip().startswith("assert ")]
    assert said
    config = json.loads((CLASS_DEFAULT_CONFIGS / case["config"].removeprefix(
        "class-default-configs/")).read_text())
    with pytest.raises(VllmRefusesToStart, match=re.escape(said[-1])):
        plan_vllm(derive_model(config), PlanRequest(engine="vllm==0.33", max_model_len=4096,
                                                    kv_cache_memory_bytes=8 << 30), 8 << 30)


def test_there_is_a_bare_assert_case() -> None:
    assert any("cohere_compass" in c["config"] for c in _bare_asserts())


def _fbgemm_cases() -> list[dict[str, Any]]:
    cases = [json.loads(line) for name in ("vllm-0.33-heldout.jsonl",
                                           "vllm-0.33-refusals-heldout.jsonl")
             for line in (HERE / name).read_text().splitlines() if line.strip()]
    return [c for c in cases if "405B-Instruct-FP8" in c["config"] and "expected" in c]


def test_fbgemm_cases_are_replayed_stripped() -> None:
    # The oracle ran the 405B FP8 questions on a copy without quantization_config (the CUDA
    # wheel builds no fp8 weights on CPU): test_vllm_oracles.py replays that copy.
    cases = _fbgemm_cases()
    assert len(cases) == 2
    assert all(c["inputs"]["weights_quant_stripped"] is True for c in cases)


def test_verbatim_fbgemm_file_is_refused_as_vllm_033_refuses_it() -> None:
    # fbgemm_fp8 is still in 0.33's DEPRECATED_QUANTIZATION_METHODS (quantization/__init__.py):
    # ModelConfig._verify_quantization raises without --allow-deprecated-quantization.
    case = _fbgemm_cases()[0]
    model = case_model(case)
    raw = model if isinstance(model, dict) else real_config(case["config"])
    assert raw["quantization_config"]["quant_method"] == "fbgemm_fp8"
    with pytest.raises(VllmLayoutError, match="fbgemm_fp8 is deprecated"):
        plan_vllm(derive_model(raw), request_of(case["inputs"], engine="vllm==0.33"),
                  case["inputs"]["kv_cache_memory_bytes"])

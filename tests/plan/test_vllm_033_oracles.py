"""Every vLLM 0.33 oracle case, planned through the library as ``--engine vllm`` (0.33.0, the
default), must match vLLM 0.33.0 exactly: blocks, tokens, block size, concurrency, the refusal
flag, bytes a block and every KV cache group.

The expected numbers are vLLM 0.33.0's own: ``tests/oracles/make_vllm_033_cases.py`` re-asked
the 0.32 oracle questions with ``../shared/oracles/tool-0.33/vllm_oracle.py`` (its docstring
has the command), plus the questions that show what 0.33 changed
(``vllm-0.33-new-behaviour.jsonl``). The oracle emulates a CUDA worker of the capability in a
case's command (``--gpu-capability``, 9.0 unless stated); kvledger is asked for the same GPU
(SM90: no ``--gpu``, which assumes it; 10.0: a B200; 8.0: an A100). Not emulated by that
oracle (its README): FlashMLA's fp8 block of 64 on SM90 (test_mla_backends.py, from source),
GLM-5-next's fp8 under ``auto`` on SM100 (test_engine_releases.py, from source; the
explicit fp8 question is exact), Model Runner V2 unless ``VLLM_USE_V2_MODEL_RUNNER=1`` forces
it (``--env`` in a case's command: make_vllm_033_cases.py).
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
from oracle_cases import (
    CLASS_DEFAULT_CONFIGS,
    CONFIGS,
    assert_plan_is,
    case_model,
    config_path,
    hf_quant_config,
    real_config,
    request_of,
)

HERE = Path(__file__).resolve().parents[1] / "oracles" / "vllm-0.33"
GPU_OF = {"9.0": None, "10.0": "B200", "8.0": "A100-80GB"}
# Cases kvledger does not match yet, each marked strict (it fails the day it matches, so the
# mark is removed then) and listed in the closing note of the change that added them.
KNOWN: dict[tuple[str, ...], str] = {
    # SM100 under --kv-cache-dtype auto (this one question, EXTRA line 7): the emulating
    # oracle keeps a bf16 cache — Glm5NextModelConfig.verify_and_update_config
    # (model_executor/models/config.py) returns early when current_platform.is_cuda() is
    # false, and the oracle's platform is the CPU one — where a real B200 stores fp8, as
    # kvledger does (test_engine_releases.py). That fp8 plan is the oracle's own answer to
    # the explicit --kv-cache-dtype fp8 question (EXTRA line 21, exact): the hook sets
    # cache_dtype "fp8", the same string. (The 202,752 B a block once also differing at
    # bf16 was FLASHINFER_MLA_SPARSE's 32-row block stride, now modelled:
    # sparse_mla_backends.py; EXTRA line 20 is exact.)
    ("vllm-0.33-new-behaviour", "zai-org--GLM-5.3-Flash.json", "EXTRA:7"):
        "GLM-5.3-Flash on SM100 under auto: fp8 from the model hook (off CUDA the "
        "emulation's hook returns early and keeps bf16)",
    # ngram speculation: the oracle runs vLLM's V1 model runner (its CPU platform has no
    # Triton, so VllmConfig.use_v2_model_runner is false) and turns async scheduling off; a
    # GPU runs Model Runner V2, where 0.33 keeps it on. The same question with
    # VLLM_USE_V2_MODEL_RUNNER=1 (read before the Triton check) is the GPU's answer, and
    # kvledger matches it exactly (vllm-0.33-new-behaviour.jsonl, EXTRA line 24: 209,551
    # tokens, 16,384 in flight).
    ("vllm-0.33-cases", "mistralai--Mistral-7B-v0.1.json"):
        "ngram: the oracle's V1 runner turns async off, a GPU's Model Runner V2 keeps it",
    # An fp8 MLA cache (ModelOpt fp8 KV under auto) on SM90: vLLM picks FLASHMLA, exactly
    # 64-token kernel blocks (test_mla_backends.py, from source); the CPU oracle has no
    # FlashMLA kernel, falls back to TRITON_MLA and reports 16.
    ("vllm-0.33-heldout", "nvidia--Kimi-K2.6-NVFP4.json"):
        "fp8 MLA on SM90: FlashMLA's 64 (source) vs the CPU oracle's TRITON_MLA 16",
}


# Files of the runners whose questions the shared tool cannot ask (run_remote_oracle.py,
# run_tfbackend_oracle.py, run_pp_oracle.py, run_tokenizer_len_oracle.py): each has its own
# replay (test_vllm_remote.py, test_vllm_tfbackend.py, test_vllm_pp_support.py,
# test_vllm_sentence_len.py), which builds the config and the request as that runner did.
OTHER_RUNNERS = ("vllm-0.33-remote", "vllm-0.33-tfbackend", "vllm-0.33-pp-startup",
                 "vllm-0.33-tokenizer-len")


def _cases() -> list[Any]:
    out = []
    for path in sorted(HERE.glob("*.jsonl")):
        if path.stem in OTHER_RUNNERS:
            continue
        for i, line in enumerate(path.read_text().splitlines()):
            case = json.loads(line)
            if "expected" not in case or "tp" in case["inputs"]:
                continue  # a failed run (its error is the line), or a PP/other runner's
            source = case.get("source", {})
            why = KNOWN.get((path.stem, case["config"])) or KNOWN.get(
                (path.stem, case["config"], f"{source.get('file')}:{source.get('line')}"))
            marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
            out.append(pytest.param(case, id=f"{path.stem}-{i:03d}-"
                                    f"{case['config'].removesuffix('.json')}", marks=marks))
    return out


CASES = _cases()
pytestmark = pytest.mark.skipif(not CONFIGS.is_dir() and not CASES,
                                reason="no 0.33 oracle cases")


def _capability(case: dict[str, Any]) -> str:
    found = re.search(r"--gpu-capability (\S+)", case.get("command", ""))
    return found[1] if found else "9.0"


def _request(case: dict[str, Any]) -> PlanRequest:
    # Asked as the oracle was: without --max-model-len a config stating no length gets
    # vLLM's 2,048 (falcon-mamba-7b.mlstm), which kvledger assumes too.
    request: PlanRequest = request_of(case["inputs"], engine="vllm",
                                      gpu=GPU_OF[_capability(case)])
    return request


def _as_asked(case: dict[str, Any]) -> tuple[str | dict[str, Any], dict[str, Any] | None]:
    """(model, companion) as the oracle's vLLM saw them. ``inputs.weights_quant_stripped``: the
    oracle ran a copy (make_vllm_033_cases.py ``stripped_copy``) — True: without
    ``quantization_config`` and without the companion; "weights part only": a
    compressed-tensors block without ``config_groups`` / ``ignore``, the companion kept. The
    verbatim file's own answer (e.g. fbgemm_fp8's refusal) has its own test."""
    stripped = case["inputs"].get("weights_quant_stripped")
    if not stripped:
        return case_model(case), hf_quant_config(case)
    name = case["config"]
    raw = (json.loads(config_path(case).read_text()) if name.startswith("class-default-configs/")
           else real_config(name))
    if stripped == "weights part only":
        qc = raw["quantization_config"]
        raw["quantization_config"] = {k: v for k, v in qc.items()
                                      if k not in ("config_groups", "ignore")}
        return raw, hf_quant_config(case)
    raw.pop("quantization_config", None)
    return raw, None


@pytest.mark.parametrize("case", CASES)
def test_matches_vllm_033(case: dict[str, Any]) -> None:
    model, companion = _as_asked(case)
    facts = derive_model(model, hf_quant_config=companion)
    request = _request(case)
    assert request.engine_release is None  # the default: the newest release, 0.33.0
    plan = plan_vllm(facts, request, case["inputs"]["kv_cache_memory_bytes"])
    assert_plan_is(plan, case)


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
        plan_vllm(derive_model(config), PlanRequest(engine="vllm", max_model_len=4096,
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
        plan_vllm(derive_model(config), PlanRequest(engine="vllm", max_model_len=4096,
                                                    kv_cache_memory_bytes=8 << 30), 8 << 30)


def test_there_is_a_bare_assert_case() -> None:
    assert any("cohere_compass" in c["config"] for c in _bare_asserts())


def _fbgemm_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = [p.values[0] for p in CASES]
    return [c for c in cases if "405B-Instruct-FP8" in c["config"]]


def test_fbgemm_cases_are_replayed_stripped() -> None:
    # The oracle ran the 405B FP8 questions on a copy without quantization_config (the CUDA
    # wheel builds no fp8 weights on CPU): test_matches_vllm_033 replays that copy.
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
        plan_vllm(derive_model(raw), _request(case), case["inputs"]["kv_cache_memory_bytes"])

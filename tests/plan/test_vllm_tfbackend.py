"""Model types vLLM dropped from its own models but hands to its Transformers backend:
what vLLM really does with them (tests/oracles/vllm-0.32/vllm-0.32-tfbackend.jsonl, made by
tests/oracles/run_tfbackend_oracle.py with the processor files the shared tool cannot supply;
0.33's answers to the same questions in vllm-0.33/vllm-0.33-tfbackend.jsonl, ``--vllm 0.33``),
replayed through the library as each release. ``_PREVIOUSLY_SUPPORTED_MODELS`` and the
backend's attention layers (transformers/base.py ``_create_attention_instances``) read the same
in both releases.

- A run vLLM served, for a model type kvledger plans (persimmon): the plan is vLLM's, exact.
- A run where vLLM stopped (Llama-3.2-Vision with images on, Mllama's text model alone):
  kvledger's vLLM layout refuses, quoting vLLM's own message, and no longer claims the
  "was supported until" message vLLM never reaches for them. MPT, whose transformers class
  does not take vLLM's attention, does get that message, and kvledger quotes it.
- A run that only a flag kvledger does not take makes work (--language-model-only), or of a
  type kvledger derives nothing for (aya_vision): the refusal says what vLLM does, and the
  numbers it states are the run's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from derive.coverage import vllm_facts
from kvledger.derive import UnsupportedArchitecture, derive_model
from kvledger.derive.errors import ConfigError
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.errors import VllmLayoutError
from kvledger.plan.engines.vllm.releases import vllm_release
from kvledger.plan.request import PlanRequest
from oracle_cases import assert_plan_is, real_config, request_of

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "tests" / "oracles" / "vllm-0.32" / "vllm-0.32-tfbackend.jsonl"
# release -> (its file, the --engine that plans as it)
RELEASE_FILES = {
    "0.32": (FILE, "vllm==0.32"),
    "0.33": (ROOT / "tests" / "oracles" / "vllm-0.33" / "vllm-0.33-tfbackend.jsonl",
             "vllm==0.33"),
}
RELEASE_CASES = [(release, json.loads(line)) for release, (path, _) in RELEASE_FILES.items()
                 if path.is_file() for line in path.read_text().splitlines() if line.strip()]
CASES = [case for release, case in RELEASE_CASES if release == "0.32"]


def _config(case: dict[str, Any]) -> dict[str, Any]:
    """The config.json the run put in its model directory (run_tfbackend_oracle._config)."""
    name, *lifted = case["config"].split(":")
    raw = real_config(name)
    if lifted:
        key, arch = lifted
        raw = {**raw[key], "architectures": [arch]}
    return raw


def _request(case: dict[str, Any], release: str = "0.32") -> PlanRequest:
    request: PlanRequest = request_of(case["inputs"], engine=RELEASE_FILES[release][1])
    return request


def _served(case: dict[str, Any]) -> bool:
    return "expected" in case and not case["engine_args"] and \
        not case["config"].startswith("class:")


SERVED = [c for c in CASES if _served(c)]
STOPPED = [c for c in CASES if "vllm_refuses_to_start_with" in c]
TEXT_ONLY = [c for c in CASES if c["engine_args"].get("language_model_only")]
SERVED_BY = [(r, c) for r, c in RELEASE_CASES if _served(c)]
STOPPED_BY = [(r, c) for r, c in RELEASE_CASES if "vllm_refuses_to_start_with" in c]
TEXT_ONLY_BY = [(r, c) for r, c in RELEASE_CASES if c["engine_args"].get("language_model_only")]


def _id(case: dict[str, Any]) -> str:
    return case["command"].rsplit(" ", 1)[-1] + "-" + case["config"].split(":")[0][:40]


def test_the_file_holds_every_kind_of_answer() -> None:
    assert len(SERVED) >= 4 and len(STOPPED) >= 3 and len(TEXT_ONLY) >= 3
    for kind in (SERVED_BY, STOPPED_BY, TEXT_ONLY_BY):  # and each release has each kind
        assert {r for r, _ in kind} == set(RELEASE_FILES)


@pytest.mark.parametrize(("release", "case"), SERVED_BY,
                         ids=[f"{r}-{_id(c)}" for r, c in SERVED_BY])
def test_served_through_the_transformers_backend_as_vllm(release: str,
                                                         case: dict[str, Any]) -> None:
    assert case["vllm_resolved"]["architecture"] == "TransformersForCausalLM"
    request = _request(case, release)
    plan = plan_vllm(derive_model(_config(case)), request, request.kv_cache_memory_bytes)
    assert_plan_is(plan, case)


def test_persimmon_by_hand() -> None:
    # PersimmonConfig defaults: 36 layers, 64 heads (KV heads = heads, no
    # num_key_value_heads), hidden 4096 -> head dim 64. A bf16 block of 16 tokens per layer:
    # 2 (K, V) * 16 * 64 * 64 * 2 B = 262,144 B; 36 layers -> 9,437,184 B a block;
    # 16 GiB // 9,437,184 = 1,820 blocks (the oracle's run 5 says the same).
    case = next(c for c in SERVED if c["inputs"]["max_model_len"] == 8192
                and c["inputs"]["kv_cache_dtype"] == "auto")
    request = _request(case)
    plan = plan_vllm(derive_model(_config(case)), request, request.kv_cache_memory_bytes)
    assert plan.bytes_per_block == 2 * 16 * 64 * 64 * 2 * 36
    assert plan.num_blocks == 16 * 2**30 // (2 * 16 * 64 * 64 * 2 * 36) == 1820


@pytest.mark.parametrize(("release", "case"), STOPPED_BY,
                         ids=[f"{r}-{_id(c)}" for r, c in STOPPED_BY])
def test_where_vllm_stops_kvledger_refuses_in_vllms_words(release: str,
                                                          case: dict[str, Any]) -> None:
    raw = _config(case)
    reason = vllm_release(release).not_served[raw["model_type"]]
    said = case["vllm_refuses_to_start_with"]
    if "was supported in vLLM until" in said:
        # the Transformers backend did not take it (mpt): the dropped wording, quoted
        quoted = re.search(r"\('(.+)'\)", reason)
        assert quoted is not None and quoted[1] in said
        # derive reads MPT's schema (transformers' MptAttention, for the native layout); the
        # vLLM layout refuses it, in vLLM's words, once the facts are known.
        with pytest.raises(VllmLayoutError, match=re.escape(quoted[1])):
            plan_vllm(derive_model(raw), _request_or_default(case, release), 2**34)
        return
    assert said in reason
    assert "was supported in vLLM until" not in reason  # vLLM never gets that far
    if raw["model_type"] == "mllama_text_model":
        # derive refuses the lifted text config first: it sizes nothing without its wrapper
        with pytest.raises(ConfigError, match="outside its wrapper"):
            derive_model(raw)
        return
    with pytest.raises(VllmLayoutError) as err:
        plan_vllm(derive_model(raw), _request_or_default(case, release), 2**34)
    assert str(err.value).endswith(f"{reason}; use --engine native")


def _request_or_default(case: dict[str, Any], release: str) -> PlanRequest:
    return PlanRequest(engine=RELEASE_FILES[release][1], kv_cache_memory_bytes=2**34,
                       max_model_len=int(case["oracle_args"][1]))


@pytest.mark.parametrize(("release", "case"), TEXT_ONLY_BY,
                         ids=[f"{r}-{_id(c)}" for r, c in TEXT_ONLY_BY])
def test_text_only_mllama_is_what_the_refusal_says(release: str, case: dict[str, Any]) -> None:
    # The refusal says: with --language-model-only every text layer, the cross-attention
    # ones too, gets an ordinary full-attention KV cache. The config's text model: 4 layers
    # (layer 2 cross-attention), 8 KV heads, head dim 8192 // 64 = 128.
    text = _config(case)["text_config"]
    assert case["vllm_resolved"]["architecture"] == "TransformersMultiModalForCausalLM"
    [spec] = case["layer_specs"]
    assert spec["spec"] == "FullAttentionSpec" and spec["sliding_window"] is None
    assert spec["num_layers"] == text["num_hidden_layers"] == 4
    assert text["cross_attention_layers"] == [2]
    tp = case["inputs"]["tensor_parallel_size"]
    assert spec["num_kv_heads"] == text["num_key_value_heads"] // tp
    assert spec["head_size"] == text["hidden_size"] // text["num_attention_heads"] == 128
    assert "--language-model-only" in vllm_release(release).not_served["mllama"]


def test_aya_vision_refusal_states_the_runs_layers() -> None:
    [case] = [c for c in CASES if "AyaVisionConfig" in c["config"]]
    assert case["vllm_resolved"]["architecture"] == "TransformersMultiModalForCausalLM"
    count = {s["spec"]: s["num_layers"] for s in case["layer_specs"]}
    with pytest.raises(UnsupportedArchitecture) as err:
        vllm_facts({"model_type": "aya_vision",
                    "architectures": ["AyaVisionForConditionalGeneration"]})
    assert re.search(rf"{count['SlidingWindowSpec']} sliding-window and "
                     rf"{count['FullAttentionSpec']} full-attention layers", str(err.value))
    assert "vLLM starts" in str(err.value)

"""The KV cache dtype vLLM 0.32 resolves, and the start-up refusals it raises over it.

Expected values are vLLM's own: ``vllm_resolved.cache_dtype`` and the error message of every
oracle case (``../shared/oracles/vllm-0.32``, ``tests/oracles/``). The rules under test are
read from vLLM's source (``kvledger.plan.engines.vllm.cache_dtype`` cites each function); the
hand-made cases at the end each quote the source line that decides them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.derive.layers import Kind
from kvledger.plan.engines.vllm import VllmLayoutError, plan_vllm
from kvledger.plan.engines.vllm.cache_dtype import cache_dtype_for
from kvledger.plan.request import PlanRequest
from oracle_cases import (
    LOCAL_DIR,
    SHARED_MISSING,
    case_model,
    config_path,
    hf_quant_config,
    load_cases,
    load_coverage_cases,
    load_local_cases,
)

ALL_CASES = [*load_cases(), *load_coverage_cases(), *load_local_cases()]
REFUSALS_FILES = (LOCAL_DIR / "vllm-0.32" / "vllm-0.32-refusals.jsonl",
                  LOCAL_DIR / "vllm-0.32" / "vllm-0.32-refusals-heldout.jsonl")
REFUSALS = [json.loads(line) for path in REFUSALS_FILES if path.is_file()
            for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.skipif(not ALL_CASES, reason=SHARED_MISSING)
@pytest.mark.parametrize(
    "case", ALL_CASES,
    ids=[f"{i:03d}-{c['config'].removesuffix('.json')}-{c['inputs']['kv_cache_dtype']}"
         for i, c in enumerate(ALL_CASES)],
)
def test_cache_dtype_matches_vllm(case: dict[str, Any]) -> None:
    """Decided from config.json, its companion and the option alone, so it covers the cases
    whose model family kvledger cannot derive yet (Qwen3-VL, MiniMax-M2.x, Nemotron-3-Ultra)."""
    config = json.loads(config_path(case).read_text())
    kinds = frozenset({Kind.MLA} if case["vllm_resolved"]["use_mla"] else {Kind.FULL})
    got = cache_dtype_for(config, hf_quant_config(case), kinds,
                          case["inputs"]["kv_cache_dtype"])
    assert got.cache_dtype == case["vllm_resolved"]["cache_dtype"]


def _vllm_reason(error: str) -> str:
    """The first sentence of vLLM's message, without the exception type or pydantic frame."""
    text = error.split("Value error, ", 1)[-1]
    text = re.sub(r"^[A-Za-z]+Error: ", "", text)
    # A ValueError raised with logger-style arguments prints as ('... %s ...', 'value').
    logged = re.match(r"^\('((?:[^'\\]|\\.)*)', '([^']*)'\)", text)
    if logged:
        text = logged.group(1).replace("%s", logged.group(2), 1)
    text = re.split(r"\. | \[type=|\n", text, maxsplit=1)[0]
    # The backend selector prints its whole config; the reason is what precedes it.
    return text.split(" with AttentionSelectorConfig", 1)[0]


def _request(extra_args: list[str]) -> PlanRequest:
    """The oracle's engine options (its own names) as a request."""
    opts = dict(zip(extra_args[::2], extra_args[1::2], strict=False))
    block = opts.get("--block-size", "16")
    return PlanRequest(
        engine="vllm==0.32", kv_cache_memory_bytes=16 << 30,
        block_size=None if block == "auto" else int(block),
        max_model_len=int(opts.get("--max-model-len", "32768")),
        kv_cache_dtype=opts.get("--kv-cache-dtype", "auto"),
        tensor_parallel_size=int(opts.get("--tp", "1")),
    )


@pytest.mark.parametrize("case", REFUSALS, ids=[r["config"] for r in REFUSALS])
def test_refuses_as_vllm_does(case: dict[str, Any]) -> None:
    """vLLM refused to start for these (its message is in the case); kvledger's vLLM layout
    must refuse with the same reason. Facts are derived as a user's plan derives them (no
    override): derive states the cache, and the engine's layout is what refuses."""
    facts = derive_model(case_model(case), hf_quant_config=hf_quant_config(case))
    with pytest.raises(VllmLayoutError) as raised:
        plan_vllm(facts, _request(case["extra_args"]), 16 << 30)
    assert _vllm_reason(case["error"]) in str(raised.value)
    assert str(raised.value).startswith("vLLM 0.32 refuses to start")


# -- rules read from source, on real configs with one key changed ------------------------------

_LLAMA = config_path({"config": "meta-llama--Meta-Llama-3.1-8B.json"})
LLAMA_8B: dict[str, Any] = json.loads(_LLAMA.read_text()) if _LLAMA.is_file() else {}
FULL = frozenset({Kind.FULL})
MLA = frozenset({Kind.MLA})
MODELOPT_HFQ = {"producer": {"name": "modelopt", "version": "0.23.0"},
                "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}

needs_configs = pytest.mark.skipif(not LLAMA_8B, reason=SHARED_MISSING)


@needs_configs
def test_hf_quant_config_is_ignored_when_config_json_has_a_block() -> None:
    # transformers_utils/config.py get_config: hf_quant_config.json is read only when
    # config.json has no quantization_config (Qwen3.6-35B-A3B-NVFP4: inline ModelOpt block
    # without a KV key, FP8 KV in the companion → vLLM stores the model dtype).
    config = {**LLAMA_8B, "quantization_config": {"quant_method": "modelopt",
                                                  "quant_algo": "NVFP4"}}
    assert cache_dtype_for(config, MODELOPT_HFQ, FULL, "auto").cache_dtype == "auto"
    assert cache_dtype_for(LLAMA_8B, MODELOPT_HFQ, FULL, "auto").cache_dtype == "fp8_e4m3"


@needs_configs
def test_modelopt_needs_its_producer_or_method() -> None:
    # _normalize_quantization_config sets quant_method only for producer.name "modelopt";
    # get_kv_cache_quant_algo_string reads only quant_method "modelopt*".
    anonymous = {"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}
    assert cache_dtype_for(LLAMA_8B, anonymous, FULL, "auto").cache_dtype == "auto"


@needs_configs
def test_modelopt_scheme_object_needs_dynamic_false() -> None:
    # get_kv_cache_quant_algo_string: {dynamic: False, num_bits: 8, type: float} → fp8;
    # {num_bits: 4, type: float} → nvfp4; any other object → "auto" (with a warning).
    def block(scheme: dict[str, Any]) -> dict[str, Any]:
        return {**LLAMA_8B, "quantization_config": {"quant_method": "modelopt",
                                                    "kv_cache_scheme": scheme}}

    fp8 = {"dynamic": False, "num_bits": 8, "type": "float"}
    assert cache_dtype_for(block(fp8), None, FULL, "auto").cache_dtype == "fp8_e4m3"
    assert cache_dtype_for(block({"num_bits": 8, "type": "float"}), None, FULL,
                           "auto").cache_dtype == "auto"
    assert cache_dtype_for(block({"num_bits": 4, "type": "float"}), None, FULL,
                           "auto").cache_dtype == "nvfp4"


@needs_configs
def test_fp8_weight_checkpoint_keeps_model_dtype_and_refuses_e5m2() -> None:
    # quant_method fp8 declares no KV scheme; init_attention_quant: "fp8_e5m2 kv-cache is
    # not supported with fp8 checkpoints" (Fp8Config hands Attention an Fp8KVCacheMethod).
    config = {**LLAMA_8B, "quantization_config": {"quant_method": "fp8",
                                                  "activation_scheme": "dynamic"}}
    assert cache_dtype_for(config, None, FULL, "auto").cache_dtype == "auto"
    assert cache_dtype_for(config, None, FULL, "fp8").cache_dtype == "fp8"
    with pytest.raises(VllmLayoutError, match="fp8_e5m2 kv-cache is not supported"):
        cache_dtype_for(config, None, FULL, "fp8_e5m2")
    assert cache_dtype_for(LLAMA_8B, None, FULL, "fp8_e5m2").cache_dtype == "fp8_e5m2"


@needs_configs
def test_quantization_method_vllm_lacks_is_refused() -> None:
    # vLLM 0.32 QUANTIZATION_METHODS has no bitsandbytes: ModelConfig._verify_quantization
    # raises "Unknown quantization method".
    config = {**LLAMA_8B, "quantization_config": {"quant_method": "bitsandbytes",
                                                  "load_in_4bit": True}}
    with pytest.raises(VllmLayoutError, match="Unknown quantization method: bitsandbytes"):
        cache_dtype_for(config, None, FULL, "auto")


@needs_configs
def test_compressed_tensors_scheme_in_text_config_reaches_attention() -> None:
    # weight_utils.get_quant_config falls back to text_config.quantization_config, and
    # Attention.__init__ switches "auto" to "fp8" for a kv_cache_scheme there too; only the
    # ModelOpt sniff (resolve_kv_cache_dtype_string) is limited to the top level.
    scheme = {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True}
    wrapper = {"model_type": "llava", "text_config": {
        **LLAMA_8B, "quantization_config": {"quant_method": "compressed-tensors",
                                            "kv_cache_scheme": scheme}}}
    assert cache_dtype_for(wrapper, None, FULL, "auto").cache_dtype == "fp8"
    assert cache_dtype_for(wrapper, None, MLA, "auto").cache_dtype == "auto"


def test_mla_with_compressed_tensors_fp8_and_attention_mixed_is_refused() -> None:
    scheme = {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True}
    config = {"quantization_config": {"quant_method": "compressed-tensors",
                                      "kv_cache_scheme": scheme}}
    with pytest.raises(VllmLayoutError, match="mixing MLA and standard attention"):
        cache_dtype_for(config, None, frozenset({Kind.MLA, Kind.SLIDING}), "auto")

"""Quantization vocabularies: every real checkpoint's block is understood key by key, an
unknown key fails closed by name, and the KV scheme a checkpoint declares is resolved.

Real configs come from ../shared/configs (skipped when it is absent); the mutated ones below
change one key of a real block, so a failure names the rule that broke.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.derive import ConfigError, UnknownCacheKey, UnsupportedArchitecture, derive_model
from kvledger.derive.config import Config
from kvledger.derive.kvdtype import kv_declaration, resolve_kv_dtype
from kvledger.derive.quant import VOCABULARIES, check_quantization_config
from oracle_cases import CONFIGS, needs_shared


def _real(name: str) -> dict[str, Any]:
    path = CONFIGS / name
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def _companion(name: str) -> dict[str, Any] | None:
    path = CONFIGS / name.replace(".json", ".hf_quant_config.json")
    return json.loads(path.read_text()) if path.is_file() else None


def _quantized_configs() -> list[str]:
    if not CONFIGS.is_dir():
        return []
    out = []
    for path in sorted(CONFIGS.glob("*.json")):
        if path.name.endswith(".hf_quant_config.json"):
            continue
        text = path.read_text()
        if "quantization_config" in text or Path(str(path).replace(
                ".json", ".hf_quant_config.json")).is_file():
            out.append(path.name)
    return out


# The KV scheme each real checkpoint declares (read off the files by hand):
DECLARED = {
    # inline ModelOpt, kv_cache_scheme "FP8" (a bare algorithm name)
    "Qwen--Qwen3-32B-FP8-Static-PerTensor.json": ("fp8_e4m3", "quantization_config"),
    # hf_quant_config.json, quantization.kv_cache_quant_algo "FP8"
    "nvidia--Llama-3.1-70B-Instruct-FP8.json": ("fp8_e4m3", "hf_quant_config"),
    "nvidia--Qwen3-32B-NVFP4.json": ("fp8_e4m3", "hf_quant_config"),
    "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json": ("fp8_e4m3", "hf_quant_config"),
    # inline ModelOpt, kv_cache_scheme {num_bits 8, type float}
    "nvidia--Qwen3.5-122B-A10B-NVFP4.json": ("fp8_e4m3", "quantization_config"),
    "nvidia--Qwen3.6-27B-NVFP4.json": ("fp8_e4m3", "quantization_config"),
    # inline ModelOpt without a KV key; the companion says FP8
    "nvidia--Qwen3.6-35B-A3B-NVFP4.json": ("fp8_e4m3", "hf_quant_config"),
    # kv_cache_quant_algo null everywhere: no KV scheme
    "nvidia--DeepSeek-V4-Flash-NVFP4.json": None,
    "nvidia--MiniMax-M3-NVFP4.json": None,
    # fp8 / mxfp4 weight quantization only
    "Qwen--Qwen3-32B-FP8.json": None,
    "zai-org--GLM-5.2-FP8.json": None,
    "openai--gpt-oss-20b.json": None,
    # compressed-tensors, kv_cache_scheme null (in text_config)
    "moonshotai--Kimi-K3.json": None,
}


@needs_shared
@pytest.mark.parametrize("name", _quantized_configs())
def test_every_real_quantization_block_is_understood(name: str) -> None:
    cfg = Config(_real(name), model=name)
    check_quantization_config(cfg)  # raises on any key its vocabulary does not list
    kv_declaration(cfg, _companion(name))  # and resolves any KV scheme it declares


@pytest.mark.parametrize(("name", "expected"), DECLARED.items(), ids=list(DECLARED))
def test_declared_kv_scheme(name: str, expected: tuple[str, str] | None) -> None:
    found = kv_declaration(Config(_real(name), model=name), _companion(name))
    assert (None if found is None else (found.dtype, found.source)) == expected


def _glm_fp8() -> dict[str, Any]:
    return copy.deepcopy(_real("zai-org--GLM-5.2-FP8.json"))


def test_unknown_key_fails_closed_naming_it() -> None:
    config = _glm_fp8()
    config["quantization_config"]["kv_layout"] = "paged"
    with pytest.raises(UnknownCacheKey, match=r"quantization_config\.kv_layout.*'fp8'"):
        derive_model(config)


def test_kv_key_outside_its_method_fails_closed() -> None:
    # fp8 (vLLM Fp8Config) reads no KV scheme: one there is not silently ignored.
    config = _glm_fp8()
    config["quantization_config"]["kv_cache_scheme"] = {"num_bits": 8, "type": "float"}
    with pytest.raises(UnknownCacheKey, match=r"quantization_config\.kv_cache_scheme"):
        derive_model(config)


def test_module_list_must_be_names() -> None:
    config = _glm_fp8()
    config["quantization_config"]["modules_to_not_convert"] = {"lm_head": True}
    with pytest.raises(ConfigError, match="modules_to_not_convert must be a list"):
        derive_model(config)


def test_unknown_method_is_refused() -> None:
    config = _glm_fp8()
    config["quantization_config"] = {"quant_method": "hqq", "nbits": 4}
    with pytest.raises(UnsupportedArchitecture, match="quant_method 'hqq'"):
        derive_model(config)
    # No method and no ModelOpt producer: vLLM 0.32 reads no quantization (quant.py
    # states_no_method), so the cache keeps the model dtype and derive says what it ignored.
    config["quantization_config"] = {"bits": 4}
    facts = derive_model(config)
    assert facts.kv_dtype_source == "config"
    assert any("quantization_config states no quant_method" in w and "(bits)" in w
               for w in facts.warnings)


def _qwen35_nvfp4() -> dict[str, Any]:
    return copy.deepcopy(_real("nvidia--Qwen3.5-122B-A10B-NVFP4.json"))


def test_output_activations_are_not_waved_through() -> None:
    # Older llm-compressor releases encoded KV quantization as output_activations on
    # k_proj / v_proj: a non-null one is refused by its path.
    config = _qwen35_nvfp4()
    group = config["quantization_config"]["config_groups"]["group_0"]
    group["output_activations"] = {"num_bits": 8, "type": "float"}
    with pytest.raises(UnknownCacheKey,
                       match=r"config_groups\.group_0\.output_activations"):
        derive_model(config)
    group["output_activations"] = None  # null: nothing quantized, accepted
    assert derive_model(config).kv_dtype == "fp8_e4m3"


def test_config_group_unknown_key() -> None:
    config = _qwen35_nvfp4()
    config["quantization_config"]["config_groups"]["group_0"]["kv_cache"] = True
    with pytest.raises(UnknownCacheKey, match=r"group_0\.kv_cache"):
        derive_model(config)


def test_compressed_tensors_kv_scheme_resolves() -> None:
    # Kimi-K3's compressed-tensors block (in text_config) with a KV scheme filled in:
    # {num_bits 8, type float} → fp8_e4m3; {num_bits 8, type int} → int8.
    config = copy.deepcopy(_real("moonshotai--Kimi-K3.json"))
    block = config["text_config"]["quantization_config"]
    block["kv_cache_scheme"] = {"num_bits": 8, "type": "float", "strategy": "tensor",
                                "symmetric": True, "dynamic": False}
    found = kv_declaration(Config(config, model="k3"), None)
    assert found is not None and (found.dtype, found.key) == (
        "fp8_e4m3", "text_config.quantization_config.kv_cache_scheme")
    block["kv_cache_scheme"] = {"num_bits": 8, "type": "int"}
    found = kv_declaration(Config(config, model="k3"), None)
    assert found is not None and found.dtype == "int8"
    block["kv_cache_scheme"] = {"num_bits": 2, "type": "int"}
    with pytest.raises(ConfigError, match="num_bits=2"):
        kv_declaration(Config(config, model="k3"), None)


def test_hf_quant_config_shape_is_checked() -> None:
    # issue #10: {"quantization": "FP8"} raised AttributeError; now one ConfigError line.
    cfg = Config(_real("meta-llama--Meta-Llama-3.1-8B.json"), model="llama")
    with pytest.raises(ConfigError, match=r"hf_quant_config\.quantization must be an object"):
        resolve_kv_dtype(cfg, {"quantization": "FP8"}, None)
    with pytest.raises(UnknownCacheKey, match=r"hf_quant_config\.quantization\.kv_layout"):
        resolve_kv_dtype(cfg, {"quantization": {"kv_layout": "x"}}, None)
    with pytest.raises(UnknownCacheKey, match=r"hf_quant_config\.calibration"):
        resolve_kv_dtype(cfg, {"calibration": {}}, None)


def test_explicit_option_beats_declared_scheme() -> None:
    name = "nvidia--Llama-3.1-70B-Instruct-FP8.json"
    cfg = Config(_real(name), model=name)
    assert resolve_kv_dtype(cfg, _companion(name), "bfloat16") == ("bfloat16", "option")
    assert resolve_kv_dtype(cfg, _companion(name), None) == ("fp8_e4m3", "hf_quant_config")


def test_every_vocabulary_lists_distinct_kinds_of_key() -> None:
    # A key is one kind only (weight, KV, module list or structure): a key filed twice would
    # be waved through as weights while also being a KV declaration.
    for method, vocab in VOCABULARIES.items():
        kinds = [vocab.weight_keys, vocab.kv_keys, vocab.module_lists, vocab.structured]
        seen: set[str] = set()
        for keys in kinds:
            assert not seen & keys, (method, seen & keys)
            seen |= keys


# -- the guard runs the vocabulary on every level of every row ---------------------------------
# (model_types.py once marked a few rows strict_quantization: the old vocabulary broke other
# configs. Every row now checks, so a standard-handler model and a wrapper's text config fail
# closed the same way a DeepSeek one does.)


def test_standard_row_checks_its_quantization_block() -> None:
    config = copy.deepcopy(_real("meta-llama--Meta-Llama-3.1-8B.json"))
    config["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    assert derive_model(config).kv_dtype == "bfloat16"  # weights only: passes
    config["quantization_config"]["kv_layout"] = "paged"
    with pytest.raises(UnknownCacheKey,
                       match=r"quantization_config\.kv_layout.*family llama \(standard\)"):
        derive_model(config)


def test_wrappers_text_config_block_is_checked_on_its_level() -> None:
    # Qwen3-VL: the language model's own block sits in text_config; its unknown key is named
    # with that path and the inner row's family.
    config = copy.deepcopy(_real("Qwen--Qwen3-VL-8B-Instruct.json"))
    config["text_config"]["quantization_config"] = {"quant_method": "fp8", "kv_layout": "x"}
    with pytest.raises(UnknownCacheKey,
                       match=r"'text_config\.quantization_config\.kv_layout'.*qwen3_vl_text"):
        derive_model(config)
    # The same block on the wrapper is inherited by the text config, checked once (outer path).
    config = copy.deepcopy(_real("Qwen--Qwen3-VL-8B-Instruct.json"))
    config["quantization_config"] = {"quant_method": "fp8", "kv_layout": "x"}
    with pytest.raises(UnknownCacheKey, match=r"'quantization_config\.kv_layout'.*qwen3_vl "):
        derive_model(config)

"""The facts cache behind planning (``kvledger.derive.facts_cache``): a model planned again
reuses its facts, and nothing that changes the facts can reach stale ones.

Numbers are Llama-3.1-8B's config worked by hand: 32 layers × 2 (K, V) × 8 KV heads × head
dim 128 (4,096 hidden / 32 heads) × 2 B (bfloat16) = 131,072 B per token.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kvledger.derive import facts_cache
from kvledger.plan.api import load_facts
from kvledger.plan.request import PlanRequest

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
LLAMA_BPT = 32 * 2 * 8 * 128 * 2  # 131,072


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    facts_cache.clear()
    yield
    facts_cache.clear()


def _facts(model: Any, **request: Any) -> Any:
    facts, _ = load_facts(model, PlanRequest(**request))
    return facts


def test_the_same_model_planned_again_reuses_its_facts(
    config_copy: Callable[[str], dict[str, Any]],
) -> None:
    config = config_copy(LLAMA)
    first = _facts(config)
    assert _facts(copy.deepcopy(config)) is first  # an equal dict: the same facts
    assert _facts(LLAMA) is _facts(LLAMA)  # a catalog id too
    assert first.bytes_per_token() == LLAMA_BPT


def test_another_kv_dtype_option_is_derived_again(
    config_copy: Callable[[str], dict[str, Any]],
) -> None:
    config = config_copy(LLAMA)
    auto = _facts(config)
    fp8 = _facts(config, kv_cache_dtype="fp8")
    assert fp8 is not auto
    assert (auto.kv_dtype, fp8.kv_dtype) == ("bfloat16", "fp8_e4m3")
    assert fp8.bytes_per_token() == LLAMA_BPT // 2  # one byte per element
    assert _facts(config).kv_dtype == "bfloat16"


def test_an_edited_dict_is_derived_again(config_copy: Callable[[str], dict[str, Any]]) -> None:
    config = config_copy(LLAMA)
    assert _facts(config).bytes_per_token() == LLAMA_BPT
    config["num_key_value_heads"] = 4  # half the KV heads: half the bytes
    assert _facts(config).bytes_per_token() == LLAMA_BPT // 2
    config["rope_scaling"]["factor"] = 4.0  # a nested edit is another key too
    assert _facts(config).config["rope_scaling"]["factor"] == 4.0


def test_the_callers_dict_edited_later_does_not_reach_the_cached_facts(
    config_copy: Callable[[str], dict[str, Any]],
) -> None:
    config = config_copy(LLAMA)
    original = copy.deepcopy(config)
    _facts(config)
    config["num_key_value_heads"] = 4
    config["rope_scaling"]["factor"] = 4.0
    again = _facts(original)
    assert again.config == original  # the cache holds its own copy
    assert again.bytes_per_token() == LLAMA_BPT


def test_a_changed_file_is_derived_again(
    tmp_path: Path, config_copy: Callable[[str], dict[str, Any]],
) -> None:
    config = config_copy(LLAMA)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert _facts(str(path)).bytes_per_token() == LLAMA_BPT
    config["num_key_value_heads"] = 2
    path.write_text(json.dumps(config))
    assert _facts(str(path)).bytes_per_token() == LLAMA_BPT // 4


def test_a_companion_quant_file_is_part_of_the_key(
    tmp_path: Path, config_copy: Callable[[str], dict[str, Any]],
) -> None:
    config = config_copy(LLAMA)
    (tmp_path / "config.json").write_text(json.dumps(config))
    plain = _facts(str(tmp_path))
    # A ModelOpt companion declaring an FP8 KV cache (the fields vLLM reads).
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({
        "producer": {"name": "modelopt", "version": "0.19.0"},
        "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
    }))
    quantized = _facts(str(tmp_path))
    assert quantized is not plain
    assert quantized.hf_quant_config is not None and plain.hf_quant_config is None


def test_a_config_json_cannot_round_trip_is_not_cached(
    config_copy: Callable[[str], dict[str, Any]],
) -> None:
    config = config_copy(LLAMA)
    config["architectures"] = ("LlamaForCausalLM",)  # a tuple: JSON would make it a list
    first = _facts(config)
    assert _facts(config) is not first
    assert first.bytes_per_token() == LLAMA_BPT


def test_the_cache_keeps_only_the_most_recent_models(
    config_copy: Callable[[str], dict[str, Any]],
) -> None:
    base = config_copy(LLAMA)
    models = []
    for layers in range(1, facts_cache.MAX_MODELS + 2):
        config = copy.deepcopy(base)
        config["num_hidden_layers"] = layers
        models.append((config, _facts(config)))
    oldest, newest = models[0], models[-1]
    assert _facts(newest[0]) is newest[1]
    assert _facts(oldest[0]) is not oldest[1]  # evicted: derived again
    assert len(_facts(oldest[0]).layers) == 1

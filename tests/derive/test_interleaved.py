"""Interleaved local/global family (Gemma-2, Gemma-3, gpt-oss, Llama-4): bytes worked by hand
from each config's numbers at its KV dtype and at fp8, which layers are local, wrappers, and
fail-closed keys; agreement with vLLM 0.32's per-layer specs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kvledger.derive import (
    Kind,
    ModelFacts,
    UnknownCacheKey,
    UnsupportedArchitecture,
    derive_model,
)
from kvledger.derive.errors import ConfigError

CASES: list[tuple[str, str, dict[str, int], dict[str, int]]] = [
    # Gemma-2-2B: 26 layers, 13 sliding (even indices) + 13 full, 4 kv × 256 head_dim, bf16:
    #   sliding 2 × 13 × 4 × 256 × 2 B = 53,248; full the same 53,248. fp8: 26,624 each
    ("google/gemma-2-2b-it", "bfloat16", {"sliding": 53_248, "full": 53_248},
     {"sliding": 26_624, "full": 26_624}),
    # Gemma-3-27B (text_config): 62 layers, 52 sliding + 10 full, 16 kv × 128, bf16 (outer dtype):
    #   sliding 2 × 52 × 16 × 128 × 2 B = 425,984; full 2 × 10 × 16 × 128 × 2 B = 81,920.
    #   fp8: 212,992 and 40,960
    ("google/gemma-3-27b-it", "bfloat16", {"sliding": 425_984, "full": 81_920},
     {"sliding": 212_992, "full": 40_960}),
    # gpt-oss-120b (no dtype stated → float32): 36 layers alternating, 8 kv × 64:
    #   sliding 2 × 18 × 8 × 64 × 4 B = 73,728; full the same. fp8: 2 × 18 × 8 × 64 = 18,432 each
    ("openai/gpt-oss-120b", "float32", {"sliding": 73_728, "full": 73_728},
     {"sliding": 18_432, "full": 18_432}),
    # gpt-oss-20b: 24 layers: 2 × 12 × 8 × 64 × 4 B = 49,152 each kind; fp8 12,288 each
    ("openai/gpt-oss-20b", "float32", {"sliding": 49_152, "full": 49_152},
     {"sliding": 12_288, "full": 12_288}),
    # Llama-4-Scout (text_config): 48 layers, NoPE every 4th (3, 7, ...) → 36 chunked + 12 full,
    #   8 kv × 128, bf16: chunked 2 × 36 × 8 × 128 × 2 B = 147,456; full 2 × 12 × 8 × 128 × 2 B
    #   = 49,152. fp8: 73,728 and 24,576
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "bfloat16",
     {"chunked": 147_456, "full": 49_152}, {"chunked": 73_728, "full": 24_576}),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize(("model", "dtype", "native", "fp8"), CASES, ids=IDS)
def test_bytes_per_token_by_kind(
    model: str,
    dtype: str,
    native: dict[str, int],
    fp8: dict[str, int],
    kind_bytes: Callable[[ModelFacts], dict[str, int]],
) -> None:
    facts = derive_model(model)
    assert facts.kv_dtype == dtype
    assert kind_bytes(facts) == native
    assert facts.bytes_per_token() == sum(native.values())
    assert facts.bytes_per_request() == 0  # windows bound positions; no fixed-size state
    quant = derive_model(model, kv_cache_dtype="fp8")
    assert kind_bytes(quant) == fp8
    assert quant.bytes_per_request() == 0


ORACLE_FILES = {
    "google/gemma-2-2b-it": "google--gemma-2-2b-it.json",
    "google/gemma-3-27b-it": "google--gemma-3-27b-it.json",
    "openai/gpt-oss-120b": "openai--gpt-oss-120b.json",
    "openai/gpt-oss-20b": "openai--gpt-oss-20b.json",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": "meta-llama--Llama-4-Scout-17B-16E-Instruct.json",
}


@pytest.mark.parametrize(("model", "config_file"), sorted(ORACLE_FILES.items()))
def test_agrees_with_vllm_layer_specs(
    model: str, config_file: str, oracle_agrees: Callable[..., None]
) -> None:
    oracle_agrees(derive_model(model), config_file)


@pytest.mark.parametrize(
    ("model", "tp"),
    [
        ("google/gemma-3-27b-it", 4),  # 16 kv / 4 = 4 per rank
        ("openai/gpt-oss-120b", 4),  # 8 / 4 = 2
        ("openai/gpt-oss-20b", 2),  # 8 / 2 = 4
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 4),  # 8 / 4 = 2
    ],
)
def test_split_facts_agree_with_vllm_per_rank_specs(
    model: str, tp: int, oracle_agrees: Callable[..., None]
) -> None:
    oracle_agrees(derive_model(model), ORACLE_FILES[model], tp)


def _local(facts: ModelFacts) -> list[int]:
    return [x.index for x in facts.layers if x.kind in (Kind.SLIDING, Kind.CHUNKED)]


def test_which_layers_are_local() -> None:
    gemma2 = derive_model("google/gemma-2-2b-it")
    assert _local(gemma2) == list(range(0, 26, 2))  # even layers slide
    assert {getattr(x, "window", None) for x in gemma2.layers} == {4096, None}
    gemma3 = derive_model("google/gemma-3-27b-it")
    # _sliding_window_pattern 6: layers 5, 11, ..., 59 are global; the other 52 slide (1024)
    assert [x.index for x in gemma3.layers if x.kind is Kind.FULL] == list(range(5, 62, 6))
    assert {getattr(x, "window", None) for x in gemma3.layers if x.kind is Kind.SLIDING} == {1024}
    oss = derive_model("openai/gpt-oss-20b")
    assert _local(oss) == list(range(0, 24, 2))
    assert all(getattr(x, "sinks", False) for x in oss.layers)  # sinks on every layer
    scout = derive_model("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    assert [x.index for x in scout.layers if x.kind is Kind.FULL] == list(range(3, 48, 4))
    assert {getattr(x, "chunk", None) for x in scout.layers if x.kind is Kind.CHUNKED} == {8192}


@pytest.mark.parametrize("model", ["google/gemma-3-27b-it",
                                   "meta-llama/Llama-4-Scout-17B-16E-Instruct"])
def test_text_config_wrapper_resolves_with_a_note(model: str) -> None:
    facts = derive_model(model)
    assert any("text_config" in n for n in facts.notes)


@pytest.mark.parametrize("model", IDS)
def test_injected_unknown_cache_key_fails_closed(
    model: str, config_copy: Callable[[str], dict[str, Any]]
) -> None:
    cfg = config_copy(model)
    cfg["sliding_window_foo"] = 3
    with pytest.raises(UnknownCacheKey, match="sliding_window_foo"):
        derive_model(cfg)
    if "text_config" in cfg:  # the language model's own config is checked too
        inner = config_copy(model)
        inner["text_config"]["sliding_window_foo"] = 3
        with pytest.raises(UnknownCacheKey, match="sliding_window_foo"):
            derive_model(inner)


def test_disagreeing_layer_rules_fail_closed(config_copy: Callable[[str], dict[str, Any]]) -> None:
    gemma3 = config_copy("google/gemma-3-27b-it")
    gemma3["text_config"]["layer_types"][0] = "full_attention"  # pattern 6 says sliding
    with pytest.raises(UnsupportedArchitecture, match="disagrees"):
        derive_model(gemma3)
    swapped = config_copy("openai/gpt-oss-20b")
    swapped["layer_types"][0] = "full_attention"  # the reference slides on even layers
    with pytest.raises(UnsupportedArchitecture, match="disagrees"):
        derive_model(swapped)
    oss = config_copy("openai/gpt-oss-20b")
    oss["layer_types"][0] = "chunked_attention"
    with pytest.raises(UnsupportedArchitecture, match="chunked_attention"):
        derive_model(oss)
    scout = config_copy("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    del scout["text_config"]["attention_chunk_size"]
    with pytest.raises(ConfigError, match="attention_chunk_size"):
        derive_model(scout)


def test_llama4_explicit_no_rope_layers(config_copy: Callable[[str], dict[str, Any]]) -> None:
    scout = config_copy("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    scout["text_config"]["no_rope_layers"] = [1] * 47 + [0]  # only the last layer is NoPE
    facts = derive_model(scout)
    assert [x.index for x in facts.layers if x.kind is Kind.FULL] == [47]
    # 47 chunked layers: 2 × 47 × 8 × 128 × 2 B = 192,512; 1 full: 4,096
    assert facts.bytes_per_token() == 192_512 + 4_096

"""Encoder-decoder / cross-attention (Whisper, mllama) and NAS (Llama-3.3-Nemotron-Super)
families: bytes worked by hand from each config's numbers at its KV dtype and at fp8,
per-request cross-attention bytes, per-layer kinds, fail-closed keys.
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
from kvledger.derive.layers import CrossAttention
from oracle_cases import CONFIGS

NEMOTRON = "nvidia/Llama-3_3-Nemotron-Super-49B-v1"
WHISPER = "openai/whisper-tiny"
MLLAMA = str(CONFIGS / "meta-llama--Llama-3.2-Vision-mllama-4layer-TEST.json")

# id, KV dtype, B/token by kind, per-request B, then the same two at fp8.
CASES: list[tuple[str, str, dict[str, int], int, dict[str, int], int]] = [
    # Whisper-tiny (float32): 4 decoder layers, 6 heads × 64 (384 / 6):
    #   self-attention 2 × 4 × 6 × 64 × 4 B = 12,288 B/token;
    #   cross-attention 2 × 4 × 6 × 64 × 4 B × 1500 encoder frames = 18,432,000 B/request.
    #   fp8: 2 × 4 × 6 × 64 × 1 B = 3,072 B/token; 3,072 × 1500 = 4,608,000 B/request
    (WHISPER, "float32", {"full": 12_288}, 18_432_000, {"full": 3_072}, 4_608_000),
    # mllama 4-layer test (bf16): layers 0, 1, 3 self-attention, layer 2 cross-attention,
    #   8 kv × 128 (8192 / 64): self 2 × 3 × 8 × 128 × 2 B = 12,288 B/token;
    #   cross 2 × 1 × 8 × 128 × 2 B × 6404 vision tokens (4 tiles × ((560 / 14)² + 1 = 1601))
    #   = 4,096 × 6,404 = 26,230,784 B/request. fp8: 6,144 B/token; 2,048 × 6,404 = 13,115,392
    (MLLAMA, "bfloat16", {"full": 12_288}, 26_230_784, {"full": 6_144}, 13_115_392),
    # Nemotron-Super-49B (bf16): 80 block_configs, 31 no-op attention, 49 with n_heads_in_group
    #   8 → 64 / 8 = 8 kv heads × 128 (8192 / 64): 2 × 49 × 8 × 128 × 2 B = 200,704;
    #   fp8 100,352
    (NEMOTRON, "bfloat16", {"full": 200_704}, 0, {"full": 100_352}, 0),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize(("model", "dtype", "native", "req", "fp8", "fp8_req"), CASES, ids=IDS)
def test_bytes_per_token_and_request(
    model: str,
    dtype: str,
    native: dict[str, int],
    req: int,
    fp8: dict[str, int],
    fp8_req: int,
    kind_bytes: Callable[[ModelFacts], dict[str, int]],
) -> None:
    facts = derive_model(model)
    assert facts.kv_dtype == dtype
    assert kind_bytes(facts) == native
    assert facts.bytes_per_token() == sum(native.values())
    assert facts.bytes_per_request() == req
    quant = derive_model(model, kv_cache_dtype="fp8")
    assert kind_bytes(quant) == fp8
    assert quant.bytes_per_request() == fp8_req


def test_whisper_layers_and_oracle(oracle_agrees: Callable[..., None]) -> None:
    facts = derive_model(WHISPER)
    # decoder layers 0-3 each hold self-attention K/V and cross-attention K/V
    assert [(x.index, x.kind) for x in facts.layers] == [
        (i, kind) for kind in (Kind.FULL, Kind.CROSS) for i in range(4)
    ]
    cross = [x for x in facts.layers if isinstance(x, CrossAttention)]
    assert {x.encoder_len for x in cross} == {1500}  # max_source_positions
    oracle_agrees(facts, "openai--whisper-tiny.json")


def test_mllama_cross_layers_from_text_config() -> None:
    facts = derive_model(MLLAMA)
    assert [x.kind for x in facts.layers] == [Kind.FULL, Kind.FULL, Kind.CROSS, Kind.FULL]
    cross = facts.layers[2]
    assert isinstance(cross, CrossAttention)
    assert (cross.k_heads, cross.k_dim, cross.encoder_len) == (8, 128, 6404)
    assert any("text_config" in n for n in facts.notes)


def test_nemotron_no_op_layers_cache_nothing(config_copy: Callable[[str], dict[str, Any]]) -> None:
    facts = derive_model(NEMOTRON)
    blocks = config_copy(NEMOTRON)["block_configs"]
    no_op = [i for i, b in enumerate(blocks) if b["attention"]["no_op"]]
    assert len(no_op) == 31
    assert [x.index for x in facts.layers if x.kind is Kind.NONE] == no_op
    assert len(facts.layers) == 80


def test_nemotron_heads_per_layer(config_copy: Callable[[str], dict[str, Any]]) -> None:
    cfg = config_copy(NEMOTRON)
    cfg["block_configs"][0]["attention"]["n_heads_in_group"] = 16  # 64 / 16 = 4 kv heads
    cfg["block_configs"][1]["attention"]["replace_with_linear"] = True
    facts = derive_model(cfg)
    assert getattr(facts.layers[0], "k_heads", None) == 4
    assert facts.layers[1].kind is Kind.NONE
    # 200,704 − layer 0's 4,096 + 2 × 4 × 128 × 2 = 2,048 − layer 1's 4,096 = 194,560
    assert facts.bytes_per_token() == 194_560
    bad = config_copy(NEMOTRON)
    bad["block_configs"][0]["attention"]["n_heads_in_group"] = 7
    with pytest.raises(ConfigError, match="n_heads_in_group"):
        derive_model(bad)


@pytest.mark.parametrize(
    ("key", "value"),
    [("window_length", 4096), ("num_sink_tokens", 4), ("sparsify", ["x"]), ("new_knob", 1)],
)
def test_nemotron_block_attention_keys_fail_closed(
    key: str, value: object, config_copy: Callable[[str], dict[str, Any]]
) -> None:
    cfg = config_copy(NEMOTRON)
    cfg["block_configs"][5]["attention"][key] = value
    with pytest.raises(UnsupportedArchitecture, match=key):
        derive_model(cfg)


@pytest.mark.parametrize("model", IDS)
def test_injected_unknown_cache_key_fails_closed(
    model: str, config_copy: Callable[[str], dict[str, Any]]
) -> None:
    cfg = config_copy(model)
    cfg["sliding_window_foo"] = 3
    with pytest.raises(UnknownCacheKey, match="sliding_window_foo"):
        derive_model(cfg)
    if "text_config" in cfg:
        inner = config_copy(model)
        inner["text_config"]["sliding_window_foo"] = 3
        with pytest.raises(UnknownCacheKey, match="sliding_window_foo"):
            derive_model(inner)


def test_mllama_bad_cross_layer_index(config_copy: Callable[[str], dict[str, Any]]) -> None:
    cfg = config_copy(MLLAMA)
    cfg["text_config"]["cross_attention_layers"] = [4]  # only 4 layers: 0..3
    with pytest.raises(ConfigError, match="cross_attention_layers"):
        derive_model(cfg)

"""Broken configs are refused with the key named, never turned into a zero-byte plan."""

from __future__ import annotations

import math
from typing import Any

import pytest

from kvledger.derive import ConfigError, derive_model

LLAMA: dict[str, Any] = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 512,
    "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
}


def with_(**changes: Any) -> dict[str, Any]:
    return {**LLAMA, **changes}


def test_baseline_is_valid() -> None:
    # 2 (K,V) × 2 layers × 2 kv heads × (512 / 8 = 64) dim × 2 B = 1,024 B/token
    assert derive_model(LLAMA).bytes_per_token() == 1_024


@pytest.mark.parametrize(("key", "value", "match"), [
    ("num_hidden_layers", -3, "num_hidden_layers"),
    ("num_hidden_layers", 0, "no layers"),
    ("num_hidden_layers", "2", "num_hidden_layers"),
    ("num_hidden_layers", 2.0, "num_hidden_layers"),
    ("num_key_value_heads", 0, "num_key_value_heads"),  # named as the file states it
    ("num_key_value_heads", -2, "num_key_value_heads"),
    ("max_position_embeddings", math.nan, "max_position_embeddings"),
    ("max_position_embeddings", -1, "max_position_embeddings"),
])
def test_broken_value_refused_naming_it(key: str, value: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        derive_model(with_(**{key: value}))


def test_broken_state_geometry_refused() -> None:
    cfg = dict(derive_model("Qwen/Qwen3-Next-80B-A3B-Thinking").config)
    cfg["linear_num_value_heads"] = 0
    with pytest.raises(ConfigError):
        derive_model(cfg)

"""The standard handler's rules (families/standard.py), each taken from vLLM 0.32's source and
tried on a copy of a real config with one key changed. Expected numbers are worked by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kvledger.derive import UnsupportedArchitecture, derive_model
from kvledger.derive.layers import Kind
from oracle_cases import CONFIGS

Copy = Callable[[str], dict[str, Any]]


def _windows(raw: dict[str, Any]) -> list[int | None]:
    return [getattr(layer, "window", None) for layer in derive_model(raw).layers]


def test_llama_layer_types_give_per_layer_windows(config_copy: Copy) -> None:
    # vLLM llama.py: layer_types[i] == "sliding_attention" → config.sliding_window; the other
    # layers get none (the model-level window is unset when layer_types is mixed).
    raw = config_copy("meta-llama/Meta-Llama-3.1-8B")
    raw["sliding_window"] = 4096
    raw["layer_types"] = ["sliding_attention", "full_attention"] * 16
    assert _windows(raw) == [4096, None] * 16


def test_mixtral_takes_no_per_layer_window(config_copy: Copy) -> None:
    # vLLM mixtral.py passes no per-layer window; arg_utils sets the model-level one only when
    # every layer_types entry slides. Mixed → no window anywhere; all sliding → every layer.
    raw = config_copy("mistralai/Mixtral-8x7B-v0.1")
    raw["sliding_window"] = 4096
    raw["layer_types"] = ["sliding_attention", "full_attention"] * 16
    facts = derive_model(raw)
    assert {layer.kind for layer in facts.layers} == {Kind.FULL}
    assert any("sliding_window 4096 unused" in n for n in facts.notes)
    raw["layer_types"] = ["sliding_attention"] * 32
    assert _windows(raw) == [4096] * 32


def test_mistral_window_is_a_class_default(config_copy: Copy) -> None:
    # MistralConfig (transformers 5.19) fills sliding_window 4096 when the file omits it; with
    # no layer_types every layer slides (vLLM's model-level window).
    raw = config_copy("mistralai/Mistral-7B-v0.1")
    del raw["sliding_window"]
    assert _windows(raw) == [4096] * 32
    raw["sliding_window"] = None  # stated null: no window (the class keeps None)
    assert _windows(raw) == [None] * 32


def test_sliding_window_zero_means_none(config_copy: Copy) -> None:
    # vllm/config/model.py: "Some checkpoints set sliding_window to 0 to indicate that sliding
    # window is disabled".
    raw = config_copy("meta-llama/Meta-Llama-3.1-8B")
    raw["sliding_window"] = 0
    assert _windows(raw) == [None] * 32


def test_qwen2_head_dim_is_hidden_over_heads_with_a_warning(config_copy: Copy) -> None:
    # vLLM qwen2.py: head_dim = hidden_size // total_num_heads, whatever the config states.
    # Qwen2.5-7B: 3584 / 28 = 128; a stated head_dim of 96 is ignored (and warned about):
    # 28 layers × 2 × 4 KV heads × 128 × 2 B = 57,344 B/token.
    raw = config_copy("Qwen/Qwen2.5-7B")
    raw["head_dim"] = 96
    facts = derive_model(raw)
    assert facts.bytes_per_token() == 57_344
    (warning,) = facts.warnings
    assert "head_dim 96" in warning and "128" in warning


def test_qwen3_reads_head_dim(config_copy: Copy) -> None:
    # vLLM qwen3.py: head_dim or hidden_size // heads. Qwen3-8B states 128 (4096 / 32 = 128
    # too); stated 64: 36 layers × 2 × 8 × 64 × 2 B = 73,728 B/token, no warning.
    raw = config_copy("Qwen/Qwen3-8B")
    raw["head_dim"] = 64
    facts = derive_model(raw)
    assert facts.bytes_per_token() == 73_728 and not facts.warnings


def test_qwen_sliding_layers_without_a_window_refused(config_copy: Copy) -> None:
    raw = config_copy("Qwen/Qwen3-8B")
    raw["layer_types"] = ["sliding_attention"] * 36
    with pytest.raises(UnsupportedArchitecture, match="use_sliding_window is false"):
        derive_model(raw)


def test_phi3_refuses_layer_types(config_copy: Copy) -> None:
    # Phi3Config has no layer_types; the phi3 row does not read it, so it fails closed.
    raw = config_copy(str(CONFIGS / "microsoft--Phi-3-mini-4k-instruct.MODIFIED.json"))
    raw["layer_types"] = ["full_attention"] * 32
    with pytest.raises(UnsupportedArchitecture, match="layer_types"):
        derive_model(raw)

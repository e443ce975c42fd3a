"""Gated DeltaNet hybrids: Qwen3-Next-80B, Qwen3.5-397B, Qwen3.6-35B.

Every expected number is worked from the config's own values in the comments. fp8 applies
to the attention KV only: vLLM's kv_cache_dtype never changes GDN state dtypes.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kvledger.derive import UnknownCacheKey, derive_model
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.layers import Kind, ModelFacts, Role
from kvledger.derive.source import load_source

NEXT = "Qwen/Qwen3-Next-80B-A3B-Thinking"
Q35 = "Qwen/Qwen3.5-397B-A17B"
Q36 = "Qwen/Qwen3.6-35B-A3B"


def kv_per_token(facts: ModelFacts, kind: Kind) -> int:
    return sum(x.bytes_per_token() for x in facts.layers if x.kind is kind)


def state_per_request(facts: ModelFacts) -> int:
    return sum(x.bytes_per_request() for x in facts.layers if x.kind is Kind.STATE)


# (model, full-attn KV B/token at bf16, at fp8, GDN state B/request)
EXPECTED = [
    # Qwen3-Next: 48 layers, full_attention_interval 4 -> 12 full, 36 GDN; no MTP key, so
    # vLLM's Qwen3NextMTP default of 1 MTP layer (full attention).
    # KV: 2 (K,V) x (12 + 1) layers x 2 kv heads x 256 head_dim x 2 B = 26,624; fp8 13,312.
    # GDN conv: (2 x 16 key heads x 128 + 32 value heads x 128) = 8192 ch x (4-1) x 2 B
    #   = 49,152; recurrent 32 x 128 x 128 x 2 B (bf16: no ssm dtype key) = 1,048,576;
    #   per layer 1,097,728 x 36 = 39,518,208.
    (NEXT, 26_624, 13_312, 39_518_208),
    # Qwen3.5-397B: 60 layers (15 full, 45 GDN) + mtp_num_hidden_layers 1 (full attention).
    # KV: 2 x (15 + 1) x 2 x 256 x 2 B = 32,768; fp8 16,384.
    # GDN conv: (2 x 16 x 128 + 64 x 128) = 12,288 ch x 3 x 2 B = 73,728;
    #   recurrent 64 x 128 x 128 x 4 B (mamba_ssm_dtype float32) = 4,194,304;
    #   per layer 4,268,032 x 45 = 192,061,440.
    (Q35, 32_768, 16_384, 192_061_440),
    # Qwen3.6-35B: 40 layers (10 full, 30 GDN) + 1 MTP full.
    # KV: 2 x 11 x 2 x 256 x 2 B = 22,528; fp8 11,264.
    # GDN conv: 8192 ch x 3 x 2 B = 49,152; recurrent 32 x 128 x 128 x 4 B = 2,097,152;
    #   per layer 2,146,304 x 30 = 64,389,120.
    (Q36, 22_528, 11_264, 64_389_120),
]


@pytest.mark.parametrize(("model", "kv_bf16", "kv_fp8", "state"), EXPECTED)
def test_bytes_at_config_dtype_and_fp8(model: str, kv_bf16: int, kv_fp8: int,
                                       state: int) -> None:
    facts = derive_model(model)
    assert facts.kv_dtype == "bfloat16"
    assert kv_per_token(facts, Kind.FULL) == kv_bf16
    assert state_per_request(facts) == state
    assert facts.bytes_per_token() == kv_bf16  # GDN adds nothing per token
    fp8 = derive_model(model, kv_cache_dtype="fp8")
    assert kv_per_token(fp8, Kind.FULL) == kv_fp8
    assert state_per_request(fp8) == state  # states keep their own dtypes


@pytest.mark.parametrize(("model", "layers", "mtp"), [(NEXT, 48, 1), (Q35, 60, 1), (Q36, 40, 1)])
def test_layer_pattern(model: str, layers: int, mtp: int) -> None:
    facts = derive_model(model)
    decoder = facts.by_role(Role.DECODER)
    # Every 4th layer (1-based) is full attention, the rest Gated DeltaNet.
    expected = [Kind.FULL if (i + 1) % 4 == 0 else Kind.STATE for i in range(layers)]
    assert [x.kind for x in decoder] == expected
    assert [x.index for x in decoder] == list(range(layers))
    assert [(x.index, x.kind) for x in facts.by_role(Role.MTP)] == [
        (layers + k, Kind.FULL) for k in range(mtp)]


def test_state_tensors_and_dtype_sources() -> None:
    qnext = next(x for x in derive_model(NEXT).layers if x.kind is Kind.STATE)
    d = qnext.describe()
    assert d["state_kind"] == "gated_delta_net"
    assert [(t["shape"], t["dtype"], t["role"]) for t in d["tensors"]] == [
        ([3, 8192], "bfloat16", "conv"), ([32, 128, 128], "bfloat16", "temporal")]
    q35 = next(x for x in derive_model(Q35).layers if x.kind is Kind.STATE)
    assert [t["dtype_source"] for t in q35.describe()["tensors"]] == [
        "model dtype", "config mamba_ssm_dtype"]


def _config(model: str) -> dict[str, Any]:
    return copy.deepcopy(load_source(model).config)


def test_unknown_cache_key_fails_closed_top_level() -> None:
    raw = _config(NEXT)
    raw["linear_state_window"] = 64
    with pytest.raises(UnknownCacheKey, match="linear_state_window"):
        derive_model(raw)


def test_unknown_cache_key_fails_closed_in_text_config() -> None:
    raw = _config(Q36)
    raw["text_config"]["kv_sharing_layers"] = [3, 7]
    with pytest.raises(UnknownCacheKey, match="kv_sharing_layers"):
        derive_model(raw)


def test_layer_types_must_agree_with_interval() -> None:
    raw = _config(Q35)
    raw["text_config"]["full_attention_interval"] = 3
    with pytest.raises(ConfigError, match="disagrees"):
        derive_model(raw)


def test_interval_alone_is_enough() -> None:
    raw = _config(Q36)
    del raw["text_config"]["layer_types"]
    facts = derive_model(raw)
    assert sum(1 for x in facts.by_role(Role.DECODER) if x.kind is Kind.FULL) == 10


def test_sliding_window_refused() -> None:
    raw = _config(NEXT)
    raw["use_sliding_window"] = True
    with pytest.raises(UnsupportedArchitecture, match="use_sliding_window"):
        derive_model(raw)


# -- MTP layer counts: the key vLLM's MTP model reads, default 1 -------------------------------
# vLLM models/qwen3_next_mtp.py: num_mtp_layers = getattr(config, "num_nextn_predict_layers", 1)
# vLLM models/qwen3_5_mtp.py:    num_mtp_layers = getattr(config, "mtp_num_hidden_layers", 1)


def _mtp_indices(raw: dict[str, Any]) -> list[int]:
    return [x.index for x in derive_model(raw).by_role(Role.MTP)]


def test_qwen3_next_mtp_layers_follow_num_nextn_predict_layers() -> None:
    raw = _config(NEXT)
    assert "num_nextn_predict_layers" not in raw  # the published file states none
    assert _mtp_indices(raw) == [48]  # vLLM's default: 1, after the 48 decoder layers
    raw["num_nextn_predict_layers"] = 2
    assert _mtp_indices(raw) == [48, 49]
    raw["num_nextn_predict_layers"] = 0
    assert _mtp_indices(raw) == []


def test_qwen3_5_mtp_layers_follow_mtp_num_hidden_layers() -> None:
    raw = _config(Q36)
    del raw["text_config"]["mtp_num_hidden_layers"]
    assert _mtp_indices(raw) == [40]  # vLLM's default: 1
    raw["text_config"]["mtp_num_hidden_layers"] = 2
    assert _mtp_indices(raw) == [40, 41]
    # Qwen3_5MTP never reads num_nextn_predict_layers: a different value there is planned as
    # vLLM builds it (mtp_num_hidden_layers) and warned about.
    raw["text_config"]["num_nextn_predict_layers"] = 3
    facts = derive_model(raw)
    assert [x.index for x in facts.by_role(Role.MTP)] == [40, 41]
    assert len(facts.warnings) == 1 and "num_nextn_predict_layers=3" in facts.warnings[0]

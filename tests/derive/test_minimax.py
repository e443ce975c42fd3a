"""MiniMax family: MiniMax-M1 (lightning + softmax) and MiniMax-M3 (GQA + sparse indexer).

No vLLM oracle covers these (remote code / unparsable config); every expected number is
worked by hand from the config's own values, shown in the comments.
"""

from __future__ import annotations

from collections import Counter

import pytest

from kvledger.derive import Kind, Role, UnknownCacheKey, derive_model
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.families.minimax import LightningState
from kvledger.derive.source import load_source

M1 = "MiniMaxAI/MiniMax-M1-80k"
M3 = "MiniMaxAI/MiniMax-M3"


def kv_per_token(model: str, kind: Kind, kv_cache_dtype: str | None = None) -> int:
    facts = derive_model(model, kv_cache_dtype=kv_cache_dtype)
    return sum(layer.bytes_per_token() for layer in facts.layers if layer.kind is kind)


# ---- MiniMax-M1 -------------------------------------------------------------------------------
# attn_type_list: 1 at every 8th layer (7, 15, ..., 79) -> 10 softmax, 70 lightning layers.
# The config states no torch_dtype, so the config dtype is float32 (transformers' default).


def test_m1_layer_kinds() -> None:
    facts = derive_model(M1)
    softmax = [layer.index for layer in facts.layers if layer.kind is Kind.FULL]
    assert softmax == list(range(7, 80, 8))
    assert Counter(str(layer.kind) for layer in facts.layers) == {"state": 70, "full": 10}
    assert all(layer.role is Role.DECODER for layer in facts.layers)
    assert not facts.by_role(Role.MTP)


def test_m1_config_dtype() -> None:
    # Softmax: 2 (K,V) x 8 kv heads x 128 head_dim x 4 B (float32) = 8,192 B/layer
    #          x 10 layers = 81,920 B/token.
    # Lightning: 64 heads x 128 x 128 x 4 B = 4,194,304 B/layer/request
    #          x 70 layers = 293,601,280 B/request.
    facts = derive_model(M1)
    assert facts.kv_dtype == "float32"
    assert kv_per_token(M1, Kind.FULL) == 81_920
    assert facts.bytes_per_token() == 81_920
    assert facts.bytes_per_request() == 293_601_280


def test_m1_fp8() -> None:
    # Softmax at fp8: 2 x 8 x 128 x 1 B = 2,048 x 10 = 20,480 B/token.
    # The lightning state ignores the KV dtype (vLLM: mamba_cache_dtype "auto" -> model dtype):
    # still 293,601,280 B/request.
    facts = derive_model(M1, kv_cache_dtype="fp8")
    assert facts.bytes_per_token() == 20_480
    assert facts.bytes_per_request() == 293_601_280


def test_m1_bf16_override() -> None:
    # With a bf16 config: softmax 2 x 8 x 128 x 2 = 4,096 x 10 = 40,960 B/token;
    # lightning 64 x 128 x 128 x 2 B = 2,097,152 x 70 = 146,800,640 B/request.
    config = {**load_source(M1).config, "torch_dtype": "bfloat16"}
    facts = derive_model(config)
    assert facts.bytes_per_token() == 40_960
    assert facts.bytes_per_request() == 146_800_640


def test_m1_state_tensor_and_tp_split() -> None:
    layer = derive_model(M1).layers[0]
    assert isinstance(layer, LightningState)
    (t,) = layer.tensors()
    assert (t.name, t.shape, t.dtype) == ("kv_state", (64, 128, 128), "float32")
    # TP 8: 64 / 8 = 8 heads per rank -> 8 x 128 x 128 x 4 B = 524,288 B.
    assert layer.split(8).bytes_per_request() == 524_288
    with pytest.raises(ValueError, match="not divisible"):
        layer.split(3).tensors()
    # KV dtypes do not reach the state; vLLM's mamba_cache_dtype does.
    assert layer.with_dtype("fp8") is layer
    assert layer.with_state_dtypes(conv="bfloat16").bytes_per_request() == 2_097_152


def test_m1_unknown_attn_type_fails() -> None:
    config = dict(load_source(M1).config)
    config["attn_type_list"] = [2, *config["attn_type_list"][1:]]
    with pytest.raises(UnsupportedArchitecture, match="attn_type_list"):
        derive_model(config)


def test_m1_sliding_window_set_fails_closed() -> None:
    config = {**load_source(M1).config, "sliding_window": 4096}  # null in the real config
    with pytest.raises(UnknownCacheKey, match="sliding_window"):
        derive_model(config)


# ---- MiniMax-M3 -------------------------------------------------------------------------------
# sparse_attention_freq: 0 for layers 0-2, 1 for layers 3-59 -> 57 sparse layers;
# sparse_disable_index_value is 1 wherever a layer is sparse -> index key only.


def test_m3_layer_kinds() -> None:
    facts = derive_model(M3)
    assert Counter(str(layer.kind) for layer in facts.layers) == {"full": 60, "indexer": 57}
    indexed = [layer.index for layer in facts.layers if layer.kind is Kind.INDEXER]
    assert indexed == list(range(3, 60))


def test_m3_config_dtype() -> None:
    # K/V: 2 x 4 kv heads x 128 head_dim x 2 B (bf16) = 2,048 B/layer x 60 = 122,880 B/token.
    # Indexer key: 1 head x 128 (sparse_index_dim) x 2 B = 256 B/layer x 57 = 14,592 B/token.
    # Total 137,472 B/token; no per-request state.
    facts = derive_model(M3)
    assert kv_per_token(M3, Kind.FULL) == 122_880
    assert kv_per_token(M3, Kind.INDEXER) == 14_592
    assert facts.bytes_per_token() == 137_472
    assert facts.bytes_per_request() == 0


def test_m3_fp8() -> None:
    # K/V at fp8: 2 x 4 x 128 x 1 B = 1,024 x 60 = 61,440; the index cache stays in the model
    # dtype (SGLang index_dtype = model dtype): 14,592. Total 76,032 B/token.
    facts = derive_model(M3, kv_cache_dtype="fp8")
    assert kv_per_token(M3, Kind.FULL, kv_cache_dtype="fp8") == 61_440
    assert kv_per_token(M3, Kind.INDEXER, kv_cache_dtype="fp8") == 14_592
    assert facts.bytes_per_token() == 76_032


def test_m3_index_value_when_enabled() -> None:
    # A sparse layer with sparse_disable_index_value 0 caches key + value: 2 x 128 x 2 B = 512.
    config = dict(load_source(M3).config)
    sc = dict(config["sparse_attention_config"])
    sc["sparse_disable_index_value"] = [0] * 60
    config["sparse_attention_config"] = sc
    facts = derive_model(config)
    assert {layer.bytes_per_token() for layer in facts.layers if layer.kind is Kind.INDEXER} == {
        512
    }


def test_m3_tp_split() -> None:
    facts = derive_model(M3)
    full = next(layer for layer in facts.layers if layer.kind is Kind.FULL)
    index = next(layer for layer in facts.layers if layer.kind is Kind.INDEXER)
    # TP 2: 4 / 2 = 2 kv heads -> 2 x 2 x 128 x 2 = 1,024; TP 8: 4 < 8 -> 1 head replicated = 512.
    assert full.split(2).bytes_per_token() == 1_024
    assert full.split(8).bytes_per_token() == 512
    assert index.split(8).bytes_per_token() == 256  # one shared head, replicated


def test_m3_mtp_is_refused_not_guessed() -> None:
    facts = derive_model(M3)
    assert not facts.by_role(Role.MTP)
    assert "mtp_unsupported" in facts.extras
    assert "num_mtp_modules=7" in facts.extras["mtp_unsupported"]


def test_m3_unknown_sparse_subkey_fails_closed() -> None:
    config = dict(load_source(M3).config)
    config["sparse_attention_config"] = {
        **config["sparse_attention_config"], "sparse_kv_share": True,
    }
    with pytest.raises(UnknownCacheKey, match=r"sparse_attention_config\.sparse_kv_share"):
        derive_model(config)


def test_m3_missing_sparse_list_fails() -> None:
    config = dict(load_source(M3).config)
    sc = dict(config["sparse_attention_config"])
    del sc["sparse_disable_index_value"]
    config["sparse_attention_config"] = sc
    with pytest.raises(ConfigError, match="sparse_disable_index_value"):
        derive_model(config)


@pytest.mark.parametrize("model", [M1, M3])
def test_unknown_cache_key_fails_closed(model: str) -> None:
    config = {**load_source(model).config, "kv_lora_rank": 512}
    with pytest.raises(UnknownCacheKey) as err:
        derive_model(config)
    assert err.value.key == "kv_lora_rank"

"""DeepSeek-V4 family: V4-Flash and V4-Pro.

No vLLM oracle exists for V4; every expected number is worked by hand from the config's own
values (shown in comments), following the architecture as vLLM's deepseek_v4 files define it.

Flash: num_hidden_layers 43; compress_ratios = [0, 0, 4, 128, 4, 128, ..., 4, 128, 4, 0]
  -> layers 0, 1 window-only; even layers 2..42 ratio 4 (21); odd layers 3..41 ratio 128 (20);
  the 44th entry (0) is the MTP layer.
Pro: num_hidden_layers 61; compress_ratios = [128, 128, 4, 128, ..., 4, 128, 4, 0]
  -> layers 0, 1 and odd 3..59 ratio 128 (31); even 2..60 ratio 4 (30); no window-only layer.
Both: head_dim 512 (qk_rope_head_dim 64 -> nope 448), one KV head, sliding_window 128,
index_head_dim 128, num_nextn_predict_layers 1.
"""

from __future__ import annotations

import pytest

from kvledger.derive import Kind, Role, UnknownCacheKey, derive_model
from kvledger.derive.errors import DeriveError, UnsupportedArchitecture
from kvledger.derive.families.deepseek_v4 import (
    CompressorState,
    V4CompressedIndexer,
    V4CompressedKV,
    V4WindowKV,
)
from kvledger.derive.layers import LayerCache, ModelFacts
from kvledger.derive.source import load_source

FLASH = "deepseek-ai/DeepSeek-V4-Flash"
PRO = "deepseek-ai/DeepSeek-V4-Pro"


def of(facts: ModelFacts, cls: type[LayerCache], ratio: int | None = None,
       role: Role = Role.DECODER) -> list[LayerCache]:
    return [
        layer
        for layer in facts.layers
        if isinstance(layer, cls)
        and layer.role is role
        and (ratio is None or getattr(layer, "ratio", None) == ratio)
    ]


def per_token(layers: list[LayerCache]) -> int:
    return sum(layer.bytes_per_token() for layer in layers)


def per_request(layers: list[LayerCache]) -> int:
    return sum(layer.bytes_per_request() for layer in layers)


# ---- layer kinds ------------------------------------------------------------------------------


def test_flash_layer_kinds() -> None:
    facts = derive_model(FLASH)
    window = of(facts, V4WindowKV)
    assert [layer.index for layer in window] == list(range(43))
    c4 = [layer.index for layer in of(facts, V4CompressedKV, 4)]
    c128 = [layer.index for layer in of(facts, V4CompressedKV, 128)]
    assert c4 == list(range(2, 43, 2)) and len(c4) == 21
    assert c128 == list(range(3, 42, 2)) and len(c128) == 20
    assert [layer.index for layer in of(facts, V4CompressedIndexer)] == c4  # ratio-4 only
    states = of(facts, CompressorState)
    assert len(states) == 21 + 20 + 21  # attention compressors + indexer compressors
    assert all(layer.kind is Kind.COMPRESSED for layer in of(facts, V4CompressedKV))
    assert all(layer.kind is Kind.SLIDING for layer in window)


def test_pro_layer_kinds() -> None:
    facts = derive_model(PRO)
    c4 = [layer.index for layer in of(facts, V4CompressedKV, 4)]
    c128 = [layer.index for layer in of(facts, V4CompressedKV, 128)]
    assert c4 == list(range(2, 61, 2)) and len(c4) == 30
    assert c128 == [0, 1, *range(3, 60, 2)] and len(c128) == 31
    assert len(of(facts, V4WindowKV)) == 61


@pytest.mark.parametrize(("model", "index"), [(FLASH, 43), (PRO, 61)])
def test_mtp_layer_is_window_only(model: str, index: int) -> None:
    # vLLM: layers past num_hidden_layers get compress_ratio 1 -> sliding window only.
    mtp = derive_model(model).by_role(Role.MTP)
    assert len(mtp) == 1 and isinstance(mtp[0], V4WindowKV)
    assert mtp[0].index == index and mtp[0].bytes_per_token() == 1024


# ---- bytes at the config dtype (bf16 rows) ----------------------------------------------------


def test_flash_bf16() -> None:
    # Window: 512 x 2 B = 1,024 B/token/layer x 43 = 44,032 (kept for 128 tokens).
    # Ratio 4: 1,024 / 4 = 256 B/token x 21 = 5,376.   Ratio 128: 1,024 / 128 = 8 x 20 = 160.
    # Indexer: (128 fp8 + 4 B scale) / 4 = 33 B/token x 21 = 693.
    # Decoder total 44,032 + 5,376 + 160 + 693 = 50,261 B/token (+1,024 for the MTP window).
    facts = derive_model(FLASH)
    assert facts.kv_dtype == "bfloat16"
    assert per_token(of(facts, V4WindowKV)) == 44_032
    assert per_token(of(facts, V4CompressedKV, 4)) == 5_376
    assert per_token(of(facts, V4CompressedKV, 128)) == 160
    assert per_token(of(facts, V4CompressedIndexer)) == 693
    assert facts.bytes_per_token(Role.DECODER) == 50_261
    assert facts.bytes_per_token() == 51_285


def test_flash_states_per_request() -> None:
    # Ratio-4 attention compressor: coff 2 -> kv + score, each (2x4) x (2x512) fp32:
    #   2 x 8 x 1,024 x 4 B = 65,536 x 21 = 1,376,256.
    # Ratio-128 compressor: coff 1 -> 2 x 128 x 512 x 4 B = 524,288 x 20 = 10,485,760.
    # Indexer compressor (ratio 4 over 128): 2 x 8 x 256 x 4 B = 16,384 x 21 = 344,064.
    # Total 12,206,080 B/request, whatever the KV dtype.
    facts = derive_model(FLASH)
    attn = [s for s in of(facts, CompressorState) if s.note == "attention compressor"]
    idx = [s for s in of(facts, CompressorState) if s.note == "indexer compressor"]
    assert per_request([s for s in attn if getattr(s, "ratio", 0) == 4]) == 1_376_256
    assert per_request([s for s in attn if getattr(s, "ratio", 0) == 128]) == 10_485_760
    assert per_request(idx) == 344_064
    assert facts.bytes_per_request() == 12_206_080
    assert derive_model(FLASH, kv_cache_dtype="fp8").bytes_per_request() == 12_206_080


def test_pro_bf16() -> None:
    # Window 1,024 x 61 = 62,464; ratio 4: 256 x 30 = 7,680; ratio 128: 8 x 31 = 248;
    # indexer 33 x 30 = 990 -> 71,382 B/token.
    # States: 65,536 x 30 = 1,966,080 + 524,288 x 31 = 16,252,928 + 16,384 x 30 = 491,520
    #   = 18,710,528 B/request.
    facts = derive_model(PRO)
    assert per_token(of(facts, V4WindowKV)) == 62_464
    assert per_token(of(facts, V4CompressedKV, 4)) == 7_680
    assert per_token(of(facts, V4CompressedKV, 128)) == 248
    assert per_token(of(facts, V4CompressedIndexer)) == 990
    assert facts.bytes_per_token(Role.DECODER) == 71_382
    assert facts.bytes_per_request() == 18_710_528


# ---- bytes at fp8 (fp8_ds_mla rows) -----------------------------------------------------------


def test_flash_fp8() -> None:
    # fp8_ds_mla row: 448 nope x 1 B + 448/64 = 7 scale B + 1 pad B + 64 rope x 2 B = 584.
    # Window 584 x 43 = 25,112. Ratio 4: 584 / 4 = 146 x 21 = 3,066. Indexer unchanged 693.
    # Ratio 128: 584 B per 128 tokens (4.5625 B/token) -> per entry, 584 x 20 = 11,680 per
    # 128 tokens.
    facts = derive_model(FLASH, kv_cache_dtype="fp8")
    assert facts.kv_dtype == "fp8_e4m3"
    assert per_token(of(facts, V4WindowKV)) == 25_112
    assert per_token(of(facts, V4CompressedKV, 4)) == 3_066
    assert per_token(of(facts, V4CompressedIndexer)) == 693
    c128 = of(facts, V4CompressedKV, 128)
    assert {layer.entry_bytes() for layer in c128} == {584}  # type: ignore[attr-defined]
    assert sum(layer.bytes_for_positions(128) for layer in c128) == 11_680  # type: ignore[attr-defined]
    # 1,048,576 tokens: 8,192 entries x 584 = 4,784,128 B per ratio-128 layer.
    assert c128[0].bytes_for_positions(1_048_576) == 4_784_128  # type: ignore[attr-defined]
    # 127 tokens: no complete group yet, nothing compressed.
    assert c128[0].bytes_for_positions(127) == 0  # type: ignore[attr-defined]


def test_pro_fp8() -> None:
    # Window 584 x 61 = 35,624; ratio 4: 146 x 30 = 4,380; indexer 990;
    # ratio 128: 584 x 31 = 18,104 B per 128 tokens.
    facts = derive_model(PRO, kv_cache_dtype="fp8")
    assert per_token(of(facts, V4WindowKV)) == 35_624
    assert per_token(of(facts, V4CompressedKV, 4)) == 4_380
    assert per_token(of(facts, V4CompressedIndexer)) == 990
    c128 = of(facts, V4CompressedKV, 128)
    assert sum(layer.bytes_for_positions(128) for layer in c128) == 18_104  # type: ignore[attr-defined]
    assert facts.bytes_per_request() == 18_710_528


def test_inexact_per_token_raises_instead_of_rounding() -> None:
    facts = derive_model(FLASH, kv_cache_dtype="fp8")
    layer = of(facts, V4CompressedKV, 128)[0]
    with pytest.raises(DeriveError, match="not a whole number"):
        layer.bytes_per_token()
    with pytest.raises(DeriveError):
        facts.bytes_per_token()
    described = layer.describe()
    assert described["bytes_per_token"] is None
    assert described["bytes_per_entry"] == 584 and described["tokens_per_entry"] == 128


def test_layers_are_replicated_across_tp() -> None:
    facts = derive_model(FLASH)
    for layer in facts.layers:
        assert layer.split(8).bytes_per_request() == layer.bytes_per_request()
        if not isinstance(layer, CompressorState):
            assert layer.split(8).bytes_per_token() == layer.bytes_per_token()


def test_states_and_indexer_ignore_kv_dtype() -> None:
    facts = derive_model(FLASH)
    state = of(facts, CompressorState)[0]
    indexer = of(facts, V4CompressedIndexer)[0]
    assert state.with_dtype("fp8") is state
    assert indexer.with_dtype("bfloat16").bytes_per_token() == 33
    assert {t.dtype for t in state.tensors()} == {"float32"}  # type: ignore[attr-defined]


# ---- fail closed ------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [FLASH, PRO])
def test_unknown_cache_key_fails_closed(model: str) -> None:
    config = {**load_source(model).config, "kv_share_layers": [2, 3]}
    with pytest.raises(UnknownCacheKey) as err:
        derive_model(config)
    assert err.value.key == "kv_share_layers"


@pytest.mark.parametrize("dtype", ["float16", "float32", "nvfp4", "int8"])
def test_undefined_kv_dtypes_fail_closed(dtype: str) -> None:
    with pytest.raises(UnsupportedArchitecture, match="DeepSeek-V4 KV cache"):
        derive_model(FLASH, kv_cache_dtype=dtype)


def test_unknown_ratio_fails_closed() -> None:
    config = dict(load_source(FLASH).config)
    config["compress_ratios"] = [0, 0, 8, *config["compress_ratios"][3:]]
    with pytest.raises(UnsupportedArchitecture, match=r"compress_ratios\[2\] = 8"):
        derive_model(config)


def test_compressed_mtp_entry_fails_closed() -> None:
    config = dict(load_source(FLASH).config)
    config["compress_ratios"] = [*config["compress_ratios"][:43], 4]
    with pytest.raises(UnsupportedArchitecture, match="MTP layer"):
        derive_model(config)


def test_more_than_one_kv_head_fails_closed() -> None:
    config = {**load_source(FLASH).config, "num_key_value_heads": 8}
    with pytest.raises(UnsupportedArchitecture, match="one KV head"):
        derive_model(config)


def test_unknown_quantization_subkey_fails_closed() -> None:
    config = dict(load_source(PRO).config)
    config["quantization_config"] = {**config["quantization_config"], "kv_layout": "x"}
    with pytest.raises(UnknownCacheKey, match=r"quantization_config\.kv_layout"):
        derive_model(config)

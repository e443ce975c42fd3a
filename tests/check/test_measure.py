"""Measuring live caches: logical vs pinned bytes, storage dedupe, None-before-first-use,
quantized layers, weights never counted. Every expected number is worked by hand (fp32 = 4 B).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from kvledger.check.measure import Bytes, find_holdings, is_cache_object, measure  # noqa: E402


def _kv(tokens: int, heads: int = 2, dim: int = 8) -> object:
    return torch.zeros(1, heads, tokens, dim)


def test_dynamic_layer_logical_equals_pinned() -> None:
    from transformers import DynamicCache

    cache = DynamicCache()
    cache.update(_kv(5), _kv(5), 0)
    cache.update(_kv(5), _kv(5), 1)
    # per layer K and V: 1 × 2 heads × 5 × 8 × 4 B = 320 B each; 2 layers × 2 = 1,280 B.
    assert measure(cache) == Bytes(logical=1280, pinned=1280, bookkeeping=0)


def test_sliding_layer_view_pins_the_whole_concatenation() -> None:
    from transformers.cache_utils import DynamicSlidingWindowLayer

    layer = DynamicSlidingWindowLayer(sliding_window=4)
    layer.update(_kv(6), _kv(6))
    # keeps the last window - 1 = 3 positions as a view of the 6-position prefill:
    # logical 2 × (1 × 2 × 3 × 8 × 4 B) = 384 B; pinned 2 × (1 × 2 × 6 × 8 × 4 B) = 768 B.
    # bookkeeping: the 0-dim int64 window-size tensor, 8 B.
    assert measure(layer) == Bytes(logical=384, pinned=768, bookkeeping=8)
    layer.update(_kv(1), _kv(1))
    # decode step: cat(3 kept, 1 new) = 4 positions pinned, 3 kept: 2 × 256 B and 2 × 192 B.
    assert measure(layer) == Bytes(logical=384, pinned=512, bookkeeping=8)


def test_static_layer_none_before_first_use_then_full_extent() -> None:
    from transformers.cache_utils import StaticLayer

    layer = StaticLayer(max_cache_len=10)
    assert layer.keys is None
    # cumulative_length is a 0-dim int64 from construction: 8 B bookkeeping, no KV yet.
    assert measure(layer) == Bytes(logical=0, pinned=0, bookkeeping=8)
    layer.update(_kv(2), _kv(2), cache_kwargs={"cache_position": torch.arange(2)})
    # full extent from the first write: 2 × (1 × 2 × 10 × 8 × 4 B) = 1,280 B.
    assert measure(layer).logical == 1280


def test_fp8_quantized_layer_counts_quantized_bytes_and_scale_as_bookkeeping() -> None:
    from transformers.cache_utils import Fp8QuantizedLayer

    layer = Fp8QuantizedLayer()
    layer.update(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8))
    # fp8 K and V: 2 × (1 × 2 × 5 × 8 × 1 B) = 160 B; the residual keys/values are empty;
    # two 0-dim fp32 scales = 8 B bookkeeping.
    assert measure(layer) == Bytes(logical=160, pinned=160, bookkeeping=8)


def test_same_cache_reachable_twice_counts_once() -> None:
    from transformers import DynamicCache

    cache = DynamicCache()
    cache.update(_kv(4), _kv(4), 0)  # 2 × (1 × 2 × 4 × 8 × 4 B) = 512 B
    assert measure(cache) == Bytes(512, 512, 0)
    assert measure([cache, cache, {"again": cache}]) == Bytes(512, 512, 0)


def test_two_views_of_one_storage_pin_it_once() -> None:
    class Holder:
        pass

    from transformers.cache_utils import DynamicLayer

    base = torch.zeros(1, 2, 8, 8)  # 1 × 2 × 8 × 8 × 4 B = 512 B storage
    layer = DynamicLayer()
    layer.keys = base[:, :, :3, :]  # 2 × 3 × 8 × 4 B = 192 B
    layer.values = base[:, :, 3:5, :]  # 2 × 2 × 8 × 4 B = 128 B
    holder = Holder()
    holder.layer = layer  # type: ignore[attr-defined]
    assert measure(holder) == Bytes(logical=320, pinned=512, bookkeeping=0)


def test_weights_are_never_cache() -> None:
    from torch import nn

    model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8))
    assert measure(model) == Bytes(0, 0, 0)
    # Parameters are not recorded even as an owner's own tensors.
    assert find_holdings(model[0]) == []


def test_recognition_by_class_not_by_duck_typing() -> None:
    from transformers import DynamicCache, EncoderDecoderCache
    from transformers.cache_utils import LinearAttentionLayer

    assert is_cache_object(DynamicCache())
    assert is_cache_object(EncoderDecoderCache(DynamicCache(), DynamicCache()))
    assert is_cache_object(LinearAttentionLayer())
    assert not is_cache_object(torch.zeros(1))
    assert not is_cache_object(torch.nn.Linear(1, 1))

    class Impostor:
        keys = torch.zeros(3)

    assert not is_cache_object(Impostor())


def test_linear_attention_state_dicts_before_and_after_use() -> None:
    from transformers.cache_utils import LinearAttentionLayer

    layer = LinearAttentionLayer()
    assert layer.conv_states == {0: None}  # None before first use: tolerated
    assert measure(layer).logical == 0
    layer.lazy_initialization(conv_states=torch.zeros(2, 96, 4),
                              recurrent_states=torch.zeros(2, 2, 16, 16))
    # conv: 2 × 96 × 4 × 4 B = 3,072 B; recurrent: 2 × 2 × 16 × 16 × 4 B = 4,096 B.
    assert measure(layer).logical == 3072 + 4096


def test_encoder_decoder_halves_are_separate_holdings() -> None:
    from transformers import DynamicCache, EncoderDecoderCache

    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    cache.self_attention_cache.update(_kv(3), _kv(3), 0)  # 2 × 192 B
    cache.cross_attention_cache.update(_kv(16), _kv(16), 0)  # 2 × 1,024 B
    by_path = {h.path: h.bytes.logical for h in find_holdings(cache)}
    assert by_path == {"": 0, "self_attention_cache": 384, "cross_attention_cache": 2048}
    assert measure(cache).logical == 384 + 2048

"""KDA hybrids: Kimi-K3 (KDA + MLA) and GLM-5.3-Flash (KDA + NoPE MLA + pooled indexer +
indexer tail). Expected numbers are worked from each config's own values in the comments.

fp8 applies to the MLA latent only. The KDA state keeps its own dtypes (vLLM's
kv_cache_dtype never changes them); the GLM-5.3 indexer keys are fp8 + fp32 scale by
architecture and the indexer tail stays in the model dtype.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kvledger.derive import UnknownCacheKey, derive_model
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.families.kda import IndexerTail, PooledIndexer
from kvledger.derive.layers import MLA, Kind, LayerCache, ModelFacts, Role
from kvledger.derive.source import load_source
from kvledger.derive.states import KDAState

K3 = "moonshotai/Kimi-K3"
GLM = "zai-org/GLM-5.3-Flash"


def per_token(facts: ModelFacts, cls: type[LayerCache]) -> int:
    return sum(x.bytes_per_token() for x in facts.layers if isinstance(x, cls))


def per_request(facts: ModelFacts, cls: type[LayerCache]) -> int:
    return sum(x.bytes_per_request() for x in facts.layers if isinstance(x, cls))


def _config(model: str) -> dict[str, Any]:
    return copy.deepcopy(load_source(model).config)


# ---- Kimi-K3 --------------------------------------------------------------------------------


def test_kimi_k3_bytes_bf16_and_fp8() -> None:
    facts = derive_model(K3)
    assert facts.kv_dtype == "bfloat16"
    # 93 layers: full_attn_layers lists 24 (1-based: 4, 8, ..., 92, 93), kda_layers 69.
    # MLA: (kv_lora_rank 512 + qk_rope_head_dim 64) = 576 x 2 B = 1,152 x 24 = 27,648 B/token.
    assert per_token(facts, MLA) == 27_648
    assert facts.bytes_per_token() == 27_648
    # KDA conv: (96 heads x 128) x 3 (q, k, v) = 36,864 ch x (4-1) x 2 B = 221,184;
    # recurrent: 96 x 128 x 128 x 4 B (float32 by architecture) = 6,291,456;
    # per layer 6,512,640 x 69 = 449,372,160.
    assert per_request(facts, KDAState) == 449_372_160
    assert facts.bytes_per_request() == 449_372_160
    fp8 = derive_model(K3, kv_cache_dtype="fp8")
    # MLA at fp8: 576 x 1 B x 24 = 13,824.
    assert per_token(fp8, MLA) == 13_824
    assert per_request(fp8, KDAState) == 449_372_160


def test_kimi_k3_layer_pattern_is_one_based() -> None:
    facts = derive_model(K3)
    kinds = [x.kind for x in facts.layers]
    assert len(kinds) == 93 and not facts.by_role(Role.MTP)
    # full_attn_layers [4, 8, ..., 92, 93] 1-based -> 0-based 3, 7, ..., 91 and the last
    # layer 92 (23 + 1 = 24 MLA layers, as the oracle's MLAAttentionSpec counts).
    expected = [Kind.MLA if (i + 1) % 4 == 0 or i == 92 else Kind.STATE for i in range(93)]
    assert kinds == expected


def test_kimi_lists_must_partition_layers() -> None:
    raw = _config(K3)
    raw["text_config"]["linear_attn_config"]["kda_layers"].append(4)
    with pytest.raises(ConfigError, match="partition"):
        derive_model(raw)


def test_kimi_unknown_linear_attn_subkey_fails_closed() -> None:
    raw = _config(K3)
    raw["text_config"]["linear_attn_config"]["num_k_heads"] = 48
    with pytest.raises(UnknownCacheKey, match=r"linear_attn_config\.num_k_heads"):
        derive_model(raw)


def test_kimi_unknown_text_key_fails_closed() -> None:
    raw = _config(K3)
    raw["text_config"]["swa_layers"] = [1, 2]
    with pytest.raises(UnknownCacheKey, match="swa_layers"):
        derive_model(raw)


def test_kimi_mtp_refused() -> None:
    raw = _config(K3)
    raw["text_config"]["num_nextn_predict_layers"] = 1
    with pytest.raises(UnsupportedArchitecture, match="MTP"):
        derive_model(raw)


# ---- GLM-5.3-Flash --------------------------------------------------------------------------


def test_glm53_bytes_bf16_and_fp8() -> None:
    facts = derive_model(GLM)
    assert facts.kv_dtype == "bfloat16"
    # 45 layers: 11 deepseek_sparse_attention + 34 KDA, plus 1 MTP sparse layer -> 12 sparse.
    # MLA: (kv_lora_rank 512 + qk_rope_head_dim 0) x 2 B = 1,024 x 12 = 12,288 B/token.
    assert per_token(facts, MLA) == 12_288
    # Indexer: (128 fp8 B + 4 B fp32 scale) = 132 B per 4 pooled tokens = 33 x 12 = 396.
    assert per_token(facts, PooledIndexer) == 396
    assert facts.bytes_per_token() == 12_288 + 396
    # KDA conv: (64 x 128) x 3 = 24,576 ch x 3 x 2 B = 147,456; recurrent 64 x 128 x 128 x
    # 4 B = 4,194,304; per layer 4,341,760 x 34 = 147,619,840.
    assert per_request(facts, KDAState) == 147_619_840
    # Tail ring: index_kpool 4 positions x 2 rows x 128 x 2 B = 2,048 x 12 = 24,576.
    assert per_request(facts, IndexerTail) == 24_576
    assert facts.bytes_per_request() == 147_619_840 + 24_576
    fp8 = derive_model(GLM, kv_cache_dtype="fp8")
    # MLA at fp8: 512 x 1 B x 12 = 6,144; indexer unchanged 396.
    assert per_token(fp8, MLA) == 6_144
    assert fp8.bytes_per_token() == 6_144 + 396
    assert fp8.bytes_per_request() == 147_619_840 + 24_576


def test_glm53_layer_pattern() -> None:
    facts = derive_model(GLM)
    decoder = facts.by_role(Role.DECODER)
    # layer_types: every 4th (1-based) layer is sparse attention, 3 entries each.
    by_index: dict[int, list[str]] = {}
    for x in decoder:
        by_index.setdefault(x.index, []).append(type(x).__name__)
    assert sorted(by_index) == list(range(45))
    for i, names in by_index.items():
        if (i + 1) % 4 == 0:
            assert names == ["MLA", "PooledIndexer", "IndexerTail"]
        else:
            assert names == ["KDAState"]
    assert [(x.index, type(x).__name__) for x in facts.by_role(Role.MTP)] == [
        (45, "MLA"), (45, "PooledIndexer"), (45, "IndexerTail")]


def test_glm53_lists_must_agree_with_layer_types() -> None:
    raw = _config(GLM)
    raw["text_config"]["linear_attn_config"]["kda_layers"][0] = 3
    with pytest.raises(ConfigError, match="kda_layers"):
        derive_model(raw)


def test_glm53_shared_indexer_refused() -> None:
    raw = _config(GLM)
    raw["text_config"]["indexer_types"][7] = "shared"
    with pytest.raises(UnsupportedArchitecture, match="indexer_types"):
        derive_model(raw)


def test_glm53_unknown_key_fails_closed() -> None:
    raw = _config(GLM)
    raw["text_config"]["index_kpool_window"] = 8
    with pytest.raises(UnknownCacheKey, match="index_kpool_window"):
        derive_model(raw)


def test_pooled_indexer_refuses_fractional_bytes_per_token() -> None:
    # (100 + 4) B per entry over 3 tokens is not whole bytes per token.
    idx = PooledIndexer(index=0, head_dim=100, quant_block=128, scale_bytes=4, pool=3,
                        dtype="fp8")
    assert idx.bytes_per_entry() == 104
    with pytest.raises(ValueError, match="bytes_per_entry"):
        idx.bytes_per_token()

"""transformers' bookkeeping keys are one vocabulary, known on every level of every row.

A config re-saved by transformers 4.4x carries ``_attn_implementation_autoset`` (its
``PretrainedConfig.__init__`` sets it), whatever the model type. Before the shared vocabulary
(derive/bookkeeping.py) only the rows that happened to list it accepted it, and a re-saved
Kimi-K2-Instruct-0905 stopped with "kimi_k2 config carries cache-affecting key
'_attn_implementation_autoset'".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.derive import UnknownCacheKey, derive_model
from kvledger.derive.bookkeeping import BOOKKEEPING
from kvledger.derive.guard import looks_cache_affecting
from kvledger.derive.model_types import HARMLESS, MODEL_TYPES, resolve
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.request import PlanRequest

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
KIMI = SHARED / "configs" / "moonshotai--Kimi-K2-Instruct.json"  # real file (SOURCES.md)


def _kimi(**extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(KIMI.read_text())
    config.update(extra)
    return config


def test_a_resaved_kimi_k2_config_plans() -> None:
    config = _kimi(_attn_implementation_autoset=True, _name_or_path="moonshotai/Kimi-K2",
                   output_attentions=False, chunk_size_feed_forward=0, pruned_heads={},
                   is_decoder=False, cross_attention_hidden_size=None,
                   return_dict_in_generate=False, encoder_no_repeat_ngram_size=0)
    # The file's own values: 61 MLA layers, latent 512 + rope 64, bf16, no MTP layer.
    assert (config["model_type"], config["num_hidden_layers"], config["kv_lora_rank"],
            config["qk_rope_head_dim"], config["torch_dtype"],
            config["num_nextn_predict_layers"]) == ("kimi_k2", 61, 512, 64, "bfloat16", 0)
    facts = derive_model(config)
    # (512 + 64) values x 2 B = 1,152 B per layer per token, x 61 layers = 70,272 B.
    assert sum(layer.bytes_per_token() for layer in facts.layers) == 70_272
    plan = plan_vllm(facts, PlanRequest(engine="vllm==0.33", kv_cache_memory_bytes=8 << 30,
                                        max_model_len=32768), 8 << 30)
    # Block 16: 16 x 1,152 x 61 = 1,124,352 B per block; 8 GiB // that = 7,639 blocks,
    # x 16 = 122,224 tokens (vLLM 0.32's own numbers for the file without the key:
    # ../shared/oracles/vllm-0.32/cases.jsonl, moonshotai--Kimi-K2-Instruct.json at 8 GiB).
    assert (plan.bytes_per_block, plan.num_blocks, plan.kv_cache_tokens) == (
        1_124_352, 7_639, 122_224)


def test_a_cache_word_outside_the_vocabulary_still_stops() -> None:
    with pytest.raises(UnknownCacheKey, match="'kv_sharing_window'"):
        derive_model(_kimi(kv_sharing_window=128))


def test_per_layer_overrides_are_not_bookkeeping() -> None:
    # transformers 5's HeterogeneousConfigMixin reads per_layer_config: real per-layer sizes.
    assert "per_layer_config" not in BOOKKEEPING
    assert "model_type" not in BOOKKEEPING


def test_every_bookkeeping_key_says_why() -> None:
    for key, why in BOOKKEEPING.items():
        assert isinstance(why, str) and len(why) > 20, key
    # The global list keeps only what is not transformers' base class's.
    assert not set(HARMLESS) & set(BOOKKEEPING)


@pytest.mark.parametrize("name", sorted(MODEL_TYPES))
def test_no_row_repeats_a_bookkeeping_key(name: str) -> None:
    row = resolve(name)
    repeated = sorted(k for k in row.harmless if k in BOOKKEEPING and looks_cache_affecting(k))
    assert not repeated, f"{name}: {repeated} are transformers' bookkeeping (bookkeeping.py)"

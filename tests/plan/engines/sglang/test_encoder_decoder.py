"""SGLang 0.5.23's token pool for Mllama and Whisper, worked by hand from the configs' own
values and SGLang's rule (``kvledger/plan/engines/sglang/encoder_decoder.py`` cites the source:
``ModelConfig._derive_model_shapes``' Whisper branch, ``models/whisper.py``'s layer ids,
``models/mllama.py``'s cross-attention ``RadixAttention`` per layer id,
``DefaultPoolConfigurator._compute_cell_size``). The oracle cases cov-whisper / cov-mllama
check the same numbers against SGLang's own run."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.sglang import SglangLayoutError, plan_sglang
from kvledger.plan.request import PlanRequest
from oracle_cases import real_config

GIB = 1 << 30


def _config(stem: str) -> dict[str, Any]:
    return real_config(f"{stem}.json")


def test_whisper_pool_has_a_slot_per_encoder_decoder_and_cross_layer() -> None:
    # whisper-tiny: encoder_layers 4, decoder_layers 4 → 4 + 2 × 4 = 12 slots;
    # encoder_attention_heads 6, d_model 384 → head_dim 64; torch_dtype float32 → float16.
    # cell = 6 × (64 + 64) × 12 × 2 B = 18,432 B/token (vLLM would size 4 decoder layers).
    # 16 GiB = 17,179,869,184 B / 18,432 = 932,067 tokens (932,067 × 18,432 =
    # 17,179,858,944; 10,240 B left).
    facts = derive_model(_config("openai--whisper-tiny"))
    plan = plan_sglang(facts, PlanRequest(engine="sglang", max_model_len=448), 16 * GIB)
    assert plan.cell_bytes_per_token == 18432
    assert plan.kv_cache_tokens == 932067
    assert plan.kv_cache_dtype == "float16"
    # "K size": (932,067 + 1 page) × 6 heads × 64 × 12 slots × 2 B = 8,589,938,688 B
    # = 8.00 GB (GiB, two decimals), the same for V.
    assert plan.sglang_log_line == ("KV Cache is allocated. dtype: torch.float16, #tokens: "
                                    "932067, K size: 8.00 GB, V size: 8.00 GB")


def test_whisper_heads_shard_over_tensor_parallel_ranks() -> None:
    # TP 2: max(1, 6 // 2) = 3 heads per rank → 3 × 128 × 12 × 2 = 9,216 B/token;
    # 1 GiB / 9,216 = 116,508 tokens (116,508 × 9,216 = 1,073,737,728 ≤ 1,073,741,824).
    facts = derive_model(_config("openai--whisper-tiny"))
    plan = plan_sglang(facts, PlanRequest(engine="sglang", tensor_parallel_size=2,
                                          max_model_len=448), GIB)
    assert plan.cell_bytes_per_token == 9216
    assert plan.kv_cache_tokens == 116508


def test_whisper_uses_the_encoder_layer_count_too() -> None:
    # A whisper with 6 encoder and 2 decoder layers (both 6 heads): 6 + 2 × 2 = 10 slots
    # → 6 × 128 × 10 × 2 = 15,360 B/token. (A count SGLang takes from the config, not from
    # the decoder layers kvledger's facts list.)
    config = copy.deepcopy(_config("openai--whisper-tiny"))
    config.update(encoder_layers=6, num_hidden_layers=6, decoder_layers=2)
    plan = plan_sglang(derive_model(config), PlanRequest(engine="sglang", max_model_len=448),
                       GIB)
    assert plan.cell_bytes_per_token == 15360


def test_whisper_with_other_decoder_heads_is_refused() -> None:
    # SGLang's slots hold encoder_attention_heads (WhisperConfig.attribute_map), the decoder
    # layers decoder_attention_heads: when they differ, refuse rather than guess.
    config = copy.deepcopy(_config("openai--whisper-tiny"))
    config["decoder_attention_heads"] = 3
    with pytest.raises(SglangLayoutError, match="pool slots hold 6 KV heads × 64"):
        plan_sglang(derive_model(config), PlanRequest(engine="sglang", max_model_len=448),
                    GIB)


def test_mllama_cross_attention_layers_take_a_slot_each() -> None:
    # Llama-3.2-Vision 4-layer test config: text num_hidden_layers 4 (layer 2 is cross-
    # attention), num_key_value_heads 8, hidden_size 8192 / 64 heads = head_dim 128, bf16:
    # 4 × 8 × (128 + 128) × 2 B = 16,384 B/token; 16 GiB / 16,384 = 1,048,576 tokens.
    facts = derive_model(_config("meta-llama--Llama-3.2-Vision-mllama-4layer-TEST"))
    plan = plan_sglang(facts, PlanRequest(engine="sglang", max_model_len=32768), 16 * GIB)
    assert plan.cell_bytes_per_token == 16384
    assert plan.kv_cache_tokens == 1048576


def test_encoder_decoder_pipeline_parallel_is_refused() -> None:
    facts = derive_model(_config("openai--whisper-tiny"))
    with pytest.raises(SglangLayoutError, match="pipeline parallelism"):
        plan_sglang(facts, PlanRequest(engine="sglang", pipeline_parallel_size=2,
                                       max_model_len=448), GIB)


def test_each_whisper_request_also_holds_its_audio_frames() -> None:
    # WhisperForConditionalGeneration.pad_input_ids prepends max_source_positions = 1500
    # dummy tokens, and prepare_encoder_info_extend gives them pool entries: one request of
    # 448 decoder tokens holds 1,948 entries. 932,067 / 1,948 = 478.47 requests at once.
    facts = derive_model(_config("openai--whisper-tiny"))
    plan = plan_sglang(facts, PlanRequest(engine="sglang", max_model_len=448), 16 * GIB)
    assert plan.encoder_tokens == 1500
    assert plan.max_concurrency == pytest.approx(932067 / 1948)
    assert plan.pool_rows[0]["entries_per_req"] == 1948


def test_sglang_serves_whisper_as_multimodal() -> None:
    # configs/model_config.py: multimodal_model_archs lists WhisperForConditionalGeneration
    # (is_multimodal_model), though its config has no vision_config / audio_config key.
    from kvledger.plan.engines.sglang.model import build

    assert build(derive_model(_config("openai--whisper-tiny"))).multimodal

"""Breadth round 3: the rows added for vLLM 0.33's registry, on their config classes' own
defaults. Every config here is a CLASS-DEFAULT config (tests/data/class-default-configs/,
written by scripts/class_default_configs.py from transformers 5.19's ``ConfigClass()``), not a
real checkpoint file; each file names the checkpoint its class's docstring says it resembles
(``_generated_by.reference_checkpoint``). Expected numbers are worked by hand from the values
in the file (the arithmetic is in the comments); vLLM 0.32's own numbers for some of the same
files replay in tests/plan/test_breadth_oracle.py.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kvledger.derive import ConfigError, Role, derive_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.errors import VllmRefusesToStart
from kvledger.plan.request import PlanRequest

DEFAULTS = Path(__file__).resolve().parents[1] / "data" / "class-default-configs"
GIB8 = 8 << 30  # 8,589,934,592 B


def _config(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((DEFAULTS / f"{name}.json").read_text())
    return config


def _text(config: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        config = config[key]
    return config


def _plan(config: dict[str, Any], length: int = 2048, block: int | str = 16) -> Any:
    return plan_vllm(derive_model(config), PlanRequest(
        engine="vllm", kv_cache_memory_bytes=GIB8, max_model_len=length, block_size=block),
        GIB8)


# Keys vLLM's model class reads that these config classes lack, so their class defaults stop
# vLLM at start-up (oracle: tests/oracles/vllm-0.32/vllm-0.32-breadth.jsonl, replayed in
# tests/plan/test_breadth_oracle.py); a checkpoint states them. None sizes a cache; the values
# are the reference checkpoints' (HYV3Config's mlp_layer_types make layer 0 dense).
STATED = {
    "hy_v3": {"first_k_dense_replace": 1},
    "longcat_flash": {"mla_scale_q_lora": True, "mla_scale_kv_lora": True},
}


def _stated(name: str) -> dict[str, Any]:
    config = _config(name)
    if name == "glm4v_moe.head-dim":  # Glm4MoeDecoderLayer reads the text config's
        config["text_config"]["use_qk_norm"] = False
    config.update(STATED.get(name, {}))
    return config


def _windows(config: dict[str, Any]) -> Counter[int | None]:
    facts = derive_model(config)
    return Counter(getattr(x, "window", None) for x in facts.by_role(Role.DECODER))


def test_every_file_records_its_class_and_reference_checkpoint() -> None:
    for path in sorted(DEFAULTS.glob("*.json")):
        made = json.loads(path.read_text())["_generated_by"]
        assert made["transformers_version"].startswith("5."), path.name
        assert made["config_class"].endswith("Config") or "_Config" in made["config_class"]
        assert made["reference_checkpoint"], path.name


# (class-default file, the text config's keys inside it, layers, KV heads, head dim,
#  bytes a block at block 16, blocks in 8 GiB). All full attention, bf16: a layer caches
#  2 (K, V) x KV heads x head dim x 2 B a token; a block is 16 tokens of every layer (one
#  group); blocks = 8,589,934,592 // bytes a block.
FULL = [
    # HyperCLOVAXConfig: 32 x 32 KV x head_dim 128 (4096 / 32): 16,384 B; x 16 x 32 =
    # 8,388,608; 8 GiB // that = 1,024.
    ("hyperclovax", (), 32, 32, 128, 8_388_608, 1_024),
    # HYV3Config: 80 x 8 x 128: 4,096 B; x 16 x 80 = 5,242,880; // = 1,638 (1,638.4).
    ("hy_v3", (), 80, 8, 128, 5_242_880, 1_638),
    # MellumConfig: 28 x 4 x 128 (layer_types all full, sliding_window 1024 unused): 2,048 B;
    # x 16 x 28 = 917,504; // = 9,362 (9,362.3).
    ("mellum", (), 28, 4, 128, 917_504, 9_362),
    # LlavaOnevisionConfig's qwen2 text: 32 x 32 x (4096 / 32 = 128): as hyperclovax.
    ("llava_onevision", ("text_config",), 32, 32, 128, 8_388_608, 1_024),
    # LlavaNextVideoConfig's llama text: 32 x 32 x 128.
    ("llava_next_video", ("text_config",), 32, 32, 128, 8_388_608, 1_024),
    # InternVLConfig's qwen2 text: 32 x 32 x 128.
    ("internvl", ("text_config",), 32, 32, 128, 8_388_608, 1_024),
    # QianfanOCRConfig's qwen3 text: 32 x 32 x head_dim 128.
    ("qianfan_ocr", ("text_config",), 32, 32, 128, 8_388_608, 1_024),
    # GlmAsrConfig's llama text: 28 x 4 x 128: 2,048 B; as mellum.
    ("glmasr", ("text_config",), 28, 4, 128, 917_504, 9_362),
    # AudioFlamingo3Config's qwen2 text: 32 x 32 x 128.
    ("audioflamingo3", ("text_config",), 32, 32, 128, 8_388_608, 1_024),
    # GraniteSpeech(Plus)Config's granite text: 32 x 32 x (4096 / 32).
    ("granite_speech", ("text_config",), 32, 32, 128, 8_388_608, 1_024),
    ("granite_speech_plus", ("text_config",), 32, 32, 128, 8_388_608, 1_024),
    # Granite4VisionConfig's llama text: 32 x 32 x 128.
    ("granite4_vision", ("text_config",), 32, 32, 128, 8_388_608, 1_024),
    # VibeVoiceAsrConfig's qwen2 text: 32 x 32 x 128.
    ("vibevoice_asr", ("text_config",), 32, 32, 128, 8_388_608, 1_024),
    # AriaConfig's aria_text: 32 x 32 x head_dim 128.
    ("aria", ("text_config",), 32, 32, 128, 8_388_608, 1_024),
    # Blip2Config's OPT text: 12 x 12 heads x (768 / 12 = 64): 2 x 12 x 64 x 2 = 3,072 B;
    # x 16 x 12 = 589,824; // = 14,563 (14,563.6).
    ("blip-2", ("text_config",), 12, 12, 64, 589_824, 14_563),
    # Glm4vMoeConfig given text head_dim 128 (GLM-4.5V's): 46 x 8 x 128: 4,096 B; x 16 x 46 =
    # 3,014,656; // = 2,849 (2,849.4). num_nextn_predict_layers: none (no MTP layer).
    ("glm4v_moe.head-dim", ("text_config",), 46, 8, 128, 3_014_656, 2_849),
    # GlmOcrConfig's text: 16 x 8 x (1024 / 16 = 64): 2,048 B; x 16 x 16 = 524,288; // =
    # 16,384.
    ("glm_ocr", ("text_config",), 16, 8, 64, 524_288, 16_384),
    # PaddleOCRVLConfig's text: 18 x 2 x head_dim 128: 1,024 B; x 16 x 18 = 294,912; // =
    # 29,127 (29,127.1).
    ("paddleocr_vl", ("text_config",), 18, 2, 128, 294_912, 29_127),
    # Emu3Config's text: 32 x 8 x (4096 / 32 = 128): 4,096 B; x 16 x 32 = 2,097,152; // =
    # 4,096.
    ("emu3", ("text_config",), 32, 8, 128, 2_097_152, 4_096),
    # Qwen3OmniMoeConfig given text head_dim 128: 28 x 4 x 128: as mellum.
    ("qwen3_omni_moe.head-dim", ("thinker_config", "text_config"), 28, 4, 128, 917_504, 9_362),
    # CohereCompassConfig's text: 40 x 64 x 128, layer_types all full (sliding_window 4096
    # unused): 32,768 B; x 16 x 40 = 20,971,520; // = 409 (409.6).
    ("cohere_compass", ("text_config",), 40, 64, 128, 20_971_520, 409),
]


@pytest.mark.parametrize(("name", "inside", "layers", "kv", "dim", "per_block", "blocks"), FULL,
                         ids=[row[0] for row in FULL])
def test_full_attention_class_defaults(name: str, inside: tuple[str, ...], layers: int,
                                       kv: int, dim: int, per_block: int, blocks: int) -> None:
    config = _stated(name)
    text = _text(config, *inside)
    assert text["num_hidden_layers"] == layers  # the class's value, as the comment reads it
    facts = derive_model(config)
    decoder = facts.by_role(Role.DECODER)
    assert len(decoder) == layers
    assert {(x.k_heads, x.k_dim, getattr(x, "window", None))  # type: ignore[attr-defined]
            for x in decoder} == {(kv, dim, None)}
    if name in STOPS_AT_START:
        # vLLM 0.33 stops on the class defaults (its model class reads a key they lack, or
        # asserts a flag they leave false: tests/oracles/vllm-0.33/vllm-0.33-new-behaviour.jsonl);
        # a checkpoint that states the key plans the cache worked out above.
        stated = STOPS_AT_START[name]
        with pytest.raises(VllmRefusesToStart, match=next(iter(stated)).rsplit(".")[-1]):
            _plan(config)
        config = json.loads(json.dumps(config))
        for path, value in stated.items():
            *subs, key = path.split(".")
            level = config
            for sub in subs:
                level = level[sub]
            level[key] = value
    plan = _plan(config)
    assert (plan.block_size, plan.bytes_per_block, plan.num_blocks) == (16, per_block, blocks)


# Class defaults vLLM cannot start with: the key its model class reads (a dotted path into
# sub-configs), and a value a checkpoint would state (InternVL-style configs:
# force_image_size 448; CohereCompass: tied embeddings, which its text model asserts).
# The first key is the one vLLM stops on.
STOPS_AT_START: dict[str, dict[str, object]] = {
    "qianfan_ocr": {"force_image_size": 448},
    "qwen3_omni_moe.head-dim": {"thinker_config.vision_config.image_size": 768,
                                "thinker_config.vision_config.apply_vit_abs_pos_embed": True},
    "cohere_compass": {"tie_word_embeddings": True},
}


# (file, KV heads, head dim, window, sliding layers, full layers, bytes a block, blocks):
# vLLM groups the layers by spec into groups of the smaller count (the full layers), and a
# block spans one tensor of each layer in a group: full-layer count x 16 tokens x 2 x KV x
# dim x 2 B.
WINDOWED = [
    # GraniteSWAConfig: 24 layers, 4 KV x (2560 / 20 = 128), layer i full when i % 4 == 0
    # (6 full, 18 sliding over 128). 6 x 16 x 2 x 4 x 128 x 2 = 196,608; // = 43,690.
    ("granite_swa", 4, 128, 128, 18, 6, 196_608, 43_690),
    # GraniteMoeSWAConfig: 32 layers, 32 KV x (4096 / 32): 8 full, 24 sliding over 128.
    # 8 x 16 x 2 x 32 x 128 x 2 = 2,097,152; // = 4,096.
    ("granitemoe_swa", 32, 128, 128, 24, 8, 2_097_152, 4_096),
    # Cohere2MoeConfig: 40 layers, 64 KV x 128, every 4th full; window sliding_window + 1 =
    # 4097 (cohere2_moe.py Cohere2MoeAttention). 10 x 16 x 2 x 64 x 128 x 2 = 5,242,880;
    # // = 1,638.
    ("cohere2_moe", 64, 128, 4097, 30, 10, 5_242_880, 1_638),
    # Cohere2VisionConfig's cohere2 text: as Command R7B, window 4096 + 1.
    ("cohere2_vision", 64, 128, 4097, 30, 10, 5_242_880, 1_638),
]


@pytest.mark.parametrize(("name", "kv", "dim", "window", "sliding", "full", "per_block",
                          "blocks"), WINDOWED, ids=[row[0] for row in WINDOWED])
def test_windowed_class_defaults(name: str, kv: int, dim: int, window: int, sliding: int,
                                 full: int, per_block: int, blocks: int) -> None:
    config = _config(name)
    assert _windows(config) == Counter({window: sliding, None: full})
    decoder = derive_model(config).by_role(Role.DECODER)
    assert {(x.k_heads, x.k_dim) for x in decoder} == {(kv, dim)}  # type: ignore[attr-defined]
    plan = _plan(config, 2048)
    assert (plan.block_size, plan.bytes_per_block, plan.num_blocks) == (16, per_block, blocks)


def test_granite_swa_first_layer_is_full_as_the_class_builds_it() -> None:
    config = _config("granite_swa")
    del config["layer_types"]  # the class's own pattern: layer i full when i % 4 == 0
    facts = derive_model(config)
    windows = [getattr(x, "window", None) for x in facts.by_role(Role.DECODER)]
    assert windows[:5] == [None, 128, 128, 128, None]


def test_mellum_without_layer_types_keeps_every_layer_full() -> None:
    config = _config("mellum")
    del config["layer_types"]  # MellumConfig then builds all full, sliding_window unused
    assert _windows(config) == Counter({None: 28})


# MLA: one latent of kv_lora_rank + qk_rope_head_dim = 512 + 64 = 576 values a token, bf16:
# 1,152 B a layer a token; 18,432 B a layer-block of 16.
def test_axk1_is_deepseek_mla() -> None:
    config = _config("axk1")
    assert (config["num_hidden_layers"], config["kv_lora_rank"],
            config["qk_rope_head_dim"]) == (61, 512, 64)
    # 61 x 18,432 = 1,124,352 B a block; 8 GiB // that = 7,639 (7,639.9).
    plan = _plan(config, 32768)
    assert (plan.bytes_per_block, plan.num_blocks) == (1_124_352, 7_639)


def test_longcat_flash_caches_two_mla_attentions_a_layer() -> None:
    config = _stated("longcat_flash")
    assert (config["num_layers"], config["kv_lora_rank"], config["qk_rope_head_dim"]) == (
        28, 512, 64)
    facts = derive_model(config)
    assert len(facts.by_role(Role.DECODER)) == 56  # 2 x 28 (longcat_flash.py self_attn[0..1])
    # 56 x 18,432 = 1,032,192 B a block; 8 GiB // that = 8,322 (8,322.1).
    plan = _plan(config, 32768)
    assert (plan.bytes_per_block, plan.num_blocks) == (1_032_192, 8_322)


def test_olmo_hybrid_by_hand() -> None:
    config = _config("olmo_hybrid")
    types = config["layer_types"]
    assert (types.count("linear_attention"), types.count("full_attention")) == (24, 8)
    facts = derive_model(config)
    assert not facts.by_role(Role.MTP)  # vLLM has no MTP drafter for OLMo-Hybrid
    states = [x for x in facts.by_role(Role.DECODER) if not hasattr(x, "k_heads")]
    # GDN state (gated_delta_net_state_shape), bf16: conv (4 - 1) x (2 x 30 x 96 + 30 x 192)
    # = 34,560 values, recurrent 30 x 96 x 192 = 552,960 values: 587,520 x 2 = 1,175,040 B.
    assert {x.bytes_per_request() for x in states} == {1_175_040}  # type: ignore[attr-defined]
    plan = _plan(config, 32768, "auto")
    # Attention: 2 x 30 x (3840 / 30 = 128) x 2 = 15,360 B a token. vLLM 0.33 aligns the
    # hybrid block to FlashInfer's 64-token GDN checkpoints: 64 x ceil(1,175,040 / (64 x
    # 15,360)) = 128 tokens, a 1,966,080 B page. Groups of 8 (8 attention, 3 x 8 GDN): 8 x
    # 1,966,080 = 15,728,640 B a block; 8 GiB // that = 546 (546.1).
    assert (plan.block_size, plan.bytes_per_block, plan.num_blocks) == (128, 15_728_640, 546)


@pytest.mark.parametrize(("name", "heads"), [("glm4v_moe", 96), ("qwen3_omni_moe", 28)])
def test_a_class_default_head_dim_of_none_that_does_not_divide_is_refused(
        name: str, heads: int) -> None:
    # Glm4vMoeTextConfig / Qwen3OmniMoeTextConfig leave head_dim None and their hidden size
    # is not a multiple of their heads (4096 / 96, 2048 / 28): kvledger states no size.
    with pytest.raises(ConfigError, match=f"not divisible by {heads} heads"):
        derive_model(_config(name))


def test_nemotron_h_omni_reads_its_text_pattern() -> None:
    config = _config("nemotron_h_omni")
    # NemotronHConfig's default layers_block_type: linear (Mamba2), moe, full_attention, mlp.
    assert config["text_config"]["layers_block_type"] == [
        "linear_attention", "moe", "full_attention", "mlp"]
    kinds = Counter(type(x).__name__ for x in derive_model(config).by_role(Role.DECODER))
    assert (kinds["Mamba2State"], kinds["FullAttention"]) == (1, 1)


def test_minicpmv4_7_is_a_qwen3_5_text_hybrid() -> None:
    config = _config("minicpmv4_7")
    text = config["text_config"]
    assert (text["model_type"], text["num_hidden_layers"]) == ("qwen3_5_text", 32)
    decoder = derive_model(config).by_role(Role.DECODER)
    kinds = Counter(type(x).__name__ for x in decoder)
    # full_attention_interval 4: 8 full-attention layers, 24 GDN layers
    assert (kinds["FullAttention"], kinds["GatedDeltaNetState"]) == (8, 24)

"""Breadth round 4: the last vLLM 0.33 architectures with a transformers config class. Every
config here is a CLASS-DEFAULT config (tests/data/class-default-configs/, written by
scripts/class_default_configs.py from transformers 5.19's ``ConfigClass()``), not a real
checkpoint file. Expected numbers are worked by hand from the values in the file (the
arithmetic is in the comments); vLLM 0.32's own answers for the same files replay in
tests/plan/test_breadth_oracle.py. The types kvledger refuses are refused with the reason of
plan/engines/vllm/releases/model_type_verdicts.py.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cli_refusals import refusal_line
from kvledger.derive import ConfigError, Role, UnsupportedArchitecture, derive_model
from kvledger.derive.model_types import MODEL_TYPES
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.startup import VllmStartupError
from kvledger.plan.request import PlanRequest

DEFAULTS = Path(__file__).resolve().parents[1] / "data" / "class-default-configs"
GIB8 = 8 << 30  # 8,589,934,592 B


def _config(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((DEFAULTS / f"{name}.json").read_text())
    return config


def _plan(config: dict[str, Any], length: int = 2048) -> Any:
    return plan_vllm(derive_model(config), PlanRequest(
        engine="vllm==0.33", kv_cache_memory_bytes=GIB8, max_model_len=length, block_size=16), GIB8)


def _shapes(config: dict[str, Any]) -> Counter[tuple[int, int, int | None]]:
    return Counter((x.k_heads, x.k_dim, getattr(x, "window", None))  # type: ignore[attr-defined]
                   for x in derive_model(config).by_role(Role.DECODER))


def test_cosmos3_edge_is_nemotron_h_attention_only() -> None:
    config = _config("cosmos3_edge")
    text = config["text_config"]
    assert (text["num_hidden_layers"], text["num_key_value_heads"], text["head_dim"]) == (
        28, 8, 128)
    # _to_nemotron_h_config: ["full_attention", "mlp"] x 28, so 28 attention layers.
    assert _shapes(config) == Counter({(8, 128, None): 28})
    # 2 x 8 x 128 x 2 B = 4,096 B a layer a token; x 28 x 16 = 1,835,008 B a block;
    # 8 GiB // that = 4,681 (4,681.1).
    plan = _plan(config)
    assert (plan.block_size, plan.bytes_per_block, plan.num_blocks) == (16, 1_835_008, 4_681)


def test_hunyuan_vl_class_default_stops_vllm_for_its_none_head_dim() -> None:
    config = _config("hunyuan_vl")
    assert config["text_config"]["head_dim"] is None
    with pytest.raises(VllmStartupError, match=r"NoneType' and 'float'.*head_dim None"):
        _plan(config)


def test_hunyuan_vl_with_head_dim_stated() -> None:
    config = _config("hunyuan_vl.head-dim")
    # HunYuanVLTextConfig: 32 layers, 32 KV heads (MHA), head_dim 128 stated (4096 / 32).
    assert _shapes(config) == Counter({(32, 128, None): 32})
    # 2 x 32 x 128 x 2 = 16,384 B a layer a token; x 32 x 16 = 8,388,608 B a block;
    # 8 GiB // that = 1,024.
    plan = _plan(config)
    assert (plan.block_size, plan.bytes_per_block, plan.num_blocks) == (16, 8_388_608, 1_024)


def test_gemma4_unified_class_default_stops_vllm_without_a_vision_config() -> None:
    config = _config("gemma4_unified")
    assert config["vision_config"] is None  # Gemma4UnifiedConfig's default
    with pytest.raises(VllmStartupError, match="requires a vision configuration"):
        _plan(config)


def test_gemma4_unified_reads_per_layer_config() -> None:
    config = _config("gemma4_unified.vision")  # the vision class's defaults given
    text = config["text_config"]
    assert text["per_layer_config"] == {k: {"head_dim": 512} for k in ("05", "11", "17", "23",
                                                                       "29")}
    # layer_types: every 6th layer full (5 of 30); sliding: 4 KV x head_dim 256 over 1024
    # ("vision" bidirectional keeps the window); full: 4 KV x 512 (per_layer_config).
    assert _shapes(config) == Counter({(4, 256, 1024): 25, (4, 512, None): 5})
    # vLLM groups the 30 layers into groups of 5 (the full count): 1 full, 5 sliding. A full
    # page is 16 x 2 x 4 x 512 x 2 = 131,072 B, and a sliding page (4 x 256: half as wide)
    # takes 32 tokens for the same 131,072 B; a block is one page per group slot:
    # 5 x 131,072 = 655,360 B; 8 GiB // that = 13,107 (13,107.2).
    plan = _plan(config, 4096)
    assert (plan.bytes_per_block, plan.num_blocks) == (655_360, 13_107)


def test_gemma4_unified_per_layer_kv_heads_and_bad_overrides() -> None:
    config = _config("gemma4_unified.vision")
    text = config["text_config"]
    text["per_layer_config"] = {"5": {"head_dim": 512, "num_key_value_heads": 1}}
    shapes = _shapes(config)
    assert shapes[(1, 512, None)] == 1 and shapes[(4, 256, None)] == 4  # the other full ones
    text["per_layer_config"] = {"5": {"intermediate_size": 1}}
    with pytest.raises(UnsupportedArchitecture, match="intermediate_size"):
        derive_model(config)
    text["per_layer_config"] = {"30": {"head_dim": 512}}
    with pytest.raises(ConfigError, match="names no layer of 30"):
        derive_model(config)


REFUSED = [
    ("ernie4_5_vl_moe", "no attribute 'embed_dim'"),
    ("cohere_asr", "Conformer encoder"),
    ("diffusion_gemma", "block-diffusion"),
    ("hrm_text", "non-causal"),
    ("hy_v4", "lightning indexer"),
    ("inkling_text", "short-convolution"),
    ("inkling_mm_model", "short-convolution"),
    ("qwen4_exp", "QSA"),
    ("qwen4_exp_text", "QSA"),
    ("step3p7", "no attribute 'output_dim'"),
]


@pytest.mark.parametrize(("model_type", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_with_vllms_reason(model_type: str, words: str) -> None:
    assert model_type in MODEL_TYPES
    config = _config(model_type)
    assert config["model_type"] == model_type
    path = str(DEFAULTS / f"{model_type}.json")
    for engine, release in (("vllm==0.33", "vLLM 0.33"), ("vllm==0.32", "vLLM 0.32")):
        line = refusal_line(path, engine)
        assert words in line and release in line

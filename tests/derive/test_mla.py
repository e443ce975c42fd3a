"""MLA family: DeepSeek-V2-Lite/V3/R1, Kimi-K2 (MLA) and DeepSeek-V3.2, GLM-5.2 (MLA + DSA).

Every expected number is worked by hand from the config's own values (shown in comments) or
read from vLLM's oracle (../shared/oracles/vllm-0.32/cases.jsonl).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from kvledger.derive import Kind, Role, UnknownCacheKey, derive_model
from kvledger.derive.errors import ConfigError
from kvledger.derive.source import load_source
from kvledger.plan.engines.vllm import VllmLayoutError, plan_vllm
from kvledger.plan.request import PlanRequest
from oracle_cases import ORACLE_FILE, SHARED_MISSING

ORACLE = ORACLE_FILE

V2_LITE = "deepseek-ai/DeepSeek-V2-Lite"
V3 = "deepseek-ai/DeepSeek-V3"
R1 = "deepseek-ai/DeepSeek-R1"
KIMI = "moonshotai/Kimi-K2-Instruct"
V32 = "deepseek-ai/DeepSeek-V3.2"
GLM = "zai-org/GLM-5.2"


def kinds(model: str, **kw: Any) -> Counter[tuple[str, str, bool]]:
    facts = derive_model(model, **kw)
    return Counter((str(layer.kind), str(layer.role), layer.owns_memory) for layer in facts.layers)


def per_token(model: str, kind: Kind, role: Role = Role.DECODER, **kw: Any) -> int:
    facts = derive_model(model, **kw)
    return sum(
        layer.bytes_per_token()
        for layer in facts.layers
        if layer.kind is kind and layer.role is role and layer.owns_memory
    )


# ---- plain MLA ------------------------------------------------------------------------------

# (model, decoder layers, MTP layers) straight from each config.
PLAIN = [
    (V2_LITE, 27, 0),  # num_hidden_layers 27, no num_nextn_predict_layers
    (V3, 61, 1),  # num_hidden_layers 61, num_nextn_predict_layers 1
    (R1, 61, 1),
    (KIMI, 61, 0),  # num_nextn_predict_layers 0
]


@pytest.mark.parametrize(("model", "layers", "mtp"), PLAIN)
def test_plain_mla_bytes_bf16(model: str, layers: int, mtp: int) -> None:
    # All four: kv_lora_rank 512 + qk_rope_head_dim 64 = 576 values x 2 B (bf16) = 1,152 B/layer.
    # DeepSeek-V2-Lite: 1,152 x 27 = 31,104 B/token.
    # DeepSeek-V3 / R1 / Kimi-K2: 1,152 x 61 = 70,272 B/token (+1,152 for V3/R1's MTP layer).
    facts = derive_model(model)
    assert facts.kv_dtype == "bfloat16"
    assert per_token(model, Kind.MLA) == 1152 * layers
    assert per_token(model, Kind.MLA, Role.MTP) == 1152 * mtp
    assert facts.bytes_per_request() == 0  # no recurrent state
    assert facts.bytes_per_token(Role.DECODER) == 1152 * layers


@pytest.mark.parametrize(("model", "layers", "mtp"), PLAIN)
def test_plain_mla_bytes_fp8(model: str, layers: int, mtp: int) -> None:
    # fp8: 576 values x 1 B = 576 B/layer (vLLM oracle page 9,216 B per 16 tokens = 576).
    # V2-Lite: 576 x 27 = 15,552; V3/R1/Kimi-K2: 576 x 61 = 35,136 B/token.
    facts = derive_model(model, kv_cache_dtype="fp8")
    assert facts.kv_dtype == "fp8_e4m3"
    assert per_token(model, Kind.MLA, kv_cache_dtype="fp8") == 576 * layers
    assert per_token(model, Kind.MLA, Role.MTP, kv_cache_dtype="fp8") == 576 * mtp
    assert facts.bytes_per_request() == 0


def test_deepseek_v3_totals_spelled_out() -> None:
    # DeepSeek-V3: (512 latent + 64 rope) x 2 B = 1,152 B/token/layer x 61 layers = 70,272 B/token;
    # with the MTP layer (num_nextn_predict_layers 1): 70,272 + 1,152 = 71,424.
    facts = derive_model(V3)
    assert facts.bytes_per_token(Role.DECODER) == 70_272
    assert facts.bytes_per_token() == 71_424
    assert derive_model(V2_LITE).bytes_per_token() == 31_104  # 1,152 x 27


@pytest.mark.parametrize(("model", "layers", "mtp"), PLAIN)
def test_plain_mla_layer_kinds(model: str, layers: int, mtp: int) -> None:
    facts = derive_model(model)
    assert [layer.index for layer in facts.layers] == list(range(layers + mtp))
    assert all(layer.kind is Kind.MLA for layer in facts.layers)
    assert [layer.role for layer in facts.layers] == [Role.DECODER] * layers + [Role.MTP] * mtp
    first = facts.layers[0].describe()
    assert first["latent_dim"] == 512 and first["rope_dim"] == 64


def test_dsa_indexer_ignores_kv_dtype() -> None:
    indexer = next(layer for layer in derive_model(V32).layers if layer.kind is Kind.INDEXER)
    assert indexer.with_dtype("bfloat16").bytes_per_token() == 132
    assert indexer.split(8).bytes_per_token() == 132  # replicated on every rank


def test_mla_is_replicated_across_tp() -> None:
    layer = derive_model(V3).layers[0]
    assert layer.split(8).bytes_per_token() == 1152


# ---- DSA: DeepSeek-V3.2 -----------------------------------------------------------------------


def test_v32_bf16() -> None:
    # MLA: (512 + 64) x 2 B = 1,152 x 61 = 70,272 B/token.
    # Indexer: index_head_dim 128 x 1 B (fp8) + 128/128 x 4 B (fp32 scale) = 132 B/layer
    #          x 61 = 8,052 B/token, whatever the KV dtype.
    # Decoder total 70,272 + 8,052 = 78,324; the MTP layer adds 1,152 + 132 = 1,284 -> 79,608.
    facts = derive_model(V32)
    assert per_token(V32, Kind.MLA) == 70_272
    assert per_token(V32, Kind.INDEXER) == 8_052
    assert facts.bytes_per_token(Role.DECODER) == 78_324
    assert facts.bytes_per_token() == 79_608
    assert facts.bytes_per_request() == 0


def test_v32_fp8_uses_ds_mla_layout() -> None:
    # fp8_ds_mla: 512 fp8 latent + 512/128 x 4 B scales + 64 rope x 2 B (bf16) = 512+16+128 = 656.
    # MLA 656 x 61 = 40,016; indexer unchanged 132 x 61 = 8,052; decoder total 48,068.
    facts = derive_model(V32, kv_cache_dtype="fp8")
    assert per_token(V32, Kind.MLA, kv_cache_dtype="fp8") == 40_016
    assert per_token(V32, Kind.INDEXER, kv_cache_dtype="fp8") == 8_052
    assert facts.bytes_per_token(Role.DECODER) == 48_068
    assert facts.layers[0].describe()["layout"] == "fp8_ds_mla"


def test_v32_layer_kinds() -> None:
    # 61 decoder layers each with MLA + indexer; 1 MTP layer with MLA + a full indexer.
    assert kinds(V32) == Counter(
        {
            ("mla", "decoder", True): 61,
            ("indexer", "decoder", True): 61,
            ("mla", "mtp", True): 1,
            ("indexer", "mtp", True): 1,
        }
    )


# ---- DSA with IndexCache: GLM-5.2 -------------------------------------------------------------


def test_glm52_indexer_owners() -> None:
    # index_topk_freq 4, index_skip_topk_offset 3 (vLLM rule), and indexer_types agree:
    # full at layers 0, 1, 2, then 6, 10, ..., 74 -> 3 + 18 = 21 owners; 57 shared.
    facts = derive_model(GLM)
    indexers = [layer for layer in facts.layers if layer.kind is Kind.INDEXER]
    owners = [i.index for i in indexers if i.owns_memory and i.role is Role.DECODER]
    assert owners == [0, 1, 2, *range(6, 75, 4)]
    assert len(owners) == 21
    shared = {i.index: i.shares_with for i in indexers if not i.owns_memory}
    assert len(shared) == 57
    assert shared[3] == 2 and shared[5] == 2 and shared[7] == 6 and shared[77] == 74


def test_glm52_bytes() -> None:
    # GLM-5.2: kv_lora_rank 512 + qk_rope_head_dim 64 -> 1,152 B x 78 layers = 89,856 B/token;
    # indexer 132 B x 21 owners = 2,772; decoder total 92,628.
    # MTP (num_nextn_predict_layers 1): 1,152 + 132 = 1,284 -> 93,912.
    facts = derive_model(GLM)
    assert per_token(GLM, Kind.MLA) == 89_856
    assert per_token(GLM, Kind.INDEXER) == 2_772
    assert facts.bytes_per_token(Role.DECODER) == 92_628
    assert facts.bytes_per_token() == 93_912
    # fp8: MLA 656 x 78 = 51,168; indexer 2,772; total 53,940.
    fp8 = derive_model(GLM, kv_cache_dtype="fp8")
    assert fp8.bytes_per_token(Role.DECODER) == 53_940
    assert fp8.bytes_per_request() == 0


def test_glm52_mtp_owns_indexer() -> None:
    facts = derive_model(GLM)
    mtp = facts.by_role(Role.MTP)
    assert [(layer.index, layer.kind) for layer in mtp] == [(78, Kind.MLA), (78, Kind.INDEXER)]
    assert all(layer.owns_memory for layer in mtp)


def test_indexer_types_disagreeing_with_freq_fails() -> None:
    config = dict(load_source(GLM).config)
    types = list(config["indexer_types"])
    types[4] = "full"  # vLLM's rule says layer 4 skips
    config["indexer_types"] = types
    with pytest.raises(ConfigError, match="indexer_types disagrees"):
        derive_model(config)


# ---- fail closed ------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [V2_LITE, V3, R1, KIMI, V32, GLM])
def test_unknown_cache_key_fails_closed(model: str) -> None:
    config = dict(load_source(model).config)
    config["kv_sharing_layers"] = [1, 2]
    with pytest.raises(UnknownCacheKey) as err:
        derive_model(config)
    assert err.value.key == "kv_sharing_layers"
    assert "kv_sharing_layers" in str(err.value)


def test_unknown_quantization_subkey_fails_closed() -> None:
    config = dict(load_source(V3).config)
    config["quantization_config"] = {**config["quantization_config"], "kv_layout": "x"}
    with pytest.raises(UnknownCacheKey, match=r"quantization_config\.kv_layout"):
        derive_model(config)


def test_dsa_without_index_topk_takes_the_class_default() -> None:
    # DeepseekV32Config (transformers 5.19) fills index_topk = 2048 when the file omits it, so
    # vLLM's is_v32 (hasattr(config, "index_topk")) still holds: the facts stay DSA.
    config = dict(load_source(V32).config)
    del config["index_topk"]
    assert [x.describe() for x in derive_model(config).layers] == [
        x.describe() for x in derive_model(V32).layers]


def test_dsa_with_index_topk_null_fails() -> None:
    # Stated null is not omitted: the class keeps None, and a DSA type without it is refused.
    config = dict(load_source(V32).config)
    config["index_topk"] = None
    with pytest.raises(ConfigError, match="index_topk"):
        derive_model(config)


def test_mla_nvfp4_is_a_fact_and_vllm_refuses_it() -> None:
    # derive states the latent at the element type it is given: 512 + 64 = 576 values at
    # 4 bits = 288 B, plus one 1-byte fp8 scale per 16 values = 36 B → 324 B per layer/token.
    facts = derive_model(V3, kv_cache_dtype="nvfp4")
    decoder = facts.by_role(Role.DECODER)
    assert {x.bytes_per_token() for x in decoder} == {324}
    # Which engine stores it is the layout's call, with the engine's own words
    # (vLLM VllmConfig.validate_nvfp4_kv_cache_with_mla).
    with pytest.raises(VllmLayoutError,
                       match=r"vLLM 0\.32 refuses to start: nvfp4 KV cache is not supported"):
        plan_vllm(facts, PlanRequest(engine="vllm==0.32", kv_cache_memory_bytes=1 << 34,
                                     kv_cache_dtype="nvfp4"), 1 << 34)


# ---- vLLM oracle ------------------------------------------------------------------------------


def _oracle_cases() -> list[dict[str, Any]]:
    if not ORACLE.is_file():
        pytest.skip(SHARED_MISSING)
    wanted = {
        "deepseek-ai--DeepSeek-V2-Lite.json": V2_LITE,
        "deepseek-ai--DeepSeek-V3.json": V3,
        "deepseek-ai--DeepSeek-R1.json": R1,
        "moonshotai--Kimi-K2-Instruct.json": KIMI,
        "deepseek-ai--DeepSeek-V3.2.json": V32,
        "zai-org--GLM-5.2.json": GLM,
    }
    out = []
    for line in ORACLE.read_text().splitlines():
        case = json.loads(line)
        if case["config"] in wanted:
            case["_model"] = wanted[case["config"]]
            out.append(case)
    assert out, "oracle has no MLA cases"
    return out


def test_against_vllm_layer_specs() -> None:
    for case in _oracle_cases():
        inputs = case["inputs"]
        kv = None if inputs["kv_cache_dtype"] == "auto" else inputs["kv_cache_dtype"]
        facts = derive_model(case["_model"], kv_cache_dtype=kv)
        with_mtp = inputs["speculative_method"] == "mtp"
        layers = [
            layer
            for layer in facts.layers
            if layer.owns_memory and (layer.role is Role.DECODER or with_mtp)
        ]
        for spec in case["layer_specs"]:
            block = spec["block_size"]
            is_indexer = ".indexer." in spec["first_layer"]
            kind = Kind.INDEXER if is_indexer else Kind.MLA
            mine = [layer for layer in layers if layer.kind is kind]
            assert len(mine) == spec["num_layers"], (case["config"], spec)
            # vLLM page = block_size x bytes per token (one latent "head" of head_size).
            per_tok = spec["page_size_bytes"] // block
            assert {layer.bytes_per_token() for layer in mine} == {per_tok}, case["config"]
            if is_indexer:
                assert spec["head_size"] == 132 and spec["dtype"] == "uint8"
            else:
                assert spec["head_size"] == 576

"""Model types and variants the model-type table newly derives, each on its real config from
../shared/configs, with the arithmetic worked by hand from the config's own values, and — where
the vLLM 0.32 oracle could run it — the derived per-layer facts against vLLM's ``layer_specs``
(../shared/oracles/vllm-0.32/coverage-cases.jsonl, and tests/oracles/vllm-0.32/vllm-0.32-more.jsonl
for
the NVFP4 checkpoints the shared run skipped).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from derive.coverage import attention_groups as _attention_groups
from derive.coverage import derive_file, raw_config
from derive.coverage import oracle_attention as _oracle_attention
from kvledger.derive import UnsupportedArchitecture, derive_model
from kvledger.derive.families.minimax import IndexCache
from kvledger.derive.layers import Attention, Kind, ModelFacts, RecurrentState, Role
from kvledger.derive.states import Mamba2State
from oracle_cases import CONFIGS, SHARED, SHARED_MISSING, skip_without_shared

ORACLE_FILES = (
    SHARED / "oracles" / "vllm-0.32" / "cases.jsonl",
    SHARED / "oracles" / "vllm-0.32" / "coverage-cases.jsonl",
    Path(__file__).parents[1] / "oracles" / "vllm-0.32" / "vllm-0.32-more.jsonl",
)
pytestmark = pytest.mark.skipif(not CONFIGS.is_dir(), reason=SHARED_MISSING)


def _raw(name: str) -> dict[str, Any]:
    return raw_config(name, CONFIGS)


def _facts(name: str, **kw: Any) -> ModelFacts:
    return derive_file(name, CONFIGS, **kw)


def _case(name: str) -> dict[str, Any]:
    for path in ORACLE_FILES:
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            case = json.loads(line)
            if case["config"] == f"{name}.json" and case["inputs"]["tensor_parallel_size"] == 1:
                return case
    skip_without_shared()
    pytest.skip(f"no vLLM oracle case for {name}")


# -- Qwen3-VL / Qwen3-VL-MoE: wrappers around a Qwen3 (MoE) language model -----------------
QWEN3_VL = [
    # (config, layers, kv heads; head_dim 128, bf16): bytes/token = 2 × layers × kv × 128 × 2
    ("Qwen--Qwen3-VL-2B-Instruct", 28, 8),  # 2 × 28 × 8 × 128 × 2 = 114,688
    ("Qwen--Qwen3-VL-4B-Instruct", 36, 8),  # 147,456
    ("Qwen--Qwen3-VL-8B-Instruct", 36, 8),  # 147,456
    ("Qwen--Qwen3-VL-32B-Instruct", 64, 8),  # 262,144
    ("Qwen--Qwen3-VL-32B-Thinking", 64, 8),  # 262,144
    ("Qwen--Qwen3-VL-30B-A3B-Instruct", 48, 4),  # 2 × 48 × 4 × 128 × 2 = 98,304
    ("Qwen--Qwen3-VL-235B-A22B-Instruct", 94, 4),  # 192,512
]


@pytest.mark.parametrize(("name", "layers", "kv"), QWEN3_VL)
def test_qwen3_vl_language_model_only(name: str, layers: int, kv: int) -> None:
    facts = _facts(name)
    assert facts.model_type in ("qwen3_vl", "qwen3_vl_moe")
    assert facts.bytes_per_token() == 2 * layers * kv * 128 * 2
    assert facts.bytes_per_request() == 0  # the vision encoder holds no cache
    assert facts.max_position_embeddings == 262_144  # text_config's, not a default
    assert any("text_config" in n and "encoders hold no KV cache" in n for n in facts.notes)


def test_qwen3_vl_2b_spelled_out() -> None:
    # text_config: 28 layers, 8 KV heads × head_dim 128, bfloat16:
    # per layer 2 (K, V) × 8 × 128 × 2 B = 4,096 B/token; 28 × 4,096 = 114,688 B/token.
    facts = _facts("Qwen--Qwen3-VL-2B-Instruct")
    assert facts.bytes_per_token() == 114_688
    assert {layer.bytes_per_token() for layer in facts.layers} == {4_096}


@pytest.mark.parametrize("name", [row[0] for row in QWEN3_VL])
def test_qwen3_vl_agrees_with_vllm_layer_specs(name: str) -> None:
    case = _case(name)
    assert _attention_groups(_facts(name)) == _oracle_attention(case)
    assert {s["spec"] for s in case["layer_specs"]} == {"FullAttentionSpec"}


def test_qwen3_vl_moe_text_defaults_head_dim_from_hidden_size() -> None:
    # Qwen3VLMoeTextConfig (transformers 5.19): head_dim None → hidden_size // heads, and
    # num_key_value_heads defaults to 16. Without both keys: 2048 / 32 = 64, 16 KV heads:
    # 2 × 16 × 64 × 2 B = 4,096 B/token per layer × 48 layers = 196,608.
    raw = _raw("Qwen--Qwen3-VL-30B-A3B-Instruct")
    del raw["text_config"]["head_dim"], raw["text_config"]["num_key_value_heads"]
    assert derive_model(raw).bytes_per_token() == 196_608


# -- Qwen3-Coder-480B: qkv_bias (a projection bias vLLM does not even read) ------------------
def test_qwen3_coder_480b() -> None:
    # 62 layers × 2 × 8 KV heads × 128 × 2 B (bfloat16) = 253,952 B/token; qkv_bias false and
    # sliding_window null, use_sliding_window false: full attention everywhere.
    facts = _facts("Qwen--Qwen3-Coder-480B-A35B-Instruct")
    assert facts.bytes_per_token() == 253_952
    assert {layer.kind for layer in facts.layers} == {Kind.FULL}
    assert _attention_groups(facts) == _oracle_attention(_case(
        "Qwen--Qwen3-Coder-480B-A35B-Instruct"))


# -- MiniMax-M2.7: attn_type_list all 1 (softmax), which is what vLLM builds ----------------
@pytest.mark.parametrize("name", ["MiniMaxAI--MiniMax-M2.7", "nvidia--MiniMax-M2.7-NVFP4",
                                  "nvidia--MiniMax-M2.5-NVFP4"])
def test_minimax_m2_with_attn_type_list(name: str) -> None:
    # 62 decoder layers × 2 × 8 KV heads × 128 × 2 B = 253,952 B/token at bfloat16; the 3 MTP
    # modules (use_mtp, 1 layer each) are listed apart with role mtp.
    facts = _facts(name, kv_cache_dtype="bfloat16")
    assert facts.bytes_per_token(Role.DECODER) == 253_952
    assert len(facts.by_role(Role.MTP)) == 3
    assert _attention_groups(facts) == _oracle_attention(_case(name))


def test_minimax_m2_lightning_entry_refused() -> None:
    raw = _raw("MiniMaxAI--MiniMax-M2.7")
    raw["attn_type_list"][5] = 0  # a lightning layer: vLLM's minimax_m2.py never builds one
    with pytest.raises(UnsupportedArchitecture, match=r"attn_type_list marks layers \[5\]"):
        derive_model(raw)


# -- Nemotron-3-Ultra / 3.5: transformers 5.x schema (layers_block_type, mtp_layers_block_type)
ULTRA = ["nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
         "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8",
         "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4"]


@pytest.mark.parametrize("name", ULTRA)
def test_nemotron_3_ultra(name: str) -> None:
    raw = _raw(name)
    types = raw["layers_block_type"]
    assert "num_hidden_layers" not in raw  # the count is the list's length (108)
    facts = _facts(name, kv_cache_dtype="bfloat16")
    decoder = facts.by_role(Role.DECODER)
    assert len(decoder) == len(types) == 108
    attn = [x for x in decoder if isinstance(x, Attention)]
    states = [x for x in decoder if isinstance(x, Mamba2State)]
    assert len(attn) == types.count("attention") == 12
    assert len(states) == types.count("mamba") == 48
    # attention: 12 × 2 × 2 KV heads × 128 × 2 B = 12,288 B/token (+ 1,024 for the MTP
    # attention layer, held only when speculative decoding uses it).
    assert facts.bytes_per_token(Role.DECODER) == 12_288
    assert facts.bytes_per_token(Role.MTP) == 1_024
    # Mamba2: 256 heads × 64 = 16,384 = expand 2 × hidden 8,192; 8 groups, state 128, conv 4:
    # conv (16,384 + 2 × 8 × 128) = 18,432 × 3 × 2 B = 110,592; SSM 256 × 64 × 128 × 4 B
    # (mamba_ssm_cache_dtype float32) = 8,388,608; per layer 8,499,200 × 48 = 407,961,600.
    assert facts.bytes_per_request(Role.DECODER) == 407_961_600
    # MTP: 1 × mtp_layers_block_type ["attention", "moe"]: one attention layer, one MoE.
    mtp = facts.by_role(Role.MTP)
    assert [x.kind for x in mtp] == [Kind.FULL, Kind.NONE]
    assert not facts.warnings


def test_nemotron_3_ultra_agrees_with_vllm() -> None:
    case = _case(ULTRA[0])
    facts = _facts(ULTRA[0])
    assert _attention_groups(facts) == _oracle_attention(case)
    (spec,) = [s for s in case["layer_specs"] if s["spec"] == "MambaSpec"]
    states = [x for x in facts.by_role(Role.DECODER) if isinstance(x, RecurrentState)]
    assert len(states) == spec["num_layers"]
    assert [list(t.shape) for t in states[0].tensors()] == spec["shapes"]
    assert [t.dtype for t in states[0].tensors()] == spec["dtypes"]


def test_nemotron_3_5_lightning_sizes_from_mamba_heads_and_warns() -> None:
    # expand 2 × hidden 2,688 = 5,376 but mamba_num_heads 64 × mamba_head_dim 64 = 4,096:
    # vLLM's nemotron_h.py uses the latter (oracle conv shape [3, 4,096 + 2 × 8 × 128 = 6,144]).
    name = "nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"
    facts = _facts(name, kv_cache_dtype="fp8")
    (warning,) = facts.warnings
    assert "5376" in warning and "4096" in warning
    case = _case(name)
    (spec,) = [s for s in case["layer_specs"] if s["spec"] == "MambaSpec"]
    states = [x for x in facts.by_role(Role.DECODER) if isinstance(x, RecurrentState)]
    assert len(states) == spec["num_layers"] == 23
    assert [list(t.shape) for t in states[0].tensors()] == spec["shapes"] == [
        [3, 6144], [64, 64, 128]]
    (attn,) = [s for s in case["layer_specs"] if s["spec"] == "FullAttentionSpec"]
    layers = [x for x in facts.by_role(Role.DECODER) if isinstance(x, Attention)]
    assert len(layers) == attn["num_layers"] == 6
    # fp8 KV: 6 × 2 × 2 KV heads × 128 × 1 B = 3,072 B/token.
    assert facts.bytes_per_token(Role.DECODER) == 3_072


def test_nemotron_block_type_names_unknown_refused() -> None:
    raw = _raw(ULTRA[0])
    raw["layers_block_type"][0] = "sliding_attention"
    with pytest.raises(UnsupportedArchitecture, match="sliding_attention"):
        derive_model(raw)


# -- MiniMax-M3 (vLLM 0.32's minimax_m3_vl wrapper) ------------------------------------------
def test_minimax_m3_vl() -> None:
    # text_config (no model_type: vLLM's MiniMaxM3Config makes it minimax_m3_text): 60 layers,
    # 4 KV heads × 128, bfloat16 → 60 × 2 × 4 × 128 × 2 B = 122,880 B/token of K/V; the 57
    # sparse layers (sparse_attention_freq 1 on 3..59, index value disabled) also cache a
    # 128-wide index key in the model dtype: 57 × 128 × 2 B = 14,592. Total 137,472.
    name = "nvidia--MiniMax-M3-NVFP4"
    facts = _facts(name)
    assert facts.bytes_per_token() == 137_472
    index = [x for x in facts.layers if isinstance(x, IndexCache)]
    assert [x.index for x in index] == list(range(3, 60))
    case = _case(name)
    assert _attention_groups(facts) == _oracle_attention(case)
    (spec,) = [s for s in case["layer_specs"] if s["spec"] == "MLAAttentionSpec"]
    assert spec["num_layers"] == len(index) and spec["head_size"] == 128
    assert spec["dtype"] == "bfloat16" and {x.dtype for x in index} == {"bfloat16"}


def test_minimax_m3_vl_refuses_another_inner_type() -> None:
    raw = copy.deepcopy(_raw("nvidia--MiniMax-M3-NVFP4"))
    raw["text_config"]["model_type"] = "minimax_m2"
    with pytest.raises(UnsupportedArchitecture, match="minimax_m3_text"):
        derive_model(raw)


# -- GLM-5.2 NVFP4: layer_types stated (every layer DSA) -----------------------------------
def test_glm52_nvfp4_layer_types_accepted() -> None:
    # The NVFP4 checkpoint states layer_types ("deepseek_sparse_attention" × 78, transformers'
    # legacy name for "indexed_attention"); vLLM's deepseek_v2.py builds DSA MLA on every layer
    # either way, so the facts equal GLM-5.2's. (Its quantization_config is left out here: its
    # config_groups key is the quantization guard's business.)
    raw = _raw("nvidia--GLM-5.2-NVFP4")
    del raw["quantization_config"]
    facts = derive_model(raw, kv_cache_dtype="fp8")
    plain = _facts("zai-org--GLM-5.2", kv_cache_dtype="fp8")
    assert [x.describe() for x in facts.layers] == [x.describe() for x in plain.layers]
    # fp8_ds_mla 656 B + indexer 132 B on the 21 owning layers (oracle: 78 MLA, 21 indexers).
    case = _case("nvidia--GLM-5.2-NVFP4")
    counts = {s["first_layer"].endswith("k_cache"): s["num_layers"] for s in case["layer_specs"]}
    assert counts == {False: 78, True: 21}
    decoder = facts.by_role(Role.DECODER)
    assert sum(1 for x in decoder if x.kind is Kind.MLA) == 78
    owners = [x for x in decoder if x.kind is Kind.INDEXER and x.owns_memory]
    assert len(owners) == 21
    assert facts.bytes_per_token(Role.DECODER) == 78 * 656 + 21 * 132


def test_glm52_other_layer_type_refused() -> None:
    raw = _raw("nvidia--GLM-5.2-NVFP4")
    del raw["quantization_config"]
    raw["layer_types"][4] = "full_attention"
    with pytest.raises(UnsupportedArchitecture, match="full_attention"):
        derive_model(raw)

"""Mamba hybrids: Nemotron-H-56B, Nemotron-3-Super-120B (FP8 KV), Zamba2-2.7B (Zyphra native
format), plus Mamba1 / Mamba2 / HF-schema Zamba2 dicts. Expected numbers are worked from each
config's own values in the comments; fp8 applies to attention KV only.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kvledger.derive import UnknownCacheKey, derive_model
from kvledger.derive.errors import UnsupportedArchitecture
from kvledger.derive.layers import FullAttention, Kind, ModelFacts, Role
from kvledger.derive.source import load_source
from kvledger.derive.states import Mamba1State, Mamba2State
from oracle_cases import CONFIGS

H56 = "nvidia/Nemotron-H-56B-Base-8K"
SUPER = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
ZAMBA = str(CONFIGS / "Zyphra--Zamba2-2.7B-native.json")


def kv(facts: ModelFacts) -> int:
    return sum(x.bytes_per_token() for x in facts.layers if isinstance(x, FullAttention))


def states(facts: ModelFacts) -> int:
    return sum(x.bytes_per_request() for x in facts.layers if x.kind is Kind.STATE)


def _config(model: str) -> dict[str, Any]:
    return copy.deepcopy(load_source(model).config)


def test_nemotron_h_56b() -> None:
    facts = derive_model(H56)
    assert facts.kv_dtype == "bfloat16"
    # Pattern: 54 M, 10 *, 54 - over 118 layers.
    # KV: 2 x 10 layers x 8 kv heads x 128 (attention_head_dim) x 2 B = 40,960 B/token.
    assert kv(facts) == 40_960 == facts.bytes_per_token()
    # Mamba2 conv: (256 heads x 64 = 16,384 + 2 x 8 groups x 256 state) = 20,480 ch x 3 x 2 B
    #   = 122,880; SSM 256 x 64 x 256 x 4 B (vLLM NemotronH default float32) = 16,777,216;
    #   per layer 16,900,096 x 54 = 912,605,184.
    assert states(facts) == 912_605_184 == facts.bytes_per_request()
    fp8 = derive_model(H56, kv_cache_dtype="fp8")
    assert kv(fp8) == 20_480  # 2 x 10 x 8 x 128 x 1 B
    assert states(fp8) == 912_605_184


def test_nemotron_3_super_fp8_kv_checkpoint() -> None:
    facts = derive_model(SUPER)
    # The companion hf_quant_config says kv_cache_quant_algo FP8: a fact of the checkpoint.
    assert (facts.kv_dtype, facts.kv_dtype_source) == ("fp8_e4m3", "hf_quant_config")
    # 8 attention layers + 1 MTP attention ("*E" x num_nextn_predict_layers 1) = 9.
    # KV: 2 x 9 x 2 kv heads x 128 x 1 B = 4,608 B/token.
    assert kv(facts) == 4_608
    # Mamba2 conv: (128 x 64 = 8,192 + 2 x 8 x 128 = 2,048) = 10,240 ch x 3 x 2 B = 61,440;
    #   SSM 128 x 64 x 128 x 4 B (config mamba_ssm_cache_dtype float32) = 4,194,304;
    #   per layer 4,255,744 x 40 = 170,229,760.
    assert states(facts) == 170_229_760
    # At the config dtype (bf16): 2 x 9 x 2 x 128 x 2 B = 9,216; explicit fp8 again 4,608.
    assert kv(derive_model(SUPER, kv_cache_dtype="bfloat16")) == 9_216
    assert kv(derive_model(SUPER, kv_cache_dtype="fp8")) == 4_608
    assert states(derive_model(SUPER, kv_cache_dtype="fp8")) == 170_229_760


@pytest.mark.parametrize("model", [H56, SUPER])
def test_nemotron_pattern(model: str) -> None:
    raw = load_source(model).config
    facts = derive_model(model)
    symbol = {Kind.STATE: "M", Kind.FULL: "*"}
    decoder = facts.by_role(Role.DECODER)
    rebuilt = "".join(symbol.get(x.kind, "?") for x in decoder)
    assert rebuilt == raw["hybrid_override_pattern"].replace("-", "?").replace("E", "?")
    mtp = facts.by_role(Role.MTP)
    if model == SUPER:
        n = raw["num_hidden_layers"]
        assert [(x.index, x.kind) for x in mtp] == [(n, Kind.FULL), (n + 1, Kind.NONE)]
    else:
        assert not mtp


def test_nemotron_unknown_key_fails_closed() -> None:
    raw = _config(H56)
    raw["mamba_ssm_state_layout"] = "DS"
    with pytest.raises(UnknownCacheKey, match="mamba_ssm_state_layout"):
        derive_model(raw)


def test_nemotron_unknown_symbol_refused() -> None:
    raw = _config(H56)
    raw["hybrid_override_pattern"] = "S" + raw["hybrid_override_pattern"][1:]
    with pytest.raises(UnsupportedArchitecture, match="symbols"):
        derive_model(raw)


def test_nemotron_pattern_length_wins_with_a_warning() -> None:
    # transformers 5.19 NemotronHConfig: num_hidden_layers is len(layers_block_type) (the
    # pattern); a stated count is ignored ("Using layers_block_type length"). vLLM builds the
    # pattern's 118 layers, so kvledger does too, and warns.
    raw = _config(H56)
    raw["num_hidden_layers"] = 117
    facts = derive_model(raw)
    assert len(facts.layers) == 118
    assert any("num_hidden_layers 117" in w and "118" in w for w in facts.warnings)


def test_zamba2_native() -> None:
    facts = derive_model(ZAMBA)
    # The native file states no dtype: float32, as transformers would load it.
    assert facts.model_type == "zamba2" and facts.kv_dtype == "float32"
    # 9 'g' positions: one shared-block invocation each, own KV cache of 32 heads x
    # (2 x kv_channels 80 = 160): 2 x 9 x 32 x 160 x 4 B = 368,640 B/token.
    assert kv(facts) == 368_640
    # 54 Mamba2 layers: d_inner 2 x 2560 = 5,120; heads 5,120 / 64 = 80; 1 group; state 64.
    # conv (5,120 + 2 x 1 x 64) = 5,248 x 3 x 4 B = 62,976; SSM 80 x 64 x 64 x 4 B = 1,310,720;
    # per layer 1,373,696 x 54 = 74,179,584.
    assert states(facts) == 74_179_584
    fp8 = derive_model(ZAMBA, kv_cache_dtype="fp8")
    assert kv(fp8) == 92_160  # 2 x 9 x 32 x 160 x 1 B
    assert states(fp8) == 74_179_584


def test_zamba2_native_pattern() -> None:
    facts = derive_model(ZAMBA)
    attn = [x.index for x in facts.layers if x.kind is Kind.FULL]
    assert attn == [6, 12, 18, 24, 30, 36, 42, 47, 51]
    assert [x.index for x in facts.layers if x.kind is Kind.STATE] == list(range(54))


def test_zamba2_native_unknown_key_fails_closed() -> None:
    raw = _config(ZAMBA)
    raw["window_size"] = 4096
    with pytest.raises(UnknownCacheKey, match="window_size"):
        derive_model(raw)


def test_zamba2_hf_schema() -> None:
    # A small HF-schema Zamba2: 4 layers, hybrid at 1 and 3.
    raw = {
        "model_type": "zamba2", "torch_dtype": "bfloat16", "hidden_size": 256,
        "num_hidden_layers": 4, "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid"],
        "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_ngroups": 1,
        "mamba_headdim": 32, "n_mamba_heads": 16, "num_attention_heads": 8,
        "attention_head_dim": 64, "num_key_value_heads": 8, "num_mem_blocks": 1,
    }
    facts = derive_model(raw)
    # KV: 2 x 2 hybrid x 8 x 64 x 2 B = 4,096.
    assert kv(facts) == 4_096
    # Mamba2 conv (512 + 2 x 16) = 544 x 3 x 2 B = 3,264; SSM 16 x 32 x 16 x 2 B = 16,384;
    # x 4 layers = 78,592.
    assert states(facts) == 78_592


def test_mamba1_and_mamba2_dicts() -> None:
    m1 = derive_model({"model_type": "mamba", "torch_dtype": "float16", "hidden_size": 768,
                       "intermediate_size": 1536, "state_size": 16, "conv_kernel": 4,
                       "num_hidden_layers": 24, "expand": 2})
    assert all(isinstance(x, Mamba1State) for x in m1.layers) and len(m1.layers) == 24
    # conv 3 x 1536 x 2 B = 9,216; SSM 1536 x 16 x 2 B = 49,152; x 24 = 1,400,832.
    assert m1.bytes_per_request() == 1_400_832 and m1.bytes_per_token() == 0
    m2 = derive_model({"model_type": "mamba2", "torch_dtype": "bfloat16", "hidden_size": 768,
                       "expand": 2, "num_heads": 24, "head_dim": 64, "n_groups": 1,
                       "state_size": 128, "conv_kernel": 4, "num_hidden_layers": 2})
    assert all(isinstance(x, Mamba2State) for x in m2.layers)
    # conv (1536 + 2 x 128) = 1,792 x 3 x 2 B = 10,752; SSM 24 x 64 x 128 x 2 B = 393,216;
    # x 2 = 807,936.
    assert m2.bytes_per_request() == 807_936

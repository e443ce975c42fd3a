"""The moe-hybrid coverage group: MoE decoders (ERNIE-4.5-MoE, GLM-4.5, Phi-3.5-MoE, DBRX),
per-type attention geometry (MiMo-V2-Flash, Gemma-4 with KV sharing) and attention beside
recurrent layers (Granite-4.0-H, Jamba, LFM2), plus the checkpoints of this group vLLM 0.32
loads only with remote code.

Each real config (tests/oracles/configs/, origins in SOURCES-moe-hybrid.md) is derived and its
bytes worked by hand from the config's own values in a comment; the per-layer facts are then
compared with vLLM 0.32's own ``layer_specs`` for every case of
tests/oracles/vllm-0.32/vllm-0.32-coverage-moe-hybrid.jsonl (commands in README-moe-hybrid.md).
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from derive.coverage import check_inspect, fact_specs, oracle_specs, vllm_derive_file, vllm_facts
from derive.coverage import derive_file as _facts
from derive.coverage import raw_config as _raw
from kvledger.derive import UnsupportedArchitecture, derive_model
from kvledger.derive.errors import ConfigError, UnknownCacheKey
from kvledger.derive.layers import Kind, Role
from kvledger.derive.states import Mamba1State, Mamba2State, ShortConvState
from oracle_cases import CONFIGS, needs_shared, shared_text

ORACLES = Path(__file__).parents[1] / "oracles"
CASES = [json.loads(line) for line in
         (ORACLES / "vllm-0.32" / "vllm-0.32-coverage-moe-hybrid.jsonl").read_text().splitlines()
         if line.strip()]


# -- per-layer facts against vLLM's layer_specs, for every case of the group ----------------
@pytest.mark.parametrize("case", [c for c in CASES if not c["inputs"]["speculative_method"]],
                         ids=lambda c: f"{c['config']}-tp{c['inputs']['tensor_parallel_size']}"
                                       f"-{c['inputs']['kv_cache_dtype']}")
def test_decoder_facts_match_vllm_layer_specs(case: dict[str, Any]) -> None:
    facts = derive_model(str(CONFIGS / case["config"]))
    assert fact_specs(facts, case["inputs"]["tensor_parallel_size"]) == oracle_specs(case)


@pytest.mark.parametrize("case", [c for c in CASES if c["inputs"]["speculative_method"]],
                         ids=lambda c: c["config"])
def test_mtp_layers_are_the_ones_vllms_drafter_adds(case: dict[str, Any]) -> None:
    # Under MTP vLLM lists the drafter's layers among the specs: decoder + MTP layers.
    facts = derive_model(str(CONFIGS / case["config"]))
    oracle_layers = sum(s["num_layers"] for s in case["layer_specs"])
    assert len(facts.layers) == oracle_layers
    assert len(facts.by_role(Role.MTP)) == oracle_layers - len(facts.by_role(Role.DECODER))


def test_group_cases_cover_every_type() -> None:
    types = {_raw(c["config"].removesuffix(".json"))["model_type"] for c in CASES}
    assert types == {"ernie4_5_moe", "glm4_moe", "phimoe", "dbrx", "granitemoehybrid", "jamba",
                     "mimo_v2_flash", "gemma4", "lfm2_vl"}


# -- MoE decoders: standard attention on every layer ----------------------------------------
def test_ernie45_moe_with_mtp() -> None:
    # 28 layers, 4 KV heads × hidden 2560 / 20 heads = 128 (no head_dim stated), bf16:
    # 2 × 4 × 128 × 2 B = 2,048 B/token per layer × 28 = 57,344; num_nextn_predict_layers 1
    # adds one MTP layer of the same geometry (ernie_mtp.py builds a LlamaDecoderLayer).
    facts = _facts("baidu--ERNIE-4.5-21B-A3B-FastDeploy-TEST")
    assert facts.model_type == "ernie4_5_moe"
    assert facts.bytes_per_token(Role.DECODER) == 57_344
    assert facts.bytes_per_token(Role.MTP) == 2_048
    assert [layer.index for layer in facts.by_role(Role.MTP)] == [28]


def test_ernie45_moe_block_without_quant_method_is_no_quantization() -> None:
    # The verbatim FastDeploy test file carries a Paddle-only quantization_config with no
    # quant_method (dense wint8, MoE w4a8, kv_cache_quant_type int8). vLLM 0.32 reads that as
    # no quantization: _normalize_quantization_config (transformers_utils/
    # model_arch_config_convertor.py) sets quant_method "" when none is stated; no override in
    # ModelConfig._verify_quantization (config/model.py) claims a block without one (each keys
    # on quant_method, a ModelOpt quant_algo or a --quantization flag); and "" becomes None.
    # So bf16 weights and a bf16 cache: the same 57,344 + 2,048 B/token as the stripped copy.
    facts = _facts("baidu--ERNIE-4.5-21B-A3B-FastDeploy-TEST")
    assert (facts.kv_dtype, facts.kv_dtype_source) == ("bfloat16", "config")
    assert facts.bytes_per_token(Role.DECODER) == 57_344
    assert facts.bytes_per_token(Role.MTP) == 2_048
    [warning] = [w for w in facts.warnings if "quant_method" in w]
    assert "quantization_config states no quant_method" in warning
    assert "kv_cache_quant_type" in warning


def test_block_without_quant_method_still_refused_when_modelopt_wrote_it() -> None:
    # A ModelOpt block is normalised by vLLM from its quantization.quant_algo, whatever
    # quant_method says; an unknown key in it still fails closed.
    raw = _raw("baidu--ERNIE-4.5-21B-A3B-FastDeploy-TEST")
    raw["quantization_config"] = {"producer": {"name": "modelopt"},
                                  "quantization": {"quant_algo": "FP8", "kv_cache_int": 8}}
    with pytest.raises(UnknownCacheKey, match="kv_cache_int"):
        derive_model(raw)


def test_glm45_with_mtp_layer() -> None:
    # 92 layers × 2 × 8 KV heads × head_dim 128 × 2 B = 376,832 B/token (4,096 per layer);
    # num_nextn_predict_layers 1 → one MTP layer (glm4_moe_mtp.py: Glm4MoeDecoderLayer).
    facts = _facts("zai-org--GLM-4.5")
    assert facts.bytes_per_token(Role.DECODER) == 376_832
    assert facts.bytes_per_token(Role.MTP) == 4_096


def test_glm4_moe_needs_head_dim() -> None:
    # glm4_moe.py reads config.head_dim and Glm4MoeConfig defines none: vLLM cannot load a
    # config without it, so kvledger does not guess hidden_size // heads.
    raw = _raw("zai-org--GLM-4.5")
    del raw["head_dim"]
    with pytest.raises(ConfigError, match="head_dim"):
        derive_model(raw)


def test_glm4_moe_class_default_mtp_layer() -> None:
    # Glm4MoeConfig defaults num_nextn_predict_layers (num_mtp_layers) to 1.
    raw = _raw("zai-org--GLM-4.5")
    del raw["num_nextn_predict_layers"]
    assert len(derive_model(raw).by_role(Role.MTP)) == 1


def test_phimoe_window_wider_than_any_request_is_still_a_window() -> None:
    # sliding_window 131072 on all 32 layers (no layer_types: phimoe.py passes no per-layer
    # window, the model-level one reaches every Attention); 8 KV heads × 4096 / 32 = 128:
    # 2 × 8 × 128 × 2 B = 4,096 B/token per layer.
    facts = _facts("microsoft--Phi-3.5-MoE-instruct")
    assert {(layer.kind, getattr(layer, "window", None)) for layer in facts.layers} == {
        (Kind.SLIDING, 131_072)}
    assert facts.bytes_per_token() == 32 * 4_096


def test_dbrx_reads_attn_config_kv_heads_and_max_seq_len() -> None:
    # OME's abridged DBRX copy (sizes altered in its source, see SOURCES-moe-hybrid.md), with
    # ffn_act_fn as the object transformers requires (the .MODIFIED copy): 48 layers,
    # attn_config.kv_n_heads 12, d_model 6144 / n_heads 48 = 128, bf16:
    # 2 × 12 × 128 × 2 B = 6,144 B/token per layer; max_seq_len 32768 is the max length
    # (DbrxConfig maps max_position_embeddings to it).
    facts = _facts("databricks--dbrx.OME-ABRIDGED.MODIFIED")
    assert facts.bytes_per_token() == 48 * 6_144
    assert facts.max_position_embeddings == 32_768


def test_dbrx_kv_heads_default_and_unknown_attn_key() -> None:
    # DbrxAttentionConfig.kv_n_heads defaults to 1: 2 × 1 × 128 × 2 B = 512 B/token per layer.
    raw = _raw("databricks--dbrx.OME-ABRIDGED.MODIFIED")
    del raw["attn_config"]["kv_n_heads"]
    assert derive_model(raw).bytes_per_token() == 48 * 512
    raw["attn_config"]["sliding_window"] = 4096
    with pytest.raises(UnsupportedArchitecture, match=r"attn_config\.sliding_window"):
        derive_model(raw)


def test_dbrx_string_ffn_act_fn_is_refused_as_transformers_refuses_it() -> None:
    # OME's verbatim copy writes ffn_config.ffn_act_fn = "silu"; DbrxFFNConfig types it
    # dict | None and its validation rejects the string, so vLLM 0.32 cannot load the file.
    with pytest.raises(ConfigError, match=r"ffn_config\.ffn_act_fn must be an object"):
        derive_model(_raw("databricks--dbrx"))


# -- MiMo-V2-Flash: full and sliding layers of different geometry ----------------------------
def test_mimo_v2_flash_geometry_from_hybrid_layer_pattern() -> None:
    # hybrid_layer_pattern: 9 zeros (full) and 39 ones (sliding, window sliding_window_size 128).
    # full: 4 KV heads × (K 192 + V 128) × 2 B = 2,560 B/token; sliding: 8 × 320 × 2 = 5,120.
    facts = _facts("XiaomiMiMo--MiMo-V2-Flash")
    kinds = Counter((layer.kind, layer.bytes_per_token()) for layer in facts.layers)
    assert kinds == {(Kind.FULL, 2_560): 9, (Kind.SLIDING, 5_120): 39}
    assert facts.bytes_per_token() == 9 * 2_560 + 39 * 5_120
    assert {getattr(layer, "window", None) for layer in facts.layers} == {None, 128}


def test_mimo_v2_flash_needs_its_pattern() -> None:
    raw = _raw("XiaomiMiMo--MiMo-V2-Flash")
    del raw["hybrid_layer_pattern"]
    with pytest.raises(ConfigError, match="hybrid_layer_pattern"):
        derive_model(raw)


# -- Gemma-4: per-type head geometry and KV sharing -----------------------------------------
def test_gemma4_26b_a4b_k_eq_v_full_layers() -> None:
    # 25 sliding layers: 8 KV heads × 256 × 2 × 2 B = 8,192 B/token; 5 full layers use
    # global_head_dim 512 and (attention_k_eq_v) num_global_key_value_heads 2:
    # 2 × 2 × 512 × 2 B = 4,096 B/token.
    facts = _facts("google--gemma-4-26B-A4B")
    kinds = Counter((layer.kind, layer.bytes_per_token()) for layer in facts.layers)
    assert kinds == {(Kind.SLIDING, 8_192): 25, (Kind.FULL, 4_096): 5}


def test_gemma4_e2b_kv_sharing() -> None:
    # 35 layers, the last num_kv_shared_layers 20 read earlier caches: 15 own KV (12 sliding
    # 1 × 256 → 1,024 B/token, 3 full 1 × 512 → 2,048 B/token; attention_k_eq_v false, so the
    # full layers keep num_key_value_heads 1). 12 × 1,024 + 3 × 2,048 = 18,432 B/token.
    facts = _facts("google--gemma-4-E2B-it")
    assert len(facts.layers) == 35
    owners = [layer for layer in facts.layers if layer.owns_memory]
    assert len(owners) == 15
    assert facts.bytes_per_token() == 18_432
    shares = {layer.index: layer.shares_with for layer in facts.layers if not layer.owns_memory}
    # vLLM gemma4.py: the last earlier non-shared layer of the same type (sliding 13, full 14).
    assert shares[15] == 13 and shares[19] == 14 and shares[34] == 14
    assert set(shares.values()) == {13, 14}


def test_gemma4_31b_nvfp4_derives() -> None:
    # No oracle case (the CPU oracle lacks the NVFP4 weight kernels). 50 sliding layers ×
    # 16 KV heads × 256 and 10 full layers × 4 (num_global_key_value_heads, k_eq_v) × 512; the
    # checkpoint's quantization block asks for an fp8 cache (1 B): 2 × 16 × 256 = 8,192 and
    # 2 × 4 × 512 = 4,096 B/token.
    facts = _facts("nvidia--Gemma-4-31B-IT-NVFP4")
    assert facts.kv_dtype == "fp8_e4m3"
    assert facts.bytes_per_token() == 50 * 8_192 + 10 * 4_096


def _gemma4_text(**extra: Any) -> dict[str, Any]:
    return {"model_type": "gemma4_text", "architectures": ["Gemma4ForCausalLM"],
            "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
            "head_dim": 64, "global_head_dim": 128, "sliding_window": 100,
            "dtype": "bfloat16", **extra}


def test_gemma4_text_defaults_and_forced_last_full_layer() -> None:
    # No layer_types: sliding unless (i + 1) % 6 == 0 — and the last layer is forced to full
    # (Gemma4TextConfig.__post_init__), so 3 sliding + 1 full over 4 layers.
    facts = derive_model(_gemma4_text())
    assert [layer.kind for layer in facts.layers] == [Kind.SLIDING] * 3 + [Kind.FULL]
    # sliding 2 × 2 × 64 × 2 B = 512; full (k_eq_v off) 2 × 2 × 128 × 2 B = 1,024.
    assert facts.bytes_per_token() == 3 * 512 + 1_024


def test_gemma4_text_bidirectional_all_halves_the_window() -> None:
    # use_bidirectional_attention "all": the config class sets sliding_window // 2 + 1.
    facts = derive_model(_gemma4_text(use_bidirectional_attention="all"))
    assert {getattr(layer, "window", None) for layer in facts.layers} == {51, None}
    vision = derive_model(_gemma4_text(use_bidirectional_attention="vision"))
    assert {getattr(layer, "window", None) for layer in vision.layers} == {100, None}


def test_gemma4_text_share_without_an_owner_is_refused() -> None:
    # Two shared layers of which one is full while no earlier owner is full: vLLM's
    # prev_layers.index() fails to build the model.
    raw = _gemma4_text(layer_types=["sliding_attention"] * 3 + ["full_attention"],
                       num_kv_shared_layers=1)
    with pytest.raises(UnsupportedArchitecture, match="no earlier layer of its type"):
        derive_model(raw)


def test_gemma4_text_stated_per_layer_config_fails_closed() -> None:
    with pytest.raises(UnknownCacheKey, match="per_layer_config"):
        derive_model(_gemma4_text(per_layer_config={"3": {"head_dim": 256}}))


# -- attention beside recurrent layers -------------------------------------------------------
def test_granitemoehybrid_all_attention_is_a_plain_decoder() -> None:
    # layer_types all "attention" (legacy name for full_attention): 40 × 2 × 8 KV heads ×
    # 4096 / 32 = 128 × 2 B = 40 × 4,096 B/token, no state.
    facts = _facts("ibm-granite--granite-4-8b-dense-hybrid")
    assert facts.bytes_per_token() == 40 * 4_096 and facts.bytes_per_request() == 0


def test_granitemoehybrid_mamba2_state() -> None:
    # layer_types edited to 4 attention / 36 mamba (MAMBA.MODIFIED). Mamba2 state per layer:
    # conv (d_conv 4 - 1 = 3) × (2 × 4096 + 2 × 1 group × 256) = 3 × 8,704 × 2 B = 52,224 B;
    # ssm 128 heads × 64 × 256 × 2 B = 4,194,304 B; together 4,246,528 B per request.
    facts = _facts("ibm-granite--granite-4-8b-dense-hybrid.MAMBA.MODIFIED")
    states = [layer for layer in facts.layers if isinstance(layer, Mamba2State)]
    assert len(states) == 36
    assert {s.bytes_per_request() for s in states} == {4_246_528}
    assert facts.bytes_per_token() == 4 * 4_096


def test_granitemoehybrid_default_is_all_mamba_and_heads_must_fit() -> None:
    raw = _raw("ibm-granite--granite-4-8b-dense-hybrid")
    del raw["layer_types"]
    # GraniteMoeHybridConfig: no layer_types → every layer Mamba.
    assert {layer.kind for layer in derive_model(raw).layers} == {Kind.STATE}
    raw["mamba_d_head"] = 32  # 128 × 32 != 2 × 4096: transformers rejects the config
    with pytest.raises(UnsupportedArchitecture, match="mamba_n_heads x mamba_d_head"):
        derive_model(raw)


def test_jamba_test_config() -> None:
    # 4 layers, attn_layer_period 4 / offset 2 → layer 2 is attention (8 KV heads × 2048 / 8
    # = 256: 2 × 8 × 256 × 2 B = 8,192 B/token), the others Mamba1: conv (d_conv 1 - 1 = 0)
    # rows → an empty tensor, ssm (2 × 2048) × d_state 4 × 2 B = 32,768 B per request.
    facts = _facts("ai21labs--Jamba-4layer-TEST")
    assert [layer.kind for layer in facts.layers] == [Kind.STATE] * 2 + [Kind.FULL, Kind.STATE]
    states = [layer for layer in facts.layers if isinstance(layer, Mamba1State)]
    assert [tuple(t.shape) for t in states[0].tensors()] == [(0, 4096), (4096, 4)]
    assert facts.bytes_per_request() == 3 * 32_768
    assert facts.bytes_per_token() == 8_192


def test_lfm2_vl_short_conv_hybrid() -> None:
    # text_config: 16 layers, 6 full_attention (8 KV heads × 2048 / 32 = 64: 2 × 8 × 64 × 2 B
    # = 2,048 B/token) and 10 conv layers of (conv_L_cache 3 - 1) × conv_dim 2048 × 2 B =
    # 8,192 B per request.
    facts = _facts("LiquidAI--LFM2.5-VL-1.6B")
    assert facts.model_type == "lfm2_vl"
    assert facts.bytes_per_token() == 6 * 2_048
    states = [layer for layer in facts.layers if isinstance(layer, ShortConvState)]
    assert len(states) == 10 and {s.bytes_per_request() for s in states} == {8_192}


def test_lfm2_conv_without_history_is_refused() -> None:
    text = copy.deepcopy(_raw("LiquidAI--LFM2.5-VL-1.6B")["text_config"])
    text["conv_L_cache"] = 1  # (1 - 1) × conv_dim: a zero-byte state
    with pytest.raises(ConfigError, match="conv_L_cache"):
        derive_model(text)


def test_lfm2_full_attn_idxs_when_no_layer_types() -> None:
    # Lfm2Config: without layer_types, full_attn_idxs picks the attention layers.
    text = copy.deepcopy(_raw("LiquidAI--LFM2.5-VL-1.6B")["text_config"])
    del text["layer_types"]
    text["full_attn_idxs"] = [2, 5]
    facts = derive_model(text)
    assert [i for i, layer in enumerate(facts.layers) if layer.kind is Kind.FULL] == [2, 5]


# -- what vLLM 0.32 cannot load without remote code ----------------------------------------
# (deepseek v1, minicpm and bailing_moe are planned from their stated keys now, Ling-lite/plus
# refused for the head_dim they leave to their remote class: tests/plan/test_vllm_remote.py)
REMOTE_CODE = {
    "tencent--Hunyuan-A13B-Instruct": "hunyuan",
}


@pytest.mark.parametrize(("name", "model_type"), sorted(REMOTE_CODE.items()))
def test_remote_code_checkpoints_are_refused_with_vllms_words(name: str,
                                                              model_type: str) -> None:
    with pytest.raises(UnsupportedArchitecture) as err:
        vllm_derive_file(name)
    message = str(err.value)
    assert f"model_type '{model_type}'" in message
    assert "contains custom code which must be executed" in message
    assert f"model type `{model_type}` but Transformers does not recognize" in message


def test_ling_v2_is_refused() -> None:
    with pytest.raises(UnsupportedArchitecture, match="bailing_moe_v2"):
        vllm_facts({"model_type": "bailing_moe_v2",
                      "architectures": ["BailingMoeV2ForCausalLM"]})


def test_zero_width_state_dimension_is_allowed_but_negative_is_not() -> None:
    with pytest.raises(ConfigError, match="impossible shape"):
        Mamba1State(index=0, intermediate_size=8, state_size=4, conv_kernel=0).tensors()


# -- kvledger inspect over every config of the group ---------------------------------------
# The files SOURCES-moe-hybrid.md lists (first column of its table).
GROUP_FILES = sorted(
    CONFIGS / line.split("`")[1]
    for line in shared_text("SOURCES-moe-hybrid.md").splitlines()
    if line.startswith("| `")
)
# config → what its one-line refusal must say.
REFUSED = {
    **{f"{name}.json": f"model type `{t}` but Transformers does not recognize"
       for name, t in REMOTE_CODE.items()},
    # bailing_moe.py reads config.head_dim, which these files leave to their remote class
    "inclusionAI--Ling-lite.json": "bailing_moe config does not state head_dim",
    "inclusionAI--Ling-plus.json": "bailing_moe config does not state head_dim",
}


# Files vLLM 0.32 cannot load because transformers rejects a value (an error, not "unsupported").
INVALID = {"databricks--dbrx.json": "ffn_config.ffn_act_fn must be an object"}


@needs_shared
def test_group_files_are_listed() -> None:
    assert len(GROUP_FILES) == 19  # SOURCES-moe-hybrid.md rows (the NOQUANT copy is back)
    for name in [*REFUSED, *INVALID]:
        assert (CONFIGS / name).is_file(), name


@needs_shared
@pytest.mark.parametrize("path", GROUP_FILES, ids=[p.name.removesuffix(".json")
                                                   for p in GROUP_FILES])
def test_inspect_derives_or_refuses(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if path.name in INVALID:
        check_inspect(path, INVALID[path.name], capsys, starts="error:")
    else:
        check_inspect(path, REFUSED.get(path.name), capsys)


def test_max_len_is_the_smallest_length_key_as_vllm_reads_it() -> None:
    # vLLM derive_max_model_len_and_key: the smallest of the length keys the config states,
    # model_max_length overriding them all.
    from kvledger.derive.config import Config
    from kvledger.derive.max_len import max_len

    assert max_len(Config({"max_seq_len": 32768}, model="m")) == 32768
    assert max_len(Config({"max_position_embeddings": 8192, "seq_length": 4096},
                          model="m")) == 4096
    assert max_len(Config({"max_position_embeddings": 8192, "model_max_length": 16384},
                          model="m")) == 16384
    assert max_len(Config({}, model="m")) is None
    with pytest.raises(ConfigError, match="max_seq_len"):
        max_len(Config({"max_seq_len": 0}, model="m"))

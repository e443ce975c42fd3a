"""Every config value derive and the weights estimate read is type- and range-checked once,
at the edge (derive/limits.py), and a refusal names the file and the key (issue 10)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from derive.coverage import raw_config
from kvledger.derive import ConfigError, derive_model
from kvledger.derive.limits import MAX_LAYERS, check_values
from kvledger.plan.weights import WeightsError, parameter_counts

LLAMA: dict[str, Any] = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 512,
    "max_position_embeddings": 4096, "torch_dtype": "bfloat16", "vocab_size": 1000,
    "intermediate_size": 1024,
}


def with_(**changes: Any) -> dict[str, Any]:
    return {**LLAMA, **changes}


@pytest.mark.parametrize("value", [True, False, 0, 1, math.nan, [], {}, "", "bf16x",
                                   "float64", "int8", "float8_e4m3fn", "BFloat16"])
def test_dtype_must_name_a_floating_dtype(value: Any) -> None:
    # Before: anything that was not a non-empty string meant "no dtype" -> float32 KV (2x).
    with pytest.raises(ConfigError, match=r"'torch_dtype' must name a floating dtype"):
        derive_model(with_(torch_dtype=value))


@pytest.mark.parametrize("value", ["bfloat16", "torch.bfloat16", "float16", "half", None])
def test_dtype_names_transformers_reads(value: Any) -> None:
    facts = derive_model(with_(torch_dtype=value))
    # None: absent -> float32 as transformers loads it; half is float16.
    expected = {"bfloat16": "bfloat16", "torch.bfloat16": "bfloat16", "float16": "float16",
                "half": "float16", None: "float32"}[value]
    assert facts.kv_dtype == expected


@pytest.mark.parametrize(("key", "value", "match"), [
    ("num_hidden_layers", True, "must be an integer, got True"),
    ("num_hidden_layers", 32.0, "must be an integer, got 32.0"),
    ("num_hidden_layers", math.inf, "must be an integer, got inf"),
    ("num_hidden_layers", 10**30, "a 31-digit number"),
    ("num_hidden_layers", MAX_LAYERS + 1, r"must be <= 10,000"),
    ("num_attention_heads", 0, "must be >= 1"),
    ("num_attention_heads", 1 << 17, "must be <= 65,536"),
    ("hidden_size", -1, "'hidden_size' must be >= 1, got -1"),
    ("max_position_embeddings", 1 << 40, "must be <= 4,294,967,296"),
    # Keys this row's handler does not read are checked too: the weights estimate reads them.
    ("vocab_size", "32000", "'vocab_size' must be an integer"),
    ("intermediate_size", -5, "'intermediate_size' must be >= 0"),
    ("num_local_experts", 2**40, "'num_local_experts' must be <= 65,536"),
])
def test_counts_refused_naming_the_key(key: str, value: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as caught:
        derive_model(with_(**{key: value}))
    assert str(caught.value).startswith("<dict>: ")  # the file (here a dict) comes first
    assert "\n" not in str(caught.value)


def test_a_billion_layers_refused_at_once() -> None:
    # Before: num_hidden_layers 1e9 hung the planner (it built a billion layer objects).
    with pytest.raises(ConfigError, match="num_hidden_layers"):
        derive_model(with_(num_hidden_layers=1_000_000_000))


def test_query_heads_must_divide_by_kv_heads() -> None:
    # vLLM Attention.__init__ asserts num_heads % num_kv_heads == 0: 32 % 3 = 2.
    with pytest.raises(ConfigError, match=r"num_attention_heads=32 is not a multiple of "
                                          r"num_key_value_heads=3"):
        derive_model(with_(num_attention_heads=32, num_key_value_heads=3, head_dim=64))


def test_class_default_kv_heads_count_for_the_rule() -> None:
    # MistralConfig's omitted num_key_value_heads is 8 (derive/model_types.py): 12 % 8 = 4.
    mistral = {"model_type": "mistral", "architectures": ["MistralForCausalLM"],
               "num_hidden_layers": 2, "num_attention_heads": 12, "hidden_size": 768,
               "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
               "sliding_window": None}
    with pytest.raises(ConfigError, match="num_key_value_heads=8"):
        derive_model(mistral)


def test_mla_kv_heads_are_not_split() -> None:
    # DeepSeek's num_key_value_heads shapes nothing cached (MLA keeps one latent): the rule
    # applies only where the handler reads both head counts.
    cfg = dict(derive_model("deepseek-ai/DeepSeek-V3").config)
    cfg["num_key_value_heads"] = 3
    assert derive_model(cfg).layers


def test_wrapper_keys_named_by_their_path() -> None:
    cfg = dict(derive_model("google/gemma-3-27b-it").config)
    cfg["text_config"] = {**cfg["text_config"], "num_hidden_layers": "36"}
    with pytest.raises(ConfigError, match=r"'text_config.num_hidden_layers' must be an integer"):
        derive_model(cfg)


def test_check_values_skips_null_and_unknown_keys() -> None:
    check_values({"sliding_window": None, "rope_theta": math.nan, "note": [1]}, where="f")


def test_weights_estimate_refuses_what_it_used_to_skip() -> None:
    # Before: a string n_routed_experts was skipped as "no experts" (DeepSeek-V3: 37 B, not
    # 671 B parameters), and hidden_size -1 gave negative weights.
    cfg = dict(derive_model("deepseek-ai/DeepSeek-V3").config)
    assert sum(parameter_counts(cfg).values()) > 600e9
    for key, value in (("n_routed_experts", "256"), ("n_routed_experts", 256.0),
                       ("hidden_size", -1), ("vocab_size", True)):
        with pytest.raises(WeightsError, match=key):
            parameter_counts({**cfg, key: value})


def test_llama_hidden_size_must_divide_by_heads() -> None:
    # transformers' LlamaConfig.validate_architecture: 512 % 48 = 32, even with head_dim
    # stated (the oracle: tests/oracles/run_startup_oracle.py met it first).
    with pytest.raises(ConfigError, match="hidden_size=512 is not a multiple of "
                                          "num_attention_heads=48"):
        derive_model(with_(num_attention_heads=48, num_key_value_heads=3, head_dim=64))


def test_a_nested_count_no_table_lists_is_bounded_on_the_layer() -> None:
    # DBRX's attn_config.kv_n_heads is read by its handler, not through Config.int: the
    # derived layer's k_heads carries the bound (found by the fuzz: a 401-digit plan).
    from oracle_cases import CONFIGS

    path = CONFIGS / "databricks--dbrx.OME-ABRIDGED.MODIFIED.json"
    import json

    cfg = json.loads(path.read_text())
    cfg["attn_config"] = {**cfg["attn_config"], "kv_n_heads": 10**400}
    with pytest.raises(ConfigError, match=r"layer 0 \(FullAttention\) k_heads = a 401-digit"):
        derive_model(cfg)


def test_bytes_per_token_bounded() -> None:
    # 4,096 layers x 65,536 KV heads x 65,536 dims x 2 (K, V) x 2 B = 2**46 B a token > 2**40.
    with pytest.raises(ConfigError, match="B of KV cache per token"):
        derive_model(with_(num_hidden_layers=4096, num_attention_heads=65536,
                           num_key_value_heads=65536, head_dim=65536, hidden_size=65536))


# Found by the long fuzz run (KVLEDGER_FUZZ_SEED=777, 600 s): DBRX's own layer key was not in
# the limits table, so 48,000,000 layers planned for minutes; GLM-4.5 with no decoder layers
# but an MTP layer indexed an empty list.
def test_dbrx_layer_count_is_bounded() -> None:
    raw = raw_config("databricks--dbrx.OME-ABRIDGED.MODIFIED")
    raw["n_layers"] = 48 * 1_000_000
    with pytest.raises(ConfigError, match=r"'n_layers' must be <= 10,000"):
        derive_model(raw)


@pytest.mark.parametrize("key", ["n_heads", "mamba_n_heads", "num_kv_heads",
                                 "num_global_key_value_heads", "swa_num_key_value_heads"])
def test_family_head_keys_are_bounded(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"'{key}' must be <= 65,536"):
        check_values({key: 1 << 20}, where="config.json")


def test_mtp_model_without_decoder_layers_is_refused() -> None:
    raw = raw_config("zai-org--GLM-4.5")
    assert raw["num_nextn_predict_layers"] == 1  # the MTP layer that used to be indexed
    raw["num_hidden_layers"] = 0
    with pytest.raises(ConfigError, match="describes no layers"):
        derive_model(raw)


# Found by a 900 s fuzz run (KVLEDGER_FUZZ_SEED=4242, 82,617 cases, 2 bad): an absurd
# num_experts_per_tok overflowed the activation estimate, and a huge GLM-5.3 index_kpool made a
# vLLM kernel block hold no pooled entry (a zero page, then a division by zero).
def test_experts_per_token_is_bounded() -> None:
    raw = raw_config("zai-org--GLM-4.5")
    raw["num_experts_per_tok"] = 10**19
    with pytest.raises(ConfigError, match=r"'num_experts_per_tok' must be <= 65,536"):
        derive_model(raw)


def test_glm_index_kpool_is_bounded() -> None:
    with pytest.raises(ConfigError, match=r"'text_config.index_kpool' must be <= 1,024"):
        check_values({"index_kpool": 4_000_000}, where="config.json", path="text_config.")


def test_mamba_d_head_auto_is_the_config_class_default() -> None:
    # BambaConfig / FalconH1Config / GraniteMoeHybridConfig take "auto" (intermediate // heads);
    # only "auto" passes as a string, anything else is still refused.
    check_values({"mamba_d_head": "auto"}, where="config.json")
    with pytest.raises(ConfigError, match=r"'mamba_d_head' must be an integer"):
        check_values({"mamba_d_head": "64"}, where="config.json")

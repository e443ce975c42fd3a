"""The dense coverage group (issue #9 item 3): decoders of vLLM 0.32's registry that kvledger
newly derives, each on a real config (tests/oracles/configs/, origins in SOURCES-dense.md),
with the bytes per token worked by hand from the config's own values, and the per-layer facts
against vLLM's ``layer_specs`` from the oracle
(tests/oracles/vllm-0.32/vllm-0.32-coverage-dense.jsonl,
commands in tests/oracles/README-dense.md). Types vLLM 0.32 cannot serve are refused with its
reason; types it dropped that kvledger still knows are refused by the vLLM layout only.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from derive.coverage import attention_groups as _groups
from derive.coverage import check_by_hand, check_inspect, vllm_derive_file, vllm_facts
from derive.coverage import derive_file as _facts
from derive.coverage import oracle_attention as _oracle_groups
from derive.coverage import raw_config as _raw
from kvledger.cli.main import main
from kvledger.derive import UnsupportedArchitecture, derive_model
from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError
from kvledger.derive.layers import Kind
from kvledger.derive.max_len import MAX_LEN_KEYS, max_len
from kvledger.derive.model_types import CORE_KEYS, resolve
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS, bundled_id, config_path, needs_shared, shared_text

HERE = Path(__file__).resolve().parents[1] / "oracles"
CASES = [json.loads(line) for line in (HERE / "vllm-0.32" / "vllm-0.32-coverage-dense.jsonl")
         .read_text().splitlines() if line.strip()]


# -- every type on its real config: bytes per token by hand --------------------------------
# (config stem, model_type, bytes/token at the KV dtype derive resolves, {(kv, dim, window): n})
# The arithmetic: layers × 2 (K and V) × KV heads × head dim × bytes per element.
DERIVED = [
    # ChatGLM3-6B: 28 num_layers; multi_query_attention → multi_query_group_num 2 KV heads;
    # head 4096 / 32 = 128; float16: 28 × 2 × 2 × 128 × 2 = 28,672.
    ("THUDM--chatglm3-6b", "chatglm", 28_672, {(2, 128, None): 28}),
    # GLM-4-9B (THUDM schema): 40 × 2 × 2 × 128 × 2 (bf16) = 40,960.
    ("THUDM--glm-4-9b", "chatglm", 40_960, {(2, 128, None): 40}),
    # EXAONE-4.0-32B: 64 layers, 8 KV × head_dim 128, bf16: 64 × 2 × 8 × 128 × 2 = 262,144;
    # layer_types LLLG: 48 sliding (4096) + 16 full.
    ("LGAI-EXAONE--EXAONE-4.0-32B", "exaone4", 262_144, {(8, 128, 4096): 48, (8, 128, None): 16}),
    # Remote-code types planned from their stated keys (derive/remote_code.py; vLLM's answers:
    # tests/plan/test_vllm_remote.py). EXAONE-3.5-7.8B: num_layers 32, 8 KV × head_dim 128,
    # the config's float32: 32 × 2 × 8 × 128 × 4 = 262,144 (vLLM serves it bf16: the plan
    # halves it, as the oracle cases show).
    ("LGAI-EXAONE--EXAONE-3.5-7.8B-Instruct", "exaone", 262_144, {(8, 128, None): 32}),
    # InternLM2-7B: 32 layers, 8 KV, 4096 / 32 = 128: 32 × 2 × 8 × 128 × 2 = 131,072.
    ("internlm--internlm2-7b", "internlm2", 131_072, {(8, 128, None): 32}),
    # MiniCPM4-8B: 32 layers, 2 KV, 4096 / 32 = 128: 32 × 2 × 2 × 128 × 2 = 32,768.
    ("openbmb--MiniCPM4-8B", "minicpm", 32_768, {(2, 128, None): 32}),
    # MiniCPM-MoE-8x2B: 40 layers, 36 KV, 2304 / 36 = 64: 40 × 2 × 36 × 64 × 2 = 368,640.
    ("openbmb--MiniCPM-MoE-8x2B.mlc", "minicpm", 368_640, {(36, 64, None): 40}),
    # Orion-14B: 40 layers, 40 KV, 5120 / 40 = 128: 40 × 2 × 40 × 128 × 2 = 819,200.
    ("OrionStarAI--Orion-14B.mlc", "orion", 819_200, {(40, 128, None): 40}),
    # Falcon-40B: new_decoder_architecture → num_kv_heads 8; head 8192 / 128 = 64;
    # 60 × 2 × 8 × 64 × 2 (bf16) = 122,880.
    ("tiiuae--falcon-40b", "falcon", 122_880, {(8, 64, None): 60}),
    # Gemma-7B: 28 × 2 × 16 × 256 × 2 (bf16) = 458,752.
    ("google--gemma-7b", "gemma", 458_752, {(16, 256, None): 28}),
    # Gemma-2B (multi-query): 18 × 2 × 1 × 256 × 2 = 18,432.
    ("google--gemma-2b.mlc", "gemma", 18_432, {(1, 256, None): 18}),
    # GPT-J-6B: n_layer 28, n_head 16, n_embd 4096 → 256; no dtype: float32 (4 B):
    # 28 × 2 × 16 × 256 × 4 = 917,504 (vLLM serves float32 as bfloat16; the plan does that).
    ("EleutherAI--gpt-j-6b.MODIFIED", "gptj", 917_504, {(16, 256, None): 28}),
    # Granite-3.3-8B: 40 × 2 × 8 × (4096 / 32 = 128) × 2 = 163,840.
    ("ibm-granite--granite-3.3-8b-instruct", "granite", 163_840, {(8, 128, None): 40}),
    # Laguna-XS.2-FP8: kv_cache_scheme fp8 (1 B): 40 × 2 × 8 × 128 × 1 = 81,920; layer_types:
    # 10 full, 30 sliding (512).
    ("poolside--Laguna-XS.2-FP8", "laguna", 81_920, {(8, 128, None): 10, (8, 128, 512): 30}),
    # Laguna-S-2.1-FP8: 48 × 2 × 8 × 128 × 1 = 98,304; 12 full, 36 sliding.
    ("poolside--Laguna-S-2.1-FP8", "laguna", 98_304, {(8, 128, None): 12, (8, 128, 512): 36}),
    # Devstral-2-123B (ministral3): 88 × 2 × 8 × 128 × 2 = 360,448.
    ("mistralai--Devstral-2-123B-Instruct", "ministral3", 360_448, {(8, 128, None): 88}),
    # OPT-125m: 12 × 2 × 12 × (768 / 12 = 64) × 2 (fp16) = 36,864.
    ("facebook--opt-125m", "opt", 36_864, {(12, 64, None): 12}),
    # StableLM-3B-4E1T: 32 × 2 × 32 × (2560 / 32 = 80) × 2 = 327,680.
    ("stabilityai--stablelm-3b-4e1t", "stablelm", 327_680, {(32, 80, None): 32}),
    # StableLM-2-Zephyr-1.6B: 24 × 2 × 32 × (2048 / 32 = 64) × 2 (fp16) = 196,608.
    ("stabilityai--stablelm-2-zephyr-1_6b.mlc", "stablelm", 196_608, {(32, 64, None): 24}),
    # WizardCoder-15B (gpt_bigcode, multi_query): 40 × 2 × 1 × (6144 / 48 = 128) × 2 = 20,480.
    ("WizardLMTeam--WizardCoder-15B-V1.0", "gpt_bigcode", 20_480, {(1, 128, None): 40}),
    # RedPajama-INCITE-3B (gpt_neox): 32 × 2 × 32 × (2560 / 32 = 80) × 2 (fp16) = 327,680.
    ("togethercomputer--RedPajama-INCITE-3B-v1", "gpt_neox", 327_680, {(32, 80, None): 32}),
    # OLMo-2-7B: 32 × 2 × 32 × 128 × 4 (float32) = 1,048,576.
    ("allenai--OLMo-2-1124-7B.mlc", "olmo2", 1_048_576, {(32, 128, None): 32}),
    # Olmo-3.1-32B: 64 × 2 × 8 × (5120 / 40 = 128) × 2 = 262,144; 48 sliding (4096), 16 full.
    ("allenai--Olmo-3.1-32B-Instruct", "olmo3", 262_144, {(8, 128, 4096): 48, (8, 128, None): 16}),
    # phi-1: 24 × 2 × 32 × (2048 / 32 = 64) × 4 (float32) = 393,216.
    ("microsoft--phi-1", "phi", 393_216, {(32, 64, None): 24}),
    # phi-2: 32 × 2 × 32 × (2560 / 32 = 80) × 2 (fp16) = 327,680.
    ("microsoft--phi-2.MODIFIED", "phi", 327_680, {(32, 80, None): 32}),
    # StarCoder2 preset: 32 × 2 × 4 × (4608 / 36 = 128) × 2 = 65,536; window 4096 everywhere.
    ("bigcode--starcoder2.mlc", "starcoder2", 65_536, {(4, 128, 4096): 32}),
    # MiniCPM3-4B: full K/V, 40 heads × (64 + 32 = 96): 62 × 2 × 40 × 96 × 2 = 952,320.
    ("openbmb--MiniCPM3-4B", "minicpm3", 952_320, {(40, 96, None): 62}),
    # Muse-Glimmer-30B (text_config): 52 × 2 × 2 × 128 × 2 = 53,248; 39 RoPE layers slide
    # over 2048, 13 NoPE layers are full.
    ("meta-models--Muse-Glimmer-30B", "muse_glimmer", 53_248,
     {(2, 128, 2048): 39, (2, 128, None): 13}),
    # BLOOM test config (n_layer 1, real widths): 1 × 2 × 16 × (2048 / 16 = 128) × 4 (no
    # dtype: float32) = 16,384. No oracle case: vLLM's bloom.py builds ALiBi slopes from a
    # real tensor, which the oracle's meta-device build cannot copy.
    ("bigscience--bloom-1layer-TEST", "bloom", 16_384, {(16, 128, None): 1}),
]


@pytest.mark.parametrize(("stem", "model_type", "per_token", "groups"), DERIVED,
                         ids=[d[0] for d in DERIVED])
def test_derives_by_hand(stem: str, model_type: str, per_token: int,
                         groups: dict[tuple[int, int, int | None], int]) -> None:
    check_by_hand(stem, model_type, per_token, groups)


TP1 = [c for c in CASES if c["inputs"]["tensor_parallel_size"] == 1]


@pytest.mark.parametrize("case", TP1, ids=[f"{c['config']}-{i}" for i, c in enumerate(TP1)])
def test_layers_match_vllm_layer_specs(case: dict[str, Any]) -> None:
    facts = derive_model(str(config_path(case)))
    assert _groups(facts) == _oracle_groups(case)


def test_every_derived_config_has_a_vllm_case_but_bloom() -> None:
    ran = {c["config"].removesuffix(".json") for c in CASES}
    # the remote-code types' cases are their own runner's (tests/plan/test_vllm_remote.py)
    remote = HERE / "vllm-0.32" / "vllm-0.32-remote.jsonl"
    ran |= {json.loads(line)["config"].removesuffix(".json")
            for line in remote.read_text().splitlines() if line.strip()}
    assert {d[0] for d in DERIVED} - ran == {"bigscience--bloom-1layer-TEST"}


# -- the rules, variant by variant (configs changed in the test, the change named) ----------
def test_falcon_multi_query_is_one_kv_head() -> None:
    # falcon.py: without new_decoder_architecture, multi_query → 1 KV head (the Falcon-7B
    # schema): 60 × 2 × 1 × 64 × 2 = 15,360 B/token. The oracle agrees (MULTIQUERY case).
    raw = _raw("tiiuae--falcon-40b")
    raw["new_decoder_architecture"] = False
    assert derive_model(raw).bytes_per_token() == 15_360
    raw["multi_query"] = False  # multi-head: 128 KV heads: 60 × 2 × 128 × 64 × 2
    assert derive_model(raw).bytes_per_token() == 1_966_080


def test_falcon_legacy_names_only_are_refused() -> None:
    raw = _raw("tiiuae--falcon-40b")
    del raw["num_attention_heads"]
    with pytest.raises(UnsupportedArchitecture, match="states n_head=128 but not "
                                                      "num_attention_heads"):
        derive_model(raw)
    raw = _raw("tiiuae--falcon-40b")
    raw["n_layer"] = 61  # vLLM reads num_hidden_layers (60) and ignores n_layer
    facts = derive_model(raw)
    assert len(facts.layers) == 60
    assert any("n_layer=61 is ignored" in w for w in facts.warnings)


def test_falcon_without_num_kv_heads_has_one_per_head() -> None:
    # FalconConfig fills num_kv_heads = num_attention_heads: 60 × 2 × 128 × 64 × 2.
    raw = _raw("tiiuae--falcon-40b")
    del raw["num_kv_heads"]
    assert derive_model(raw).bytes_per_token() == 1_966_080


def test_chatglm_without_multi_query_is_multi_head() -> None:
    # 28 × 2 × 32 × 128 × 2 (fp16) = 458,752.
    raw = _raw("THUDM--chatglm3-6b")
    raw["multi_query_attention"] = False
    assert derive_model(raw).bytes_per_token() == 458_752


def test_chatglm_kv_channels_disagreeing_warns() -> None:
    raw = _raw("THUDM--chatglm3-6b")
    raw["kv_channels"] = 64
    facts = derive_model(raw)
    assert facts.bytes_per_token() == 28_672  # vLLM's chatglm.py: hidden / heads = 128
    assert any("kv_channels 64" in w for w in facts.warnings)


def test_gpt_bigcode_multi_head_and_stated_kv_heads() -> None:
    raw = _raw("WizardLMTeam--WizardCoder-15B-V1.0")
    raw["multi_query"] = False  # 48 KV heads: 40 × 2 × 48 × 128 × 2 = 983,040
    assert derive_model(raw).bytes_per_token() == 983_040
    raw = _raw("WizardLMTeam--WizardCoder-15B-V1.0")
    raw["num_key_value_heads"] = 8  # GPTBigCodeConfig.__post_init__ overwrites it with 1
    facts = derive_model(raw)
    assert facts.bytes_per_token() == 20_480
    assert any("replaced by GPTBigCodeConfig" in w for w in facts.warnings)


def test_exaone4_without_layer_types_builds_the_class_pattern() -> None:
    # Exaone4Config: (i + 1) % sliding_window_pattern != 0 slides; pattern 4 → 48 + 16.
    raw = _raw("LGAI-EXAONE--EXAONE-4.0-32B")
    del raw["layer_types"]
    raw["sliding_window_pattern"] = 4
    assert _groups(derive_model(raw)) == Counter({(8, 128, 4096): 48, (8, 128, None): 16})
    raw["sliding_window_pattern"] = 2  # every other layer full: 32 + 32
    assert _groups(derive_model(raw)) == Counter({(8, 128, 4096): 32, (8, 128, None): 32})
    raw["sliding_window_pattern"] = "LLLG"  # the class cannot compute from a string
    with pytest.raises(UnsupportedArchitecture, match="sliding_window_pattern='LLLG'"):
        derive_model(raw)


def test_olmo3_without_layer_types_slides_three_of_four() -> None:
    raw = _raw("allenai--Olmo-3.1-32B-Instruct")
    del raw["layer_types"]
    assert _groups(derive_model(raw)) == Counter({(8, 128, 4096): 48, (8, 128, None): 16})


def test_laguna_without_layer_types_is_all_full() -> None:
    # LagunaConfig: layer_types default all full_attention; its sliding_window (512) is unused.
    raw = _raw("poolside--Laguna-XS.2-FP8")
    del raw["layer_types"]
    assert _groups(derive_model(raw)) == Counter({(8, 128, None): 40})


def test_muse_glimmer_follows_no_rope_layers() -> None:
    raw = _raw("meta-models--Muse-Glimmer-30B")
    text = raw["text_config"]
    del text["layer_types"]  # windows come from no_rope_layers (default: NoPE every 4th)
    assert _groups(derive_model(raw)) == Counter({(2, 128, 2048): 39, (2, 128, None): 13})
    text["no_rope_layers"] = [1] * 52  # RoPE everywhere: every layer slides
    assert _groups(derive_model(raw)) == Counter({(2, 128, 2048): 52})
    text["layer_types"] = ["full_attention"] * 52
    with pytest.raises(UnsupportedArchitecture, match="disagrees with no_rope_layers"):
        derive_model(raw)


def test_minicpm3_v_head_dim_defaults_and_limits() -> None:
    raw = _raw("openbmb--MiniCPM3-4B")
    raw["v_head_dim"] = 96  # no padding needed: still 40 × 96 for K and V
    assert derive_model(raw).bytes_per_token() == 952_320
    raw["v_head_dim"] = 128
    with pytest.raises(UnsupportedArchitecture, match="v_head_dim 128 is wider"):
        derive_model(raw)


def test_bloom_names_its_width_and_heads_two_ways() -> None:
    raw = _raw("bigscience--bloom-1layer-TEST")
    raw["n_head"] = 8  # BloomConfig reads num_attention_heads as n_head: two values clash
    with pytest.raises(ConfigError, match="disagree"):
        derive_model(raw)


# -- falcon.py hands its Attention no cache_config (plan/engines/vllm/no_cache_config.py) ----------
def _falcon_plan(raw: dict[str, Any], kv_cache_dtype: str) -> Any:
    request = PlanRequest(engine="vllm==0.32", kv_cache_memory_bytes=2**34, max_model_len=2048,
                          kv_cache_dtype=kv_cache_dtype)
    return plan_vllm(derive_model(raw), request, 2**34)


def test_falcon_keeps_the_model_dtype_under_an_fp8_option() -> None:
    # Attention.__init__ without cache_config stores "auto": bfloat16 pages whatever the
    # option, as the oracle's fp8 run shows. Block: 16 tokens × 60 layers × 2 × 8 × 64 × 2 B
    # = 1,966,080 B; 16 GiB / 1,966,080 = 8,738 blocks (not the 17,476 of an fp8 cache).
    plan = _falcon_plan(_raw("tiiuae--falcon-40b"), "fp8")
    assert plan.bytes_per_block == 1_966_080
    assert plan.num_blocks == 8_738
    assert plan.resolved.cache_dtype == "fp8"  # what vLLM's cache_config still says
    assert any("falcon.py builds its rotary and ALiBi Attention without cache_config" in w
               for w in plan.warnings)


def test_falcon_still_takes_a_compressed_tensors_kv_scheme() -> None:
    # From source (no oracle run): Attention.__init__ reads quant_config.kv_cache_scheme even
    # without cache_config and turns "auto" into fp8: 16 × 60 × 2 × 8 × 64 × 1 = 983,040 B.
    raw = _raw("tiiuae--falcon-40b")
    raw["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "naive-quantized", "config_groups": {},
        "ignore": ["lm_head"], "quantization_status": "compressed",
        "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor",
                            "dynamic": False, "symmetric": True}}
    for option in ("auto", "bfloat16"):
        assert _falcon_plan(raw, option).bytes_per_block == 983_040


# -- the length vLLM derives from the config (max_len.py) -----------------------------------
DEFAULT_LEN = [c for c in CASES if "command" in c and "--max-model-len" not in c["command"]]


@pytest.mark.parametrize("case", DEFAULT_LEN, ids=[c["config"] for c in DEFAULT_LEN])
def test_config_length_is_the_one_vllm_derives(case: dict[str, Any]) -> None:
    # Command-R (model_max_length 131072 over max_position_embeddings 8192) lives in
    # ../shared/configs; the others here.
    path = config_path(case)
    assert derive_model(str(path)).max_position_embeddings == case["inputs"]["max_model_len"]


def test_every_length_key_is_a_core_key() -> None:
    assert set(MAX_LEN_KEYS) <= CORE_KEYS


@pytest.mark.parametrize(("raw", "expected"), [
    ({"max_position_embeddings": 4096}, 4096),
    ({"max_position_embeddings": 8192, "seq_length": 4096}, 4096),  # the smallest
    ({"n_positions": 1024, "max_seq_len": 2048}, 1024),
    ({"max_position_embeddings": 8192, "model_max_length": 131072}, 131072),  # override
    ({}, None),
])
def test_max_len(raw: dict[str, Any], expected: int | None) -> None:
    assert max_len(Config(raw, model="t")) == expected


def test_max_len_takes_class_defaults() -> None:
    # GPTJConfig's n_positions default (2048), carried by the gptj row.
    row = resolve("gptj")
    assert max_len(Config({}, model="t", defaults=row.defaults)) == 2048


def test_bad_length_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="seq_length must be a positive integer"):
        max_len(Config({"seq_length": "long"}, model="t"))


# -- refusals ------------------------------------------------------------------------------
REFUSED = [
    # (exaone, internlm2, minicpm and orion are planned from their stated keys now:
    # tests/plan/test_vllm_remote.py)
    ("Tele-AI--TeleChat2-115B", "'Model architectures ['TelechatForCausalLM'] are not "
     "supported for now'"),
    ("baichuan-inc--Baichuan2-7B-Chat", "'Model architecture BaichuanForCausalLM was "
     "supported in vLLM until v0.23.0, and is not supported anymore'"),
    ("Qwen--Qwen-7B-Chat.EDITED", "'Model architecture QWenLMHeadModel was supported in vLLM "
     "until v0.23.0, and is not supported anymore'"),
    ("xverse--XVERSE-7B", "'Model architecture XverseForCausalLM was supported in vLLM until "
     "v0.23.0, and is not supported anymore'"),
    ("internlm--internlm-7b.mlc", "'Model architecture InternLMForCausalLM was supported in "
     "vLLM until v0.23.0, and is not supported anymore'"),
]


@pytest.mark.parametrize(("stem", "reason"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_with_vllms_reason(stem: str, reason: str) -> None:
    with pytest.raises(UnsupportedArchitecture) as err:
        vllm_derive_file(stem)
    assert str(err.value).startswith("unsupported: ")
    assert reason in str(err.value)


@pytest.mark.parametrize(("model_type", "architecture", "version"), [
    ("internlm", "InternLMForCausalLM", "0.23.0"),
    ("RefinedWeb", "RWForCausalLM", "0.28.0"),
    ("RefinedWebModel", "RWForCausalLM", "0.28.0"),
    ("stablelm_epoch", "StableLMEpochForCausalLM", "0.28.0"),
    ("aquila", "AquilaForCausalLM", "0.24.0"),
    ("jais", "JAISLMHeadModel", "0.22.0"),
])
def test_dropped_architectures_refused(model_type: str, architecture: str, version: str) -> None:
    # No real config on disk for these: the reason is vLLM's registry entry
    # (_PREVIOUSLY_SUPPORTED_MODELS) for the architecture such a config names.
    with pytest.raises(UnsupportedArchitecture, match=(
            f"Model architecture {architecture} was supported in vLLM until v{version}")):
        vllm_facts({"model_type": model_type, "architectures": [architecture]})


def test_internlm3_is_remote_code_only() -> None:
    # transformers 5.19's CONFIG_MAPPING has no 'internlm3' and vLLM's _CONFIG_REGISTRY has
    # none either: the checkpoint's configuration_internlm3.py must run (--trust-remote-code).
    with pytest.raises(UnsupportedArchitecture, match=(
            "serves InternLM3ForCausalLM only with --trust-remote-code")):
        vllm_facts({"model_type": "internlm3", "architectures": ["InternLM3ForCausalLM"]})


# -- types kvledger knows that vLLM 0.32 dropped: the vLLM layout refuses, native plans -----
NOT_IN_VLLM = [
    ("microsoft--Phi-3-small-8k-instruct.MODIFIED.json", "phi3small", "Phi3SmallForCausalLM",
     "0.9.2"),
    ("MiniMaxAI--MiniMax-M1.json", "minimax_m1", "MiniMaxM1ForCausalLM", "0.23.0"),
]


@pytest.mark.parametrize(("name", "model_type", "architecture", "version"), NOT_IN_VLLM)
def test_vllm_layout_refuses_what_vllm_dropped(
    name: str, model_type: str, architecture: str, version: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["plan", bundled_id(name) or str(CONFIGS / name), "--kv-cache-memory-bytes", str(2**34),
            "--max-model-len", "4096", "--json"]
    assert main([*argv, "--engine", "vllm==0.32"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert (f"vLLM 0.32 has no model for model_type '{model_type}' ('Model architecture "
            f"{architecture} was supported in vLLM until v{version}") in err
    assert "use --engine native" in err
    assert main([*argv, "--engine", "native"]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out)["kv_cache_tokens"] > 0


def test_vllm_layout_refuses_llama_32_vision_where_vllm_stops(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # vLLM 0.32 dropped mllama.py, yet hands MllamaForConditionalGeneration to its
    # Transformers backend, which stops while vLLM starts (tests/oracles/
    # vllm-0.32-tfbackend.jsonl, run 0): the refusal quotes that, not the "was supported
    # until" message vLLM never reaches. Native still plans it.
    argv = ["plan", str(CONFIGS / "meta-llama--Llama-3.2-Vision-mllama-4layer-TEST.json"),
            "--kv-cache-memory-bytes", str(2**34), "--max-model-len", "4096", "--json"]
    assert main([*argv, "--engine", "vllm==0.32"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "hands it to its Transformers backend (TransformersMultiModalForCausalLM)" in err
    assert ("AttributeError: 'MllamaProcessor' object has no attribute "
            "'_get_num_multimodal_tokens'") in err
    assert "was supported in vLLM until" not in err
    assert "use --engine native" in err
    assert main([*argv, "--engine", "native"]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out)["kv_cache_tokens"] > 0


def test_whether_vllm_serves_a_type_is_not_inherited() -> None:
    # minimax_m3_text is like= minimax_m3; vLLM serves the former, not the latter. The verdict
    # is the vLLM release's, keyed by model_type alone (derive's like= chains do not reach it).
    from kvledger.plan.engines.vllm.releases import vllm_release

    assert resolve("minimax_m3").derivable and resolve("minimax_m3_text").derivable
    assert vllm_release("0.32").not_served.get("minimax_m3")
    assert not vllm_release("0.32").not_served.get("minimax_m3_text")


# -- kvledger inspect over the group's configs (sibling of test_inspect_every_config) -------
SOURCES = shared_text("SOURCES-dense.md")
GROUP = sorted(p for p in CONFIGS.glob("*.json") if f"`{p.name}`" in SOURCES)
REFUSED_FILES = {f"{stem}.json": reason for stem, reason in REFUSED}


@needs_shared
def test_the_group_configs_are_all_listed() -> None:
    # + the MULTIQUERY variant and MPT-7B (derived for the native layout, refused by vLLM's)
    assert len(GROUP) == len(DERIVED) + len(REFUSED) + 2


@needs_shared
@pytest.mark.parametrize("path", GROUP, ids=[p.name.removesuffix(".json") for p in GROUP])
def test_inspect_derives_or_refuses_with_vllms_reason(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_inspect(path, REFUSED_FILES.get(path.name), capsys)


def test_kinds_are_plain_attention() -> None:
    for stem, *_ in DERIVED:
        assert {layer.kind for layer in _facts(stem).layers} <= {Kind.FULL, Kind.SLIDING}


# -- MPT: derived from its own schema (the native layout plans it), refused by vLLM's --------
MPT_VLLM = ("'Model architecture MptForCausalLM was supported in vLLM until v0.28.0, and is "
            "not supported anymore'")


def test_mpt_derives_for_the_native_layout_and_vllm_refuses_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    path = str(CONFIGS / "mosaicml--mpt-7b.json")
    facts = _facts("mosaicml--mpt-7b")
    # config: n_layers 32, n_heads 32, d_model 4096 → head_dim 4096 / 32 = 128, MHA.
    # K and V: 2 × 32 heads × 128 × 2 B (bfloat16) = 16,384 B per layer per token; × 32 layers
    # = 524,288 B/token.
    assert facts.bytes_per_token() == 2 * 32 * 128 * 2 * 32 == 524_288
    code = main(["plan", path, "--engine", "native", "--kv-cache-memory-bytes", "8GiB",
                 "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    # 8 GiB / 524,288 B = 16,384 tokens; max_seq_len 2048 → 8.00 requests.
    assert json.loads(out)["kv_cache_tokens"] == 8 * 2**30 // 524_288 == 16_384
    code = main(["plan", path, "--engine", "vllm==0.32", "--kv-cache-memory-bytes", "8GiB"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert MPT_VLLM in err and "use --engine native" in err and err.count("\n") == 1

"""Dense / GQA family: every bundled config it owns, bytes worked by hand from the config's
own numbers, at the config's KV dtype and at fp8; layer layout; fail-closed keys; agreement with
vLLM 0.32's own per-layer specs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kvledger.derive import (
    Kind,
    ModelFacts,
    Role,
    UnknownCacheKey,
    UnsupportedArchitecture,
    derive_model,
)
from oracle_cases import CONFIGS

# Real configs the catalog does not bundle (not Hub ids, or edited copies): ../shared/configs.
EAGLE_LLAMA = str(CONFIGS / "sgl-project--SpecForge-llama3-8B-eagle3.json")
EAGLE_DSV3 = str(CONFIGS / "sgl-project--SpecForge-deepseek-v3-671b-eagle3.json")
QWEN_FP8_STATIC = str(CONFIGS / "Qwen--Qwen3-32B-FP8-Static-PerTensor.json")
PHI3_MINI = str(CONFIGS / "microsoft--Phi-3-mini-4k-instruct.MODIFIED.json")
PHI3_SMALL = str(CONFIGS / "microsoft--Phi-3-small-8k-instruct.MODIFIED.json")

# id, resolved KV dtype, B/token by kind at that dtype, B/token by kind at fp8.
CASES: list[tuple[str, str, dict[str, int], dict[str, int]]] = [
    # Llama-3.1-8B: 2 (K,V) × 32 layers × 8 kv heads × 128 dim × 2 B = 131,072 B/token
    #   fp8: 2 × 32 × 8 × 128 × 1 B = 65,536
    ("meta-llama/Meta-Llama-3.1-8B", "bfloat16", {"full": 131_072}, {"full": 65_536}),
    # Llama-3.1-70B: 2 × 80 layers × 8 kv × 128 (8192 / 64 heads) × 2 B = 327,680; fp8 163,840
    ("meta-llama/Meta-Llama-3.1-70B", "bfloat16", {"full": 327_680}, {"full": 163_840}),
    # EAGLE3 draft for Llama-3.1-8B: 2 × 1 draft layer × 8 kv × 128 (4096 / 32) × 2 B (float16)
    #   = 4,096; fp8 2,048
    (EAGLE_LLAMA, "float16", {"full/draft": 4_096},
     {"full/draft": 2_048}),
    # EAGLE3 draft for DeepSeek-V3: 2 × 1 layer × 8 kv × 128 (7168 / 56) × 2 B = 4,096; fp8 2,048
    (EAGLE_DSV3, "float16", {"full/draft": 4_096},
     {"full/draft": 2_048}),
    # Mistral-7B: 2 × 32 × 8 kv × 128 (4096 / 32) × 2 B = 131,072 (all sliding, window 4096)
    ("mistralai/Mistral-7B-v0.1", "bfloat16", {"sliding": 131_072}, {"sliding": 65_536}),
    # Mixtral-8x7B: 2 × 32 × 8 × 128 × 2 B = 131,072 (sliding_window null → full); fp8 65,536
    ("mistralai/Mixtral-8x7B-v0.1", "bfloat16", {"full": 131_072}, {"full": 65_536}),
    # Qwen2.5-7B: 2 × 28 × 4 kv × 128 (3584 / 28) × 2 B = 57,344; fp8 28,672
    ("Qwen/Qwen2.5-7B", "bfloat16", {"full": 57_344}, {"full": 28_672}),
    # Qwen3-8B: 2 × 36 × 8 × 128 (head_dim) × 2 B = 147,456; fp8 73,728
    ("Qwen/Qwen3-8B", "bfloat16", {"full": 147_456}, {"full": 73_728}),
    # Qwen3-32B: 2 × 64 × 8 × 128 × 2 B = 262,144; fp8 131,072
    ("Qwen/Qwen3-32B", "bfloat16", {"full": 262_144}, {"full": 131_072}),
    # Qwen3-32B-FP8-Static: quantization_config.kv_cache_scheme "FP8" → fp8 KV:
    #   2 × 64 × 8 × 128 × 1 B = 131,072 (explicit fp8: the same)
    (QWEN_FP8_STATIC, "fp8_e4m3", {"full": 131_072}, {"full": 131_072}),
    # Qwen3-32B-NVFP4: hf_quant_config kv_cache_quant_algo FP8 → 2 × 64 × 8 × 128 × 1 B = 131,072
    ("nvidia/Qwen3-32B-NVFP4", "fp8_e4m3", {"full": 131_072}, {"full": 131_072}),
    # Phi-3-mini-4k: 2 × 32 × 32 kv × 96 (3072 / 32) × 2 B = 393,216 (all sliding 2047);
    #   fp8 196,608
    (PHI3_MINI, "bfloat16", {"sliding": 393_216},
     {"sliding": 196_608}),
    # Phi-3-small-8k: 2 × 32 × 8 kv × 128 (4096 / 32) × 2 B = 131,072; fp8 65,536
    (PHI3_SMALL, "bfloat16", {"full": 131_072},
     {"full": 65_536}),
    # GPT-2 large (no dtype stated → float32): 2 × 36 n_layer × 20 n_head × 64 (1280 / 20) × 4 B
    #   = 368,640; fp8: 2 × 36 × 20 × 64 × 1 B = 92,160
    ("openai-community/gpt2-large", "float32", {"full": 368_640}, {"full": 92_160}),
    # Command-R v01 (float16): 2 × 40 × 64 kv × 128 (8192 / 64) × 2 B = 1,310,720; fp8 655,360
    ("CohereForAI/c4ai-command-r-v01", "float16", {"full": 1_310_720}, {"full": 655_360}),
    # MiniMax-M2.5 (no dtype stated → float32): decoder 2 × 62 × 8 kv × 128 × 4 B = 507,904;
    #   MTP 3 modules × 1 layer: 2 × 3 × 8 × 128 × 4 B = 24,576.
    #   fp8: 2 × 62 × 8 × 128 = 126,976 and 2 × 3 × 8 × 128 = 6,144
    ("MiniMaxAI/MiniMax-M2.5", "float32", {"full": 507_904, "full/mtp": 24_576},
     {"full": 126_976, "full/mtp": 6_144}),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize(("model", "dtype", "native", "fp8"), CASES, ids=IDS)
def test_bytes_per_token_by_kind(
    model: str,
    dtype: str,
    native: dict[str, int],
    fp8: dict[str, int],
    kind_bytes: Callable[[ModelFacts], dict[str, int]],
) -> None:
    facts = derive_model(model)
    assert facts.kv_dtype == dtype
    assert kind_bytes(facts) == native
    assert facts.bytes_per_token() == sum(native.values())
    assert facts.bytes_per_request() == 0  # no recurrent state, no cross-attention
    quant = derive_model(model, kv_cache_dtype="fp8")
    assert quant.kv_dtype == "fp8_e4m3"
    assert kind_bytes(quant) == fp8
    assert quant.bytes_per_token() == sum(fp8.values())
    assert quant.bytes_per_request() == 0


def test_explicit_dtype_beats_checkpoint_kv_scheme() -> None:
    # Qwen3-32B-FP8-Static asked for bf16 KV: 2 × 64 × 8 × 128 × 2 B = 262,144
    facts = derive_model(QWEN_FP8_STATIC, kv_cache_dtype="bfloat16")
    assert (facts.kv_dtype, facts.kv_dtype_source) == ("bfloat16", "option")
    assert facts.bytes_per_token() == 262_144
    assert derive_model(QWEN_FP8_STATIC).kv_dtype_source == (
        "quantization_config"
    )
    assert derive_model("nvidia/Qwen3-32B-NVFP4").kv_dtype_source == "hf_quant_config"


# vLLM 0.32 per-layer specs (TP=1) for the configs it could build.
ORACLE_FILES = {
    "meta-llama/Meta-Llama-3.1-8B": "meta-llama--Meta-Llama-3.1-8B.json",
    "meta-llama/Meta-Llama-3.1-70B": "meta-llama--Meta-Llama-3.1-70B.json",
    "mistralai/Mistral-7B-v0.1": "mistralai--Mistral-7B-v0.1.json",
    "mistralai/Mixtral-8x7B-v0.1": "mistralai--Mixtral-8x7B-v0.1.json",
    "Qwen/Qwen2.5-7B": "Qwen--Qwen2.5-7B.json",
    "Qwen/Qwen3-8B": "Qwen--Qwen3-8B.json",
    "Qwen/Qwen3-32B": "Qwen--Qwen3-32B.json",
    QWEN_FP8_STATIC: "Qwen--Qwen3-32B-FP8-Static-PerTensor.json",
    "nvidia/Qwen3-32B-NVFP4": "nvidia--Qwen3-32B-NVFP4.json",
    PHI3_MINI: "microsoft--Phi-3-mini-4k-instruct.MODIFIED.json",
    "openai-community/gpt2-large": "openai-community--gpt2-large.json",
    "CohereForAI/c4ai-command-r-v01": "CohereForAI--c4ai-command-r-v01.json",
    "MiniMaxAI/MiniMax-M2.5": "MiniMaxAI--MiniMax-M2.5.json",
}


@pytest.mark.parametrize(("model", "config_file"), sorted(ORACLE_FILES.items()))
def test_agrees_with_vllm_layer_specs(
    model: str, config_file: str, oracle_agrees: Callable[..., None]
) -> None:
    oracle_agrees(derive_model(model), config_file)


@pytest.mark.parametrize(
    ("model", "config_file", "tp"),
    [
        ("meta-llama/Meta-Llama-3.1-8B", "meta-llama--Meta-Llama-3.1-8B.json", 4),  # 8 kv / 4
        ("Qwen/Qwen2.5-7B", "Qwen--Qwen2.5-7B.json", 2),  # 4 kv / 2 = 2 per rank
        ("Qwen/Qwen3-32B", "Qwen--Qwen3-32B.json", 4),  # 8 / 4 = 2
        ("mistralai/Mixtral-8x7B-v0.1", "mistralai--Mixtral-8x7B-v0.1.json", 2),  # 8 / 2 = 4
    ],
)
def test_split_facts_agree_with_vllm_per_rank_specs(
    model: str, config_file: str, tp: int, oracle_agrees: Callable[..., None]
) -> None:
    oracle_agrees(derive_model(model), config_file, tp)


def test_windows_per_layer() -> None:
    mistral = derive_model("mistralai/Mistral-7B-v0.1")
    assert [getattr(x, "window", None) for x in mistral.layers] == [4096] * 32
    phi3 = derive_model(PHI3_MINI)
    assert {x.kind for x in phi3.layers} == {Kind.SLIDING}
    assert [getattr(x, "window", None) for x in phi3.layers] == [2047] * 32
    qwen = derive_model("Qwen/Qwen2.5-7B")  # sliding_window 131072 but use_sliding_window false
    assert {x.kind for x in qwen.layers} == {Kind.FULL}
    assert any("use_sliding_window is false" in n for n in qwen.notes)
    assert [x.index for x in qwen.layers] == list(range(28))


def test_phi3_small_marks_dense_layers() -> None:
    facts = derive_model(PHI3_SMALL)
    # dense_attention_every_n_layers 2: layer i is dense iff (i + 1) % 2 == 0 → 1, 3, 5, ...
    dense = [x.index for x in facts.layers if x.note == "dense attention"]
    assert dense == list(range(1, 32, 2))
    assert {x.kind for x in facts.layers} == {Kind.FULL}


def test_minimax_m2_mtp_layers_follow_the_decoder() -> None:
    facts = derive_model("MiniMaxAI/MiniMax-M2.5")
    assert len(facts.by_role(Role.DECODER)) == 62
    mtp = facts.by_role(Role.MTP)
    assert [x.index for x in mtp] == [62, 63, 64]  # num_hidden_layers + i, i < 3 modules
    # bytes for the decoder alone: 2 × 62 × 8 × 128 × 4 B = 507,904
    assert facts.bytes_per_token(Role.DECODER) == 507_904


def test_eagle3_drafts_are_draft_role_only() -> None:
    for model in (EAGLE_LLAMA,
                  EAGLE_DSV3):
        facts = derive_model(model)
        assert [(x.role, x.kind) for x in facts.layers] == [(Role.DRAFT, Kind.FULL)]


@pytest.mark.parametrize("model", IDS)
def test_injected_unknown_cache_key_fails_closed(
    model: str, config_copy: Callable[[str], dict[str, Any]]
) -> None:
    cfg = config_copy(model)
    cfg["sliding_window_foo"] = 3
    with pytest.raises(UnknownCacheKey, match="sliding_window_foo") as err:
        derive_model(cfg)
    assert err.value.key == "sliding_window_foo"


@pytest.mark.parametrize(
    ("model", "key", "value"),
    [
        # checked for phi3small, not for llama: must not pass on a Llama config
        ("meta-llama/Meta-Llama-3.1-8B", "blocksparse_vert_stride", 8),
        # an EAGLE3 key on a plain Llama target
        ("meta-llama/Meta-Llama-3.1-8B", "draft_vocab_size", 32000),
        # Cohere v1 has no window; a window key means another variant
        ("CohereForAI/c4ai-command-r-v01", "sliding_window", 4096),
        ("openai-community/gpt2-large", "num_key_value_heads", 4),
    ],
)
def test_key_checked_for_another_model_type_fails_closed(
    model: str, key: str, value: object, config_copy: Callable[[str], dict[str, Any]]
) -> None:
    cfg = config_copy(model)
    cfg[key] = value
    with pytest.raises(UnknownCacheKey, match=key):
        derive_model(cfg)


def test_variants_not_modeled_fail_closed(config_copy: Callable[[str], dict[str, Any]]) -> None:
    qwen = config_copy("Qwen/Qwen2.5-7B")
    qwen["use_sliding_window"] = True
    with pytest.raises(UnsupportedArchitecture, match="use_sliding_window"):
        derive_model(qwen)
    eagle = config_copy(EAGLE_DSV3)
    eagle["eagle_config"]["some_new_knob"] = 1
    with pytest.raises(UnsupportedArchitecture, match=r"eagle_config\.some_new_knob"):
        derive_model(eagle)
    eagle1 = config_copy("meta-llama/Meta-Llama-3.1-8B")
    eagle1["architectures"] = ["EagleLlamaForCausalLM"]
    with pytest.raises(UnsupportedArchitecture, match="not an EAGLE3 draft"):
        derive_model(eagle1)
    gpt2 = config_copy("openai-community/gpt2-large")
    gpt2["add_cross_attention"] = True
    with pytest.raises(UnsupportedArchitecture, match="add_cross_attention"):
        derive_model(gpt2)


def test_plain_dict_and_config_object_inputs(config_copy: Callable[[str], dict[str, Any]]) -> None:
    raw = config_copy("meta-llama/Meta-Llama-3.1-8B")

    class FakePretrainedConfig:
        def to_dict(self) -> dict[str, Any]:
            return raw

    # same arithmetic as above: 131,072 B/token
    assert derive_model(raw).bytes_per_token() == 131_072
    assert derive_model(FakePretrainedConfig()).bytes_per_token() == 131_072

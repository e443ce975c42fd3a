"""SGLang rules the coverage cases brought in, worked by hand from SGLang 0.5.23's source
(cited in the modules under test) or checked against the oracle's own records."""

from __future__ import annotations

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.sglang import SglangLayoutError, plan_sglang
from kvledger.plan.engines.sglang.context import context_length, text_config
from kvledger.plan.engines.sglang.model import model_dtype
from kvledger.plan.engines.sglang.registry import NATIVE_ARCHITECTURES
from kvledger.plan.engines.sglang.served import (
    NOT_SERVED,
    ORACLE_CASE,
    RENAMED,
    TRANSFORMERS_BACKEND,
    backend,
)
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS
from sglang_cases import load, plan_repo_config
from sglang_cases import repo_config as _config

GIB = 1 << 30
CASES = {c["id"]: c for c in load()}


# -- which class SGLang's loader builds (served.py) ------------------------------------------


@pytest.mark.parametrize("arch", sorted(TRANSFORMERS_BACKEND))
def test_transformers_backend_entries_are_what_the_oracle_resolved(arch: str) -> None:
    case = CASES[TRANSFORMERS_BACKEND[arch]]
    assert str(case["expected"]["model_class"]).startswith("Transformers")
    assert case["expected"]["architectures"] == [arch]
    assert arch not in NATIVE_ARCHITECTURES


@pytest.mark.parametrize("arch", sorted(NOT_SERVED))
def test_not_served_entries_are_refused_by_sglang_in_the_oracle(arch: str) -> None:
    case_id = ORACLE_CASE[arch]
    expected = CASES[case_id]["expected"]
    assert expected.get("model_class") is None
    assert expected.get("model_class_error") or expected.get("error")
    assert arch not in NATIVE_ARCHITECTURES


def test_renamed_architecture_loads_as_the_class_sglang_names() -> None:
    # configs/olmo3.py rewrites Olmo3ForCausalLM to Olmo2ForCausalLM; the oracle saw it.
    assert CASES["cov-olmo3"]["expected"]["model_class"] == RENAMED["Olmo3ForCausalLM"]
    assert backend(("Olmo3ForCausalLM",)) == "native"


def test_the_registry_holds_sglang_classes_and_not_vllm_only_ones() -> None:
    # srt/models/llama.py registers LlamaForCausalLM; SGLang has no falcon.py / bloom.py.
    assert "LlamaForCausalLM" in NATIVE_ARCHITECTURES
    assert "FalconForCausalLM" not in NATIVE_ARCHITECTURES
    assert "BloomForCausalLM" not in NATIVE_ARCHITECTURES


def test_an_unchecked_architecture_is_refused_not_guessed() -> None:
    facts = derive_model(str(CONFIGS / "tiiuae--falcon-40b.json"))
    with pytest.raises(SglangLayoutError, match="cannot load this model: FalconForCausalLM"):
        plan_sglang(facts, PlanRequest(engine="sglang", block_size=1), GIB)
    with pytest.raises(ValueError, match="not reproduced yet"):
        backend(("SomeNewForCausalLM",))


def test_transformers_backend_plans_carry_a_warning() -> None:
    facts = derive_model(str(CONFIGS / "togethercomputer--RedPajama-INCITE-3B-v1.json"))
    plan = plan_sglang(facts, PlanRequest(engine="sglang", block_size=1), GIB)
    assert any("Transformers backend" in w for w in plan.warnings)


# -- the context length SGLang derives (context.py) ------------------------------------------


def test_context_length_reads_n_positions_through_the_gpt2_alias() -> None:
    # GPT2Config.attribute_map: max_position_embeddings → n_positions (1024 here), not the
    # 2048 SGLang falls back to when no key is found.
    cfg = _config("WizardLMTeam--WizardCoder-15B-V1.0.json")
    assert cfg["n_positions"] == 8192 and "max_position_embeddings" not in cfg
    assert context_length(cfg) == 8192
    assert context_length({"model_type": "gpt2", "n_positions": 1024}) == 1024
    assert context_length({"model_type": "llama", "n_positions": 1024}) == 2048


def test_context_length_falls_back_to_the_config_class_default() -> None:
    # Qwen3Config's max_position_embeddings default is 32768 (transformers 5.19).
    assert context_length({"model_type": "qwen3"}) == 32768
    assert context_length({}) == 2048


def test_thinker_text_config_is_the_language_model() -> None:
    # get_hf_text_config: thinker_config first, then its text_config (Qwen2.5-Omni).
    cfg = _config("Qwen--Qwen2.5-Omni-7B.json")
    text = text_config(cfg)
    assert text is cfg["thinker_config"]["text_config"]
    assert context_length(text) == text["max_position_embeddings"] == 32768
    # The thinker's dtype overwrites its text config's (None here): bfloat16.
    assert model_dtype(cfg, "Qwen2_5OmniForConditionalGeneration") == "bfloat16"


# -- MiniCPM3: SGLang's pool is MLA (model.py MLA_FROM_CONFIG_ARCHS) --------------------------


def test_minicpm3_is_sized_as_latent_rows() -> None:
    # _derive_model_shapes, MiniCPM3ForCausalLM: kv_lora_rank 256 + qk_rope_head_dim 32 per
    # layer, 62 layers, bf16: 288 × 62 × 2 = 35,712 B/token (full K/V would be 40 heads ×
    # 2 × 96 × 62 × 2 = 952,320). 1 GiB / 35,712 = 30,066 tokens.
    facts = derive_model(str(CONFIGS / "openbmb--MiniCPM3-4B.json"))
    plan = plan_sglang(facts, PlanRequest(engine="sglang", block_size=1), GIB)
    assert plan.cell_bytes_per_token == 35712
    assert plan.kv_cache_tokens == GIB // 35712 == 30066
    assert "KV size:" in plan.sglang_log_line


@pytest.mark.parametrize(("config", "cell", "rows", "why"), [
    # SGLang 0.5.23's latent rows (above): 35,712 B; the rows are vLLM's whole heads,
    # 40 × 2 × 96 × 62 × 2 = 952,320 B.
    ("openbmb--MiniCPM3-4B.json", 35_712, 952_320, "as MLA"),
    # DeciLM: 80 slots × 8 heads × 256 × 2 B = 327,680 B (oracle case cov-nemotron-nas); the
    # 49 attention layers the model caches: 49 × 4,096 = 200,704 B.
    ("nvidia--Llama-3_3-Nemotron-Super-49B-v1.json", 327_680, 200_704, "without attention"),
])
def test_the_headline_is_the_pools_cell_where_the_rows_differ(
        capsys: pytest.CaptureFixture[str], config: str, cell: int, rows: int, why: str) -> None:
    # `plan` printed the rows' sum as "B of KV per token" beside a pool cut at SGLang's cell
    # (20 GiB / 200,704 B is not the 65,536 tokens it reported for Nemotron-Super).
    import json

    from kvledger.cli.main import main
    from kvledger.plan.result import rows_bytes

    if not (CONFIGS / config).is_file():
        pytest.skip(f"{config} is in ../shared/configs")
    assert main(["plan", str(CONFIGS / config), "--engine", "sglang", "--gpu", "H200",
                 "--kv-cache-memory-bytes", str(20 * GIB), "--max-model-len", "8192",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["bytes_per_token"] == cell
    assert rows_bytes(data["layers"])[0] == rows
    assert data["kv_cache_tokens"] == 20 * GIB // cell
    assert any(f"stores {cell:,} B a token" in w and why in w for w in data["warnings"])


def test_minicpm3_without_a_latent_rank_is_refused() -> None:
    raw = _config("openbmb--MiniCPM3-4B.json")
    del raw["kv_lora_rank"]
    try:
        facts = derive_model(raw)
    except ValueError:
        pytest.skip("derive already refuses a MiniCPM3 config without kv_lora_rank")
    with pytest.raises(SglangLayoutError, match="kv_lora_rank"):
        plan_sglang(facts, PlanRequest(engine="sglang", block_size=1), GIB)


# -- hybrid sliding-window pools of the new types (hybrid_swa.py) ----------------------------


def test_gemma4_shared_kv_layers_keep_their_pool_slots() -> None:
    # Gemma-4 E2B: 35 layers, every fifth full (7 full, 28 sliding), the last 20 read an
    # earlier layer's KV yet keep their slots. Full: 1 KV head × (512 + 512) × 2 B = 2,048 per
    # layer × 7 = 14,336; sliding: 1 × (256 + 256) × 2 = 1,024 × 28 = 28,672. Cell at ratio
    # 0.8: 14,336 + 0.8 × 28,672 = 37,273.6 B; 16 GiB / 37,273.6 = 460,912 full tokens,
    # int(460,912 × 0.8) = 368,729 sliding; window 512 − 1 (gemma4_causal.py).
    facts = derive_model(str(CONFIGS / "google--gemma-4-E2B-it.json"))
    assert sum(not layer.owns_memory for layer in facts.layers) == 20
    plan = plan_sglang(facts, PlanRequest(engine="sglang", block_size=1,
                                          max_model_len=32768), 16 * GIB)
    assert plan.cell_bytes_per_token == pytest.approx(14336 + 0.8 * 28672)
    assert (plan.kv_cache_tokens, plan.swa_tokens) == (460912, 368729)
    assert plan.stages[0].full_layers == 7 and plan.stages[0].swa_layers == 28


def test_a_layer_split_sglang_makes_differently_is_refused() -> None:
    # get_hybrid_layer_ids reads layer_types; a config whose layer_types disagree with the
    # layers kvledger derives (here: no layer_types at all) cannot be sized as SGLang would.
    from kvledger.plan.engines.sglang import hybrid_swa

    assert hybrid_swa.sglang_swa_layers("LagunaForCausalLM", {}, 4) == ()
    assert hybrid_swa.sglang_swa_layers("MiMoV2FlashForCausalLM",
                                        {"hybrid_layer_pattern": [0, 1, 1, 0]}, 4) == (1, 2)
    assert hybrid_swa.sglang_swa_layers("Llama4ForConditionalGeneration", {}, 8) == \
        (0, 1, 2, 4, 5, 6)
    assert not hybrid_swa.is_hybrid_swa("LagunaForCausalLM", {"sliding_window": None})
    assert hybrid_swa.reported_window("MuseGlimmerForCausalLM", 2048) == 2047
    assert hybrid_swa.reported_window("LagunaForCausalLM", 512) == 512


# -- LFM2's short-convolution state pool (states.py) -----------------------------------------


def test_lfm2_state_pool_is_conv_only() -> None:
    # LFM2.5-VL-1.6B: 10 conv layers, hidden 2048, conv_L_cache 3 → conv state 2048 × 2 × 2 B
    # (bf16) = 8,192 per layer, 81,920 per request; no temporal state. Slots at the default
    # mamba_full_memory_ratio 0.9: int((16 × 0.9 / 1.9 GiB − 81,920) // 81,920) = 99,337;
    # 16 − 99,338 × 81,920 / 2^30 = 8.42111206 GiB left; 6 attention layers × 8 heads ×
    # (64 + 64) × 2 B = 12,288 B/token → 735,848 tokens.
    plan = plan_repo_config("LiquidAI--LFM2.5-VL-1.6B.json", 32768)
    assert plan.state_bytes is not None and plan.state is not None
    assert plan.state_bytes.conv_bytes_per_slot == 81920
    assert plan.state_bytes.temporal_bytes_per_slot == 0
    assert plan.state.max_mamba_cache_size == 99337
    assert plan.cell_bytes_per_token == 12288
    assert plan.kv_cache_tokens == 735848
    # No Mamba radix strategy for Lfm2Vl: 3 state slots per request, overlap left on.
    assert plan.resolved.mamba_strategy is None and plan.resolved.overlap

"""SGLang 0.5.23 rules the every-type wave brought in (text-only LFM2's radix strategy, the
text-only Gemma-4 config load, Idefics3 on the Transformers backend), worked by hand from the
config and from SGLang's source (cited in the modules under test), beside the oracle cases
``cov-<type>`` that ``test_oracle.py`` scores."""

from __future__ import annotations

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.sglang import SglangLayoutError, SglangOptions, plan_sglang
from kvledger.plan.engines.sglang.served import backend
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS
from sglang_cases import load
from sglang_cases import plan_repo_config as _plan

GIB = 1 << 30
CASES = {c["id"]: c for c in load()}
LFM2_TEXT = CONFIGS / "LiquidAI--LFM2.5-VL-1.6B.TEXT.MODIFIED.json"


def test_text_only_lfm2_takes_no_buffer_and_turns_the_overlap_scheduler_off() -> None:
    # overrides.py: Lfm2ForCausalLM is in _MAMBA_RADIX_CACHE_ARCHS but not in
    # _MAMBA_EXTRA_BUFFER_ARCHS, so "auto" resolves to no_buffer with the overlap scheduler
    # off (the VL wrapper, in neither list, keeps a plain radix cache).
    plan = _plan(LFM2_TEXT.name, 32768)
    assert plan.resolved.mamba_strategy == "no_buffer" and not plan.resolved.overlap
    assert CASES["cov-lfm2-text"]["expected"]["resolved_mamba_radix_cache_strategy"] == \
        "no_buffer"
    vl = _plan("LiquidAI--LFM2.5-VL-1.6B.json", 32768)
    assert vl.resolved.mamba_strategy is None and vl.resolved.overlap


def test_no_buffer_refuses_pages_above_one_in_sglangs_words() -> None:
    # mamba_hook.py validate_mamba_no_buffer: assert page_size in (1, None).
    facts = derive_model(str(LFM2_TEXT))
    request = PlanRequest(engine="sglang", block_size=16, max_model_len=32768)
    with pytest.raises(SglangLayoutError, match="no_buffer only supports page_size=1"):
        plan_sglang(facts, request, 16 * GIB)
    # Without the radix cache there is no strategy to validate: 16-token pages are planned.
    plan = plan_sglang(facts, request, 16 * GIB,
                       options=SglangOptions(disable_radix_cache=True))
    assert plan.page_size == 16


def test_no_buffer_on_blackwell_runs_on_lfm2s_flashinfer() -> None:
    # The same validator refuses the trtllm_mha backend. On SM100 LFM2's model override
    # (model_overrides/lfm2.py _lfm2_overrides) declares flashinfer, which keeps page 1, so
    # the no_buffer strategy starts; a given trtllm_mha moves the page to 64 and is refused in
    # SGLang's words. (Before the override was read, this was refused as not reproduced.)
    facts = derive_model(str(LFM2_TEXT))
    request = PlanRequest(engine="sglang", block_size=1, max_model_len=32768)
    plan = plan_sglang(facts, request, 16 * GIB, platform="sm100")
    assert plan.resolved.attention_backend == "flashinfer"
    assert (plan.page_size, plan.resolved.mamba_strategy) == (1, "no_buffer")
    given = SglangOptions(attention_backend="trtllm_mha")
    with pytest.raises(SglangLayoutError, match="no_buffer only supports page_size=1"):
        plan_sglang(facts, request, 16 * GIB, platform="sm100", options=given)


def test_a_top_level_gemma4_text_config_is_refused_with_sglangs_load_error() -> None:
    # utils/hf_transformers/config.py get_config: hasattr(config, "head_dim") on transformers'
    # heterogeneous Gemma4TextConfig raises; the wrapper (cov-gemma4) loads.
    facts = derive_model(str(CONFIGS / "google--gemma-4-E2B-it.TEXT.MODIFIED.json"))
    assert facts.model_type == "gemma4_text"
    with pytest.raises(SglangLayoutError, match="'head_dim' is a per-layer attribute"):
        plan_sglang(facts, PlanRequest(engine="sglang", block_size=1, max_model_len=32768),
                    16 * GIB)
    assert "head_dim" in CASES["cov-gemma4-text"]["expected"]["error"]


def test_idefics3_is_served_by_the_transformers_backend_like_smolvlm() -> None:
    # Both wrap a Llama text model of 32 layers × 5 KV heads × 64 (SmolVLM2-500M's sizes):
    # 2 × 32 × 5 × 64 × 2 B = 40,960 B/token; 16 GiB / 40,960 = 419,430 tokens.
    assert backend(("Idefics3ForConditionalGeneration",)) == "transformers"
    plan = _plan("HuggingFaceTB--SmolVLM2-500M-Video-Instruct.IDEFICS3.MODIFIED.json", 8192)
    assert plan.cell_bytes_per_token == 40960
    assert plan.kv_cache_tokens == 16 * GIB // 40960 == 419430
    assert any("Transformers backend" in w for w in plan.warnings)


def test_pure_mamba2_is_a_state_pool_with_an_empty_kv_pool() -> None:
    # configs/mamba2.py Mamba2Config.mamba2_cache_params → Mamba2StateShape.create (TP 1):
    # conv (intermediate 8192 + 2 × 8 groups × state 128 = 10,240) × (4 − 1) × 2 B = 61,440
    # per layer; temporal 128 heads × 64 × 128 × 4 B (float32, Mamba2CacheParams' default
    # dtype) = 4,194,304 per layer; × 64 layers = 272,367,616 B per slot. Slots at ratio 0.9:
    # int(16 GiB × 0.9 / 1.9 / 272,367,616 − 1) = int(29.88 − 1) = 28. No attention layer:
    # the KV pool is the context length, 2048. Requests: 3 slots each (no Mamba radix
    # strategy: not in overrides.py _MAMBA_RADIX_CACHE_ARCHS) → 28 // 3 = 9.
    assert backend(("Mamba2ForCausalLM",)) == "native"
    plan = _plan("mistralai--Mamba-Codestral-7B-v0.1.CONVERTED.json", 2048)
    assert plan.state_bytes is not None and plan.state is not None
    assert plan.state_bytes.conv_bytes_per_slot == 64 * 61440
    assert plan.state_bytes.temporal_bytes_per_slot == 64 * 4194304
    assert plan.state.max_mamba_cache_size == 28
    assert plan.kv_cache_tokens == 2048
    assert plan.max_running_requests == 28 // 3 == 9
    assert CASES["cov-mamba2"]["expected"]["mamba"]["mamba_cache_per_req_bytes"] == \
        64 * (61440 + 4194304)

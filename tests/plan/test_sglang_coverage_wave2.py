"""SGLang 0.5.23 on the model types coverage wave 2 added: each plan worked by hand from the
config (arithmetic in the comments) and from SGLang's source (cited), beside the oracle cases
``cov-<type>`` that ``test_sglang_oracle.py`` scores."""

from __future__ import annotations

from pathlib import Path

from kvledger.derive import derive_model
from kvledger.plan.request import PlanRequest
from kvledger.plan.sglang import plan_sglang
from kvledger.plan.sglang.layout import SglangPlan
from kvledger.plan.sglang.served import backend
from sglang_cases import load

GIB = 1 << 30
CONFIGS = Path(__file__).resolve().parents[1] / "oracles" / "configs"
CASES = {c["id"]: c for c in load()}


def _plan(name: str, context: int) -> SglangPlan:
    facts = derive_model(str(CONFIGS / name))
    return plan_sglang(facts, PlanRequest(engine="sglang", block_size=1,
                                          max_model_len=context), 16 * GIB)


def test_olmoe_is_a_native_full_attention_pool() -> None:
    # SGLang models/olmoe.py OlmoeAttention: head_dim = hidden_size // num_heads = 2048 // 16
    # = 128; 16 layers × 16 KV heads × (128 + 128) × 2 B (bf16) = 131,072 B/token;
    # 16 GiB / 131,072 = 131,072 tokens.
    assert backend(("OlmoeForCausalLM",)) == "native"
    plan = _plan("allenai--OLMoE-1B-7B.mbridge.json", 4096)
    assert plan.cell_bytes_per_token == 131072
    assert plan.kv_cache_tokens == 131072
    assert CASES["cov-olmoe"]["expected"]["model_class"] == "OlmoeForCausalLM"


def test_granitemoe_is_a_native_gqa_pool() -> None:
    # SGLang models/granitemoe.py GraniteMoeAttention: head_dim = 1024 // 16 = 64; 24 layers ×
    # 8 KV heads × (64 + 64) × 2 B = 49,152 B/token; 16 GiB / 49,152 = 349,525 tokens.
    assert backend(("GraniteMoeForCausalLM",)) == "native"
    plan = _plan("ibm-granite--granite-3.0-1b-a400m-instruct.json", 4096)
    assert plan.cell_bytes_per_token == 49152
    assert plan.kv_cache_tokens == 16 * GIB // 49152 == 349525
    assert CASES["cov-granitemoe"]["expected"]["model_class"] == "GraniteMoeForCausalLM"


def test_falcon_h1_sizes_mamba_state_on_every_layer_beside_full_attention() -> None:
    # SGLang configs/falcon_h1.py: full_attention_layer_ids and linear_layer_ids are both
    # range(36) (attention and Mamba2 mixer in every layer); mamba2_cache_params from
    # Mamba2StateShape.create. Conv state: (d_ssm 1536 + 2 × 1 group × d_state 128) = 1,792
    # channels × (d_conv 4 − 1) × 2 B (bf16) = 10,752 per layer; temporal (SSM) state: 24 heads
    # × 64 × 128 × 4 B (float32, mamba2_state_dtype) = 786,432 per layer; × 36 layers =
    # 28,698,624 B per slot. Slots at mamba_full_memory_ratio 0.9:
    # int((16 GiB × 0.9 / 1.9 − 28,698,624) // 28,698,624) = 282; KV gets
    # 16 GiB − 283 × 28,698,624 = 9,058,158,592 B; cell 36 × 2 KV heads × (64 + 64) × 2 B =
    # 18,432 → 491,436 tokens. Requests: 282 slots // 5 per request (extra_buffer) = 56.
    assert backend(("FalconH1ForCausalLM",)) == "native"
    plan = _plan("tiiuae--Falcon-H1-0.5B.mbridge.D_SSM.MODIFIED.json", 16384)
    assert plan.state_bytes is not None and plan.state is not None
    assert plan.state_bytes.conv_bytes_per_slot == 36 * 10752
    assert plan.state_bytes.temporal_bytes_per_slot == 36 * 786432
    assert plan.state.max_mamba_cache_size == 282
    assert plan.cell_bytes_per_token == 18432
    assert plan.kv_cache_tokens == 9058158592 // 18432 == 491436
    assert plan.max_running_requests == 282 // 5 == 56

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

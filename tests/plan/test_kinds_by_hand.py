"""Every cache kind on every layout, from configs written here and numbers worked by hand.

A clone without ../shared still has these: each config below states its own small values
(no file is read), each expected byte count is the arithmetic in its comment, and every kind
is planned by the vLLM, SGLang and native layouts. (Model-local caches, the remaining kind,
are declared rather than derived: tests/declare and tests/plan/test_model_local_budget.py.)
"""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.derive.layers import Kind, ModelFacts, Role
from kvledger.plan.api import plan_model
from kvledger.plan.request import PlanRequest

GIB = 1 << 30
# 2 layers, 16 query heads, 4 KV heads of 64, bfloat16: one attention layer holds
# 2 (K, V) × 4 × 64 × 2 B = 1,024 B per token.
BASE: dict[str, Any] = {
    "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 4,
    "num_hidden_layers": 2, "head_dim": 64, "torch_dtype": "bfloat16",
    "max_position_embeddings": 4096, "vocab_size": 1000, "intermediate_size": 2048,
}
CONFIGS: dict[str, dict[str, Any]] = {
    "full": {**BASE, "model_type": "llama", "architectures": ["LlamaForCausalLM"]},
    "sliding": {**BASE, "model_type": "mistral", "architectures": ["MistralForCausalLM"],
                "sliding_window": 256},
    # Llama-4's rule: no_rope_layers[i] = 1 is a RoPE layer with chunked attention, 0 a NoPE
    # layer with full attention.
    "chunked": {**BASE, "model_type": "llama4_text", "architectures": ["Llama4ForCausalLM"],
                "attention_chunk_size": 512, "no_rope_layers": [1, 0], "num_local_experts": 2,
                "num_experts_per_tok": 1, "intermediate_size_mlp": 2048,
                "interleave_moe_layer_step": 1},
    "mla": {**BASE, "model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"],
            "kv_lora_rank": 64, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32,
            "v_head_dim": 32, "q_lora_rank": None, "n_routed_experts": 4,
            "num_experts_per_tok": 2, "moe_intermediate_size": 256, "first_k_dense_replace": 1,
            "n_shared_experts": 1, "num_nextn_predict_layers": 0},
    "mamba": {"model_type": "mamba", "architectures": ["MambaForCausalLM"], "hidden_size": 256,
              "num_hidden_layers": 2, "state_size": 16, "conv_kernel": 4, "expand": 2,
              "intermediate_size": 512, "torch_dtype": "bfloat16", "vocab_size": 1000,
              "max_position_embeddings": 4096},
    # Layers 0-2 Gated DeltaNet, layer 3 full attention (every 4th).
    "gdn": {**BASE, "model_type": "qwen3_next", "architectures": ["Qwen3NextForCausalLM"],
            "num_hidden_layers": 4, "full_attention_interval": 4, "linear_num_value_heads": 8,
            "linear_num_key_heads": 4, "linear_key_head_dim": 32, "linear_value_head_dim": 32,
            "linear_conv_kernel_dim": 4, "num_experts": 4, "num_experts_per_tok": 2,
            "moe_intermediate_size": 256},
    "encdec": {"model_type": "whisper", "architectures": ["WhisperForConditionalGeneration"],
               "d_model": 256, "encoder_layers": 2, "decoder_layers": 2,
               "encoder_attention_heads": 4, "decoder_attention_heads": 4,
               "encoder_ffn_dim": 1024, "decoder_ffn_dim": 1024, "max_source_positions": 1500,
               "max_target_positions": 448, "torch_dtype": "float16", "vocab_size": 1000},
}
LENGTH = {"encdec": 448}  # whisper's decoder holds at most max_target_positions tokens


def _decoder(facts: ModelFacts) -> dict[str, tuple[int, int]]:
    """kind → (bytes per token, bytes per request) summed over the decoder's layers."""
    out: dict[str, tuple[int, int]] = {}
    for layer in facts.by_role(Role.DECODER):
        if layer.kind is Kind.NONE:
            continue
        token, request = out.get(layer.kind.value, (0, 0))
        out[layer.kind.value] = (token + layer.bytes_per_token(),
                                 request + layer.bytes_per_request())
    return out


def test_full_attention() -> None:
    # 2 layers × 1,024 B = 2,048 B per token.
    assert _decoder(derive_model(CONFIGS["full"])) == {"full": (2_048, 0)}


def test_sliding_window() -> None:
    facts = derive_model(CONFIGS["sliding"])
    assert _decoder(facts) == {"sliding": (2_048, 0)}
    assert {getattr(x, "window", None) for x in facts.by_role(Role.DECODER)} == {256}


def test_chunked_local_attention() -> None:
    # Layer 0 chunked (512), layer 1 full: 1,024 B per token each.
    facts = derive_model(CONFIGS["chunked"])
    assert _decoder(facts) == {"chunked": (1_024, 0), "full": (1_024, 0)}


def test_mla() -> None:
    # One latent of kv_lora_rank + qk_rope_head_dim = 64 + 16 = 80 values a token and layer,
    # 2 B each: 160 B × 2 layers = 320 B per token.
    assert _decoder(derive_model(CONFIGS["mla"])) == {"mla": (320, 0)}


def test_mamba_state() -> None:
    # intermediate 512 (expand 2 × 256). Conv state (conv_kernel - 1) × 512 × 2 B = 3,072;
    # SSM state 512 × state_size 16 × 2 B (the model's dtype) = 16,384; 19,456 a layer,
    # 38,912 per request for 2 layers; nothing grows with tokens.
    assert _decoder(derive_model(CONFIGS["mamba"])) == {"state": (0, 38_912)}


def test_gated_deltanet_state() -> None:
    # Full attention on layer 3: 1,024 B per token. GDN layers 0-2: conv over
    # 2 × 4 key heads × 32 + 8 value heads × 32 = 512 channels × 3 (kernel - 1) × 2 B = 3,072;
    # recurrent state 8 value heads × 32 × 32 × 2 B = 16,384; 19,456 × 3 = 58,368 per request.
    assert _decoder(derive_model(CONFIGS["gdn"])) == {"full": (1_024, 0), "state": (0, 58_368)}


def test_encoder_decoder_cross_attention() -> None:
    # d_model 256 / 4 heads = 64. Self-attention: 2 layers × 2 × 4 × 64 × 2 B (float16)
    # = 2,048 B per token. Cross-attention has the same geometry (2,048 B per encoder
    # position) and holds the encoder's 1,500 positions once per request:
    # 1,500 × 2 layers × 2 × 4 × 64 × 2 B = 3,072,000 B; the model's per-token total leaves
    # it out (it does not grow with the decoder's tokens).
    facts = derive_model(CONFIGS["encdec"])
    assert _decoder(facts) == {"full": (2_048, 0), "cross": (2_048, 3_072_000)}
    assert (facts.bytes_per_token(), facts.bytes_per_request()) == (2_048, 3_072_000)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "native"])
@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_every_layout_plans_every_kind(kind: str, engine: str) -> None:
    request = PlanRequest(engine=engine, kv_cache_memory_bytes=GIB,
                          max_model_len=LENGTH.get(kind, 4096))
    plan = plan_model(CONFIGS[kind], request)
    assert plan.kv_cache_tokens > 0 and plan.max_concurrency >= 1


def _plan(kind: str, engine: str) -> Any:
    return plan_model(CONFIGS[kind], PlanRequest(engine=engine, kv_cache_memory_bytes=GIB,
                                                 max_model_len=4096))


def test_full_attention_numbers_on_each_layout() -> None:
    # vLLM: a block is 16 tokens × 2,048 B = 32,768 B; 2^30 / 32,768 = 32,768 blocks =
    # 524,288 tokens, 128 requests of 4,096. SGLang (page 1): 2^30 / 2,048 = 524,288 tokens.
    vllm = _plan("full", "vllm==0.33")
    assert (vllm.num_blocks, vllm.kv_cache_tokens, vllm.max_concurrency) == (32_768, 524_288, 128)
    assert _plan("full", "sglang").kv_cache_tokens == 524_288
    assert _plan("full", "native").kv_cache_tokens == 524_288


def test_mla_numbers_on_vllm_and_sglang() -> None:
    # vLLM: 16 × 320 B = 5,120 B a block; 2^30 / 5,120 = 209,715.2 → 209,715 blocks ×
    # 16 = 3,355,440 tokens. SGLang: 2^30 / 320 = 3,355,443.2 → 3,355,443 tokens.
    vllm = _plan("mla", "vllm==0.33")
    assert (vllm.num_blocks, vllm.kv_cache_tokens) == (209_715, 3_355_440)
    assert _plan("mla", "sglang").kv_cache_tokens == 3_355_443


def test_chunked_and_full_groups_share_vllms_blocks() -> None:
    # Two KV cache groups of one layer each share one tensor: a block is 16 × 1,024 B =
    # 16,384 B; 2^30 / 16,384 = 65,536 blocks, split between the 2 groups: 524,288 tokens.
    vllm = _plan("chunked", "vllm==0.33")
    assert (vllm.num_blocks, vllm.kv_cache_tokens) == (65_536, 524_288)


def test_mamba_state_slots_on_vllm() -> None:
    # One block per request holds both layers' state: 2^30 / 38,912 = 27,594.1 → 27,594.
    vllm = _plan("mamba", "vllm==0.33")
    assert vllm.num_blocks == 27_594 and vllm.max_concurrency == 27_594

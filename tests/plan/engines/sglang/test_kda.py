"""SGLang 0.5.23's pools for Kimi Delta Attention hybrids (Kimi-K3), worked by hand from the
config's own values and SGLang's rules: ``configs/kimi_linear.py``
(``KimiLinearConfig.mamba2_cache_params``, ``linear_layer_ids``), ``configs/mamba_utils.py``
(``KimiLinearStateShape.create``, ``BaseLinearStateParams.mamba_cache_per_req``,
``mamba2_state_dtype``), ``configs/model_config.py`` (``_derive_model_shapes``' Kimi branch:
MLA), ``mem_cache/kv_cache_configurator.py`` (``_handle_max_mamba_cache``). The oracle case
cov-kimi-k3 checks the same numbers against SGLang's own run."""

from __future__ import annotations

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.sglang import SglangLayoutError, SglangOptions, plan_sglang
from kvledger.plan.request import PlanRequest
from sglang_cases import catalog_config as _config

GIB = 1 << 30
REQUEST = PlanRequest(engine="sglang", max_model_len=32768)


def test_kimi_k3_state_pool_mla_cell_and_request_cap() -> None:
    # Kimi-K3 text_config: 93 layers; linear_attn_config kda_layers (1-based) hold 69 of them,
    # the other 24 are MLA (kv_lora_rank 512 + qk_rope_head_dim 64).
    # KDA state per layer (num_heads 96, head_dim 128, short_conv_kernel_size 4):
    #   conv (4 − 1) × (96·128 + 2 × 96·128) = 3 × 36,864 = 110,592 bf16 → 221,184 B
    #   temporal 96 × 128 × 128 = 1,572,864 float32 → 6,291,456 B
    #   → 6,512,640 B × 69 layers = 449,372,160 B per request slot.
    # State pool: 16 GiB × 0.9 / 1.9 = 8,137,835,789.47 B; (that − 449,372,160) // 449,372,160
    # = 17 slots; 18 × 449,372,160 = 8,088,698,880 B reserved (with the padding slot).
    # KV: 17,179,869,184 − 8,088,698,880 = 9,091,170,304 B; cell 24 × 576 × 2 B = 27,648;
    # 9,091,170,304 // 27,648 = 328,818 tokens.
    # Requests: extra_buffer strategy with the overlap scheduler → 3 + 2 = 5 slots per
    # request; 17 // 5 = 3.
    facts = derive_model(_config("moonshotai/Kimi-K3"))
    plan = plan_sglang(facts, REQUEST, 16 * GIB)
    assert plan.state is not None and plan.state_bytes is not None
    assert plan.state_bytes.layers == 69
    assert plan.state.bytes_per_slot == 449372160
    assert plan.state.max_mamba_cache_size == 17
    assert plan.kv_budget_bytes == 9091170304
    assert plan.cell_bytes_per_token == 27648
    assert plan.kv_cache_tokens == 328818
    assert plan.max_running_requests == 3
    assert plan.resolved.mamba_strategy == "extra_buffer"


def test_kimi_k3_state_splits_heads_over_tp() -> None:
    # TP 2: 48 heads per rank. conv 3 × (6,144 + 2 × 6,144) = 55,296 bf16 = 110,592 B;
    # temporal 48 × 128 × 128 × 4 B = 3,145,728 B → 3,256,320 × 69 = 224,686,080 B.
    # The MLA latent is not split by TP: still 27,648 B/token.
    facts = derive_model(_config("moonshotai/Kimi-K3"))
    plan = plan_sglang(facts, PlanRequest(engine="sglang", max_model_len=32768,
                                          tensor_parallel_size=2), 16 * GIB)
    assert plan.state is not None
    assert plan.state.bytes_per_slot == 224686080
    assert plan.cell_bytes_per_token == 27648


def test_kda_temporal_dtype_is_the_option_else_float32() -> None:
    # --mamba-ssm-dtype bfloat16: temporal 1,572,864 × 2 B = 3,145,728; + conv 221,184
    # = 3,366,912 B × 69 = 232,316,928 B.
    facts = derive_model(_config("moonshotai/Kimi-K3"))
    plan = plan_sglang(facts, REQUEST, 16 * GIB,
                       options=SglangOptions(mamba_ssm_dtype="bfloat16"))
    assert plan.state is not None
    assert plan.state.bytes_per_slot == 232316928
    # Without the option: float32 (mamba2_state_dtype(None); KimiLinearCacheParams reads no
    # config): 449,372,160 B as above.
    plan = plan_sglang(facts, REQUEST, 16 * GIB)
    assert plan.state is not None
    assert plan.state.bytes_per_slot == 449372160

def test_glm5_next_kda_stays_refused_by_name() -> None:
    # GLM-5.3-Flash adds DSA indexers and mHC to the KDA hybrid; SGLang's own sizing of it
    # could not run on the CPU oracle, so kvledger refuses rather than guess.
    facts = derive_model(_config("zai-org/GLM-5.3-Flash"))
    with pytest.raises(SglangLayoutError, match="recurrent state kind kda"):
        plan_sglang(facts, REQUEST, 16 * GIB)

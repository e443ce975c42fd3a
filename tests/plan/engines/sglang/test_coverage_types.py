"""SGLang 0.5.23 on the model types coverage wave 2 added: each plan worked by hand from the
config (arithmetic in the comments) and from SGLang's source (cited), beside the oracle cases
``cov-<type>`` that ``test_oracle.py`` scores."""

from __future__ import annotations

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.sglang import SglangLayoutError, plan_sglang
from kvledger.plan.engines.sglang.registry import NATIVE_ARCHITECTURES
from kvledger.plan.engines.sglang.served import backend
from kvledger.plan.request import PlanRequest
from kvledger.records import replace
from oracle_cases import CONFIGS
from sglang_cases import load
from sglang_cases import plan_repo_config as _plan

GIB = 1 << 30
CASES = {c["id"]: c for c in load()}


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


def test_falcon_mamba_is_a_pure_mamba1_state_pool_with_an_empty_kv_pool() -> None:
    # SGLang configs/mamba.py FalconMambaConfig.mamba2_cache_params → _mamba1_cache_params →
    # Mamba2StateShape.create_full_rank: conv (intermediate 8192, d_conv 4 − 1) × 2 B (bf16)
    # = 49,152 per layer; temporal (8192, 1, state 16) × 4 B (float32: mamba2_state_dtype(None))
    # = 524,288 per layer; × 64 layers = 36,700,160 B per slot. Slots at ratio 0.9:
    # int((16 GiB × 0.9 / 1.9 − 36,700,160) // 36,700,160) = int(221.97 − 1) = 220. No
    # attention layer: pool_configurator.py _zero_kv_max_tokens = the context length, 2048.
    # Requests: no Mamba radix strategy (not in overrides.py _MAMBA_RADIX_CACHE_ARCHS), so 3
    # slots per request: 220 // 3 = 73.
    assert backend(("FalconMambaForCausalLM",)) == "native"
    plan = _plan("tiiuae--falcon-mamba-7b.mlstm.json", 2048)
    assert plan.state_bytes is not None and plan.state is not None
    assert plan.state_bytes.conv_bytes_per_slot == 64 * 49152
    assert plan.state_bytes.temporal_bytes_per_slot == 64 * 524288
    assert plan.state.max_mamba_cache_size == 220
    assert plan.cell_bytes_per_token == 0
    assert plan.kv_cache_tokens == 2048
    assert plan.max_running_requests == 220 // 3 == 73
    assert "K size: 0.00 GB, V size: 0.00 GB" in plan.sglang_log_line


def test_falcon_mamba_state_dtype_ignores_the_config() -> None:
    # _mamba1_cache_params builds Mamba2CacheParams without a dtype (mamba2_state_dtype(None)):
    # a mamba_ssm_dtype in the config is never read (Mamba2 hybrids do read it), so the state
    # stays float32. (kvledger's derive refuses that key for falcon_mamba, so the facts'
    # config is edited after deriving.)
    facts = derive_model(str(CONFIGS / "tiiuae--falcon-mamba-7b.mlstm.json"))
    facts = replace(facts, config={**facts.config, "mamba_ssm_dtype": "bfloat16"})
    plan = plan_sglang(facts, PlanRequest(engine="sglang", block_size=1, max_model_len=2048),
                       16 * GIB)
    assert plan.state_bytes is not None
    assert plan.state_bytes.temporal_bytes_per_slot == 64 * 8192 * 16 * 4


def test_falcon_mamba_case_is_scored_although_the_cpu_oracle_could_not_import_it() -> None:
    # The oracle's loader error is a CPU artefact (the case's cpu_import_only): SGLang's source
    # registers the class (models/falcon_mamba.py EntryClass), and the pool was sized.
    case = CASES["cov-falcon-mamba"]
    assert case["cpu_import_only"] == "FalconMambaForCausalLM"
    expected = case["expected"]
    assert "FalconMambaForCausalLM has no SGlang implementation" in \
        expected["model_class_error"]
    assert "FalconMambaForCausalLM" in NATIVE_ARCHITECTURES
    assert expected["attention_arch"] == "SSM"
    assert expected["max_total_num_tokens"] == expected["context_len"] == 2048


def test_afmoe_sliding_layers_are_sized_as_full_layers() -> None:
    # AfmoeForCausalLM is not in configs/model_config.py is_hybrid_swa_model's list, so its
    # sliding layers (three of every four, window 2048) take full rows in the one MHA pool:
    # 56 layers × 2 KV heads × (128 + 128) × 2 B (bf16) = 57,344 B/token;
    # 16 GiB / 57,344 = 299,593 tokens.
    assert backend(("AfmoeForCausalLM",)) == "native"
    plan = _plan("arcee-ai--Trinity-Nano-Preview.neuronx.json", 32768)
    assert plan.swa_tokens is None
    assert plan.cell_bytes_per_token == 57344
    assert plan.kv_cache_tokens == 16 * GIB // 57344 == 299593
    assert CASES["cov-afmoe"]["expected"]["is_hybrid_swa"] is False


def test_paligemma_is_served_by_the_transformers_backend() -> None:
    # SGLang 0.5.23 has no PaliGemma class; its loader resolved the Transformers backend
    # (TransformersMultiModalForCausalLM, oracle case cov-paligemma). The pool is sized from
    # the gemma text_config like any other: head_dim 256 (GemmaConfig's default), 18 layers ×
    # 1 KV head × (256 + 256) × 2 B = 18,432 B/token, in bfloat16 (a float32 gemma config
    # serves in bfloat16: _get_and_verify_dtype); 16 GiB / 18,432 = 932,067 tokens.
    assert backend(("PaliGemmaForConditionalGeneration",)) == "transformers"
    plan = _plan("google--paligemma-3b-pt-224.json", 8192)
    assert plan.kv_cache_dtype == "bfloat16"
    assert plan.cell_bytes_per_token == 18432
    assert plan.kv_cache_tokens == 16 * GIB // 18432 == 932067
    assert any("Transformers backend" in w for w in plan.warnings)


@pytest.mark.parametrize(("name", "arch"), [
    ("unsloth--gemma-3n-E2B-it.json", "Gemma3nForConditionalGeneration"),
    ("unsloth--gemma-3n-E2B-it.TEXT.MODIFIED.json", "Gemma3nForCausalLM"),
])
def test_gemma3n_kv_shared_layers_keep_their_slots_in_one_full_pool(name: str,
                                                                    arch: str) -> None:
    # Gemma-3n E2B: 30 layers, the last num_kv_shared_layers = 10 read an earlier layer's KV
    # (models/gemma3n_causal.py: RadixAttention layer_id = kv_shared_layer_index, no write),
    # and no hybrid-SWA pool (not in is_hybrid_swa_model): sliding and full layers alike take
    # one row each in the MHA pool of all 30 layers (ModelLayerInfo.num_effective_layers).
    # 30 × 2 KV heads × (256 + 256) × 2 B = 61,440 B/token (20 owning layers would be 40,960);
    # 16 GiB / 61,440 = 279,620 tokens.
    facts = derive_model(str(CONFIGS / name))
    assert facts.architectures[0] == arch
    assert sum(not layer.owns_memory for layer in facts.layers) == 10
    plan = _plan(name, 32768)
    assert plan.swa_tokens is None
    assert plan.cell_bytes_per_token == 61440
    assert plan.kv_cache_tokens == 16 * GIB // 61440 == 279620


def test_kv_sharing_under_an_unchecked_architecture_is_still_refused() -> None:
    # Only the architectures whose SGLang model keeps the shared layers' slots are listed
    # (hybrid_swa.SLOTTED_SHARED_KV_ARCHS); the same layers under another class are refused.
    facts = derive_model(str(CONFIGS / "unsloth--gemma-3n-E2B-it.TEXT.MODIFIED.json"))
    facts = replace(facts, architectures=("Gemma3ForCausalLM",))
    with pytest.raises(SglangLayoutError, match="reads another layer's KV"):
        plan_sglang(facts, PlanRequest(engine="sglang", block_size=1, max_model_len=32768),
                    16 * GIB)


def test_plain_mamba_is_a_pure_mamba1_state_pool_like_falcon_mamba() -> None:
    # SGLang configs/model_config.py PURE_MAMBA1_ARCHITECTURES holds MambaForCausalLM beside
    # FalconMamba; configs/mamba.py MambaConfig → _mamba1_cache_params (full rank, TP 1).
    # mamba-130m-hf states torch_dtype float32, which SGLang's auto dtype runs as float16:
    # conv 1536 × (4 − 1) × 2 B = 9,216 per layer; temporal 1536 × 16 × 4 B (float32) = 98,304
    # per layer; × 24 layers = 2,580,480 B per slot. Slots at ratio 0.9:
    # int(16 GiB × 0.9 / 1.9 / 2,580,480 − 1) = int(3153.86 − 1) = 3152. No attention layer:
    # the KV pool is the context length, 2048 tokens. Requests: 3 slots each (no Mamba radix
    # strategy) gives 1050, but at most half the tokens (resolve_max_num_reqs): 1024.
    assert backend(("MambaForCausalLM",)) == "native"
    plan = _plan("state-spaces--mamba-130m-hf.mbridge.json", 2048)
    assert plan.state_bytes is not None and plan.state is not None
    assert plan.state_bytes.conv_bytes_per_slot == 24 * 9216
    assert plan.state_bytes.temporal_bytes_per_slot == 24 * 98304
    assert plan.state.max_mamba_cache_size == 3152
    assert plan.kv_cache_tokens == 2048
    assert plan.max_running_requests == min(3152 // 3, 2048 // 2) == 1024
    assert CASES["cov-mamba"]["expected"]["mamba"]["max_mamba_cache_size"] == 3152

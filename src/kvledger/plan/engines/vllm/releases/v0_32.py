"""vLLM 0.32.0 (October 2026), as kvledger reproduces it.

Every figure here was read in vLLM 0.32.0's source (the file named beside it) and is
replayed by the oracle cases in ``tests/oracles/vllm-0.32/vllm-0.32-*.jsonl`` and
``../shared/oracles/vllm-0.32/``.
"""

from __future__ import annotations

from types import MappingProxyType

from kvledger.plan.engines.vllm.releases.model_type_verdicts import build
from kvledger.plan.engines.vllm.releases.profile import VllmRelease

_NOT_SERVED, _NO_CACHE_CONFIG = build("vLLM 0.32", "transformers 5.19")

RELEASE = VllmRelease(
    engine="vllm",
    product="vLLM",
    version="0.32.0",
    transformers="transformers 5.19",
    # vllm/config/cache.py: CacheConfig.gpu_memory_utilization = Field(default=0.92).
    default_gpu_memory_utilization=0.92,
    # vllm/engine/arg_utils.py EngineArgs: max_num_seqs / max_num_batched_tokens for the
    # offline LLM class (the serve tiers are get_batch_defaults').
    default_max_num_seqs=256,
    default_max_num_batched_tokens=8192,
    flag_table="vllm-0.32.0.json",
    not_served=MappingProxyType(dict(_NOT_SERVED)),
    no_cache_config=MappingProxyType(dict(_NO_CACHE_CONFIG)),
    # distributed/eplb/eplb_state.py EplbState.add_model: max_slots_per_logical_expert =
    # MAX_EXPERT_REDUNDANCY + 1 (1,024) for logical_to_physical_map (eplb.py).
    sizes_eplb=True,
    eplb_fixed_slots=1024,
    # model_executor/models/registry.py, each class's bases (MixtureOfExperts directly or
    # through a mixin such as DeepseekV2MixtureOfExperts) and the wrappers whose
    # init_vllm_registered_model builds one (kimi_k25.py, kimi_vl.py, gemma4_mm.py).
    eplb_architectures=frozenset({
        "AXK1ForCausalLM", "AfmoeForCausalLM", "DeepSeekMTPModel", "DeepseekForCausalLM",
        "DeepseekV2ForCausalLM", "DeepseekV3BidirectionalModel", "DeepseekV3ForCausalLM",
        "Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM", "EagleDeepSeekMTPModel",
        "Ernie4_5_MoeForCausalLM", "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration",
        "Gemma4UnifiedForConditionalGeneration", "Glm4MoeForCausalLM",
        "Glm4MoeLiteForCausalLM", "Glm4MoeLiteMTPModel", "Glm4MoeMTPModel",
        "GlmMoeDsaForCausalLM", "InternS1ProForConditionalGeneration",
        "InternS2MobiusForConditionalGeneration", "InternS2MobiusMTP",
        "InternS2PreviewForConditionalGeneration", "K2HorizonForCausalLM",
        "KimiK25ForConditionalGeneration", "KimiVLForConditionalGeneration",
        "Lfm2MoeForCausalLM", "Llama4ForCausalLM", "Llama4ForConditionalGeneration",
        "MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM", "MistralLarge3ForCausalLM",
        "MixtralForCausalLM", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
        "PanguProMoEV2ForCausalLM", "PanguUltraMoEForCausalLM", "Param2MoEForCausalLM",
        "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM", "Qwen3NextMTP",
        "Qwen3VLMoeForConditionalGeneration", "Qwen3_5MoeForCausalLM",
        "Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeMTP", "SarvamMLAForCausalLM",
        "Step3p5ForCausalLM",
    }),
    # config/parallel.py EPLBCommunicatorBackend.
    eplb_communicators=frozenset({"torch_nccl", "torch_gloo", "torch_xccl", "nixl", "pynccl"}),
    # transformers_utils/configs/step3p5.py Step3p5Config: use_moe_router_bias = True.
    class_fills_construction_keys=frozenset({"step3p5"}),
)

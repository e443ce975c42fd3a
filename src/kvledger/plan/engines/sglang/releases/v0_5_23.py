"""SGLang 0.5.23, as kvledger reproduces it (its rules: the modules of ``plan/engines/sglang/``,
each citing SGLang 0.5.23's source; its cases: ``tests/oracles/sglang-0.5.23/``)."""

from __future__ import annotations

from kvledger.plan.engines.sglang.releases.profile import SglangRelease

RELEASE = SglangRelease(
    engine="sglang", product="SGLang", version="0.5.23", flag_table="sglang-0.5.23.json",
    # arg_groups/model_override_base.py get_default_attn_backend: MHA on SM100 → trtllm_mha
    # ("trtllm_mha requires equal K/V row widths; fa4 carries v_head_dim through"), MLA on
    # SM100 → flashinfer; on HIP MHA → aiter, MLA → aiter when get_num_kv_heads(tp) is 16 or
    # 128 ("current aiter only support head number 16 or 128"), else triton.
    sm100_mha_backend="trtllm_mha", sm100_asymmetric_kv_backend="fa4",
    sm100_mla_backend="flashinfer",
    rocm_mha_backend="aiter", rocm_mla_aiter_kv_heads=(16, 128), rocm_mla_other_backend="triton",
    # arg_groups/model_overrides/deepseek_v2.py _deepseek_family_overrides (its @_register_for
    # list): "Use trtllm_mla as attention backend on sm100" for a non-DSA member.
    sm100_deepseek_backend="trtllm_mla",
    deepseek_family=frozenset({
        "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "KimiK25ForConditionalGeneration",
        "MistralLarge3ForCausalLM", "PixtralForConditionalGeneration", "GlmMoeDsaForCausalLM",
        "Glm5NextForConditionalGeneration", "HYV4ForCausalLM", "HYV4ForCausalLMNextN",
        "LongcatFlashForCausalLM", "LongcatFlashForCausalLMNextN", "Dots3NoteForCausalLM"}),
    # arg_groups/overrides.py _mla_backend_page_constraints: trtllm_mla keeps 32 / 64 else 64
    # ("TensorRT-LLM MLA only supports page_size of 32 or 64"); trtllm_mha keeps 16 / 32 / 64
    # / 128 else 64; _fa4_page_constraint: fa4 on SM100 (non-MLA) sets 128 whatever was given.
    # A backend not listed (flashinfer, aiter, triton) keeps the page; unset, _page_size_default
    # makes it 1.
    backend_pages=(("trtllm_mla", (32, 64), 64), ("trtllm_mha", (16, 32, 64, 128), 64),
                   ("fa4", (), 128)),
    aiter_mem_factor=0.85, aiter_factor_above_context=8192,
    # arg_groups/model_overrides/*.py that set attention_backend / page_size / kv_cache_dtype
    # or branch on is_sm100 / is_blackwell / is_hip for attention (not read for these
    # platforms): their @_register_for architectures.
    platform_override_archs=frozenset({
        "BailingMoeV3ForCausalLM", "BailingMoeV3VLForConditionalGeneration", "BeamForCausalLM",
        "DeepseekV4ForCausalLM", "EmbeddingGemma2Model", "Exaone4ForCausalLM",
        "ExaoneMoEForCausalLM", "ExaoneMoeForCausalLM", "FalconH1ForCausalLM",
        "JetNemotronForCausalLM", "JetVLMForConditionalGeneration",
        "Gemma4ForConditionalGeneration", "Gemma4ForCausalLM",
        "Gemma4UnifiedForConditionalGeneration", "DiffusionGemmaForBlockDiffusion",
        "GptOssForCausalLM", "GraniteMoeHybridForCausalLM", "InklingForConditionalGeneration",
        "InklingForConditionalGenerationMTP", "IQuestQ1ForCausalLM", "IQuestQ1MTP",
        "KimiK3ForConditionalGeneration", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM",
        "Llama4ForConditionalGeneration", "Llama4ForCausalLM", "MiMoV2ForCausalLM",
        "MiMoV2FlashForCausalLM", "MiniCPMForCausalLM", "MiniCPMSALAForCausalLM",
        "MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration",
        "MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration",
        "MossVLForConditionalGeneration", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
        "NemotronH_Omni_Reasoning_V3", "Olmo2ForCausalLM", "Qwen3NextForCausalLM",
        "Qwen3_5MoeForConditionalGeneration", "InternS2PreviewForConditionalGeneration",
        "InternS2MobiusForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
        "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
        "Qwen4ExpForConditionalGeneration", "WhisperForConditionalGeneration"}),
)

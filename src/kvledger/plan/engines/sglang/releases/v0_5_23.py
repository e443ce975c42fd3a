"""SGLang 0.5.23, as kvledger reproduces it (its rules: the modules of ``plan/engines/sglang/``,
each citing SGLang 0.5.23's source; its cases: ``tests/oracles/sglang-0.5.23/``)."""

from __future__ import annotations

from kvledger.plan.engines.sglang.releases.profile import (
    ArchOverride,
    DsaBackendRules,
    SglangRelease,
)

_DSA_COMMON = ("flashmla_sparse", "flashmla_sparse_q8", "flashmla_kv", "flashmla_auto",
               "flashinfer_sparse_mla")
_DSA_TAIL = ("fa3", "tilelang", "triton", "aiter", "trtllm", "intel_xpu")

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
    # or branch on is_sm100 / is_blackwell / is_hip for attention and that kvledger has not
    # read for these platforms (refused by name there): their @_register_for architectures.
    platform_override_archs=frozenset({
        "BailingMoeV3ForCausalLM", "BailingMoeV3VLForConditionalGeneration", "BeamForCausalLM",
        "DeepseekV4ForCausalLM", "EmbeddingGemma2Model", "Exaone4ForCausalLM",
        "ExaoneMoEForCausalLM", "ExaoneMoeForCausalLM", "DiffusionGemmaForBlockDiffusion",
        "GraniteMoeHybridForCausalLM", "InklingForConditionalGeneration",
        "InklingForConditionalGenerationMTP", "IQuestQ1ForCausalLM", "IQuestQ1MTP",
        "KimiK3ForConditionalGeneration", "MiniCPMForCausalLM", "MiniCPMSALAForCausalLM",
        "MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration",
        "MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration",
        "MossVLForConditionalGeneration", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
        "NemotronH_Omni_Reasoning_V3", "Olmo2ForCausalLM", "Qwen4ExpForConditionalGeneration",
        "WhisperForConditionalGeneration"}),
    # DeepSeek sparse attention's kernel pair (dsa_backends.py):
    dsa_backends=DsaBackendRules(
        # arg_groups/fields/exec_.py dsa_prefill_backend / dsa_decode_backend choices (only
        # prefill takes triton_sparse_mla).
        prefill_choices=(*_DSA_COMMON, "triton_sparse_mla", *_DSA_TAIL),
        decode_choices=(*_DSA_COMMON, *_DSA_TAIL),
        # arg_groups/overrides.py _dsa_split_backend_resolution: "if get_platform().is_hip"
        # both triton; fp8_e4m3 "trtllm if major >= 10 else flashmla_kv"; else prefill
        # flashmla_sparse, decode "trtllm if major >= 10 else fa3"; GLM-5 (GlmMoeDsaForCausalLM)
        # fp8 on major 12 off HIP flashinfer_sparse_mla; learnable_sink flashmla_sparse.
        rocm_default="triton", fp8_default_blackwell="trtllm", fp8_default_hopper="flashmla_kv",
        bf16_prefill_default="flashmla_sparse", bf16_decode_default_blackwell="trtllm",
        bf16_decode_default_hopper="fa3", glm_sm12_fp8_default="flashinfer_sparse_mla",
        glm_sm12_arch="GlmMoeDsaForCausalLM", sink_backend="flashmla_sparse",
        # mem_cache/kv_cache_configurator.py calculate_mla_kv_cache_dim: "TRTLLM uses the raw
        # MLA KV layout" (either backend); "On HIP, TileLang and AITER DSA kernels consume
        # the raw MLA KV layout" (either of tilelang / triton / aiter); "CUDA TileLang uses
        # raw FP8 rows" (both tilelang); else kv_lora_rank + kv_lora_rank // 128 × 4 + rope × 2.
        raw_either="trtllm", raw_rocm=("tilelang", "triton", "aiter"), raw_both="tilelang",
        # _check_dsa_backend_constraints: "The triton DSA backend is only supported on
        # ROCm/HIP".
        rocm_only=("triton",),
        # Read: ROCm's three (the HIP arm above and forward_mla_rocm.py's tilelang / triton
        # path); on CUDA every CUDA kernel (no pool effect beyond the row). aiter off ROCm
        # and intel_xpu (an XPU kernel) are not read.
        read_rocm=("tilelang", "triton", "aiter"),
        read_cuda=(*_DSA_COMMON, "triton_sparse_mla", "fa3", "tilelang", "trtllm"),
    ),
    # speculative_hook.py _handle_eagle_family: "speculative_eagle_topk > 1 with page_size > 1
    # is only supported on" these backends.
    page_tree_spec_backends=("flashinfer", "fa3", "triton"),
    # The model overrides read (backends.py), each when --attention-backend is unset: the
    # backend it declares on SM100 / ROCm (None: none, so get_default_attn_backend's stands).
    arch_overrides=(
        # gpt_oss.py _gpt_oss_overrides (is_attention_backend_not_set): is_sm100 →
        # trtllm_mha, is_hip → aiter. Its other declarations (dtype bfloat16 for MXFP4,
        # moe_runner_backend) move no KV byte.
        ArchOverride(source="model_overrides/gpt_oss.py _gpt_oss_overrides",
                     archs=frozenset({"GptOssForCausalLM"}), sm100="trtllm_mha", rocm="aiter"),
        # llama4.py _llama4_overrides (attention_backend is None): is_sm100 → trtllm_mha,
        # is_hip → aiter ("Use aiter as attention backend on hip for Llama4 model").
        ArchOverride(source="model_overrides/llama4.py _llama4_overrides",
                     archs=frozenset({"Llama4ForConditionalGeneration", "Llama4ForCausalLM"}),
                     sm100="trtllm_mha", rocm="aiter"),
        # qwen3_vl.py _qwen3vl_overrides: on HIP page_size 16 only with
        # SGLANG_USE_AITER_UNIFIED_ATTN (off by default; not read);
        # _qwen3vl_hopper_serving_overrides: is_sm90_supported only (capability major 9);
        # qwen3_moe.py _qwen3_moe_family_overrides (the MoE one too): quantization /
        # moe_runner_backend on SM100 only. None sets a backend or page here.
        ArchOverride(source="model_overrides/qwen3_vl.py _qwen3vl_overrides, "
                     "_qwen3vl_hopper_serving_overrides; qwen3_moe.py "
                     "_qwen3_moe_family_overrides",
                     archs=frozenset({"Qwen3VLForConditionalGeneration",
                                      "Qwen3VLMoeForConditionalGeneration"}),
                     note="no backend or page of its own on SM100 / ROCm"),
        # qwen3_5.py _qwen3_5_hybrid_overrides (is_sm100, attention_backend None only):
        # trtllm_mha with page_size 64 when get_default_attn_backend gives trtllm_mha and the
        # Mamba radix strategy is not no_buffer (radix on, no speculation); else triton with
        # page_size 1. Declared page sizes replace a given one. Nothing on HIP.
        ArchOverride(source="model_overrides/qwen3_5.py _qwen3_5_hybrid_overrides",
                     archs=frozenset({"Qwen3NextForCausalLM",
                                      "Qwen3_5MoeForConditionalGeneration",
                                      "InternS2PreviewForConditionalGeneration",
                                      "InternS2MobiusForConditionalGeneration",
                                      "Qwen3_5ForConditionalGeneration"}),
                     sm100="trtllm_mha", sm100_else="triton",
                     pages=(("trtllm_mha", 64), ("triton", 1))),
        # gemma4.py _gemma4_overrides (is_attention_backend_not_set): trtllm_mha on SM100,
        # triton everywhere else (ROCm included: no aiter, so no × 0.85).
        ArchOverride(source="model_overrides/gemma4.py _gemma4_overrides",
                     archs=frozenset({"Gemma4ForConditionalGeneration", "Gemma4ForCausalLM",
                                      "Gemma4UnifiedForConditionalGeneration"}),
                     sm100="trtllm_mha", rocm="triton"),
        # lfm2.py _lfm2_overrides (is_sm100, attention_backend None): flashinfer.
        ArchOverride(source="model_overrides/lfm2.py _lfm2_overrides",
                     archs=frozenset({"Lfm2ForCausalLM", "Lfm2MoeForCausalLM"}),
                     sm100="flashinfer"),
        # mimo_v2.py _mimo_v2_overrides (is_sm100, is_attention_backend_not_set): fa4, whose
        # page is 128 (overrides.py _fa4_page_constraint).
        ArchOverride(source="model_overrides/mimo_v2.py _mimo_v2_overrides",
                     archs=frozenset({"MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM"}),
                     sm100="fa4"),
        # falcon_h1.py _falcon_h1_jet_overrides (is_sm100, attention_backend None): triton.
        ArchOverride(source="model_overrides/falcon_h1.py _falcon_h1_jet_overrides",
                     archs=frozenset({"FalconH1ForCausalLM", "JetNemotronForCausalLM",
                                      "JetVLMForConditionalGeneration"}),
                     sm100="triton"),
    ),
)

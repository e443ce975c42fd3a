"""vLLM 0.33.0 (November 2026), as kvledger reproduces it: 0.32.0 and what changed.

Each difference was read in both releases' sources (docs/vllm-0.33-differences.md lists
them, file and function in each) and is replayed by ``tests/oracles/vllm-0.33/``.
Unchanged, read in 0.33's source: ``gpu_memory_utilization`` 0.92, block size 16, prefix
caching on, the ``max_num_seqs`` / ``max_num_batched_tokens`` defaults, the model types it
does not serve (no architecture of ``_PREVIOUSLY_SUPPORTED_MODELS`` returned), except the
types it adds (``model_type_verdicts.SERVED_LATER``: Beam, Kolibri-1, MiDashengLM).
"""

from __future__ import annotations

from types import MappingProxyType

from kvledger.plan.engines.vllm.releases import v0_32
from kvledger.plan.engines.vllm.releases.model_type_verdicts import SERVED_LATER, build
from kvledger.records import replace

# vLLM 0.33.0's requirements pin transformers 5.20 (the oracle venv: transformers 5.20.2).
_NOT_SERVED, _NO_CACHE_CONFIG = build("vLLM 0.33", "transformers 5.20")

# 0.32.0's profile with what 0.33.0 changed: nothing else differs (module docstring).
RELEASE = replace(
    v0_32.RELEASE,
    version="0.33.0",
    transformers="transformers 5.20",
    # 0.33's own parser (scripts/serve_flag_tables.py): its switches are --enable-x /
    # --disable-x pairs (utils/argparse_utils.py EnableDisableAction), --no-enable-x kept.
    flag_table="vllm-0.33.0.json",
    # beam and kolibri1 are served from 0.33 (registry.py: BeamForCausalLM in
    # _TEXT_GENERATION_MODELS, Kolibri1ForCausalLM in _TRANSFORMERS_SUPPORTED_MODELS; oracle:
    # tests/oracles/vllm-0.33/vllm-0.33-new-behaviour.jsonl).
    not_served=MappingProxyType({k: why for k, why in _NOT_SERVED.items()
                                 if k not in SERVED_LATER}),
    no_cache_config=MappingProxyType(dict(_NO_CACHE_CONFIG)),
    # platforms/interface.py Platform._align_hybrid_block_size: in align mode,
    # align = lcm(align, get_mamba_prefill_checkpoint_alignment(vllm_config) or 1), and
    # QwenGatedDeltaNetAttention sets FLASHINFER_GDN_CHECKPOINT_ALIGNMENT (64) with the
    # FlashInfer prefill (model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py).
    gdn_checkpoint_alignment=64,
    # QwenGatedDeltaNetAttention.get_kv_cache_spec: num_prefill_checkpoint_blocks=1 whenever
    # every Mamba layer exports checkpoints (align mode), so 3 pages a request, not 2.
    gdn_prefill_checkpoint_blocks=1,
    rejects_mismatched_float_kv=True,
    removed_speculative_methods=frozenset({"medusa", "mlp_speculator"}),
    fp8_auto_kv_on_sm100=frozenset({"Glm5NextForCausalLM", "Glm5NextForConditionalGeneration"}),
    async_off_only_on_v1_runner=True,
    # v1/worker/gpu_worker.py Worker.init_device (cuBLAS handles before the snapshot) and
    # attention/mla_attention.py + backends/mla/triton_mla.py reserve_workspace
    # (releases/profile.py; engines/vllm/reserves.py).
    cublas_handles_before_snapshot=True,
    triton_mla_workspace_in_profile=True,
    # The two architectures 0.33's registry adds for the model types kvledger derives; every
    # other row answered as 0.32's (tests/oracles/vllm-0.33/vllm-0.33-pp-support.json, written
    # by run_pp_oracle.py --vllm 0.33 table; ModelConfig.verify_with_parallel_config and
    # interfaces.supports_pp are unchanged).
    pp_support_added=MappingProxyType({
        "BeamForCausalLM": (True, "vllm/models/beam/nvidia/model.py BeamForCausalLM"),
        "Kolibri1ForCausalLM": (
            True, "vllm/model_executor/models/transformers/ TransformersMoEForCausalLM"),
        # 0.32's answer is None only because the 0.32 oracle venv lacks torchaudio, which
        # midashenglm.py imports; the 0.33 venv has it, and the registry answers True.
        "MiDashengLMModel": (
            True, "vllm/model_executor/models/midashenglm.py MiDashengLMModel"),
    }),
    # _CONFIG_REGISTRY maps step3p5 to transformers' Step3p7TextConfig (no
    # use_moe_router_bias), not vLLM's own class any more.
    class_fills_construction_keys=frozenset(),
    # config/vllm.py VllmConfig._limit_max_model_len_to_draft (called in __post_init__): a
    # draft model shorter than the target lowers max_model_len under Model Runner V2.
    limits_max_model_len_to_draft=True,
    # platforms/cuda.py _get_backend_priorities: FLASH_ATTN_MLA_SPARSE_FA4 (v1/attention/
    # backends/mla/flashattn_mla_sparse.py, new) first for a float cache at <= 16 heads a rank.
    fa4_sparse_mla_on_sm10x=True,
    # model_arch_config_convertor.py: quant_algo MIXED_PRECISION → "modelopt_mixed".
    modelopt_mixed_precision=True,
    # distributed/kv_transfer/kv_connector/v1/ (nixl, mooncake, lmcache, offloading, multi):
    # engines/vllm/connectors.py, tests/plan/engines/vllm/test_kv_connectors.py.
    sizes_kv_connectors=True,
    # Decode context parallelism read in 0.33's source (engines/vllm/dcp.py; 0.34's is the
    # same): config/parallel.py ParallelConfig._validate_parallel_config, config/model.py
    # ModelConfig.verify_with_parallel_config, v1/kv_cache_interface.py
    # FullAttentionSpec.max_memory_usage_bytes, v1/core/kv_cache_utils.py
    # resolve_dcp_kv_block_size. Earlier releases' DCP code is not read: refused by name.
    decode_context_parallel=True,
    # model_executor/models/registry.py: AliceAIForCausalLM (alice_ai.py, a MixtureOfExperts).
    eplb_architectures=v0_32.RELEASE.eplb_architectures | {"AliceAIForCausalLM"},
)

# Where in vLLM 0.33.0's source each value above that differs from 0.32.0's was read (the
# comments beside the values, as data: ``kvledger diff`` names them; plan/diff.py).
CITES: dict[str, str] = {
    "eplb_architectures": "model_executor/models/registry.py and alice_ai.py "
                          "(AliceAIForCausalLM implements MixtureOfExperts)",
    "not_served": "model_executor/models/registry.py: BeamForCausalLM, Kolibri1ForCausalLM "
                  "and MiDashengLM served",
    "gdn_checkpoint_alignment": "platforms/interface.py Platform._align_hybrid_block_size "
                                "(lcm with get_mamba_prefill_checkpoint_alignment: "
                                "FLASHINFER_GDN_CHECKPOINT_ALIGNMENT = 64, "
                                "model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py)",
    "gdn_prefill_checkpoint_blocks": "model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py "
                                     "QwenGatedDeltaNetAttention.get_kv_cache_spec "
                                     "(num_prefill_checkpoint_blocks=1 in align mode)",
    "rejects_mismatched_float_kv": "config/vllm.py VllmConfig._reject_mismatched_float_kv_cache",
    "removed_speculative_methods": "config/speculative.py SpeculativeMethod (medusa, "
                                   "mlp_speculator removed)",
    "fp8_auto_kv_on_sm100": "model_executor/models/config.py "
                            "Glm5NextModelConfig.verify_and_update_config",
    "async_off_only_on_v1_runner": "config/vllm.py VllmConfig.__post_init__ "
                                   "(v1_async_sched_incompat)",
    "cublas_handles_before_snapshot": "v1/worker/gpu_worker.py Worker.init_device (cuBLAS "
                                      "handles created before the MemorySnapshot)",
    "triton_mla_workspace_in_profile": "model_executor/layers/attention/mla_attention.py "
                                       "(impl.reserve_workspace() in the profile run; "
                                       "backends/mla/triton_mla.py)",
    "pp_support_added": "model_executor/models/registry.py (run_pp_oracle.py --vllm 0.33 "
                        "table: BeamForCausalLM, Kolibri1ForCausalLM, MiDashengLMModel)",
    "class_fills_construction_keys": "transformers_utils/config.py _CONFIG_REGISTRY (step3p5 "
                                     "→ transformers' Step3p7TextConfig, no "
                                     "use_moe_router_bias)",
    "limits_max_model_len_to_draft": "config/vllm.py VllmConfig._limit_max_model_len_to_draft",
    "fa4_sparse_mla_on_sm10x": "platforms/cuda.py _get_backend_priorities "
                               "(FLASH_ATTN_MLA_SPARSE_FA4 first on SM10x)",
    "sizes_kv_connectors": "distributed/kv_transfer/kv_connector/v1/ (nixl, mooncake, "
                           "lmcache, offloading, multi; read: engines/vllm/connectors.py)",
    "decode_context_parallel": "config/parallel.py ParallelConfig._validate_parallel_config, "
                               "config/model.py ModelConfig.verify_with_parallel_config, "
                               "v1/kv_cache_interface.py FullAttentionSpec."
                               "max_memory_usage_bytes, v1/core/kv_cache_utils.py "
                               "resolve_dcp_kv_block_size (read for kvledger's -dcp; not read "
                               "in earlier releases)",
    "modelopt_mixed_precision": "transformers_utils/model_arch_config_convertor.py "
                                "_normalize_quantization_config (ModelOpt MIXED_PRECISION is "
                                "modelopt_mixed)",
}

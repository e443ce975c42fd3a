"""vLLM 0.34.0 (November 2026), as kvledger reproduces it: 0.33.0 and what changed.

Each difference was found by diffing the two wheels' ``.py`` files (``pip download --no-deps
vllm==0.33.0 vllm==0.34.0``), read in 0.34's source (file and function beside each field, and
docs/vllm-0.34-differences.md), and is replayed by ``tests/oracles/vllm-0.34/``.
Unchanged, read in 0.34's source: ``CacheConfig.DEFAULT_GPU_MEMORY_UTILIZATION`` 0.92 (used
when the extensible KV cache is off), prefix caching on, the ``max_num_seqs`` /
``max_num_batched_tokens`` defaults, each backend's kernel block sizes
(``get_supported_kernel_block_sizes``), ``_preferred_block_size_for_backends``.

Not yet modelled (kvledger plans these as 0.33 did):

- ``MambaSpec.state_alignment`` (model_executor/layers/mamba/mamba_utils.py
  ``mamba_state_alignment``): 16 bytes only with the FlashInfer ReplaySSM Mamba backend
  (``VllmConfig.use_flashinfer_replayssm``, off by default); 1 otherwise, as in 0.33.
- MLA models with sliding-window MLA layers (``SlidingWindowMLASpec``) taking the
  full-allocation fallback; DeepSeek-V4 on SM12x; the SM120 sparse-MLA rows; FLASH_ATTN's
  head size 512 with fp8 on SM90; Mistral Large 4's fp8 cache (``MistralLarge4ForCausalLM``,
  a new architecture kvledger has no model type for).
- The architectures 0.34 adds (Lfm3, Zaya, Ricursive, Canary, KimiK31, …): no model type.
  ``Keye*`` left the registry (``_PREVIOUSLY_SUPPORTED_MODELS``: "0.33.0"); kvledger derives
  no Keye model type, so nothing changes.
- ``AriaForConditionalGeneration`` also moved to the Transformers backend; kvledger's
  construction table (new_type_verdicts.py) still cites 0.33's aria.py for its PP verdict.
- The extensible KV cache's multimodal IPC reserve. (Its connector rule is modelled:
  extensible_budget.py ``applies``.)
"""

from __future__ import annotations

from types import MappingProxyType

from kvledger.plan.engines.vllm.releases import v0_33
from kvledger.plan.engines.vllm.releases.model_type_verdicts import SERVED_LATER, build
from kvledger.records import replace

# vLLM 0.34.0's requirements pin transformers 5.20 (as 0.33: requirements/common.txt).
_NOT_SERVED, _NO_CACHE_CONFIG = build("vLLM 0.34", "transformers 5.20")

_TRANSFORMERS = "vllm/model_executor/models/transformers/ (Transformers backend)"

RELEASE = replace(
    v0_33.RELEASE,
    version="0.34.0",
    # 0.34's own parser (scripts/serve_flag_tables.py; cli/serve/vllm-0.34.0.json).
    flag_table="vllm-0.34.0.json",
    not_served=MappingProxyType({k: why for k, why in _NOT_SERVED.items()
                                 if k not in SERVED_LATER}),
    no_cache_config=MappingProxyType(dict(_NO_CACHE_CONFIG)),
    # config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE: ClassVar[int] = 64 (0.33: 16), applied
    # by platforms/interface.py Platform.update_block_size_for_backend (phase 1,
    # _preferred_block_size_for_backends(backends, CacheConfig.DEFAULT_BLOCK_SIZE)) and by
    # _align_hybrid_block_size (kernel_block_alignment_size = max(the first backend's
    # smallest kernel block, cache_config.block_size)). Every backend kvledger models takes
    # 64 except CUTLASS_MLA ([128]), so --block-size auto gives 64 for FLASH_ATTN /
    # FLASHINFER ([16, 32, 64]) / FLASH_ATTN_MLA / FLASHMLA / FLASHINFER_MLA / TRITON_MLA and
    # the sparse MLA backends (oracle: tests/oracles/vllm-0.34/block-auto-cases.jsonl).
    default_block_size=64,
    # config/vllm.py VllmConfig.__post_init__: async scheduling on unless a pooling model, an
    # executor without it or ROCm DeepEP-HT DBO; the V1 runner's speculative-method and PP
    # rules are gone with v1/worker/gpu_model_runner.py; max_concurrent_batches = pp + 1.
    async_scheduling_always=True,
    # config/vllm.py VllmConfig._resolve_extensible_kv_cache (on CUDA/ROCm unless
    # kv_cache_memory_bytes, num_gpu_blocks_override, elastic EP or some KV connectors) and
    # config/cache.py CacheConfig.resolved_gpu_memory_utilization (None → 1.0 with it).
    extensible_kv_cache=True,
    # config/speculative.py SpeculativeMethod: "custom_class" is gone;
    # SpeculativeConfig._validate_method raises "Unknown speculative method".
    removed_speculative_methods=v0_33.RELEASE.removed_speculative_methods | {"custom_class"},
    # model_executor/models/registry.py _TRANSFORMERS_SUPPORTED_MODELS: Gemma, StableLm and
    # Olmoe moved from vLLM's own models to the Transformers backend (same KV layout: full
    # attention through vLLM's Attention); transformers/base.py Base is SupportsPP.
    pp_support_added=MappingProxyType({
        **v0_33.RELEASE.pp_support_added,
        "GemmaForCausalLM": (True, f"{_TRANSFORMERS} TransformersForCausalLM"),
        "StableLmForCausalLM": (True, f"{_TRANSFORMERS} TransformersForCausalLM"),
        "OlmoeForCausalLM": (True, f"{_TRANSFORMERS} TransformersMoEForCausalLM"),
    }),
    # distributed/kv_transfer/kv_connector/v1/ diffed against 0.33's for what kvledger sizes
    # (connectors.py), unchanged: NIXL's initialize_host_xfer_buffer (nixl/base_worker.py)
    # and _NIXL_SUPPORTED_DEVICE (nixl/utils.py), get_required_kvcache_layout (nixl/
    # connector.py, mooncake/mooncake_connector.py, multi_connector.py), Mooncake's
    # register_kv_caches (batch_register_memory, no buffer), OffloadingConnector's chunk
    # (offloading/config.py build_offloading_config, kv_offload/cpu/spec.py
    # CPUOffloadingSpec.__init__: round_up(kv_bytes_per_chunk, BLOCK_SIZE_ALIGNMENT),
    # int(cpu_bytes_to_use) // it; shared_offload_region.py only re-cuts the region's files),
    # _post_init_kv_transfer_config's cpu_bytes_to_use = kv_offloading_size × 2**30, the
    # SupportsHMA set and factory.py supports_hma_config, KVTransferConfig's fields; the
    # LMCache adapter (lmcache_integration/vllm_v1_adapter.py) changed no sizing. What moved
    # is in the two fields below and in the extensible KV cache's connector rule
    # (extensible_budget.py applies, connectors.py extensible_cache_off).
    sizes_kv_connectors=True,
    # factory.py get_connector_class: NixlConnector's transfer_mode ("push":
    # NixlPushConnector); nixl/base_worker.py ucx_backend_params.
    nixl_transfer_mode=True,
    # factory.py: UMBPStoreConnector registered (v1/umbp/).
    kv_connectors_added=frozenset({"UMBPStoreConnector"}),
    # model_executor/models/qwen3_dflash.py (DFlashQwen3ForCausalLM) and qwen3_dspark.py
    # (Qwen3DSparkForCausalLM), v1/worker/gpu/spec_decode/dflash/ and dspark/ config.py,
    # v1/worker/gpu/attn_utils.py get_kv_cache_spec: the draft's decoder layers join the
    # target's KV cache groups (parallel_draft.py). 0.33's were not read for this.
    plans_parallel_drafts=True,
    # v1/attention/backends/rocm_attn.py RocmAttentionBackend.get_preferred_block_size (new
    # in 0.34): 16, the native paged-attention kernel's block, whatever the default.
    rocm_attn_preferred_block=16,
    # distributed/eplb/eplb_state.py EplbState.add_model: max_slots_per_logical_expert =
    # num_redundant_experts + 1 unless elastic EP (0.33: always 1,024).
    eplb_fixed_slots=None,
    # model_executor/models/registry.py: UnlimitedOCR2TextForCausalLM, a MixtureOfExperts.
    eplb_architectures=v0_33.RELEASE.eplb_architectures | {"UnlimitedOCR2TextForCausalLM"},
    # config/parallel.py EPLBCommunicatorBackend: symm_mem added.
    eplb_communicators=v0_33.RELEASE.eplb_communicators | {"symm_mem"},
)

# Where in vLLM 0.34.0's source each value above that differs from 0.33.0's was read (the
# comments beside the values, as data: ``kvledger diff`` names them; plan/diff.py).
CITES: dict[str, str] = {
    "not_served": "model_executor/models/registry.py (Keye removed; architectures moved to "
                  "the Transformers backend)",
    "default_block_size": "config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE = 64, applied in "
                          "platforms/interface.py update_block_size_for_backend",
    "async_scheduling_always": "config/vllm.py VllmConfig.__post_init__ (async scheduling on; "
                               "the V1 runner's exceptions gone; max_concurrent_batches pp + 1)",
    "extensible_kv_cache": "config/vllm.py VllmConfig._resolve_extensible_kv_cache; "
                           "config/cache.py CacheConfig.resolved_gpu_memory_utilization",
    "removed_speculative_methods": "config/speculative.py SpeculativeMethod (custom_class "
                                   "removed)",
    "pp_support_added": "model_executor/models/registry.py _TRANSFORMERS_SUPPORTED_MODELS "
                        "(Gemma, StableLm, Olmoe); transformers/base.py Base is SupportsPP",
    "nixl_transfer_mode": "distributed/kv_transfer/kv_connector/factory.py "
                          "KVConnectorFactory.get_connector_class (NixlConnector's "
                          "transfer_mode); nixl/base_worker.py (ucx_backend_params)",
    "kv_connectors_added": "distributed/kv_transfer/kv_connector/factory.py "
                           "(UMBPStoreConnector registered)",
    "rocm_attn_preferred_block": "v1/attention/backends/rocm_attn.py "
                                 "RocmAttentionBackend.get_preferred_block_size (16: the "
                                 "native C++ paged-attention kernel's block)",
    "eplb_architectures": "model_executor/models/registry.py (UnlimitedOCR2TextForCausalLM, "
                          "a MixtureOfExperts)",
    "eplb_communicators": "config/parallel.py EPLBCommunicatorBackend (symm_mem)",
    "eplb_fixed_slots": "distributed/eplb/eplb_state.py EplbState.add_model "
                        "(max_slots_per_logical_expert: num_redundant_experts + 1 without "
                        "elastic EP)",
    "plans_parallel_drafts": "model_executor/models/qwen3_dflash.py, qwen3_dspark.py; "
                             "v1/worker/gpu/spec_decode/dflash/config.py, dspark/config.py; "
                             "v1/worker/gpu/attn_utils.py get_kv_cache_spec (read: "
                             "engines/vllm/parallel_draft.py)",
}

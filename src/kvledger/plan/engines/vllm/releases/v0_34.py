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
- The extensible KV cache's refusals of its own (``--enable-extensible-kv-cache`` with a KV
  connector that cannot use it) and its multimodal IPC reserve.
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
    # distributed/kv_transfer/kv_connector/v1/: multi_connector.py, offloading_connector.py,
    # mooncake/, lmcache_integration/ and factory.py all differ from 0.33's, and
    # _resolve_extensible_kv_cache turns the extensible cache off for some connectors: not
    # read, so --kv-transfer-config is refused under 0.34 (connectors.py check_release).
    sizes_kv_connectors=False,
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
    "sizes_kv_connectors": "distributed/kv_transfer/kv_connector/v1/ (changed, not read: "
                           "--kv-transfer-config refused)",
}

"""What one vLLM release profile states (``VllmRelease``); the profiles are ``v0_32.py``, …"""

from __future__ import annotations

from types import MappingProxyType

from kvledger.plan.engines.release import Release
from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Mapping


@record(frozen=True, kw_only=True)
class VllmRelease(Release):
    """One vLLM release, as data."""

    transformers: str  # "transformers 5.19": the release vLLM's config classes come from
    # CacheConfig.gpu_memory_utilization's default (vllm/config/cache.py).
    default_gpu_memory_utilization: float
    # The offline LLM(...) class defaults (EngineArgs: SchedulerConfig's max_num_seqs and
    # max_num_batched_tokens for the LLM class usage context).
    default_max_num_seqs: int
    default_max_num_batched_tokens: int
    flag_table: str  # cli/serve/<file>: the release's server flags
    not_served: Mapping[str, str]  # model_type → why this release does not serve it
    no_cache_config: Mapping[str, str]  # model_type → why --kv-cache-dtype never reaches it
    # -- behaviour that moved between releases (each cites the release's source) ----------
    # The Qwen GDN layer's prefill checkpoint alignment in align mode with the FlashInfer
    # prefill (0.33: FLASHINFER_GDN_CHECKPOINT_ALIGNMENT = 64, v1/attention/backends/
    # gdn_attn.py, entering platforms/interface.py _align_hybrid_block_size); 0: none (0.32).
    gdn_checkpoint_alignment: int = 0
    # Prefill checkpoint pages a Mamba2 MambaSpec charges per request in align mode (0.32:
    # model_executor/layers/mamba/mamba_mixer2.py MambaMixer2.get_kv_cache_spec sets
    # num_prefill_checkpoint_blocks=1, so 3 pages a request, not 2; 0.31 and older: none).
    mamba2_prefill_checkpoint_blocks: int = 1
    # Prefill checkpoint pages a GDN MambaSpec charges per request in align mode (0.33:
    # QwenGatedDeltaNetAttention.get_kv_cache_spec sets num_prefill_checkpoint_blocks=1).
    gdn_prefill_checkpoint_blocks: int = 0
    # 0.33 config/vllm.py VllmConfig._reject_mismatched_float_kv_cache: an explicit float16 /
    # bfloat16 KV dtype other than the model dtype stops vLLM at start-up.
    rejects_mismatched_float_kv: bool = False
    # Speculative methods this release no longer accepts (0.33: medusa, mlp_speculator left
    # SpeculativeMethod, config/speculative.py).
    removed_speculative_methods: frozenset[str] = frozenset()
    # Architectures whose model-config hook turns --kv-cache-dtype auto into fp8 on an SM10x
    # GPU when the text config has ``index_topk`` (0.33 model_executor/models/config.py
    # Glm5NextModelConfig.verify_and_update_config: GLM-5.3-Flash).
    fp8_auto_kv_on_sm100: frozenset[str] = frozenset()
    # Pipeline-parallel verdicts this release's registry adds to 0.32's table (pp_support.py
    # PP_SUPPORT): architecture -> (supports PP, where), as the release's registry answered
    # (tests/oracles/run_pp_oracle.py --vllm <release> table).
    pp_support_added: Mapping[str, tuple[bool | None, str]] = MappingProxyType({})
    # 0.33 config/vllm.py VllmConfig.__post_init__: the speculative-method and PP rules that
    # turn async scheduling off apply to the V1 model runner only (v1_async_sched_incompat).
    async_off_only_on_v1_runner: bool = False
    # -- what the memory profile counts (engines/vllm/reserves.py; both sources cited there) --
    # 0.33 v1/worker/gpu_worker.py Worker.init_device: torch.mm / linear on a 16 x 16 tensor
    # create the cuBLAS and cuBLASLt handles before the MemorySnapshot, so their memory is
    # baseline, not the non-torch growth determine_available_memory subtracts. 0.32 creates
    # them lazily, in the profile run, after the snapshot.
    cublas_handles_before_snapshot: bool = False
    # 0.33 model_executor/layers/attention/mla_attention.py (the attn_metadata-None branch of
    # the forward) calls impl.reserve_workspace(): TritonMLAImpl claims its split-KV logits
    # workspace during the profile run, so the KV budget is sized around it. 0.32 reserves
    # it in TritonMLAMetadataBuilder.__init__, after the profile: not subtracted.
    triton_mla_workspace_in_profile: bool = False
    # The sparse-attention indexer's profile-run reservation (model_executor/layers/
    # sparse_attn_indexer.py sparse_attn_indexer, the attn_metadata-None branch): the shared
    # workspace takes T x index_head_dim fp8 values, T x 4 B scales and (0.20 on)
    # RADIX_TOPK_WORKSPACE_SIZE, T = v1/attention/backends/mla/indexer.py
    # get_max_prefill_buffer_size. 0.32: T = max_model_len x (576 x 2 // 132) x factor, the
    # factor 5 up to 256K tokens and 2 above (config/vllm.py, the factor left None); 0.30 and
    # older: max_model_len x 40 at any length. Entries per max_model_len token: (<= 256K, above).
    indexer_prefill_entries: tuple[int, int] = (40, 16)
    indexer_radix_workspace: int = 1 << 20  # sparse_attn_indexer.py RADIX_TOPK_WORKSPACE_SIZE
    # v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p on a GPU: 0.20 and 0.28 take the
    # Triton top-k/top-p kernel (and keep its buffer, _TRITON_BUFFER_CACHE) only for
    # ``logits.shape[0] >= 8`` rows, PyTorch's sort below; 0.30 on, at any batch (0: none).
    # The dummy sampler's rows are min(max_num_seqs, max_num_batched_tokens).
    topk_topp_triton_min_rows: int = 0
    # 0.10 has no Triton top-k/top-p kernel: TopKTopPSampler takes forward_native, which sorts
    # (apply_top_k_top_p) at every batch, unless FlashInfer is installed — an optional extra of
    # the pip wheel (Requires-Dist: flashinfer-python; extra == "flashinfer"), so a plain
    # `pip install vllm` sorts ("FlashInfer is not available. Falling back to the
    # PyTorch-native implementation", its own log line).
    topk_topp_native_sort: bool = False
    # engine/arg_utils.py: the ">= 160 GiB" batch-default tier (B200, MI300X: 1024 / 16384 for
    # vllm serve too) is 0.28's; 0.26 and older go from 70 GiB up with 1024 / 8192 served.
    batch_tier_160gib: bool = True
    # v1/core/kv_cache_utils.py _get_kv_cache_config_uniform_page_size (0.10): the group size
    # is the fewest layers of one spec (no "max < 1.5 × min" rule) and each spec's layers are
    # split into consecutive chunks (layers[i:i + group_size]), not strided (layers[i::n]).
    hybrid_group_chunks: bool = False
    # 0.10 v1/core/kv_cache_utils.py unify_kv_cache_configs sorts kv_cache_groups by
    # (type(spec).__name__, astuple(spec)); later releases keep the order of first layer.
    groups_sorted_by_spec_type: bool = False
    # config/scheduler.py SchedulerConfig.async_scheduling: on unless a rule turns it off
    # (resolve.concurrent_batches); 0.10: False, --async-scheduling opts in.
    async_scheduling_by_default: bool = True
    # config/cache.py CacheConfig has mamba_cache_mode and mamba_block_size (0.10 has neither:
    # its hybrid models keep one state a request and vLLM reports no such setting).
    mamba_cache_settings: bool = True
    # model_executor/models/config.py MambaModelConfig.verify_and_update_config (0.10): prefix
    # caching is set off for every hybrid / Mamba model, asked for or not.
    hybrid_prefix_caching: bool = True
    # v1/worker/gpu_worker.py determine_available_memory: whether profile_cudagraph_memory's
    # estimate is taken on ROCm (0.28 on: current_platform.is_cuda_alike(), #44825; 0.20:
    # "Skip on ROCm/HIP/XPU", no estimate subtracted there).
    cuda_graph_estimate_on_rocm: bool = True
    # Model types whose config class in this release fills what new_type_verdicts.py's
    # construction tables find missing (0.32's own Step3p5Config, transformers_utils/configs/
    # step3p5.py, defaults use_moe_router_bias True; 0.33 loads step3p5 with transformers'
    # Step3p7TextConfig, which lacks it): no construction refusal for them.
    class_fills_construction_keys: frozenset[str] = frozenset()
    # 0.33 config/vllm.py VllmConfig._limit_max_model_len_to_draft: under Model Runner V2 a
    # shorter draft model lowers max_model_len to its own (draft_length.py).
    limits_max_model_len_to_draft: bool = False
    # The DFlash / DSpark draft models whose KV layers and weights kvledger plans in this
    # release (parallel_draft.py: 0.34 model_executor/models/qwen3_dflash.py and
    # qwen3_dspark.py were read); a release without them refuses the methods by name.
    plans_parallel_drafts: bool = False
    # v1/attention/backends/rocm_attn.py RocmAttentionBackend.get_preferred_block_size: the
    # block ROCM_ATTN (vLLM's first choice for standard attention on ROCm) asks for at
    # --block-size auto; 0: the base rule's, the release's default block
    # (backend_choice.rocm_own_standard).
    rocm_attn_preferred_block: int = 0
    # 0.33 platforms/cuda.py _get_backend_priorities (SM10x, float KV, <= 16 heads a rank):
    # FLASH_ATTN_MLA_SPARSE_FA4 (new in 0.33) heads the sparse MLA backends
    # (sparse_mla_backends.py).
    fa4_sparse_mla_on_sm10x: bool = False
    # The KV connectors of --kv-transfer-config were read in this release's source
    # (distributed/kv_transfer/kv_connector/v1/: connectors.py); a release whose were not is
    # refused by name rather than sized with another release's rules.
    sizes_kv_connectors: bool = False
    # EPLB's memory (--enable-eplb; eplb.py) was read in this release's source
    # (distributed/eplb/eplb_state.py EplbState.add_model, fused_moe/expert_map_manager.py); a
    # release whose was not is refused by name.
    sizes_eplb: bool = False
    # EplbState.add_model: slots per logical expert in logical_to_physical_map — 0.32 and 0.33
    # MAX_EXPERT_REDUNDANCY + 1 = 1,024 always; None: num_redundant_experts + 1 (0.34).
    eplb_fixed_slots: int | None = None
    # The architectures whose class, or the language model it builds with
    # init_vllm_registered_model, implements MixtureOfExperts (models/interfaces.py
    # get_mixture_of_experts_model): only those get EPLB state and redundant experts; for
    # any other --enable-eplb changes nothing (v1/worker/gpu/eplb_utils.py
    # maybe_register_model). Read from the registry and the class bases of each release.
    eplb_architectures: frozenset[str] = frozenset()
    # config/parallel.py EPLBCommunicatorBackend: the --eplb-config communicator values.
    eplb_communicators: frozenset[str] = frozenset()
    # 0.34 distributed/kv_transfer/kv_connector/factory.py KVConnectorFactory.
    # get_connector_class: NixlConnector reads kv_connector_extra_config.transfer_mode ("pull",
    # the default, builds NixlPullConnector — 0.33's NixlConnector alias —; "push"
    # NixlPushConnector; anything else raises), and nixl/base_worker.py reads
    # ucx_backend_params (UCX backend options, no bytes). 0.33 reads neither key.
    nixl_transfer_mode: bool = False
    # Connectors a release's factory.py registers beyond 0.33's (refused by name, not sized):
    # 0.34 UMBPStoreConnector (v1/umbp/connector.py).
    kv_connectors_added: frozenset[str] = frozenset()
    # 0.33 transformers_utils/model_arch_config_convertor.py _normalize_quantization_config:
    # a ModelOpt quant_algo MIXED_PRECISION is "modelopt_mixed" (per-layer algos,
    # ModelOptMixedPrecisionConfig); 0.32 raises "Unknown ModelOpt quant algo".
    modelopt_mixed_precision: bool = False
    # config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE: the block ``--block-size auto`` starts
    # from (platforms/interface.py update_block_size_for_backend phase 1: each backend's
    # get_preferred_block_size(DEFAULT_BLOCK_SIZE)), and the kernel alignment a hybrid block
    # starts from (_align_hybrid_block_size: max(backend's smallest kernel block,
    # cache_config.block_size)). 0.32/0.33: 16; 0.34: 64.
    default_block_size: int = 16
    # 0.34 config/vllm.py VllmConfig.__post_init__: Model Runner V1 is gone, so no speculative
    # method and no PP size turns async scheduling off (only pooling models, an executor
    # without it, ROCm DeepEP-HT DBO), and max_concurrent_batches is pp + 1 with it.
    async_scheduling_always: bool = False
    # 0.34 config/vllm.py VllmConfig._resolve_extensible_kv_cache: on CUDA/ROCm with no
    # kv_cache_memory_bytes the KV cache is sized after warm-up and CUDA-graph capture
    # (v1/worker/extensible_kv_cache.py measure_kv_cache_bytes), gpu_memory_utilization
    # defaults to 1.0 (CacheConfig.resolved_gpu_memory_utilization) and no CUDA-graph
    # estimate is subtracted (engines/vllm/extensible_budget.py).
    extensible_kv_cache: bool = False
    # Decode context parallelism (-dcp N) was read in this release's source (engines/vllm/
    # dcp.py): 0.33 and 0.34 config/parallel.py ParallelConfig._validate_parallel_config
    # ("tp_size={tp} must be divisible by dcp_size={dcp}."), config/model.py
    # ModelConfig.verify_with_parallel_config (the GQA/MQA rules), v1/kv_cache_interface.py
    # FullAttentionSpec.max_memory_usage_bytes (cdiv(max_model_len, dcp) tokens a request
    # per rank) and v1/core/kv_cache_utils.py resolve_dcp_kv_block_size (block_size x dcp
    # tokens a block). A release whose DCP code kvledger has not read refuses -dcp by name.
    decode_context_parallel: bool = False
    # -- what one request is charged, and what the log counts (v1/kv_cache_interface.py,
    # v1/core/kv_cache_utils.py; engines/vllm/resolve.py and blocks.py read them) -----------
    # The tokens a sliding-window / chunked-local layer holds past its window or chunk: True
    # (0.26 on): VllmConfig.max_in_flight_tokens, every concurrent batch (2 x
    # max_num_batched_tokens under async scheduling); False (0.20 to 0.25):
    # scheduler_config.max_num_batched_tokens, one batch (SlidingWindowSpec /
    # ChunkedLocalAttentionSpec.max_memory_usage_bytes).
    window_holds_in_flight_batches: bool = True
    # Blocks one max_model_len request takes, the divisor of "Maximum concurrency"
    # (get_max_concurrency_for_kv_cache_config): "per_group" (0.28 on) = the sum over groups
    # of cdiv(the group's worst case, its page); "summed" (to 0.26) = cdiv(the groups' worst
    # cases summed, the first group's page).
    request_blocks: str = "per_group"
    # What "GPU KV cache size: N tokens" counts: "concurrency" (0.22 on) =
    # int(max_concurrency x max_model_len) (get_kv_cache_capacity); "blocks_per_group" (0.10
    # to 0.20) = num_blocks // len(groups) x the smallest group block (0.20
    # _report_kv_cache_config; 0.10 _get_kv_cache_config_uniform_page_size).
    logged_tokens: str = "concurrency"
    # model_executor/models/config.py MambaModelConfig.verify_and_update_config, 0.19 to 0.26:
    # with prefix caching and no speculative decoding, a model class declaring
    # SupportsMambaPrefixCaching gets mamba_cache_mode "all" (a state kept every block, the
    # block a multiple of the Mamba chunk: platforms/interface.py _align_hybrid_block_size);
    # 0.28 on, "align" for every hybrid. The architectures, as the release's model files
    # declare the interface; empty: "align" for all.
    mamba_all_with_prefix_caching: frozenset[str] = frozenset()
    # Architectures a later release's registry (model_executor/models/registry.py) lists and
    # this one's does not: a model whose every architecture is here is refused by name
    # (layout.check_served). Empty for the releases whose registry kvledger's tables follow.
    unregistered_architectures: frozenset[str] = frozenset()
    # config/model.py ModelConfig.is_prefix_caching_supported: a hybrid (attention beside
    # recurrent state) generative model gets prefix caching by default (0.28 on); False
    # (0.20): "Hybrid models do not support prefix caching since the feature is still
    # experimental" (off unless --enable-prefix-caching).
    hybrid_prefix_caching_by_default: bool = True
    # envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS's default, which v1/worker/gpu_worker.py
    # determine_available_memory reads before subtracting profile_cudagraph_memory's
    # estimate from the KV budget: True (0.20 on: "1"); False (0.19: "0", the estimate is
    # measured and logged but not subtracted unless the variable is set).
    cuda_graph_estimate_by_default: bool = True
    # The NemotronH SSM state dtype at --mamba-ssm-cache-dtype auto when the config states
    # none (model_executor/models/config.py NemotronHForCausalLMConfig): "float32" (0.20 on,
    # DEFAULT_MAMBA_SSM_CACHE_DTYPE); "float16" (0.19's getattr default).
    nemotron_h_ssm_cache_default: str = "float32"
    # How the hybrid (attention beside Mamba) block is aligned: False (0.20 on: platforms/
    # interface.py _align_hybrid_block_size, kernel_block_alignment_size = max(the backend's
    # smallest kernel block, cache_config.block_size)); True (0.19: model_executor/models/
    # config.py HybridAttentionMambaModelConfig.verify_and_update_config, a fixed 16, or 64
    # for MLA: a --block-size given does not enter it, and is kept only when it is larger).
    hybrid_alignment_fixed: bool = False
    # model_executor/models/config.py MambaModelConfig.verify_and_update_config: True (0.19):
    # a SupportsMambaPrefixCaching model takes mamba_cache_mode "all" under prefix caching
    # with speculative decoding too; False (0.20 on): "align" when it speculates.
    mamba_all_with_speculation: bool = False
    # --kv-cache-dtype values kvledger plans that this release's config/cache.py CacheDType
    # does not list (0.19: "nvfp4", added in 0.20): refused at argument parsing, by name.
    kv_cache_dtypes_missing: frozenset[str] = frozenset()

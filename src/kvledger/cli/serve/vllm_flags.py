"""Every ``vllm serve`` flag of vLLM 0.32, 0.33 and 0.34 (and the ones 0.10.2 had that they
dropped), classified by how it can affect the KV plan.

The flag lists are vLLM's (``vllm-0.32.0.json``, ``vllm-0.33.0.json``, each dumped from its
``make_arg_parser``; 0.33 adds monokernel — KernelConfig.monokernel, a persistent decode
kernel — and the three inert ones named below); this
file says, per argparse dest, which class (``rules.py``) it is in and why. The tests check
that the two cover each other exactly, so a regenerated table with a new flag fails until the
flag is classified here. Reasons cite the vLLM source read for them; where the source was not
conclusive the flag is put in the stricter class and the reason says "not modelled".
"""

from __future__ import annotations

from kvledger.cli.serve.rules import ESTIMATE, INERT, KV, MAPPED, WEIGHTS, Rule, merge, table

_FRONTEND = """
headless api_server_count grpc lora_modules chat_template chat_template_content_format
trust_request_chat_template trust_request_mm_kwargs default_chat_template_kwargs response_role
return_tokens_as_token_ids enable_auto_tool_choice exclude_tools_when_tool_choice_none
tool_call_parser tool_parser_plugin tool_strict_level tool_server max_log_len
enable_prompt_tokens_details enable_per_request_metrics enable_server_load_tracking
enable_force_include_usage sse_keep_alive_interval enable_tokenizer_info_endpoint
enable_log_outputs enable_log_deltas cohere_is_reasoning_model cohere_format
anthropic_disabled_thinking_effort log_error_stack tokens_only enable_scale_out fingerprint_mode
fingerprint_value host port grpc_port data_parallel_supervisor_port
dp_supervisor_probe_interval_s dp_supervisor_probe_timeout_s
dp_supervisor_probe_failure_threshold uds uvicorn_log_level disable_uvicorn_access_log
disable_access_log_for_endpoints allow_credentials allowed_origins allowed_methods
allowed_headers api_key ssl_keyfile ssl_certfile ssl_ca_certs enable_ssl_refresh ssl_cert_reqs
ssl_ciphers root_path middleware enable_request_id_headers disable_fastapi_docs
h11_max_incomplete_event_size h11_max_header_count enable_offline_docs
"""

_MODEL_INERT = """
tokenizer tokenizer_mode trust_remote_code seed allowed_local_media_path allowed_media_domains
code_revision tokenizer_revision logprobs_mode use_fp64_gumbel
enable_trace_replay disable_cascade_attn skip_tokenizer_init served_model_name hf_token
pooler_config generation_config override_generation_config enable_sleep_mode
sleep_mode_offload_cudagraph sleep_preserve_parameter_names enable_cumem_allocator
enable_nccl_comm_suspend logits_processors io_processor_plugin renderer_num_workers
return_sampling_mask max_logprobs
"""

_LOAD_INERT = """
download_dir safetensors_load_strategy safetensors_prefetch_num_threads
safetensors_prefetch_block_size model_loader_extra_config ignore_patterns use_tqdm_on_load
pt_load_map_location
"""

_PARALLEL_INERT = """
distributed_executor_backend master_addr master_port nnodes node_rank
distributed_timeout_seconds cpu_distributed_timeout_seconds numa_bind numa_bind_nodes
numa_bind_cpus device_ids dcp_comm_backend dcp_q_replicate data_parallel_rank
data_parallel_start_rank data_parallel_size_local data_parallel_address data_parallel_rpc_port
data_parallel_backend data_parallel_hybrid_lb data_parallel_external_lb
data_parallel_multi_port_external_lb enable_batch_sharded_sampling enable_ep_weight_filter
enable_shm_tensor_arena elastic_ep_max_dp_size dbo_decode_token_threshold dp_sync_interval
dbo_prefill_token_threshold disable_nccl_for_dp_synchronization expert_placement_strategy
max_parallel_loading_workers ray_workers_use_nsight worker_extension_cls
enable_fault_tolerance fault_tolerance_config
"""

_OTHER_INERT = """
reasoning_parser reasoning_parser_plugin mamba_backend mamba_ssu_algorithm
enable_mamba_cache_stochastic_rounding mamba_cache_philox_rounds prefix_caching_hash_algo
prefix_cache_retention_interval kv_sharing_fast_prefill kv_offloading_backend offload_backend
mm_processor_cache_gb mm_processor_cache_type mm_hasher_algorithm
mm_shm_cache_max_object_size_mb mm_encoder_fp8_scale_path mm_encoder_fp8_scale_save_path
mm_encoder_fp8_scale_save_margin interleave_mm_strings video_pruning_method mm_tensor_ipc
mm_device_do_normalize logging_config log_level log_config_file show_hidden_metrics_for_version
otlp_traces_endpoint collect_detailed_traces per_request_spec_decode_metrics kv_cache_metrics
kv_cache_metrics_sample custom_histogram_buckets cudagraph_metrics
enable_layerwise_nvtx_tracing enable_mfu_metrics enable_logging_iteration_details
jit_monitor_mode jit_monitor_verbose max_num_scheduled_tokens max_num_active_seqs
max_num_queued_reqs max_num_queued_tokens long_prefill_token_threshold
long_prefill_token_threshold_adaptive scheduling_policy disable_chunked_mm_input scheduler_cls
scheduler_reserve_full_isl watermark prefill_schedule_interval stream_interval ir_op_priority
watermark_config kv_events_config reasoning_config structured_outputs_config profiler_config
weight_transfer_config disable_log_stats aggregate_engine_logging fail_on_environ_validation
shutdown_timeout gdn_prefill_backend kda_prefill_backend kda_decode_backend enable_log_requests
"""

# LoRA's sizes only matter with --enable-lora, which has its own rule.
_LORA_SIZES = """
max_loras max_lora_rank lora_dtype enable_tower_connector_lora max_cpu_loras fully_sharded_loras
lora_target_modules default_mm_loras specialize_active_lora enable_mixed_moe_lora_format
enable_moe_shared_loras max_lora_cls_labels
"""

RULES: dict[str, Rule] = merge(
    table(MAPPED, """
        model_tag model tensor_parallel_size pipeline_parallel_size data_parallel_size
        max_model_len gpu_memory_utilization kv_cache_memory_bytes kv_cache_dtype block_size
        max_num_seqs max_num_batched_tokens enable_prefix_caching speculative_config
        spec_method spec_model spec_tokens enforce_eager dtype quantization performance_mode
        attention_config limit_mm_per_prompt language_model_only mm_encoder_tp_mode
        attention_backend mamba_cache_dtype mamba_ssm_cache_dtype
        enable_chunked_prefill revision enable_expert_parallel async_scheduling
        decode_context_parallel_size cp_kv_cache_interleave_size allow_deprecated_quantization
    """),
    table(INERT, _FRONTEND, "API server option"),
    table(INERT, _MODEL_INERT + _LOAD_INERT + _PARALLEL_INERT + _OTHER_INERT,
            "no effect on memory at start-up"),
    table(INERT, _LORA_SIZES, "used only with --enable-lora"),
    table(INERT, "config", "handled before parsing"),
    # vLLM 0.33's new flags (vllm-0.33.0.json): sleep_mode_backend (config/model.py, how
    # sleep mode frees memory, which needs --enable-sleep-mode), watchdog_config
    # (config/watchdog_config.py, a stack-dump thread), reasoning_effort_map
    # (entrypoints/common/cli_args.py, a request-field mapping).
    table(INERT, "sleep_mode_backend watchdog_config reasoning_effort_map",
          "no effect on memory at start-up"),
    # -- reserves kvledger estimates ---------------------------------------------------------
    table(ESTIMATE, """
        cudagraph_capture_sizes max_cudagraph_capture_size compilation_config
        optimization_level enable_flashinfer_autotune kernel_config moe_backend linear_backend
        sparse_indexer_topk_backend monokernel
    """, "changes the CUDA graphs / kernel workspaces kvledger estimates"),
    table(ESTIMATE, """
        all2all_backend enable_dbo ubatch_size disable_custom_all_reduce enable_hc_sp
        enable_elastic_ep enable_flash_late_interaction
    """, "changes communication buffers kvledger estimates (non-torch memory)"),
    table(ESTIMATE, """
        enable_mm_embeds mm_processor_kwargs skip_mm_profiling video_pruning_rate
        mm_encoder_attn_backend mm_encoder_attn_dtype mm_processor_device enable_prompt_embeds
        enable_return_routed_experts aux_output_config ec_transfer_config ec_manager_config
    """, "changes the profiled activation peak kvledger estimates"),
    table(ESTIMATE, "media_io_kwargs",
            "changes multimodal profiling (a GPU video decoder is refused separately)"),
    # -- weights -----------------------------------------------------------------------------
    table(WEIGHTS, """
        cpu_offload_gb cpu_offload_params offload_group_size offload_num_in_group
        offload_prefetch_step offload_params
    """, "moves weights off the GPU"),
    # enable_lora, cpu_offload_gb, kv_offloading_size (with its backend) and
    # kv_transfer_config are mapped when set (vllm_launch_map.py); the rows below classify
    # what is left.
    table(WEIGHTS, "enable_lora", "reserves LoRA weight slots (max_loras × max_lora_rank)"),
    # enable_eplb and eplb_config are mapped (vllm_launch_map.py; plan/engines/vllm/eplb.py).
    table(MAPPED, "enable_eplb eplb_config"),
    table(WEIGHTS, "engram_config", "changes which embedding weights each GPU holds"),
    table(WEIGHTS, "load_format", "loads or quantizes the weights differently",
            same=("auto", "pt", "safetensors", "npcache", "dummy", "fastsafetensors",
                  "runai_streamer", "runai_streamer_sharded", "tensorizer", "sharded_state")),
    # -- KV layout / budget ------------------------------------------------------------------
    table(KV, "hf_config_path hf_overrides config_format model_class_overrides",
            "plans another config than the model's own"),
    table(KV, "model_impl runner convert worker_cls diffusion_config mm_encoder_only",
            "runs another model implementation or runner"),
    table(KV, "quantization_config", "quantizes online with a config kvledger does not read"),
    table(KV, """
        num_gpu_blocks_override kv_cache_dtype_skip_layers disable_sliding_window
        disable_hybrid_kv_cache_manager swa_bounded_replay prefix_match_unit
    """, "changes the KV blocks vLLM allocates"),
    table(KV, """
        mamba_block_size enable_mamba_shared_prefix_checkpoint replayssm_buffer_len
        use_replayssm
    """, "changes the recurrent-state cache"),
    # mamba_cache_dtype and mamba_ssm_cache_dtype are MAPPED (vllm_launch_map.py).
    # MambaModelConfig.verify_and_update_config (0.32 to 0.34, every hybrid and Mamba model
    # through HybridAttentionMambaModelConfig) sets the mode from --enable-prefix-caching
    # whatever was given ("align" with it, "none" without); 0.33 and 0.34 say so when it is
    # given (arg_utils.py _MAMBA_CACHE_MODE_DEPRECATION_MESSAGE: "It has no effect").
    table(INERT, "mamba_cache_mode",
          "is set from --enable-prefix-caching (MambaModelConfig.verify_and_update_config)"),
    # decode_context_parallel_size and cp_kv_cache_interleave_size are MAPPED above
    # (vllm_launch_map.py: --decode-context-parallel-size, plan/engines/vllm/dcp.py).
    table(KV, "prefill_context_parallel_size",
          "shards the KV cache over context-parallel ranks"),
    # config/vllm.py VllmConfig.adjust_dcp_kv_cache_interleave_size: read only with a NIXL P/D
    # connector (copied into cp_kv_cache_interleave_size, where validate_block_size is then
    # skipped); it places tokens on ranks and sizes nothing.
    table(INERT, "dcp_kv_cache_interleave_size",
          "read only with a NIXL P/D connector; places tokens on DCP ranks, sizes nothing"),
    table(KV, "kv_offloading_size kv_transfer_config",
            "adds a KV offload / transfer connector"),
    table(KV, "mm_ipc_gpu_memory_gb",
            "is subtracted from the KV budget (multimodal/gpu_ipc_memory.py)"),
    table(KV, "additional_config", "passes platform options kvledger does not read"),
    # vLLM 0.34's new flags (vllm-0.34.0.json). enable_extensible_kv_cache: on by default on
    # CUDA/ROCm (config/vllm.py _resolve_extensible_kv_cache); mapped when given
    # (vllm_launch_map.py: --no-enable-extensible-kv-cache sizes the cache as 0.33 did).
    table(KV, "enable_extensible_kv_cache",
          "turns the extensible KV cache off (its default is on)", same=(True,)),
    # config/scheduler.py: admission order (cache_aware_admission_*), requests holding blocks
    # for async KV connector loads (max_num_inflight_kv_loads); config/load.py file order;
    # config/model.py checkpoint prepare (sleep mode); the headless client's address.
    table(INERT, """
        cache_aware_admission_window cache_aware_admission_threshold max_num_inflight_kv_loads
        shuffle_safetensors_files checkpoint_prepare_on_startup headless_client_handshake_address
    """, "no effect on memory at start-up"),
    # vLLM 0.10.2's flags that 0.32 no longer has (vllm-0.10.2.json; read in 0.10.2's
    # engine/arg_utils.py and config/__init__.py).
    table(INERT, """
        disable_async_output_proc disable_frontend_multiprocessing disable_log_requests
        disable_mm_preprocessor_cache guided_decoding_backend
        guided_decoding_disable_additional_properties guided_decoding_disable_any_whitespace
        guided_decoding_disable_fallback logits_processor_pattern max_long_partial_prefills
        max_num_partial_prefills num_lookahead_slots override_pooler_config preemption_mode
        scheduler_delay_factor eplb_log_balancedness eplb_step_interval
    """, "no effect on GPU memory at start-up (V0 scheduling, the API server, logging)"),
    table(INERT, "swap_space", "sizes CPU memory for swapped blocks, not the GPU's"),
    table(INERT, "calculate_kv_scales",
          "computes fp8 KV scales on the first forward; the cache's bytes are the same"),
    table(INERT, "override_attention_dtype",
          "read only by the V0 ROCm flash-attention backend (attention/backends/"
          "rocm_flash_attn.py)"),
    table(INERT, "enable_lora_bias lora_extra_vocab_size", "used only with --enable-lora"),
    table(INERT, "eplb_window_size num_redundant_experts",
          "read only with --enable-eplb, which kvledger does not size in the releases that have "
          "this flag"),
    table(ESTIMATE, "cuda_graph_sizes max_seq_len_to_capture",
          "changes the CUDA graphs kvledger estimates"),
    table(WEIGHTS, "enable_multimodal_encoder_data_parallel",
          "runs the multimodal encoder data-parallel (0.10.2 sets mm_encoder_tp_mode 'data'): "
          "its weights whole on every GPU"),
    table(KV, "rope_scaling rope_theta", "plans another config than the model's own"),
    table(KV, "task", "runs another runner (generate, embed, classify, ...)",
          same=("auto", "generate")),
)

# Environment variables read by vLLM 0.32 (envs.py) that change memory, by class.
ENV_RULES: dict[str, Rule] = {
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN": Rule(
        MAPPED, "lets --max-model-len exceed the config's length (model.py)"),
    "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": Rule(
        MAPPED, "0: the CUDA-graph estimate is not taken from the KV budget (gpu_worker.py)"),
    "VLLM_VIDEO_LOADER_BACKEND": Rule(
        KV, "pynvvideocodec reserves GPU memory from the KV budget (gpu_ipc_memory.py)",
        same=("opencv",)),
    "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE": Rule(
        KV, "changes how chunked-local attention is grouped", same=("1",)),
    "VLLM_KV_CACHE_LAYOUT": Rule(KV, "changes the KV tensor layout kvledger plans"),
    "VLLM_USE_SIMPLE_KV_OFFLOAD": Rule(KV, "adds a KV offload", same=("0",)),
    "VLLM_CPU_KVCACHE_SPACE": Rule(KV, "sizes the CPU backend's KV cache, not a GPU's"),
    "VLLM_DEEPEP_BUFFER_SIZE_MB": Rule(ESTIMATE, "sizes DeepEP buffers (non-torch memory)"),
    "PYTORCH_CUDA_ALLOC_CONF": Rule(ESTIMATE, "changes allocator fragmentation"),
    "HF_HUB_OFFLINE": Rule(MAPPED, "the model's config is read without the Hub (--offline)"),
    "PYTORCH_HIP_ALLOC_CONF": Rule(ESTIMATE, "changes allocator fragmentation"),
    "VLLM_ROCM_USE_AITER": Rule(
        MAPPED, "on ROCm, AITER's kernels: MLA runs ROCM_AITER_MLA (platforms/rocm.py)"),
    "VLLM_ROCM_USE_AITER_MLA": Rule(
        MAPPED, "with VLLM_ROCM_USE_AITER, whether MLA runs ROCM_AITER_MLA (default on)"),
}


def batch_defaults(total_bytes: int | None, device_name: str | None,
                   world_size: int) -> tuple[int, int] | None:
    """(max_num_seqs, max_num_batched_tokens) ``vllm serve`` picks when the line sets neither.

    vLLM ``EngineArgs.get_batch_defaults`` for ``UsageContext.OPENAI_API_SERVER``: the one
    tier table, ``kvledger.plan.engines.vllm.batch_defaults`` (≥ 160 GiB → 1024 / 16384;
    ≥ 70 GiB and not an A100 → 1024 / 8192; else 256 / 2048), the one ``plan --gpu`` uses.
    ``world_size`` only matters on the CPU backend (not planned here). None when the GPU is
    unknown.
    """
    del world_size
    if total_bytes is None:
        return None
    from kvledger.plan.batch_defaults import SERVE
    from kvledger.plan.engines.vllm.batch_defaults import vllm_tier

    picked = vllm_tier(SERVE, total_bytes, device_name)
    return picked.max_num_seqs, picked.max_num_batched_tokens

"""The start-up log lines ``kvledger explain`` knows, one row per wording, engine by engine.

A row is ``(figure, pattern)``: the pattern's named groups become the figure's fields. The
wording changed across releases, so one figure often has several rows; the newest wording is
listed first. Each row says where the line comes from (the engine's source, or the public log
it was seen in when the source of that release is not on disk). Lines that match nothing are
ignored — a log holds hundreds of lines kvledger has nothing to say about.

Units: vLLM prints GiB (``format_gib`` = ``round(bytes / 2**30, 2)``; older releases ``%.2f`` or
``%.4f``); SGLang prints "GB" but divides by ``1 << 30`` too (``memory_pool.py``: ``GB =
1024 * 1024 * 1024``), so both are read as GiB.
"""

from __future__ import annotations

import re

_NUM = r"[0-9]+(?:\.[0-9]+)?"
_INT = r"[0-9][0-9,]*"

# -- vLLM ----------------------------------------------------------------------------------------

VLLM_LINES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (figure, re.compile(pattern)) for figure, pattern in (
        # v1/engine/core.py (every V1 release): the resolved config, key=value reprs.
        ("config", r"Initializing a V1 LLM engine \(v(?P<version>[^)\s]+)\) with config: "
                   r"(?P<body>.*)"),
        # V0 engine (before 0.8 V1 became the default): same config format.
        ("config", r"Initializing an LLM engine \(v(?P<version>[^)\s]+)\) with config: "
                   r"(?P<body>.*)"),
        # entrypoints (0.9+: utils.py / api_utils.py "non-default args: {...}").
        ("non_default_args", r"non-default args: (?P<body>\{.*)"),
        # 0.11+ start-up banner ("█▄█▀ █ ... version 0.18.0" then "model <name>").
        ("banner_version", r"█.*\bversion\s+(?P<version>[0-9][\w.+-]*)\s*$"),
        ("banner_model", r"█.*\bmodel\s+(?P<model>\S+)\s*$"),
        ("server_version", r"vLLM API server version (?P<version>[0-9][\w.+-]*)"),
        ("env_version", r"vLLM Version\s*:\s*(?P<version>[0-9][\w.+-]*)"),
        ("resolved_len", r"Using max model len (?P<max_model_len>[0-9]+)"),
        ("chunked_prefill", r"Chunked prefill is enabled with max_num_batched_tokens="
                            r"(?P<max_num_batched_tokens>[0-9]+)"),
        # gpu_model_runner.py: "Model loading took %s GiB memory and %.6f seconds" (0.32,
        # format_gib); 0.8-0.10 "Model loading took %.4f GiB and %.6f seconds"; V0
        # "Loading model weights took %.4f GB" (GiB computed, "GB" printed).
        ("weights", rf"Model loading took (?P<gib>{_NUM}) ?GiB"),
        ("weights", rf"Loading model weights took (?P<gib>{_NUM}) ?GB"),
        # model_loader/weight_utils.py safetensors_weights_iterator (0.2x-0.34, read in 0.28.0
        # and 0.34.0): "Filesystem type for checkpoints: %s. Checkpoint size: %.2f GiB." — the
        # summed size of the safetensors files the run loads (_get_checkpoints_size_bytes).
        ("checkpoint", rf"Checkpoint size: (?P<gib>{_NUM}) ?GiB"),
        # gpu_worker.py determine_available_memory: "Available KV cache memory: %s GiB".
        ("available_kv", rf"Available KV cache memory: (?P<gib>{_NUM}) ?GiB"),
        # kv_cache_utils.py: 0.32 one line "GPU KV cache size: %s tokens, Maximum concurrency
        # for %s tokens per request: %.2fx"; earlier two lines. "GPU" may be "XPU" etc.
        ("kv_tokens", rf"\b[A-Z]+(?: \+ host)? KV cache size: (?P<tokens>{_INT}) tokens"),
        ("concurrency", rf"Maximum concurrency for (?P<length>{_INT}) tokens per request: "
                        rf"(?P<x>{_NUM})x"),
        # V0: "# GPU blocks: 1952, # CPU blocks: 2048".
        ("gpu_blocks", rf"# GPU blocks: (?P<blocks>{_INT})"),
        # v1 metrics loggers: "... num_gpu_blocks is: 57656" — the exact block count.
        ("gpu_blocks", rf"num_gpu_blocks is: (?P<blocks>{_INT})"),
        ("cuda_graphs", rf"Graph capturing finished in {_NUM} secs?, took (?P<gib>{_NUM}) GiB"),
        # 0.8-0.10 gpu_worker.py memory report (one line, or several in some releases).
        ("profile_total", rf"total_gpu_memory \((?P<gib>{_NUM}) ?GiB\) x "
                          rf"gpu_memory_utilization \((?P<util>{_NUM})\)"),
        ("profile_weights", rf"model weights take (?P<gib>{_NUM}) ?GiB"),
        ("profile_non_torch", rf"non_torch_memory takes (?P<gib>{_NUM}) ?GiB"),
        ("profile_activation", rf"PyTorch activation peak memory takes (?P<gib>{_NUM}) ?GiB"),
        ("profile_kv", rf"the rest of the memory reserved for KV Cache is (?P<gib>{_NUM}) ?GiB"),
        # V0 "Memory profiling results: total_gpu_memory=23.58GiB ... kv_cache_size=3.81GiB".
        ("profile_total", rf"total_gpu_memory=(?P<gib>{_NUM}) ?GiB.*"
                          rf"gpu_memory_utilization=(?P<util>{_NUM})"),
        # 0.11+ gpu_worker.py: "Free memory on device (30.27/31.4 GiB) on startup. Desired GPU
        # memory utilization is (0.92, 28.88 GiB). Actual usage is 15.03 GiB for consumed
        # memory (weights + non-torch), 1.59 GiB for peak activation, and 0.09 GiB for
        # CUDAGraph memory." (seen in noonghunna/club-3090#1087).
        # 0.28-0.33 (read in 0.28, 0.32 and 0.33 ``gpu_worker.compile_or_warm_up_model``, the
        # same f-string): "Free memory on device (F/T GiB) on startup. Desired GPU memory
        # utilization is (U, D GiB). Actual usage is W GiB for consumed memory (weights +
        # non-torch), A GiB for peak activation, and G GiB for CUDAGraph memory. Replace
        # gpu_memory_utilization config with `--kv-cache-memory=N` (X GiB) to fit into
        # requested memory, or `--kv-cache-memory=M` (Y GiB) to fully utilize gpu memory.
        # Current kv cache memory in use is K GiB." F is the free memory at the start-up
        # snapshot, D = ceil(T × U) (``v1/worker/utils.py request_memory``), W the profile's
        # ``total_consumed``, A its transient peak plus the CUDA-graph estimate it subtracted,
        # G the graphs actually captured after the cache was allocated, N = D − W − A − G −
        # 150 MiB and M = F − W − A − G − 150 MiB (bytes, exact), K the KV budget.
        ("device_memory", rf"Free memory on device \((?P<free>{_NUM})/(?P<gib>{_NUM}) ?GiB\)"
                          rf"(?: on startup\. Desired GPU memory utilization is \("
                          rf"(?P<util>{_NUM}), (?P<desired>{_NUM}) GiB\))?"),
        ("kv_to_limits", r"--kv-cache-memory=(?P<requested>-?[0-9]+)` \([^)]*\) to fit into "
                         r"requested memory, or `--kv-cache-memory=(?P<gpu>-?[0-9]+)`"),
        ("kv_in_use", rf"Current kv cache memory in use is (?P<gib>-?{_NUM}) GiB"),
        # 0.10-0.11 (seen in public 0.10.2 logs, gpu_worker.py:391): "Actual usage is W GiB for
        # weight, A GiB for peak activation, N GiB for non-torch memory, and G GiB for
        # CUDAGraph memory. ... Current kv cache memory in use is K bytes." — graphs captured
        # after the cache was sized (nothing subtracted for them), K exact.
        ("usage_report_v010", rf"Actual usage is (?P<weights>{_NUM}) GiB for weight, "
                              rf"(?P<activation>{_NUM}) GiB for peak activation, "
                              rf"(?P<non_torch>{_NUM}) GiB for non-torch memory, and "
                              rf"(?P<graphs>{_NUM}) GiB for CUDAGraph memory"),
        ("kv_in_use_bytes", r"Current kv cache memory in use is (?P<bytes>[0-9]+) bytes"),
        # 0.28-0.33 gpu_worker.compile_or_warm_up_model, when the graphs were profiled: "CUDA
        # graph pool memory: X GiB (actual), Y GiB (estimated), difference: ...". Y is what
        # ``determine_available_memory`` subtracted (inside the logged peak activation).
        ("graph_pool", rf"CUDA graph pool memory: (?P<actual>{_NUM}) GiB \(actual\), "
                       rf"(?P<estimated>{_NUM}) GiB \(estimated\)"),
        # gpu_model_runner.profile_cudagraph_memory (0.21+): "Estimated CUDA graph memory: Y
        # GiB total" — the estimate subtracted, before the cache is sized.
        ("graph_estimate", rf"Estimated CUDA graph memory: (?P<estimated>{_NUM}) GiB total"),
        # 0.28-0.33 ``v1/worker/utils.py request_memory``: vLLM refuses to start ("Free memory
        # on device cuda:0 (F/T GiB) on startup is less than desired GPU memory utilization
        # (U, D GiB)").
        ("free_refusal", rf"Free memory on device \S+ \((?P<free>{_NUM})/(?P<gib>{_NUM}) GiB\) "
                         rf"on startup is less than desired GPU memory utilization \("
                         rf"(?P<util>{_NUM}), (?P<desired>{_NUM}) GiB\)"),
        ("usage_report", rf"Actual usage is (?P<consumed>{_NUM}) GiB for consumed memory.*?"
                         rf"(?P<activation>{_NUM}) GiB for peak activation(?:, and "
                         rf"(?P<graphs>{_NUM}) GiB for CUDAGraph memory)?"),
        # kv_cache_utils.py _check_enough_kv_cache_memory (vLLM refused to start).
        ("refused", rf"max seq len \((?P<length>[0-9]+)\),? \(?(?P<needed>{_NUM}) GiB KV cache "
                    rf"is needed, which is larger than the available KV cache memory "
                    rf"\((?P<gib>{_NUM}) GiB\)"),
        ("estimated_len", r"estimated maximum model length is (?P<length>[0-9]+)"),
        # platforms/cuda.py get_attn_backend_cls (0.2x-0.34): "Using %s attention backend out
        # of potential backends: %s." (vLLM's choice), "Using %s backend." (the one selected
        # with --attention-backend); rocm.py: "Using %s backend out of potential backends".
        ("backend_used", r"Using (?P<name>[A-Z][A-Z0-9_]+) (?:attention )?backend"
                         r"(?: out of potential backends|\.| \(selected)"),
        # v1/sample/ops/topk_topp_sampler.py TopKTopPSampler.__init__ (0.10): which sampler
        # the run took — FlashInfer's, or PyTorch's sort ("FlashInfer is not available" /
        # "FlashInfer is available, but it is not enabled ... Falling back").
        ("sampler_flashinfer", r"Using FlashInfer for top-p & top-k sampling"),
        ("sampler_native", r"FlashInfer is (?:not available|available, but it is not "
                           r"enabled)\. Falling back to the PyTorch-native implementation"),
        # "vllm serve MODEL --flags" pasted above the log.
        ("command", r"(?:^|[\s$#>])vllm serve\s+(?P<body>.*)"),
        ("command", r"-m vllm\.entrypoints\.openai\.api_server\s+(?P<body>.*)"),
    )
)

# -- SGLang --------------------------------------------------------------------------------------

SGLANG_LINES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (figure, re.compile(pattern)) for figure, pattern in (
        # server_args.py: the dataclass repr of ServerArgs.
        ("server_args", r"server_args=ServerArgs\((?P<body>.*)"),
        ("version", r"\bsglang(?:\s*version)?\s*[:=]=?\s*v?(?P<version>[0-9]+\.[0-9]+\.[0-9]"
                    r"[\w.+-]*)"),
        # model_runner.py: "Load weight begin. avail mem=%.2f GB".
        ("load_begin", rf"Load weight begin\. avail mem=(?P<gb>{_NUM}) GB"),
        # model_runner.py: "Load weight end. type=X, dtype=Y, avail mem=%.2f GB, mem
        # usage=%.2f GB." (older releases: "Load weight end. type=X, dtype=Y, avail mem=...").
        ("load_end", rf"Load weight end\. (?:.*?type=(?P<arch>\w+))?(?:.*?dtype=(?P<dtype>"
                     rf"[\w.]+))?.*?avail mem=(?P<gb>{_NUM}) GB(?:, mem usage=(?P<usage>{_NUM})"
                     r" GB)?"),
        # memory_pool.py _finalize_allocation_log: "KV Cache is allocated. [dtype: D, ]#tokens:
        # N, K size: X GB, V size: Y GB" (MHA) or "..., KV size: X GB" (MLA).
        ("kv_allocated", rf"KV Cache is allocated\. (?:dtype: (?P<dtype>[\w.]+), )?#tokens: "
                         rf"(?P<tokens>[0-9]+), (?:K size: (?P<k>{_NUM}) GB, V size: "
                         rf"(?P<v>{_NUM}) GB|KV size: (?P<kv>{_NUM}) GB)"),
        ("pool_end", rf"Memory pool end\. avail mem=(?P<gb>{_NUM}) GB"),
        ("graphs_end", rf"Capture cuda graph end\..*?mem usage=(?P<gb>{_NUM}) GB"),
        # scheduler.py: "max_total_num_tokens=N, chunked_prefill_size=..., max_prefill_tokens=
        # ..., max_running_requests=..., context_len=..., available_gpu_mem=X GB".
        ("scheduler", r"max_total_num_tokens=(?P<tokens>[0-9]+)(?P<body>.*)"),
        ("command", r"-m sglang\.launch_server\s+(?P<body>.*)"),
    )
)

# Any of these marks a log as one engine's (the KV lines decide when both appear).
VLLM_MARKERS = re.compile(
    r"Initializing a V1 LLM engine|non-default args:|Available KV cache memory|"
    r"KV cache size: [0-9]|Maximum concurrency for|vllm serve|gpu_model_runner|kv_cache_utils|"
    r"less than desired GPU memory utilization"
)
SGLANG_MARKERS = re.compile(
    r"ServerArgs\(|KV Cache is allocated|Load weight end|max_total_num_tokens=|"
    r"sglang\.launch_server"
)

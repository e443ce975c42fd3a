"""Reading start-up logs: the real excerpts in ``logs/`` and the wording of other releases.

Expected values are what the log text prints (engine, version, settings, figures); the
wording variants are lines quoted from public logs or from the engine's format strings
(cited at each test)."""

from __future__ import annotations

import pytest

from explain.real_logs import read
from kvledger.report.logparse import GIB, Gib, LogError, parse_log


def test_vllm_024_non_default_args_and_kv_lines() -> None:
    log = parse_log(read("vllm-0.24.0-club3090-612.log"))
    assert log.engine == "vllm"
    assert log.engine_version == "0.24.0"
    assert log.model == "~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4"
    s = log.settings
    assert s["kv_cache_dtype"] == "fp8"
    assert s["max_model_len"] == 131072
    assert s["enable_prefix_caching"] is True
    assert s["max_num_seqs"] == 1
    assert s["quantization"] == "modelopt"
    f = log.figures
    assert f["available_kv_gib"] == Gib("5.98")
    assert f["kv_cache_tokens"] == 567_978
    assert f["max_concurrency"] == Gib("4.33")
    assert f["concurrency_length"] == 131_072


def test_truncated_config_line_does_not_replace_the_model() -> None:
    # club-3090#652 is cut inside the config line's model='~/.cache/huggin...
    log = parse_log(read("vllm-0.24.0-club3090-652.log"))
    assert log.model == "~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4"


def test_pasted_command_and_exact_block_count() -> None:
    log = parse_log(read("vllm-0.10-pr20707-llama31-8b.log"))
    assert log.engine_version is None  # the excerpt prints none
    assert log.model == "meta-llama/Llama-3.1-8B-Instruct"  # from the pasted command
    assert log.settings["gpu_memory_utilization"] == 0.92
    assert log.figures["num_gpu_blocks"] == 57_656
    assert log.figures["concurrency_length"] == 40_000


def test_collect_env_version_and_quoted_lines() -> None:
    log = parse_log(read("vllm-0.9.1-issue19996-llama31-8b-eagle.log"))
    assert log.engine_version == "0.9.1.dev705+g01220ce89"
    assert log.figures["available_kv_gib"] == Gib("51.63")  # after a Markdown "> "
    assert log.figures["kv_cache_tokens"] == 410_128


def test_command_with_backslash_continuations() -> None:
    log = parse_log(read("vllm-issue21348-qwen3-235b-fp8-tp4.log"))
    assert log.model == "/path/to/Qwen3-235B-A22B-FP8"
    assert log.settings["tensor_parallel_size"] == 4


def test_refusal_wrapped_over_quoted_lines() -> None:
    log = parse_log(read("vllm-0.29.1-sparkvllm396-minimax-m27-refused.log"))
    f = log.figures
    assert f["available_kv_gib"] == Gib("22.5")
    assert f["needed_kv_gib"] == Gib("23.25")
    assert f["refused_length"] == 196_608
    assert f["estimated_max_model_len"] == 190_272


def test_sglang_server_args_and_pool_lines() -> None:
    log = parse_log(read("sglang-0.4.3-llmsinclouds-qwq32b-tp4.log"))
    assert log.engine == "sglang"
    assert log.model == "/home/model/Qwen/QwQ-32B"
    s = log.settings
    assert s["tensor_parallel_size"] == 4
    assert s["mem_fraction_static"] == 0.85
    assert s["kv_cache_dtype"] == "auto"
    assert "num_speculative_tokens" not in s  # ServerArgs prints 8 with no algorithm
    f = log.figures
    assert f["load_begin_avail_gib"] == Gib("21.63")
    assert f["load_end_avail_gib"] == Gib("6.09")
    assert f["weights_gib"] == Gib("15.54")
    assert f["kv_cache_tokens"] == 46_611
    assert f["k_size_gib"] == Gib("1.42") and f["v_size_gib"] == Gib("1.42")
    assert f["max_total_num_tokens"] == 46_611
    assert f["context_len"] == 131_072
    assert f["cuda_graphs_gib"] == Gib("0.93")


def test_sglang_launch_command() -> None:
    log = parse_log(read("sglang-issue21348-qwen3-235b-fp8-tp4.log"))
    assert log.engine == "sglang"
    assert log.model == "/path/to/Qwen3-235B-A22B-FP8"
    assert log.settings["tensor_parallel_size"] == 4
    assert log.settings["mem_fraction_static"] == 0.93
    assert log.figures["kv_cache_tokens"] == 367_404


# -- wordings of other releases -------------------------------------------------------------


def test_v1_08_model_loading_four_decimals() -> None:
    # vllm-project/vllm#17469 (v0.8.5): "%.4f GiB and %.6f seconds".
    log = parse_log(
        "(VllmWorker rank=0 pid=105) INFO 04-29 01:07:41 [gpu_model_runner.py:1347] Model "
        "loading took 14.2474 GiB and 558.868858 seconds\n"
        "INFO 04-25 10:23:33 [kv_cache_utils.py:634] GPU KV cache size: 106,640 tokens\n")
    w = log.figures["weights_gib"]
    assert w == Gib("14.2474")
    assert w.half_width == pytest.approx(0.00005)  # four printed decimals
    assert log.figures["kv_cache_tokens"] == 106_640


def test_v032_one_line_capacity_and_two_decimal_rounding() -> None:
    # vLLM 0.32 kv_cache_utils.update_kv_cache_capacity: one line for both figures;
    # format_gib = round(x, 2) prints "21.5" for 21.50, which is still ±0.005 GiB.
    log = parse_log(
        "INFO [gpu_worker.py:760] Available KV cache memory: 21.5 GiB\n"
        "INFO [kv_cache_utils.py:2329] GPU KV cache size: 1,234,560 tokens, Maximum "
        "concurrency for 131,072 tokens per request: 9.42x\n")
    avail = log.figures["available_kv_gib"]
    assert avail.low == int(21.495 * GIB) and avail.high == int(21.505 * GIB)
    assert log.figures["kv_cache_tokens"] == 1_234_560
    assert log.figures["max_concurrency"] == Gib("9.42")


def test_v011_usage_report() -> None:
    # noonghunna/club-3090#1087 (gpu_worker.py:789 of a 0.2x release).
    log = parse_log(
        "(Worker_TP0 pid=223) INFO 08-22 04:42:13 [gpu_worker.py:789] Free memory on device "
        "(30.27/31.4 GiB) on startup. Desired GPU memory utilization is (0.92, 28.88 GiB). "
        "Actual usage is 15.03 GiB for consumed memory (weights + non-torch), 1.59 GiB for "
        "peak activation, and 0.09 GiB for CUDAGraph memory. Replace gpu_memory_utilization "
        "config with `--kv-cache-memory=12917635953` (12.03 GiB) to fit into requested "
        "memory, or `--kv-cache-memory=14405811712` (13.42 GiB) to fully utilize gpu memory. "
        "Current kv cache memory in use is 12.26 GiB.\n"
        "Available KV cache memory: 12.26 GiB\n")
    f = log.figures
    assert f["gpu_total_gib"] == Gib("31.4")
    assert f["consumed_gib"] == Gib("15.03")
    assert f["activation_gib"] == Gib("1.59")
    assert f["cuda_graphs_gib"] == Gib("0.09")


def test_v011_config_line_and_graph_capture() -> None:
    # IBM/CodeEngine tutorial log (v0.11.0): the resolved config and the capture line.
    log = parse_log(
        "(EngineCore_DP0 pid=175) INFO 11-14 14:23:39 [core.py:77] Initializing a V1 LLM "
        "engine (v0.11.0) with config: model='ibm-granite/granite-4.0-micro', "
        "speculative_config=None, tokenizer='ibm-granite/granite-4.0-micro', "
        "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, dtype=torch.bfloat16, "
        "max_seq_len=131072, download_dir=None, load_format=auto, tensor_parallel_size=1, "
        "pipeline_parallel_size=1, data_parallel_size=1, disable_custom_all_reduce=False, "
        "quantization=fp8, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, "
        "seed=0, served_model_name=ibm-granite/granite-4.0-micro, enable_prefix_caching=False, "
        "chunked_prefill_enabled=True, pooler_config=None, compilation_config={\"level\":3,"
        "\"cudagraph_mode\":[2,1],\"cudagraph_capture_sizes\":[512,504,8,4,2,1]}\n"
        "(EngineCore_DP0 pid=175) INFO 11-14 14:26:16 [gpu_worker.py:298] Available KV cache "
        "memory: 35.34 GiB\n"
        "(EngineCore_DP0 pid=175) INFO 11-14 14:26:21 [gpu_model_runner.py:3480] Graph "
        "capturing finished in 5 secs, took 0.72 GiB\n")
    assert log.engine_version == "0.11.0"
    assert log.model == "ibm-granite/granite-4.0-micro"
    s = log.settings
    assert (s["dtype"], s["max_model_len"], s["tensor_parallel_size"]) == (
        "bfloat16", 131072, 1)
    assert s["quantization"] == "fp8"
    assert s["enable_prefix_caching"] is False
    assert log.figures["cuda_graphs_gib"] == Gib("0.72")


def test_hard_wrapped_repr_is_joined() -> None:
    # noonghunna/club-3090#1339: the paste wrapped inside a dict key.
    log = parse_log(
        "INFO [api_utils.py:286] non-default args: {'model': 'm', 'max_num_seqs': 1, "
        "'enable_chunked_prefil\nl': True, 'speculative_config': {'method': 'dflash', "
        "'num_speculative_tokens': 7}}\n"
        "Available KV cache memory: 3.5 GiB\n")
    assert log.settings["max_num_seqs"] == 1
    assert log.settings["speculative_method"] == "dflash"
    assert log.settings["num_speculative_tokens"] == 7


def test_workers_with_different_budgets_keep_the_smallest() -> None:
    log = parse_log("(Worker_TP0) Available KV cache memory: 11.05 GiB\n"
                    "(Worker_TP1) Available KV cache memory: 11.03 GiB\n")
    assert log.figures["available_kv_gib"] == Gib("11.03")
    assert any("smallest" in note for note in log.notes)


def test_a_log_without_kv_lines_is_one_clear_error() -> None:
    text = ("(APIServer pid=1) INFO [utils.py:233] non-default args: {'model': 'x'}\n"
            "INFO Loading weights took 3.2 seconds\n")
    with pytest.raises(LogError, match="no KV cache lines"):
        parse_log(text)
    with pytest.raises(LogError, match="not a vLLM or SGLang"):
        parse_log("hello\nworld\n")

"""``explain`` reads every memory line of a vLLM 0.28-0.33 start-up log and sets each beside
kvledger's budget line of the same key; ``plan`` and ``explain`` size the same deployment with
the same reserves.

The log below is written here in vLLM 0.33's wording (``v1/worker/gpu_worker.py``
``determine_available_memory`` and ``compile_or_warm_up_model``, the same f-strings in 0.28
and 0.32), for a deployment made up for the test: Llama-3.1-8B on a device whose CUDA total
is 79.19 GiB, utilization 0.9, max_model_len 8,192. Its numbers are consistent with vLLM's
rules, worked by hand:

- desired = ceil(79.19 GiB × 0.9) = 71.271 GiB → printed 71.27;
- available = desired − consumed − peak activation = 71.27 − 15.3 − 1.92 = 54.05 GiB;
- peak activation 1.92 = transient peak 1.40 + the CUDA graph estimate 0.52 it subtracted.
"""

from __future__ import annotations

import pytest

from kvledger.plan.api import plan_model
from kvledger.plan.request import PlanRequest
from kvledger.report.explain import explain_log
from kvledger.report.findings import Check

GIB = 1 << 30
LLAMA = "meta-llama/Meta-Llama-3.1-8B"

CONFIG = (
    "(EngineCore pid=11) INFO 01-02 10:00:00 [core.py:97] Initializing a V1 LLM engine "
    "(v0.33.0) with config: model='meta-llama/Meta-Llama-3.1-8B', dtype=torch.bfloat16, "
    "max_seq_len=8192, tensor_parallel_size=1, pipeline_parallel_size=1, "
    "data_parallel_size=1, kv_cache_dtype=auto, enable_prefix_caching=True\n"
)
MEMORY = (
    "(EngineCore pid=11) INFO 01-02 10:00:20 [gpu_model_runner.py:4421] Model loading took "
    "14.99 GiB memory and 6.204113 seconds\n"
    "(EngineCore pid=11) INFO 01-02 10:00:41 [gpu_worker.py:773] Available KV cache memory: "
    "54.05 GiB\n"
    "(EngineCore pid=11) INFO 01-02 10:00:52 [gpu_worker.py:1002] CUDA graph pool memory: "
    "0.61 GiB (actual), 0.52 GiB (estimated), difference: 0.09 GiB (14.8%).\n"
    "(EngineCore pid=11) INFO 01-02 10:00:52 [gpu_worker.py:1060] Free memory on device "
    "(78.7/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB). Actual "
    "usage is 15.3 GiB for consumed memory (weights + non-torch), 1.92 GiB for peak "
    "activation, and 0.61 GiB for CUDAGraph memory. Replace gpu_memory_utilization config "
    "with `--kv-cache-memory=57723165491` (53.76 GiB) to fit into requested memory, or "
    "`--kv-cache-memory=65693118054` (61.18 GiB) to fully utilize gpu memory. Current kv "
    "cache memory in use is 54.05 GiB.\n"
)


def _checks(text: str) -> dict[str, Check]:
    e = explain_log(text)
    return {c.name: c for c in e.checks}


def test_every_memory_line_is_read() -> None:
    e = explain_log(CONFIG + MEMORY)
    f = e.figures
    assert e.engine_version == "0.33.0"
    assert f["gpu_total_gib"] == "79.19 GiB" and f["gpu_free_gib"] == "78.7 GiB"
    assert f["requested_gib"] == "71.27 GiB"
    assert f["consumed_gib"] == "15.3 GiB" and f["activation_gib"] == "1.92 GiB"
    assert f["cuda_graphs_gib"] == "0.61 GiB" and f["cuda_graphs_estimate_gib"] == "0.52 GiB"
    assert f["kv_to_requested_bytes"] == 57_723_165_491
    assert f["kv_to_gpu_bytes"] == 65_693_118_054
    assert f["available_kv_gib"] == "54.05 GiB"
    assert e.settings["gpu_memory_utilization"] == 0.9  # from the "Desired" line


def test_one_check_per_budget_key_with_the_logged_side_by_hand() -> None:
    checks = _checks(CONFIG + MEMORY)
    for key in ("gpu_total", "utilization", "weights", "non_torch", "activation_peak",
                "cuda_graphs", "kv_budget"):
        assert key in checks, key
        assert set(checks[key].to_json()) >= {"name", "logged", "derived", "match", "why"}
    logged = {k: checks[k].logged for k in checks}
    assert logged["gpu_total"] == int(79.19 * GIB)
    assert logged["utilization"] == int(71.27 * GIB)
    assert logged["weights"] == int(14.99 * GIB)
    # non-torch = consumed − weights = 15.3 − 14.99 = 0.31 GiB
    assert logged["non_torch"] == int(15.3 * GIB) - int(14.99 * GIB)
    # activation = peak activation − the graph estimate inside it = 1.92 − 0.52 = 1.40 GiB
    assert logged["activation_peak"] == int(1.92 * GIB) - int(0.52 * GIB)
    assert logged["cuda_graphs"] == int(0.52 * GIB)
    assert logged["kv_budget"] == int(54.05 * GIB)
    # kvledger's side: the total is the log's; int(79.19 GiB × 0.9) = 71.271 GiB; Llama-3.1-8B
    # weights 8.03B × 2 B = 14.96 GiB (within 5 % of 14.99); vLLM 0.33's 0.5 GiB graph
    # estimate (reserves.py) within ± 0.5 GiB of 0.52.
    assert checks["gpu_total"].match is True and checks["utilization"].match is True
    assert checks["utilization"].derived == int(int(79.19 * GIB) * 0.9)
    assert checks["weights"].match is True
    assert checks["cuda_graphs"].derived == GIB // 2 and checks["cuda_graphs"].match is True


def test_the_desired_memory_allows_for_the_printed_totals_rounding() -> None:
    # vLLM multiplies its exact total; the log prints it to two decimals. A total printed
    # 184.31 GiB is 184.305-184.315 GiB, so ceil(T × 0.92) is 169.5606-169.5698 GiB: a printed
    # 169.56 agrees with kvledger's int(184.31 GiB × 0.92) = 169.5652 GiB (169.57 printed).
    text = CONFIG.replace("max_seq_len=8192", "max_seq_len=8192, gpu_memory_utilization=0.92") \
        + MEMORY.replace("(78.7/79.19 GiB)", "(180.1/184.31 GiB)").replace(
            "(0.9, 71.27 GiB)", "(0.92, 169.56 GiB)")
    check = _checks(text)["utilization"]
    assert check.derived == int(int(184.31 * GIB) * 0.92)
    assert check.match is True
    # 169.55 is outside what 184.305-184.315 GiB × 0.92 can print.
    assert _checks(text.replace("169.56 GiB", "169.55 GiB"))["utilization"].match is False


def test_explain_and_plan_give_the_same_reserves_for_the_same_deployment() -> None:
    # A log without the memory report: every reserve is kvledger's own, and must be the
    # vLLM 0.33 profile's that `plan` uses (before: explain took the engine-neutral 1 GiB
    # graph and 0.5 GiB non-torch defaults — 0.81 / 1.00 / 0.50 GiB against plan's
    # 1.77 / 0.50 / 0.31 GiB).
    text = CONFIG + "INFO [gpu_worker.py:773] Available KV cache memory: 60.0 GiB\n"
    e = explain_log(text, gpu="H100-80GB")
    plan = plan_model(LLAMA, PlanRequest(engine="vllm==0.33", gpu="H100-80GB",
                                         gpu_memory_utilization=0.92, max_model_len=8192,
                                         enable_prefix_caching=True))
    assert e.check("available_kv_bytes").derived == plan.available_bytes
    lines = {ln.key: ln.bytes for ln in plan.budget.lines}
    why = e.check("available_kv_bytes").why
    for key in ("activation_peak", "cuda_graphs", "non_torch"):
        assert f"{lines[key] / GIB:.2f}" in why, key
    assert lines["cuda_graphs"] == GIB // 2  # 0.33's estimate, not the generic 1 GiB


def test_start_up_and_headroom_from_the_log() -> None:
    checks = _checks(CONFIG + MEMORY)
    start = checks["free_memory_at_start"]
    # 78.7 GiB free at the snapshot ≥ the desired 71.27 GiB: vLLM starts.
    assert start.match is True and start.logged == int(78.7 * GIB)
    head = checks["headroom_after_kv"]
    # Outside the request: 78.7 − 71.27 = 7.43 GiB; the capture beyond the estimate:
    # 0.61 − 0.52 = 0.09 GiB.
    assert head.logged == int(78.7 * GIB) - int(71.27 * GIB)
    assert head.derived == int(0.61 * GIB) - int(0.52 * GIB)
    assert head.match is True


def test_the_free_memory_refusal_is_read() -> None:
    # v1/worker/utils.py request_memory's ValueError, as vLLM 0.33 words it.
    text = CONFIG + (
        "(EngineCore pid=11) ERROR 01-02 10:00:05 [core.py:1101] ValueError: Free memory on "
        "device cuda:0 (23.05/23.56 GiB) on startup is less than desired GPU memory "
        "utilization (0.99, 23.33 GiB). Decrease GPU memory utilization or reduce GPU memory "
        "used by other processes.\n")
    start = explain_log(text, model=LLAMA).check("free_memory_at_start")
    assert start.match is False
    assert start.logged == int(23.05 * GIB) and start.derived == int(23.33 * GIB)
    # 23.05 / 23.56 = 0.978 → the hint names 0.97
    assert "vLLM refused to start" in start.why and "0.97 or less" in start.why


@pytest.mark.parametrize("key", ["non_torch", "activation_peak", "kv_budget"])
def test_a_reserve_far_from_kvledgers_is_a_mismatch(key: str) -> None:
    # The same log with 6 GiB more consumed memory and 6 GiB less KV: non-torch becomes
    # 21.3 − 14.99 = 6.31 GiB, far outside kvledger's ~0.34 ± 0.25 GiB.
    text = CONFIG + MEMORY.replace("15.3 GiB for consumed", "21.3 GiB for consumed").replace(
        "54.05 GiB", "48.05 GiB")
    checks = _checks(text)
    if key == "non_torch":
        assert checks[key].match is False
    else:
        assert checks[key].match is (key != "kv_budget")  # activation unchanged; KV off 6 GiB


def test_the_0_10_wording_and_the_graph_estimate_line() -> None:
    # vLLM 0.10's report (gpu_worker.py; the wording of public 0.10.2 logs), written for a
    # made-up Llama-3.1-8B run: desired ceil(79.19 × 0.9) = 71.27 GiB; KV = 71.27 − 14.99
    # (weights) − 1.35 (peak activation) − 0.08 (non-torch) = 54.85 GiB, printed in exact
    # bytes; the graphs (0.61 GiB) were captured after, nothing subtracted.
    kv = int(54.85 * GIB)
    text = CONFIG.replace("v0.33.0", "v0.10.2") + (
        "INFO [gpu_model_runner.py:2392] Model loading took 14.99 GiB and 6.1 seconds\n"
        "INFO [gpu_worker.py:391] Free memory on device (78.7/79.19 GiB) on startup. Desired "
        "GPU memory utilization is (0.9, 71.27 GiB). Actual usage is 14.99 GiB for weight, "
        "1.35 GiB for peak activation, 0.08 GiB for non-torch memory, and 0.61 GiB for "
        "CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=1` "
        "to fit into requested memory, or `--kv-cache-memory=2` to fully utilize gpu "
        f"memory. Current kv cache memory in use is {kv} bytes.\n")
    e = explain_log(text)
    checks = {c.name: c for c in e.checks}
    assert checks["non_torch"].logged == int(0.08 * GIB)
    assert checks["activation_peak"].logged == int(1.35 * GIB)
    assert "cuda_graphs" not in checks  # no estimate was printed: none was taken
    avail = checks["available_kv_bytes"]
    assert abs(avail.logged - kv) < GIB // 10**6  # the exact bytes, as a GiB figure
    # re-derived from the logged reserves with no graph reserve: within the 0.01 GiB
    # the printed figures round to
    assert avail.match is True and abs(avail.derived - kv) < GIB // 50
    # "Estimated CUDA graph memory" (gpu_model_runner.profile_cudagraph_memory) splits a
    # 0.28+ peak activation like the "CUDA graph pool memory" line does.
    newer = CONFIG + MEMORY.replace(
        "(EngineCore pid=11) INFO 01-02 10:00:52 [gpu_worker.py:1002] CUDA graph pool memory: "
        "0.61 GiB (actual), 0.52 GiB (estimated), difference: 0.09 GiB (14.8%).\n",
        "INFO [gpu_model_runner.py:6737] Estimated CUDA graph memory: 0.52 GiB total\n")
    split = _checks(newer)
    assert split["cuda_graphs"].logged == int(0.52 * GIB)
    assert split["activation_peak"].logged == int(1.92 * GIB) - int(0.52 * GIB)


def _with_quantization(method: str) -> str:
    return CONFIG.replace("dtype=torch.bfloat16,", f"dtype=torch.bfloat16, quantization={method},"
                          ) + MEMORY.replace("14.99 GiB memory", "8.49 GiB memory")


def test_an_online_method_the_log_names_sizes_kvledgers_weights() -> None:
    # vLLM's online fp8 (quantization=fp8 on Llama-3.1-8B's unquantized checkpoint): the
    # linear layers at 1 B, the embedding, LM head and norms at bf16 (online_quant.py):
    # 8,030,261,248 parameters − 2 × 525,336,576 (embedding, LM head) − 266,240 (norms) =
    # 6,979,321,856 B, + 2 × (1,050,673,152 + 266,240) = 9,081,200,640 B = 8.4575 GiB.
    checks = _checks(_with_quantization("fp8"))
    assert checks["weights"].derived == 9_081_200_640
    assert checks["weights"].match is True


def test_a_method_kvledger_cannot_size_leaves_weights_and_budget_not_derived() -> None:
    # A method the config does not declare and kvledger does not size online (here one no
    # vLLM release has, as a fork's log would show): before, kvledger's weights line was the
    # bf16 checkpoint's (14.96 GiB beside 8.49 logged), a plausible wrong budget.
    checks = _checks(_with_quantization("online_int3"))
    for key in ("weights", "kv_budget"):
        assert checks[key].derived is None and checks[key].match is None
        assert "online_int3" in checks[key].why
    # The lines that do not depend on the weights are still compared.
    assert checks["gpu_total"].match is True


def test_consumed_memory_without_a_weights_line_is_weights_plus_non_torch() -> None:
    # A log that prints the consumed memory but no "Model loading took" line (a grep of the
    # report, as people paste it), written here in vLLM 0.33's wording: consumed 20.3 GiB,
    # peak activation 1.92 GiB (no graph estimate line: the sum is what was subtracted).
    # available = 71.27 − 20.3 − 1.92 = 49.05 GiB. The re-derivation takes the consumed memory
    # whole (kvledger's weights + the rest as non-torch), not kvledger's own non-torch.
    text = CONFIG + (
        "(EngineCore pid=11) INFO 01-02 10:00:41 [gpu_worker.py:773] Available KV cache "
        "memory: 49.05 GiB\n"
        "(EngineCore pid=11) INFO 01-02 10:00:52 [gpu_worker.py:1060] Free memory on device "
        "(78.7/79.19 GiB) on startup. Desired GPU memory utilization is (0.9, 71.27 GiB). "
        "Actual usage is 20.3 GiB for consumed memory (weights + non-torch), 1.92 GiB for peak "
        "activation, and 0.61 GiB for CUDAGraph memory. Current kv cache memory in use is "
        "49.05 GiB.\n")
    check = _checks(text)["available_kv_bytes"]
    assert check.derived is not None
    assert abs(check.derived - 49.05 * GIB) <= 0.02 * GIB


def test_the_0_10_sampler_the_log_names_sets_the_activation_line() -> None:
    # vLLM 0.10.2 sorts in its sampler without FlashInfer (topk_topp_sampler.py); the log says
    # which sampler it took. The CONFIG line's run: 79.19 GiB (≥ 70 GiB, serve defaults 1,024
    # sequences, 8,192 tokens); Llama-3.1-8B vocab 128,256, hidden 4,096. Sorting:
    # 1,024 × 128,256 × (2 + 4 + 32) + 8,192 × 4,096 × 2 = 5,057,806,336 B; FlashInfer's
    # sampler (the four tensors): 1,024 × 128,256 × 14 + 67,108,864 = 1,905,786,880 B.
    base = CONFIG.replace("v0.33.0", "v0.10.2").replace(
        "enable_prefix_caching=True", "enable_prefix_caching=True, max_num_seqs=1024, "
        "max_num_batched_tokens=8192") + (
        "INFO [gpu_model_runner.py:2392] Model loading took 14.99 GiB and 6.1 seconds\n"
        "INFO [gpu_worker.py:298] Available KV cache memory: 50.0 GiB\n"
        "INFO [gpu_worker.py:391] Free memory on device (78.7/79.19 GiB) on startup. Desired "
        "GPU memory utilization is (0.9, 71.27 GiB). Actual usage is 14.99 GiB for weight, "
        "5.2 GiB for peak activation, 0.08 GiB for non-torch memory, and 0.61 GiB for "
        "CUDAGraph memory.\n")
    native = "WARNING [topk_topp_sampler.py:69] FlashInfer is not available. Falling back " \
        "to the PyTorch-native implementation of top-p & top-k sampling.\n"
    flashinfer = "INFO [topk_topp_sampler.py:50] Using FlashInfer for top-p & top-k " \
        "sampling.\n"
    for text, expected in ((base, 5_057_806_336), (native + base, 5_057_806_336),
                           (flashinfer + base, 1_905_786_880)):
        assert _checks(text)["activation_peak"].derived == expected
    # The line read, not only the default: the fallback is a False, no line a missing figure.
    assert explain_log(native + base).figures["flashinfer_sampler"] is False
    assert explain_log(flashinfer + base).figures["flashinfer_sampler"] is True
    assert "flashinfer_sampler" not in explain_log(base).figures

"""``explain``'s ``kv_budget`` line takes no CUDA-graph estimate where the logged run took none
(``report/budget_checks._no_graph_estimate``): under ``--enforce-eager`` (cudagraph_mode NONE,
nothing captured) and before vLLM v0.21.0 (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` did
not exist). Log texts written here in vLLM's wording; the difference is kvledger's graph
estimate for 0.32/0.33, 0.5 GiB = 536,870,912 B (``engines/vllm/reserves.py``).
"""

from __future__ import annotations

from kvledger.report.explain import explain_log

QWEN = "Qwen/Qwen2.5-7B"  # a bundled catalog id (no network in tests)


def _log(version: str, eager: bool) -> str:
    args = ("{'dtype': 'float16', 'max_model_len': 4096, 'gpu_memory_utilization': 0.9"
            + (", 'enforce_eager': True}" if eager else "}"))
    return "\n".join((
        f"INFO 09-07 00:14:16 [api_utils.py:286] non-default args: {args}",
        f"(EngineCore pid=7) INFO 09-07 00:14:19 [core.py:123] Initializing a V1 LLM engine "
        f"(v{version}) with config: model='Qwen/Qwen2.5-1.5B', dtype=torch.float16, "
        f"max_seq_len=4096, tensor_parallel_size=1, enforce_eager={eager}",
        "(EngineCore pid=7) INFO 09-07 00:14:22 [gpu_model_runner.py:397] Model loading took "
        "2.98 GiB memory and 1.988948 seconds",
        "(EngineCore pid=7) INFO 09-07 00:14:25 [gpu_worker.py:586] Available KV cache memory: "
        "17.36 GiB",
        "(EngineCore pid=7) INFO 09-07 00:14:26 [gpu_worker.py:817] Free memory on device "
        "(23.3/23.47 GiB) on startup. Desired GPU memory utilization is (0.9, 21.12 GiB). "
        "Actual usage is 3.25 GiB for consumed memory (weights + non-torch), 0.5 GiB for peak "
        "activation, and 0.0 GiB for CUDAGraph memory. Current kv cache memory in use is "
        "17.36 GiB.",
    ))


def _kv_budget(text: str) -> int:
    derived = next(c for c in explain_log(text, model=QWEN).checks if c.name == "kv_budget")
    assert derived.derived is not None
    return int(derived.derived)


def test_enforce_eager_takes_no_graph_estimate() -> None:
    graphs = _kv_budget(_log("0.28.0", eager=False))
    eager = _kv_budget(_log("0.28.0", eager=True))
    assert eager - graphs == 536_870_912


def test_before_v0_21_no_graph_estimate_was_taken() -> None:
    # 0.20 and 0.22 count the other reserves alike (their profiles differ in a log line only).
    after = _kv_budget(_log("0.22.0", eager=False))
    before = _kv_budget(_log("0.20.0", eager=False))
    assert before - after == 536_870_912

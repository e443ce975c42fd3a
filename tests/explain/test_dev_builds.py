"""A vLLM development build that served an architecture its base release's registry lacks is
replayed with that release's rules and the architecture registered; a release is not.

vLLM 0.28.0's ``model_executor/models/registry.py`` has no ``Glm5NextForConditionalGeneration``
(0.30 adds it: ``releases/v0_28.py unregistered_architectures``). The logs below are written
here for a made-up GLM-5.3-Flash run at TP 8 on a 139.8 GiB device; only the version line
differs between them. ``0.28.1rc1.dev580+g385dce36b`` is how a build 580 commits past the 0.28
tag names itself.
"""

from __future__ import annotations

from kvledger.report.explain import explain_log

MODEL = "zai-org/GLM-5.3-Flash"
BODY = (
    "(EngineCore pid=7) INFO 01-02 10:00:00 [core.py:97] Initializing a V1 LLM engine "
    "(v{version}) with config: model='{model}', dtype=torch.bfloat16, max_seq_len=131072, "
    "tensor_parallel_size=8, pipeline_parallel_size=1, data_parallel_size=1, "
    "kv_cache_dtype=auto, enable_prefix_caching=True\n"
    "(Worker pid=9) INFO 01-02 10:03:00 [gpu_model_runner.py:4421] Model loading took "
    "38.24 GiB memory and 226.51 seconds\n"
    "(Worker pid=9) INFO 01-02 10:05:00 [gpu_worker.py:637] Available KV cache memory: "
    "81.79 GiB\n"
    "(Worker pid=9) INFO 01-02 10:05:30 [gpu_worker.py:876] Free memory on device "
    "(137.64/139.8 GiB) on startup. Desired GPU memory utilization is (0.9, 125.82 GiB). "
    "Actual usage is 39.98 GiB for consumed memory (weights + non-torch), 4.04 GiB for peak "
    "activation, and 1.2 GiB for CUDAGraph memory. Current kv cache memory in use is "
    "81.79 GiB.\n"
)


def _explain(version: str):  # type: ignore[no-untyped-def]
    return explain_log(BODY.format(version=version, model=MODEL))


def test_a_development_build_registers_what_it_served() -> None:
    e = _explain("0.28.1rc1.dev580+g385dce36b")
    assert e.engine_release == "vLLM 0.28.0"
    assert e.check("kv_budget").derived is not None
    assert e.check("available_kv_bytes").derived is not None
    assert any("development build after vLLM 0.28.0" in n and
               "Glm5NextForConditionalGeneration" in n for n in e.notes)


def test_the_release_itself_still_refuses_it() -> None:
    e = _explain("0.28.0")
    budget = e.check("kv_budget")
    assert budget.derived is None
    assert "registry" in budget.why and "Glm5NextForConditionalGeneration" in budget.why
    assert not any("development build" in n for n in e.notes)


def test_the_bound_profile_is_gone_afterwards() -> None:
    from kvledger.plan.engines.vllm.releases import RELEASES

    before = set(RELEASES)
    _explain("0.28.1rc1.dev580+g385dce36b")
    assert set(RELEASES) == before

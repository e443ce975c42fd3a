"""Answers: max context at a concurrency (bisection), fit's search order, fit on catalog models."""

from __future__ import annotations

import pytest

from kvledger.plan.answers import fit_candidates, max_context_at
from kvledger.plan.api import plan_model
from kvledger.plan.fit import fit_model
from kvledger.plan.request import PlanRequest


def test_max_context_bisection_on_a_page_budget() -> None:
    # 5,120 blocks of 16 tokens; concurrency(L) = 5,120 / ceil(L / 16).
    # 4 requests: ceil(L / 16) ≤ 1,280 → L ≤ 20,480.
    def conc(length: int) -> float:
        return 5120 / -(-length // 16)

    assert max_context_at(4, conc, hi=131072) == 20480
    assert max_context_at(1, conc, hi=8192) == 8192  # capped at the bound
    assert max_context_at(6000, conc, hi=8192) is None  # 5,120 blocks < 6,000 requests


def test_fit_candidates_prefer_tp_in_a_node_then_pp() -> None:
    # One node of 8: TP first, then PP inside the node (fewer GPUs, less PP first), then
    # across nodes TP 8 × PP (plan/fit_layouts.py).
    order = fit_candidates(32, (1, 2, 4, 8), (1, 2, 4))
    assert order == [(1, 1), (2, 1), (4, 1), (8, 1), (1, 2), (2, 2), (1, 4), (4, 2), (2, 4),
                     (8, 2), (8, 4)]
    # Four GPUs a node: TP 8 is not tried (TP stays in a node); across nodes TP 4 × PP.
    assert fit_candidates(32, (1, 2, 4, 8), (1, 2, 4), gpus_per_node=4) == [
        (1, 1), (2, 1), (4, 1), (1, 2), (2, 2), (1, 4), (4, 2), (4, 4)]


def test_plan_answers_max_context_at_concurrency() -> None:
    # Llama-3.1-8B at 10 GiB: 5,120 blocks; 4 requests → 20,480 tokens each (as above).
    result = plan_model("meta-llama/Meta-Llama-3.1-8B", PlanRequest(
        engine="native", kv_cache_memory_bytes=10737418240, max_model_len=32768), concurrency=4)
    assert result.answers["max_context_at_concurrency"] == 20480


@pytest.mark.parametrize("engine", ["native", "vllm==0.33"])
def test_fit_llama_70b_on_h100(engine: str) -> None:
    # Llama-3.1-70B bf16 ≈ 70.55 B params ≈ 141 GB of weights: TP 1 leaves nothing; TP 2 leaves
    # ~8 GB per GPU for 2.5 MB/token (80 layers × 8 heads / 2 × 128 × 2 × 2 B = 163,840 B per
    # token per GPU → ~1 request of 32K); TP 4 ≈ 15.2 requests (short of 16); TP 8 holds 16.
    result = fit_model("meta-llama/Meta-Llama-3.1-70B", PlanRequest(engine=engine),
                       gpu="H100-80GB", concurrency=16, context=32768)
    assert result.fits and result.plan is not None
    assert (result.plan.tensor_parallel_size, result.plan.pipeline_parallel_size) == (8, 1)
    tried = [(a.tensor_parallel_size, a.pipeline_parallel_size) for a in result.attempts]
    assert tried == [(1, 1), (2, 1), (4, 1), (8, 1)]  # TP inside the node first
    assert result.plan.max_concurrency >= 16


def test_fit_qwen3_32b_and_nothing_fits() -> None:
    ok = fit_model("Qwen/Qwen3-32B", PlanRequest(), gpu="H100-80GB", concurrency=8,
                   context=8192)
    assert ok.fits and ok.plan is not None
    # Qwen3-32B bf16 weights ≈ 65 GB leave too little on one 80 GB GPU for 8 × 8K; two do.
    assert ok.plan.tensor_parallel_size * ok.plan.pipeline_parallel_size == 2
    none = fit_model("meta-llama/Meta-Llama-3.1-8B", PlanRequest(), gpu="L4",
                     concurrency=100000, context=131072, tp_sizes=(1, 2), pp_sizes=(1,))
    assert not none.fits and "no layout" in none.reason
    assert len(none.attempts) == 2 and not any(a.fits for a in none.attempts)

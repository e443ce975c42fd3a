"""``plan --json``'s ``totals`` under data parallelism: a request never spans replicas, so
where one replica cannot hold one max_model_len request (vLLM refuses to start) the
replicas together run none — ``totals.max_concurrency`` is 0 with the reason, as the text
summary says, not the per-replica fraction times the replicas. Release named:
``vllm==0.33``, ``--block-size 16``."""

from __future__ import annotations

from kvledger.plan.api import plan_model
from kvledger.plan.request import PlanRequest

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
# Llama-3.1-8B's KV per token: 32 layers × 8 KV heads × 128 dims × 2 (K, V) × 2 B (bf16)
# = 131,072 B; a block of 16 tokens = 2,097,152 B.
GIB = 1 << 30


def _totals(budget: int, max_model_len: int, dp: int) -> tuple[dict[str, object], object]:
    request = PlanRequest(engine="vllm", engine_release="0.33", kv_cache_memory_bytes=budget,
                          block_size=16, max_model_len=max_model_len, data_parallel_size=dp)
    data = plan_model(LLAMA, request).to_json()
    return data["totals"], data


def test_replicas_that_each_refuse_run_no_request_together() -> None:
    # 1 GiB / 2,097,152 B = 512 blocks per replica = 8,192 tokens; one 131,072-token request
    # needs 8,192 blocks: 8,192 / 131,072 = 0.0625 of one. Four replicas hold 4 × 0.0625 =
    # 0.25 requests' worth of blocks, yet no request runs (none spans two replicas).
    totals, data = _totals(GIB, 131_072, 4)
    assert (data["num_blocks"], data["max_concurrency"]) == (512, 0.0625)
    assert data["vllm_refuses_to_start"] is True
    assert totals["max_concurrency"] == 0.0
    assert "each replica holds 0.06 of one 131,072-token request" in \
        str(totals["max_concurrency_note"])
    assert totals["kv_cache_tokens"] == 4 * 8_192  # the tokens are there; no request fits


def test_replicas_that_each_run_add_up() -> None:
    # 4 GiB / 2,097,152 B = 2,048 blocks = 32,768 tokens; at 8,192 tokens a request:
    # 32,768 / 8,192 = 4 requests per replica, 2 replicas: 8.
    totals, data = _totals(4 * GIB, 8_192, 2)
    assert data["max_concurrency"] == 4.0
    assert totals["max_concurrency"] == 8.0
    assert "max_concurrency_note" not in totals

"""A newcomer's first script: the top level offers planning, deriving and the errors, and the
request takes sizes in the CLI's forms (kvledger.sizes, the one grammar)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kvledger


def test_first_names_are_at_the_top() -> None:
    from kvledger import (
        BudgetTooSmall,
        KvledgerError,
        PlanRequest,
        derive_model,
        page_pool,
        plan_model,
    )
    from kvledger.derive import derive_model as derive_home
    from kvledger.plan.api import plan_model as plan_home

    assert plan_model is plan_home and derive_model is derive_home
    assert issubclass(BudgetTooSmall, KvledgerError)
    assert PlanRequest().engine and callable(page_pool)
    for name in ("plan_model", "PlanRequest", "derive_model", "KvledgerError", "BudgetTooSmall"):
        assert name in kvledger.__all__ and name in dir(kvledger)


def test_import_kvledger_loads_no_planner() -> None:
    # The names are lazy: a bare import pulls in neither the planner nor the deriver.
    code = ("import sys, kvledger; print(sorted(m for m in sys.modules "
            "if m.startswith('kvledger.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['kvledger.version']"


def test_request_takes_the_cli_forms() -> None:
    request = kvledger.PlanRequest(max_model_len="32k", kv_cache_memory_bytes="10GiB",
                                   max_num_batched_tokens="8K", non_torch_bytes="1.5GiB",
                                   gpu_total_bytes="80GB")
    assert request.max_model_len == 32_000  # vLLM's decimal k: 32 * 1000
    assert request.kv_cache_memory_bytes == 10 * 2**30  # 10,737,418,240
    assert request.max_num_batched_tokens == 8 * 1024  # vLLM's binary K
    assert request.non_torch_bytes == 3 * 2**29  # 1.5 GiB = 1,610,612,736
    assert request.gpu_total_bytes == 80 * 10**9  # SI GB
    # 80 GB = 74.5 GiB ≥ 70 GiB: vllm serve's tier, max_num_seqs 1024 (get_batch_defaults),
    # then min(1024, 8192) from the parsed number.
    assert request.max_num_seqs == 1024


def test_request_refuses_text_naming_the_field() -> None:
    with pytest.raises(ValueError, match=r"^max_model_len: .*byte size"):
        kvledger.PlanRequest(max_model_len="32GiB")
    with pytest.raises(ValueError, match=r"^kv_cache_memory_bytes: "):
        kvledger.PlanRequest(kv_cache_memory_bytes="lots")

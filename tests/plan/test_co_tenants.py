"""``kvledger plan A --co-tenant "B ..."``: two engines on one 80 GiB GPU planned together
(``cli/co_tenants.py``, ``plan/startup_memory.py``). The rules are vLLM 0.33's
(``v1/worker/utils.py request_memory``: ``ceil(total × gpu_memory_utilization)`` must be free
at the start-up snapshot) and SGLang 0.5.23's (``mem_fraction_static`` of the memory free
before its weights load); the arithmetic is in the comments.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from kvledger.cli.main import main
from kvledger.plan.budget import NON_TORCH, UTILIZATION, Budget, BudgetLine
from kvledger.plan.startup_memory import HeadroomPart, sglang_holding, vllm_holding

GIB = 1 << 30
LLAMA = "meta-llama/Meta-Llama-3.1-8B"
SMALL = LLAMA  # a second copy of the same model: what it holds is its engine's rule
H100 = 85_520_809_984  # the H100-80GB preset: nvidia-smi 81559MiB
# What a vLLM co-tenant at 0.5 holds: ceil(85,520,809,984 × 0.5) = 42,760,404,992 B, plus its
# own context at the largest seen on one GPU, 0.55 GiB = 55 × 2^30 // 100 = 590,558,003 B.
HELD_AT_05 = 42_760_404_992 + 590_558_003  # 43,350,962,995
CO_TENANT = f"{SMALL} --gpu-memory-utilization 0.5 --max-model-len 8192"


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["plan", *argv])
    return code, out.getvalue(), err.getvalue()


def _budget(stdout: str) -> dict[str, Any]:
    data = json.loads(stdout)
    return {**{row["key"]: row for row in data["budget"]}, "headroom": data["headroom"]}


def test_vllm_holding_by_hand() -> None:
    held = vllm_holding(H100, 0.5, multi_gpu=False)
    assert held.bytes == HELD_AT_05 == 43_350_962_995


def test_two_vllm_engines_on_an_80_gib_gpu_start_at_05_and_04() -> None:
    # vllm==0.33: the second engine at 0.4 requests ceil(85,520,809,984 × 0.4) =
    # 34,208,323,994 B; 85,520,809,984 − 43,350,962,995 − 34,208,323,994 = 7,961,522,995 B
    # (7.41 GiB) is left for its own pre-snapshot use: it starts. Its headroom line is that
    # less its own pre-snapshot memory at the smallest seen (0.4 GiB = 429,496,729 B):
    # 7,532,026,266 B.
    code, out, err = _run(LLAMA, "--engine", "vllm==0.33", "--gpu", "H100-80GB",
                          "--gpu-memory-utilization", "0.4", "--max-model-len", "8192",
                          "--co-tenant", CO_TENANT, "--json")
    assert code == 0, err
    assert "co-tenant 1:" in err and "holds 40.37 GiB" in err  # 43,350,962,995 B
    headroom = _budget(out)["headroom"]
    assert headroom["bytes"] == 7_532_026_266
    assert headroom["basis"] == "estimated"
    # The KV budget of a vLLM engine does not depend on its neighbour (a fraction of the total).
    code, alone, _ = _run(LLAMA, "--engine", "vllm==0.33", "--gpu", "H100-80GB",
                          "--gpu-memory-utilization", "0.4", "--max-model-len", "8192", "--json")
    assert _budget(alone)["kv_budget"]["bytes"] == _budget(out)["kv_budget"]["bytes"]


def test_two_vllm_engines_at_05_and_05_the_second_is_refused() -> None:
    # 85,520,809,984 − 43,350,962,995 − 42,760,404,992 = −590,558,003 B: nothing is free for
    # the second engine's own context; vLLM refuses (exit 2, its own message on stderr).
    code, out, err = _run(LLAMA, "--engine", "vllm==0.33", "--gpu", "H100-80GB",
                          "--gpu-memory-utilization", "0.5", "--max-model-len", "8192",
                          "--co-tenant", CO_TENANT)
    assert code == 2 and out == ""
    assert "vLLM 0.33 refuses to start" in err and "-0.55 GiB is left" in err


def test_sglang_beside_a_vllm_co_tenant_sizes_its_pools_from_what_is_free() -> None:
    # SGLang 0.5.23: in use before its weights = its own 0.5 GiB (536,870,912 B) + the vLLM
    # co-tenant's 43,350,962,995 B = 43,887,833,907 B; pre_model_load = 85,520,809,984 −
    # 43,887,833,907 = 41,632,976,077 B; × 0.8 = 33,306,380,861 B for weights and pools;
    # outside them 41,632,976,077 − 33,306,380,861 = 8,326,595,216 B (the headroom line).
    code, out, err = _run(LLAMA, "--engine", "sglang", "--gpu", "H100-80GB",
                          "--mem-fraction-static", "0.8", "--max-model-len", "8192",
                          "--co-tenant", CO_TENANT, "--json")
    assert code == 0, err
    lines = _budget(out)
    assert lines["non_torch"]["bytes"] == 43_887_833_907
    assert lines["utilization"]["bytes"] == 33_306_380_861
    assert lines["headroom"]["bytes"] == 8_326_595_216


def test_sglang_holding_by_hand() -> None:
    # Its own 0.5 GiB before loading (the in-use line less 10 GiB held by others), the pools
    # and weights (the fraction line, 60 GiB), and at run time the smaller of what is left
    # beside the pools (15 GiB) and what it needs (12 GiB): 0.5 + 60 + 12 = 72.5 GiB.
    budget = Budget(1, (BudgetLine(NON_TORCH, "in use", 10 * GIB + GIB // 2, "estimated"),
                        BudgetLine(UTILIZATION, "fraction", 60 * GIB, "given")),
                    after_kv=(BudgetLine("headroom", "h", 15 * GIB, "estimated", (
                        HeadroomPart("left", 15 * GIB, "exact"),
                        HeadroomPart("need", 12 * GIB, "estimated"))),))
    assert sglang_holding(budget, 10 * GIB).bytes == 72 * GIB + GIB // 2


def test_a_co_tenant_without_a_model_is_one_line() -> None:
    code, out, err = _run(LLAMA, "--gpu", "H100-80GB", "--co-tenant", "--engine sglang")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "names no model" in err


def test_a_co_tenant_holding_the_whole_gpu_leaves_no_utilization_to_suggest() -> None:
    # SGLang at 0.99 of what is free holds the whole 80 GiB card; no fraction of the total
    # starts a vLLM engine beside it, so the hint names none (never a negative one).
    code, out, err = _run(LLAMA, "--engine", "vllm==0.33", "--gpu", "H100-80GB",
                          "--max-model-len", "8192", "--co-tenant",
                          f"{LLAMA} --engine sglang --mem-fraction-static 0.99 "
                          "--max-model-len 8192")
    assert code == 2 and out == ""
    assert "vLLM 0.33 refuses to start" in err
    assert "no utilization starts beside what the others hold" in err
    assert "to -0" not in err

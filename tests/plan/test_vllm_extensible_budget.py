"""vLLM 0.34's extensible KV cache budget (``engines/vllm/extensible_budget.py``), worked by
hand from 0.34's source: ``config/cache.py CacheConfig.resolved_gpu_memory_utilization`` (1.0
when unset), ``v1/worker/extensible_kv_cache.py measure_kv_cache_bytes`` (``min(requested −
non_kv_used, headroom − margin) − transient peak``, margin ``max(1 GiB, 0.75 × peak)``, 3 GiB
on ROCm) and ``ExtensibleKVCache.blocks_within`` (each layer segment in whole 2 MiB granules).

Every number is checked under ``vllm==0.34``; the same request under ``vllm==0.33`` gives the
0.92 budget without the margin, which each test shows.

Llama-3.1-8B (catalog ``meta-llama/Meta-Llama-3.1-8B``: 32 layers, 8 KV heads, head_dim 128,
bfloat16): one token of one layer is 2 × 8 × 128 × 2 = 4,096 B; a 64-token block 262,144 B a
layer, 8,388,608 B over the 32 layers. The reserves are given (exact), so only kvledger's
estimate of the memory in use at vLLM's start-up snapshot (0.5 GiB on one GPU) is not read
from source.
"""

from __future__ import annotations

import json
from typing import Any

from kvledger.plan.api import plan_model
from kvledger.plan.engines.vllm.extensible_budget import granule_blocks, margin_bytes
from kvledger.plan.engines.vllm.launch import VllmLaunch
from kvledger.plan.request import PlanRequest

GIB = 1 << 30
MIB = 1 << 20
LLAMA = "meta-llama/Meta-Llama-3.1-8B"
TOTAL = 80 * GIB  # --gpu-total-bytes: a round total for the arithmetic


def _plan(engine: str, **extra: Any) -> Any:
    request = PlanRequest(engine=engine, gpu="H100-80GB", gpu_total_bytes=TOTAL,
                          max_model_len=32768, activation_peak_bytes=2 * GIB,
                          cuda_graph_bytes=GIB, non_torch_bytes=GIB // 2, **extra)
    return plan_model(LLAMA, request)


def _lines(result: Any) -> dict[str, int]:
    return {line["key"]: line["bytes"] for line in result.to_json()["budget"]}


def test_default_034_budget_by_hand_on_an_h100() -> None:
    got = _plan("vllm==0.34")
    lines = _lines(got)
    weights = lines["weights"]
    # utilization 1.0: requested = 80 GiB; headroom − margin binds:
    # 80 GiB − 0.5 GiB (snapshot) − max(1 GiB, 0.75 × 2 GiB = 1.5 GiB) − weights − 2 GiB
    # (peak) − 1 GiB (graphs) − 0.5 GiB (non-torch) = 74.5 GiB − weights.
    assert lines["utilization"] == 80 * GIB
    assert lines["before_snapshot"] == GIB // 2
    assert lines["kv_margin"] == 3 * GIB // 2
    assert lines["kv_budget"] == 80 * GIB - GIB // 2 - 3 * GIB // 2 - weights - 2 * GIB \
        - GIB - GIB // 2
    assert got.to_json()["available_bytes"] == lines["kv_budget"]


def test_034_blocks_commit_whole_granules() -> None:
    got = _plan("vllm==0.34").to_json()
    available = got["available_bytes"]
    # 32 layer segments of 262,144 B a block: n blocks map 32 × ceil(n / 8) × 2 MiB.
    n = available // 8_388_608
    while 32 * -(-n // 8) * 2 * MIB > available:
        n -= 1
    assert got["block_size"] == 64
    assert got["num_blocks"] == n
    assert granule_blocks(available, 8_388_608, [262_144] * 32) == n


def test_granule_rounding_drops_blocks_a_plain_division_keeps() -> None:
    # 65 GiB + 10 MiB over 32 segments of 262,144 B: 8,321 blocks by division
    # (8,321 × 8 MiB = 65 GiB + 8 MiB), but 8,321 blocks map 32 × 1,041 × 2 MiB = 65 GiB +
    # 16 MiB; 8,320 blocks map 32 × 1,040 × 2 MiB = 65 GiB, which fits.
    assert granule_blocks(65 * GIB + 10 * MIB, 8_388_608, [262_144] * 32) == 8320


def test_033_budget_has_no_margin_and_092() -> None:
    lines = _lines(_plan("vllm==0.33"))
    assert "kv_margin" not in lines and "before_snapshot" not in lines
    assert lines["utilization"] == int(TOTAL * 0.92)
    assert lines["kv_budget"] == int(TOTAL * 0.92) - lines["weights"] - 2 * GIB - GIB - GIB // 2


def test_explicit_utilization_that_leaves_the_margin_free_is_033s_budget() -> None:
    # 0.92 × 80 GiB = 73.6 GiB < 80 − 0.5 − 1.5 = 78 GiB: the request binds, no margin.
    with_034 = _lines(_plan("vllm==0.34", gpu_memory_utilization=0.92))
    with_033 = _lines(_plan("vllm==0.33", gpu_memory_utilization=0.92))
    assert "kv_margin" not in with_034
    assert with_034["kv_budget"] == with_033["kv_budget"]


def test_extensible_cache_off_takes_092() -> None:
    off = _lines(_plan("vllm==0.34", vllm_launch=VllmLaunch(enable_extensible_kv_cache=False)))
    assert off["utilization"] == int(TOTAL * 0.92)
    assert "kv_margin" not in off


def test_a_given_kv_budget_is_not_extensible() -> None:
    # _resolve_extensible_kv_cache: kv_cache_memory_bytes turns it off; 8 GiB / 8 MiB a block.
    got = plan_model(LLAMA, PlanRequest(engine="vllm==0.34", kv_cache_memory_bytes=8 * GIB,
                                        max_model_len=32768)).to_json()
    assert (got["block_size"], got["num_blocks"]) == (64, 1024)


def test_margin_floor_and_fraction() -> None:
    assert margin_bytes(GIB, rocm=False) == GIB  # 0.75 GiB < the 1 GiB floor
    assert margin_bytes(4 * GIB, rocm=False) == 3 * GIB
    assert margin_bytes(2 * GIB, rocm=True) == 3 * GIB  # ROCm's floor


def test_the_budget_says_why_utilization_is_one() -> None:
    got = _plan("vllm==0.34").to_json()
    util = next(line for line in got["budget"] if line["key"] == "utilization")
    assert "extensible KV cache" in util["label"]
    margin = next(line for line in got["budget"] if line["key"] == "kv_margin")
    assert margin["basis"] == "exact"  # the given peak × 0.75 beats the floor: source rule


def test_the_cli_and_a_serve_line_turn_it_off(capsys: Any) -> None:
    # --no-enable-extensible-kv-cache (0.34's own flag): the 0.92 budget, no margin line.
    from kvledger.cli.main import main

    for argv in (["plan", LLAMA, "--engine", "vllm==0.34", "--gpu", "H100-80GB",
                  "--no-enable-extensible-kv-cache", "--json"],
                 ["plan", "--engine", "vllm==0.34", "--gpu", "H100-80GB", "--json", "--",
                  "vllm", "serve", LLAMA, "--no-enable-extensible-kv-cache"]):
        assert main(argv) == 0
        keys = [line["key"] for line in json.loads(capsys.readouterr().out)["budget"]]
        assert "kv_margin" not in keys and "before_snapshot" not in keys

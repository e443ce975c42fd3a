"""The Layout interface (issue 13 item 4): the API calls layouts only through it, so a new
engine is one registry entry and its own module — nothing in plan_model, fit or --concurrency
names an engine."""

from __future__ import annotations

import sys
import types

import pytest

from kvledger.declare.pools import Pool
from kvledger.plan.api import plan_model
from kvledger.plan.budget import Budget, given_budget
from kvledger.plan.engines import base as layout_mod
from kvledger.plan.engines.base import GpuBudgetInput, Layout, LayoutInput, LayoutPlan, get_layout
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PoolRow, RankResult

LLAMA = "meta-llama/Meta-Llama-3.1-8B"


class ToyEngine(Layout):
    """One page pool; every request of L tokens takes L × 1,000 B; nothing else."""

    def plan(self, inp: LayoutInput) -> LayoutPlan:
        budget = inp.stage_budgets[0]
        entries = budget // 1000
        concurrency = entries / inp.max_model_len
        rank = RankResult(0, (0, 32), 32, 1, entries, entries, concurrency, budget,
                          entries * 1000, (PoolRow("kv", "page", entries, 1000, 0,
                                                   entries * 1000),))
        return LayoutPlan(
            ranks=(rank,), block_size=1, num_blocks=entries, kv_cache_tokens=entries,
            max_concurrency=concurrency, max_model_len=inp.max_model_len,
            kv_cache_dtype="bfloat16", layers=(), engine_fields={"toy_answer": 42},
        )

    def concurrency_at(self, inp: LayoutInput, context: int) -> float:
        return float(inp.stage_budgets[0] // 1000 // context)

    def gpu_budget(self, inp: GpuBudgetInput) -> Budget:
        # The toy's own rule: 2,000,000 B on any GPU (the base layout states none).
        return given_budget(2_000_000)


class RulelessEngine(ToyEngine):
    """The toy without a budget rule of its own: the base layout's applies."""

    gpu_budget = Layout.gpu_budget


@pytest.fixture()
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("toy_layout_for_tests")
    module.ToyEngine = ToyEngine  # type: ignore[attr-defined]
    module.RulelessEngine = RulelessEngine  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toy_layout_for_tests", module)
    monkeypatch.setitem(layout_mod.LAYOUTS, "toy",
                        ("toy_layout_for_tests:ToyEngine", "a toy engine for the tests"))
    monkeypatch.setitem(layout_mod.LAYOUTS, "ruleless",
                        ("toy_layout_for_tests:RulelessEngine", "a toy without a budget rule"))
    monkeypatch.setattr(layout_mod, "_LOADED", {})


@pytest.mark.usefixtures("toy")
def test_one_registry_entry_plugs_a_new_layout_in() -> None:
    # 1,000,000 B / 1,000 B per token = 1,000 tokens; at 100 tokens per request, 10 requests;
    # --concurrency 4 → 1,000 // 4 = 250 tokens each.
    result = plan_model(LLAMA, PlanRequest(engine="toy", kv_cache_memory_bytes=1_000_000,
                                           max_model_len=100, concurrency=4))
    data = result.to_json()
    assert (data["engine"], data["engine_label"]) == ("toy", "a toy engine for the tests")
    assert (data["num_blocks"], data["max_concurrency"]) == (1000, 10.0)
    assert data["toy_answer"] == 42
    assert data["answers"]["max_context_at_concurrency"] == 250
    assert data["pools"][0]["pool"] == "page"


@pytest.mark.usefixtures("toy")
def test_model_local_caches_reach_a_new_layout_already_subtracted() -> None:
    from kvledger.declare.model_local import ModelLocalKVScope, ModelLocalKVSpec, RowDriver

    # 2 × 1 layer × 1 head × 8 dims × 125 positions × 2 B (bf16) = 4,000 B.
    spec = ModelLocalKVSpec("cache", layers=1, kv_heads=1, head_dim=8, dtype="bfloat16",
                            physical_capacity_positions=125, capacity_source="",
                            scope=ModelLocalKVScope.MODEL, rows=RowDriver.FIXED,
                            rows_reason="serialized")
    result = plan_model(LLAMA, PlanRequest(engine="toy", gpu="H100-80GB", max_model_len=100,
                                           model_local_kv=(spec,)))
    plain = plan_model(LLAMA, PlanRequest(engine="toy", gpu="H100-80GB", max_model_len=100))
    assert plain.available_bytes - result.available_bytes == 4000
    assert plain.available_bytes == 2_000_000  # the toy's own budget rule
    assert result.num_blocks == result.available_bytes // 1000


def test_unknown_engine_names_the_registry() -> None:
    with pytest.raises(ValueError, match="engine must be one of vllm, native"):
        PlanRequest(engine="trt")
    with pytest.raises(ValueError, match="engine must be one of"):
        get_layout("trt")


def test_pool_rows_carry_their_kind() -> None:
    row = PoolRow("local:x", "fixed", 1, 10, 0, 10)
    assert row.pool is Pool.FIXED and row.to_json()["pool"] == "fixed"
    with pytest.raises(ValueError):
        PoolRow("kv", "pages", 1, 10, 0, 10)  # type: ignore[arg-type]


@pytest.mark.usefixtures("toy")
def test_the_base_layout_states_no_engines_budget_rule() -> None:
    # No engine's formula or default utilization is the base's: a layout without a rule of
    # its own refuses a GPU preset, and plans a given budget (1,000,000 B / 1,000 B = 1,000).
    with pytest.raises(ValueError, match="ruleless layout computes no budget from a GPU preset"):
        plan_model(LLAMA, PlanRequest(engine="ruleless", gpu="H100-80GB", max_model_len=100))
    given = plan_model(LLAMA, PlanRequest(engine="ruleless", kv_cache_memory_bytes=1_000_000,
                                          max_model_len=100))
    assert given.num_blocks == 1000

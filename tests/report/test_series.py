"""The numbers behind ``kvledger report`` (no plotting library needed).

Expected values are worked by hand from the bundled configs (arithmetic in the comments), or —
for the GPU grid, whose budgets are the planner's own estimates — checked against a plain
``plan_model(..., gpu=...)`` call, the thing ``kvledger plan`` prints.
"""

from __future__ import annotations

import pytest

import kvledger.derive
from kvledger import records
from kvledger.derive import facts_cache
from kvledger.plan.api import plan_model
from kvledger.plan.engines.registry import LAYOUTS
from kvledger.plan.request import PlanRequest
from kvledger.report import series
from kvledger.report.series import (
    FITS,
    NO_WEIGHTS,
    SHORT,
    build_report_data,
    context_points,
    layout_names,
)

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
GIB = 1 << 30
MIB = 1 << 20
# Llama-3.1-8B: 32 layers × 2 (K,V) × 8 KV heads × 128 head_dim × 2 B (bf16) = 131,072 B/token.
# vLLM block = 16 tokens × 131,072 B = 2 MiB; 10 GiB / 2 MiB = 5,120 blocks = 81,920 tokens.
LLAMA_TOKENS_AT_10_GIB = 10 * GIB // (16 * 131_072) * 16


def _vllm(**changes: object) -> PlanRequest:
    return records.replace(PlanRequest(engine="vllm==0.33", block_size=None), **changes)


def test_context_points_are_powers_of_two_plus_the_plan_and_the_longest() -> None:
    # Llama-3.1: 1k … 128k, the plan's 32k already a power of two.
    assert context_points(32768, 131072) == tuple(1024 << k for k in range(8))
    # An odd max_model_len and a short model: 128 … 4096, plus 3000 itself.
    assert context_points(3000, 4096) == (128, 256, 512, 1024, 2048, 3000, 4096)
    # 10M positions (Llama-4-Scout): doubling would give 15 points; quadrupling gives 8.
    points = context_points(8192, 10_485_760)
    assert len(points) <= 12 and points[0] == 1024 and points[-1] == 10_485_760
    assert 8192 in points


def test_layout_curves_on_a_given_budget_follow_the_block_arithmetic() -> None:
    data = build_report_data(LLAMA, _vllm(max_model_len=32768, kv_cache_memory_bytes=10 * GIB))
    assert data.plan.kv_cache_tokens == LLAMA_TOKENS_AT_10_GIB == 81_920
    by_name = {c.label: c for c in data.layouts}
    assert set(by_name) == set(layout_names())
    for context in (1024, 8192, 32768, 131072):
        # Every context here is a multiple of 16: 81,920 / context requests, no rounding.
        assert by_name["vllm"].at(context) == 81_920 / context
    # native pages are not padded either (one 131,072 B/token class): the same numbers,
    # capped at max_num_seqs = 256 slots (81,920 / 1,024 = 80 stays under it).
    assert by_name["native"].at(1024) == 80.0
    assert by_name["native"].at(131072) == 0.625
    # The headline layout's own point is the headline plan.
    assert by_name["vllm"].at(32768) == data.plan.max_concurrency == 2.5


def test_memory_bar_of_a_given_budget_is_that_budget() -> None:
    data = build_report_data(LLAMA, _vllm(max_model_len=32768, kv_cache_memory_bytes=10 * GIB))
    (bar,) = data.memory
    # 5,120 blocks × 2 MiB = exactly 10 GiB allocated: nothing left, no GPU lines.
    assert bar.given and (bar.weights, bar.reserves, bar.kv, bar.free) == (0, 0, 10 * GIB, 0)


def test_memory_bars_split_the_gpu_per_pipeline_stage() -> None:
    data = build_report_data(LLAMA, _vllm(max_model_len=32768, pipeline_parallel_size=2,
                                          gpu="H100-80GB", activation_peak_bytes=GIB,
                                          cuda_graph_bytes=512 * MIB, non_torch_bytes=256 * MIB))
    assert [b.label for b in data.memory] == ["stage 0", "stage 1"]
    weights_line = data.plan.budget.line("weights")
    assert weights_line is not None
    for bar, rank in zip(data.memory, data.plan.ranks, strict=True):
        # nvidia-smi 81,559 MiB for an H100 80GB (plan/gpus.py); reserves as given above.
        assert bar.total == 81_559 * MIB
        assert bar.reserves == GIB + 512 * MIB + 256 * MIB
        assert bar.weights == weights_line.bytes  # the planner's weights line, per GPU
        assert bar.kv == rank.reserved_bytes
        assert bar.free == 81_559 * MIB - bar.weights - bar.reserves - bar.kv > 0


def test_bytes_per_kind_groups_gemma3_sliding_and_full_layers() -> None:
    data = build_report_data("google/gemma-3-27b-it",
                             _vllm(max_model_len=8192, tensor_parallel_size=2,
                                   kv_cache_memory_bytes=20 * GIB), gpus=["H100-80GB"])
    kinds = {k.label: k for k in data.kinds}
    # layer_types: 62 layers, every 6th full → 10 full, 52 sliding (window 1024).
    # Per layer: 2 (K,V) × 16 KV heads × 128 × 2 B = 8,192 B/token; TP 2 → 4,096 per GPU.
    assert kinds["sliding, window 1,024"].layers == 52
    assert kinds["sliding, window 1,024"].bytes_per_token == 52 * 4096
    assert kinds["full"].layers == 10 and kinds["full"].bytes_per_token == 10 * 4096
    assert all(k.bytes_per_request == 0 for k in data.kinds)


def test_bytes_per_kind_names_a_hybrids_recurrent_state() -> None:
    data = build_report_data("Qwen/Qwen3-Next-80B-A3B-Thinking",
                             _vllm(max_model_len=8192, kv_cache_memory_bytes=20 * GIB),
                             gpus=["H100-80GB"], tp_sizes=(1,))
    kinds = {k.label: k for k in data.kinds}
    # 48 layers, full_attention_interval 4: 12 full-attention, 36 gated-delta-net layers
    # whose state is per request, not per token.
    state = next(k for label, k in kinds.items() if "gated_delta_net" in label)
    assert state.layers == 36 and state.bytes_per_token == 0 and state.bytes_per_request > 0
    assert kinds["full"].layers == 12 and kinds["full"].bytes_per_request == 0


@pytest.mark.parametrize(("gpu", "tp"), [("H100-80GB", 1), ("H100-80GB", 4), ("L4", 1),
                                         ("L4", 2), ("B200", 8)])
def test_grid_cells_are_what_plan_model_says_on_that_gpu(gpu: str, tp: int) -> None:
    request = _vllm(max_model_len=32768, gpu="H100-80GB")
    data = build_report_data(LLAMA, request, gpus=[gpu], tp_sizes=(tp,))
    (cell,) = data.grid
    direct = plan_model(LLAMA, records.replace(request, tensor_parallel_size=tp), gpu=gpu)
    assert cell.concurrency == direct.max_concurrency
    assert cell.kv_budget_bytes == direct.available_bytes
    assert cell.status == (SHORT if direct.refuses_to_start else FITS)
    # The rest of the curve is the same budget at other lengths.
    again = plan_model(LLAMA, records.replace(request, tensor_parallel_size=tp,
                                                  max_model_len=8192), gpu=gpu)
    assert cell.curve.at(8192) == again.max_concurrency


def test_grid_says_when_the_weights_leave_no_room() -> None:
    # Llama-3.1-70B at bf16 is ~141 GB of weights; an L4 reports 23,034 MiB (~22.5 GiB).
    data = build_report_data("meta-llama/Meta-Llama-3.1-70B",
                             _vllm(max_model_len=8192, tensor_parallel_size=4, gpu="H100-80GB"),
                             gpus=["L4", "H200"], tp_sizes=(1, 8))
    cells = {(c.gpu, c.tp): c for c in data.grid}
    assert cells[("L4", 1)].status == NO_WEIGHTS
    assert "GiB for KV" in cells[("L4", 1)].reason
    assert all(v is None for _, v in cells[("L4", 1)].curve.points)
    assert cells[("H200", 8)].status == FITS  # 141 GB / 8 on a 140 GiB part


def test_facts_are_derived_once_per_layout_not_per_point(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = kvledger.derive.derive_model

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    # Every layout derives through kvledger.derive.derive_model (Layout.derive).
    monkeypatch.setattr(kvledger.derive, "derive_model", counting)
    facts_cache.clear()
    data = build_report_data(LLAMA, _vllm(max_model_len=32768, gpu="H100-80GB"))
    planned = len(data.grid) * len(data.contexts) + len(data.layouts) * len(data.contexts)
    assert planned > 500  # hundreds of re-plans …
    # … and at most these derivations: the headline plan, its facts for the grid, one per
    # layout (fewer when the facts cache serves a layout the model's facts again).
    assert 1 <= len(calls) <= 2 + len(layout_names())


def test_layouts_follow_the_planners_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    # A layout registered later (SGLang) takes its reading-order place; an unknown one goes last.
    monkeypatch.setitem(LAYOUTS, "other", ("somewhere:Other", "a test layout"))
    monkeypatch.setitem(LAYOUTS, "sglang", ("somewhere:Sglang", "a test layout"))
    later = tuple(n for n in LAYOUTS if n not in ("vllm", "sglang", "native"))  # atom, other
    assert later[-1] == "other"
    assert layout_names() == ("vllm", "sglang", "native", *later)
    assert series.layout_names is layout_names


def test_a_layout_that_refuses_the_model_is_a_note_not_a_failure() -> None:
    # MiniMaxAI's text-only MiniMax-M3 file: vLLM has no model for its model_type.
    data = build_report_data("MiniMaxAI/MiniMax-M3",
                             PlanRequest(engine="native", max_model_len=8192,
                                         kv_cache_memory_bytes=20 * GIB),
                             gpus=["H200"], tp_sizes=(8,))
    by_name = {c.label: c for c in data.layouts}
    assert all(v is None for _, v in by_name["vllm"].points)
    assert "has no model for model_type 'minimax_m3'" in by_name["vllm"].note
    assert by_name["vllm"].note.count("has no model") == 1  # one message, not one per point
    assert all(v is not None and v > 0 for _, v in by_name["native"].points)

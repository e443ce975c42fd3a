"""Replay tests/oracles/atom/cases.jsonl: every case is ATOM's own ``sub_pool_specs`` and
``plan_pools`` run on CPU from the ROCm/ATOM snapshot (``run_atom_oracle.py``, its docstring
has the command). kvledger's ``--engine atom`` plan must give the same entry classes, bytes,
multiplicities and counts — or, where ATOM's ``plan_pools`` raised ``InsufficientPoolBudget``,
the same floor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.declare.pools import InsufficientPoolBudget
from kvledger.plan.api import plan_model
from kvledger.plan.request import PlanRequest
from oracle_cases import real_config

ROOT = Path(__file__).resolve().parents[4]
CASES = ROOT / "tests" / "oracles" / "atom" / "cases.jsonl"
SHARED = ROOT.parent / "shared" / "configs"
KV = {"bf16": "bfloat16", "fp8": "fp8"}
# The gfx targets the cases read (V4 only): the preset kvledger maps to each.
GPU = {"gfx950": "MI355X", "gfx942": "MI300X"}


def _cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]


def _config(ref: str) -> Path | dict[str, Any]:
    where, stem = ref.split(":", 1)
    if where == "catalog":
        # The catalog's facts table holds this file's values (tests/source/test_catalog_facts.py).
        return real_config(f"{stem}.json")
    path = SHARED / f"{stem}.json"
    if not path.exists():
        pytest.skip(f"{path} absent (../shared/configs is not beside this checkout)")
    return path


def _request(case: dict[str, Any]) -> PlanRequest:
    spec = case["num_speculative_tokens"]
    return PlanRequest(
        engine="atom", kv_cache_memory_bytes=case["available_bytes"],
        max_num_seqs=case["max_num_seqs"], kv_cache_dtype=KV[case["kv_cache_dtype"]],
        tensor_parallel_size=case["tensor_parallel_size"],
        block_size=case["block_size"] if case["backend"] != "v4" else None,
        num_speculative_tokens=spec, speculative_method="mtp" if spec else None,
        # the V4 platform defaults: a named GPU, though the budget is given
        gpu=GPU.get(case["platform"] or ""))


def test_the_cases_cover_every_backend() -> None:
    assert {c["backend"] for c in _cases()} == {"mha", "mla", "gdn", "kimi", "v4"}
    assert len(_cases()) >= 20


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["case"])
def test_atom_case(case: dict[str, Any]) -> None:
    found = _config(case["config"])
    raw = found if isinstance(found, dict) else json.loads(found.read_text())
    model: Any = str(found) if isinstance(found, Path) and not case["edits"] else {
        **raw, **case["edits"]}
    if "insufficient" in case:
        with pytest.raises(InsufficientPoolBudget) as err:
            plan_model(model, _request(case))
        want = case["insufficient"]
        assert (err.value.reserved_bytes, err.value.entries) == (
            want["reserved_bytes"], want["entries"])
        return
    plan = plan_model(model, _request(case))
    got = {p.name: (str(p.pool), p.entry_bytes, p.entries_per_req, p.entries)
           for p in plan.pools}
    want = {s["name"]: (s["pool"], s["entry_bytes"], s["entries_per_req"],
                        case["entries"][s["name"]]) for s in case["specs"]}
    assert got == want
    assert plan.num_blocks == case["entries"]["kv"]

"""`inspect` gathers identical layers wherever they occur, so a hybrid reads in a few rows."""

from __future__ import annotations

from kvledger.cli.inspect import index_ranges, inspect_payload


def test_index_ranges() -> None:
    assert index_ranges([0, 1, 2, 4, 6, 7]) == "0-2,4,6-7"
    assert index_ranges([5]) == "5"


def test_gemma3_kinds_follow_the_5_to_1_pattern() -> None:
    data = inspect_payload("google/gemma-3-27b-it")
    kinds = {k["facts"]["kind"]: k for k in data["kinds"]}
    # 62 layers, every 6th (5, 11, ..., 59) global: 10 full, 52 sliding
    assert kinds["full"]["count"] == 10
    assert kinds["full"]["layers"] == "5,11,17,23,29,35,41,47,53,59"
    assert kinds["sliding"]["count"] == 52
    assert len(data["groups"]) == 21  # 11 sliding runs + 10 full runs, in order


def test_nemotron_h_kinds() -> None:
    data = inspect_payload("nvidia/Nemotron-H-56B-Base-8K")
    counts = {k["facts"].get("state_kind", k["facts"]["kind"]): k["count"] for k in data["kinds"]}
    # hybrid_override_pattern: 54 M (Mamba2), 10 * (attention), 54 - (MLP, no cache)
    assert counts == {"mamba2": 54, "full": 10, "none": 54}

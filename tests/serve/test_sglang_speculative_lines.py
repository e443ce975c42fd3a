"""Cookbook-shaped SGLang lines that speculate on a Gated DeltaNet hybrid (Qwen3.5) plan, with
the recurrent states' speculative scratch as its own pool row (engine="sglang==0.5.23")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main

QWEN35 = "Qwen/Qwen3.5-397B-A17B"
# Qwen3.5-397B-A17B (catalog config): 60 layers, every 4th full attention → 45 GDN layers;
# linear_num_value_heads 64, linear_num_key_heads 16, head dims 128, conv kernel 4,
# mamba_ssm_dtype float32. Per TP-8 rank and layer (states.py):
#   temporal 64/8 × 128 × 128 × 4 B = 524,288; conv (64·128 + 2·16·128)/8 × 3 × 2 B = 9,216
#   → 533,504 B; × 45 layers = 24,007,680 B per request.
PER_REQUEST = 45 * (64 // 8 * 128 * 128 * 4 + (64 * 128 + 2 * 16 * 128) // 8 * 3 * 2)


def plan(capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, Any]:
    code = main(["plan", "--gpu", "H200", "--offline", "--json", "--", "sglang", "serve",
                 "--model-path", QWEN35, "--tp", "8", "--mem-fraction-static", "0.8", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def pools(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in data["pools"]}


def test_nextn_chain_reserves_four_states_per_request(
        capsys: pytest.CaptureFixture[str]) -> None:
    plain = plan(capsys)
    data = plan(capsys, "--speculative-algo", "NEXTN", "--speculative-num-steps", "3",
                "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4")
    rows = pools(data)
    assert PER_REQUEST == 24_007_680
    assert rows["mamba"]["entry_bytes"] == PER_REQUEST
    # topk 1: D = steps + 1 = 4 intermediate states per request.
    spec = rows["mamba_spec"]
    assert spec["entry_bytes"] == 4 * PER_REQUEST
    # capped = min(48 (speculation's max_running_requests), slots // 5) (+1 padding slot).
    slots = rows["mamba"]["entries"] - 1
    assert spec["entries"] == min(48, slots // 5) + 1
    assert spec["reserved_bytes"] == spec["entries"] * 4 * PER_REQUEST
    assert "mamba_spec" not in pools(plain)
    assert data["kv_cache_tokens"] < plain["kv_cache_tokens"]


def test_tree_keeps_the_given_draft_token_count(capsys: pytest.CaptureFixture[str]) -> None:
    data = plan(capsys, "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
                "--speculative-eagle-topk", "4", "--speculative-num-draft-tokens", "8")
    assert pools(data)["mamba_spec"]["entry_bytes"] == 8 * PER_REQUEST

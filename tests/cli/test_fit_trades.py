"""``fit`` weighs what an operator would (engine="vllm==0.33"): an fp8 KV cache on fewer GPUs,
and DP replicas of a dense model, each labelled with what it trades.

Hand arithmetic, Qwen/Qwen3-32B (config: 64 layers, 8 KV heads, head_dim 128, bfloat16;
32.8B parameters), 64 requests × 16,384 tokens on H100-80GB:
- the load is 64 × 16,384 = 1,048,576 = 2^20 tokens;
- bfloat16 KV per token, whole model: 64 × 2 (K, V) × 8 × 128 × 2 B = 262,144 B = 2^18 B;
- TP 4 (2 KV heads a GPU): 2^16 B a token a GPU → 2^36 B = 64 GiB of KV a GPU. A GPU has
  79.65 GiB × 0.92 = 73.28 GiB usable, less ~15.3 GiB of weights (32.8e9 × 2 B / 4) and
  ~2–3 GiB of reserves: ~55 GiB < 64 GiB — bf16 on 4 GPUs does not hold it;
- TP 8: 2^35 B = 32 GiB a GPU, ~62 GiB left — holds it (fit's answer, 8 GPUs);
- fp8 on TP 4: 1 B an element, 32 GiB a GPU < ~55 GiB — holds it on 4 GPUs;
- fp8 on TP 2: 4 heads a GPU, 64 GiB a GPU > 73.28 − 30.6 − ~3 ≈ 40 GiB — does not.
So the fp8 proposal is TP 4 (4 GPUs instead of 8).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main

QWEN32 = "Qwen/Qwen3-32B"


def _fit(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["fit", *argv, "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_fp8_kv_fits_on_four_h100s_instead_of_eight(capsys: pytest.CaptureFixture[str]) -> None:
    data = _fit(capsys, QWEN32, "--gpu", "H100-80GB", "--concurrency", "64",
                "--context", "16384", "--engine", "vllm==0.33")
    assert data["chosen"]["tensor_parallel_size"] == 8 and data["chosen"]["gpus"] == 8
    tried = {a["tensor_parallel_size"]: a["fits"] for a in data["attempts"]}
    assert tried == {1: False, 2: False, 4: False, 8: True}
    fp8 = [a for a in data["alternatives"] if a["label"] == "fp8 KV cache"]
    assert len(fp8) == 1
    assert (fp8[0]["tensor_parallel_size"], fp8[0]["gpus"], fp8[0]["kv_cache_dtype"]) == \
        (4, 4, "fp8")
    assert fp8[0]["max_concurrency"] >= 64
    assert fp8[0]["trades"].startswith("precision")


def test_dense_dp_replicas_are_proposed_with_their_trade(
        capsys: pytest.CaptureFixture[str]) -> None:
    data = _fit(capsys, QWEN32, "--gpu", "H100-80GB", "--concurrency", "64",
                "--context", "16384", "--engine", "vllm==0.33")
    dp = [a for a in data["alternatives"] if a["label"] == "data-parallel replicas"]
    assert len(dp) == 1
    # The chosen layout's 8 GPUs as replicas: each of D holds ⌈64 / D⌉ requests.
    assert dp[0]["gpus"] == 8
    assert dp[0]["tensor_parallel_size"] * dp[0]["data_parallel_size"] == 8
    assert dp[0]["data_parallel_size"] > 1
    assert "do not share a KV cache" in dp[0]["trades"]


def test_no_fp8_proposal_on_a_gpu_without_fp8(capsys: pytest.CaptureFixture[str]) -> None:
    # A100 (sm80) has no fp8 arithmetic: kvledger does not propose an fp8 cache there.
    data = _fit(capsys, QWEN32, "--gpu", "A100-80GB", "--concurrency", "64",
                "--context", "16384")
    assert all(a["label"] != "fp8 KV cache" for a in data["alternatives"])


def test_no_fp8_proposal_when_asked_for_fp8(capsys: pytest.CaptureFixture[str]) -> None:
    data = _fit(capsys, QWEN32, "--gpu", "H100-80GB", "--concurrency", "64",
                "--context", "16384", "--kv-cache-dtype", "fp8")
    assert data["chosen"]["gpus"] == 4  # as the fp8 arithmetic above
    assert all(a["label"] != "fp8 KV cache" for a in data["alternatives"])


def test_the_text_names_each_trade(capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["fit", QWEN32, "--gpu", "H100-80GB", "--concurrency", "64", "--context",
                 "16384"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("64 requests × 16,384 tokens on H100-80GB: fits on TP 8: "
                               "8 GPUs, 1 node")
    assert lines[1].startswith("or, fp8 KV cache: TP 4, KV fp8 — 4 GPUs")
    assert "trades precision" in lines[1]
    assert lines[2].startswith("or, data-parallel replicas: ") and "trades cache sharing" in \
        lines[2]

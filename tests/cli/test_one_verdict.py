"""One consistent verdict a script can gate on (engine="vllm==0.33"): no DP total past a
refusal, ``--require-fit`` exits 1 (default 0), a sub-MiB KV budget warns as a unit slip, the
summary names a person's own reserves, and the source line says its kind once.

Hand arithmetic, Meta-Llama-3.1-8B (32 layers, 8 KV heads, head_dim 128, bfloat16): a token
takes 32 × 2 × 8 × 128 × 2 = 131,072 B; 8 GiB holds 8 × 2^30 / 2^17 = 65,536 tokens, half of
one 131,072-token request — vLLM refuses to start, on every DP rank alike.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.cli.plan_summary import budget_line

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
REFUSED = ["plan", LLAMA, "--kv-cache-memory-bytes", "8GiB", "--data-parallel-size", "4",
           "--engine", "vllm==0.33"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_dp_total_does_not_multiply_a_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, *REFUSED, "--quiet")
    assert code == 0
    assert "65,536 KV tokens, 0.50 such requests" in out
    assert "vLLM refuses to start" in out
    assert "2.00 requests at once" not in out  # 4 ranks × 0.50 is no answer
    assert "each replica holds 0.50 of one 131,072-token request, so none runs" in \
        out.replace("\n", " ")


def test_require_fit_exits_1_and_default_stays_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, *REFUSED)[0] == 0
    assert _run(capsys, *REFUSED, "--require-fit")[0] == 1
    code, out, _ = _run(capsys, *REFUSED, "--require-fit", "--json")
    assert code == 1 and json.loads(out)["vllm_refuses_to_start"] is True
    # 16 GiB holds 131,072 tokens: exactly one request fits, so --require-fit is 0.
    assert _run(capsys, "plan", LLAMA, "--kv-cache-memory-bytes", "17GiB",
                "--require-fit", "-q")[0] == 0


def test_fit_require_fit(capsys: pytest.CaptureFixture[str]) -> None:
    # 64 × 16,384 tokens × 131,072 B = 128 GiB of KV: more than one H100's ~56 GiB budget.
    ask = ["fit", LLAMA, "--gpu", "H100-80GB", "--concurrency", "64", "--context", "16384",
           "--max-gpus", "1"]
    assert _run(capsys, *ask)[0] == 0
    code, out, _ = _run(capsys, *ask, "--require-fit")
    assert code == 1 and "nothing fits" in out.splitlines()[0]


def test_a_kv_budget_under_one_mib_warns(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "plan", LLAMA, "--kv-cache-memory-bytes", "10", "-q")
    assert code == 0
    assert "under 1 MiB: almost certainly a unit slip" in err
    code, out, _ = _run(capsys, "plan", LLAMA, "--kv-cache-memory-bytes", "10", "--json")
    assert any("unit slip" in w for w in json.loads(out)["warnings"])
    _, out, err = _run(capsys, "plan", LLAMA, "--kv-cache-memory-bytes", "1MiB", "--json")
    assert not any("unit slip" in w for w in json.loads(out)["warnings"])


def test_the_answer_to_concurrency_is_first_and_quiet_keeps_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    # 16 GiB / 64 requests / 131,072 B = 2,048 tokens each (block-rounded: at most that).
    code, out, _ = _run(capsys, "plan", LLAMA, "--kv-cache-memory-bytes", "16GiB",
                        "--concurrency", "64", "-q")
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("64 requests at once: max context ")
    best = int(first.split("max context ")[1].split(" ")[0].replace(",", ""))
    assert 1_900 <= best <= 2_048


def test_the_source_line_names_its_kind_once(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    _, out, _ = _run(capsys, "plan", LLAMA, "--kv-cache-memory-bytes", "16GiB")
    assert f"kvledger catalog ({LLAMA})" in out
    assert "catalog (kvledger catalog" not in out


def test_own_reserves_are_named_not_folded() -> None:
    gib = 1 << 30
    lines: list[dict[str, Any]] = [
        {"key": "gpu_total", "label": "GPU memory", "bytes": 80 * gib, "basis": "exact"},
        {"key": "weights", "label": "− weights", "bytes": 16 * gib, "basis": "estimated"},
        {"key": "cuda_graphs", "label": "− CUDA graphs", "bytes": gib, "basis": "estimated"},
        {"key": "model_local_kv", "label": "− model-local", "bytes": 2 * gib,
         "basis": "declared"},
        {"key": "lora", "label": "− LoRA", "bytes": 3 * gib, "basis": "estimated"},
        {"key": "kv_budget", "label": "= KV", "bytes": 58 * gib, "basis": "estimated"},
    ]
    text = budget_line(lines)
    assert "model-local KV (declared) 2.00 GiB" in text
    assert "LoRA slots 3.00 GiB" in text
    assert "other reserves 1.00 GiB" in text  # the CUDA graphs alone


def test_fit_does_not_multiply_a_rank_that_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen3-30B-A3B-FP8 on L4s at utilization 0.85, DP 2 × EP: each rank holds under one
    40,960-token request, so the layout holds none (not 2 × the fraction)."""
    moe = "Qwen/Qwen3-30B-A3B-FP8"
    knobs = ["--gpu", "L4", "--gpu-memory-utilization", "0.85", "--engine", "vllm==0.33"]
    code, out, _ = _run(capsys, "fit", moe, *knobs, "--concurrency", "4", "--context",
                        "40960", "--enable-expert-parallel", "--max-gpus", "8", "--json")
    assert code == 0
    dp2 = next(a for a in json.loads(out)["attempts"] if a["data_parallel_size"] == 2)
    # The same rank planned alone: plan's own figure for one DP rank.
    code, out, _ = _run(capsys, "plan", moe, *knobs, "--max-model-len", "40960",
                        "--data-parallel-size", "2", "--enable-expert-parallel",
                        "--max-num-seqs", "2", "--json")
    per_rank = json.loads(out)["max_concurrency"]
    assert per_rank < 1
    assert dp2["fits"] is False and dp2["max_concurrency"] == pytest.approx(per_rank)
    assert "refuses to start" in dp2["reason"]
    assert f"{2 * per_rank:.2f}" not in dp2["reason"]


def test_the_summary_names_declared_model_local_bytes(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    example = Path(__file__).parents[2] / "examples" / "omni-talker-kv.json"
    monkeypatch.setenv("COLUMNS", "400")
    code, out, _ = _run(capsys, "plan", LLAMA, "--gpu", "H100-80GB", "--max-model-len",
                        "32768", "--model-local-kv", str(example), "-q")
    assert code == 0
    # The example declares 25,165,824 B (tests/cli/test_cli_model_local.py): 0.02 GiB.
    assert "model-local KV (declared) 0.02 GiB" in out.splitlines()[1]

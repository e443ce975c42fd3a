"""Issue 25, "a short answer by default": ``plan`` opens with a summary, ``--quiet`` prints only
the summary, and the layer tables fold runs and repeating patterns into one row.

Before this work a plan opened with a 19-row key/value table and listed every run of layers
on its own line: Nemotron-H-56B (118 layers alternating Mamba / MLP with an attention layer
every 11) printed 170 lines at a 10 GiB budget and 193 with ``--gpu H100-80GB -tp 2``; there
was no ``--quiet``. The figures the summary states are read back from ``--json``.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest

from kvledger.cli.layer_runs import fold, folded_rows, spell
from kvledger.cli.main import main
from kvledger.cli.render_layers import pattern_label
from release_pin import as_release

NEMOTRON_H = "nvidia/Nemotron-H-56B-Base-8K"
LLAMA = "meta-llama/Meta-Llama-3.1-8B"


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests read the summary's content a line at a time: a wide terminal keeps each
    sentence on one line (80 columns: tests/cli/test_terminal_width.py)."""
    monkeypatch.setenv("COLUMNS", "400")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(as_release(argv))
    return code, out.getvalue(), err.getvalue()


def text_and_json(*argv: str) -> tuple[list[str], dict[str, Any]]:
    code, out, err = run("plan", *argv)
    assert code == 0, err
    code, raw, err = run("plan", *argv, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(raw)
    return out.splitlines(), data


def test_plan_opens_with_the_answer() -> None:
    lines, data = text_and_json(LLAMA, "--gpu", "H100-80GB", "--max-model-len", "32768")
    head = lines[0]
    assert head.startswith(f"{LLAMA} on vllm ")
    assert "fits:" in head
    assert f"{data['kv_cache_tokens']:,} KV tokens" in head
    assert f"{data['max_concurrency']:,.2f} requests of max_model_len 32,768" in head
    # The budget line that binds: the KV budget per GPU, then what it was left from.
    kv = next(b for b in data["budget"] if b["key"] == "kv_budget")
    assert lines[1].startswith(f"KV budget {kv['bytes'] / 2**30:,.2f} GiB per GPU")
    assert "weights" in lines[1] and "usable" in lines[1]
    # Llama-3.1-8B: 32 layers × 2 (K, V) × 8 KV heads × 128 × 2 B = 131,072 B per token.
    assert data["bytes_per_token"] == 32 * 2 * 8 * 128 * 2
    assert "131,072 B of KV per token" in lines[2]


def test_a_plan_that_does_not_fit_says_so_first() -> None:
    # 1 GiB holds 1 GiB / 131,072 B = 8,192 tokens, not one 131,072-token request.
    lines, data = text_and_json(LLAMA, "--kv-cache-memory-bytes", "1GiB")
    assert data["vllm_refuses_to_start"] is True
    assert "does not fit" in lines[0] and "refuses to start" in lines[0]
    assert any(line.startswith("vLLM: ") for line in lines[:5])


def test_quiet_prints_the_summary_only() -> None:
    argv = ("plan", NEMOTRON_H, "--gpu", "H100-80GB", "-tp", "2")
    code, full, _ = run(*argv)
    assert code == 0
    code, quiet, _ = run(*argv, "--quiet")
    assert code == 0
    short = quiet.splitlines()
    assert 3 <= len(short) <= 6
    assert full.splitlines()[:len(short)] == short
    # No tables: the summary lines only (the hybrid's why line, the all-GPUs line).
    assert "layer kinds" not in quiet and "budget per GPU" not in quiet
    assert short[3].startswith("why: kv_cache_tokens")
    assert short[-1].startswith("all 2 GPUs")
    code, quiet, _ = run(*argv, "-q")
    assert code == 0 and quiet.splitlines() == short


def test_nemotron_h_plan_is_short() -> None:
    lines, data = text_and_json(NEMOTRON_H, "--kv-cache-memory-bytes", "10GiB")
    assert len(data["layers"]) == 118  # the JSON keeps every run
    assert len(lines) <= 60, len(lines)  # 170 before
    # Layers 0-109: ten times (state, MLP) ×3, state, attention, MLP, state, MLP; 110-117 four
    # state / MLP pairs: two rows in order (a wide cell may wrap onto a second line).
    start = next(i for i, line in enumerate(lines) if line.startswith("layers in order"))
    end = next(i for i, line in enumerate(lines) if line.lstrip().startswith("total per GPU"))
    body = [line for line in lines[start + 4:end] if line.strip()]
    assert len(body) <= 4 and body[0].lstrip().startswith("0-109")
    rows = folded_rows(data["layers"], lambda run: pattern_label(run, lambda r: r))
    assert [(r["first"], r["last"], r["pattern"]) for r in rows] == [
        (0, 109, "((state mamba2, none) ×3, state mamba2, full, none, state mamba2, none) ×10"),
        (110, 117, "(state mamba2, none) ×4"),
    ]
    lines, _ = text_and_json(NEMOTRON_H, "--gpu", "H100-80GB", "-tp", "2")
    assert len(lines) <= 90, len(lines)  # 193 before


def test_alternating_layers_are_one_row() -> None:
    lines, _ = text_and_json("google/gemma-3-27b-it", "--kv-cache-memory-bytes", "10GiB")
    text = "\n".join(lines)
    # Gemma 3 27B: 62 layers, every 6th global: 0-59 ten times (5 sliding, 1 full), then 2
    # sliding. Each layer 2 (K, V) × 16 heads × 128 × 2 B = 8,192 B; 60 × 8,192 = 491,520.
    assert "(sliding 1,024 ×5, full) ×10" in text
    row = next(line for line in lines if "×10" in line)
    assert row.lstrip().startswith("0-59") and "491,520" in row


def test_fold_by_hand() -> None:
    assert fold(list("ababc")) == [(0, 2, 2), (4, 1, 1)]
    assert fold(list("abc")) == [(0, 1, 1), (1, 1, 1), (2, 1, 1)]
    # The longest cover wins: "ab" ×3 (6 keys) over "a" alone.
    assert fold(list("abababx")) == [(0, 2, 3), (6, 1, 1)]
    assert spell(["full", "none", "state", "none", "state", "none", "state"]) == \
        "full, (none, state) ×3"
    assert spell(["s", "s", "f"]) == "s ×2, f"


def test_a_defaulted_batch_limit_names_its_tier_and_a_given_one_does_not() -> None:
    # vLLM's get_batch_defaults gives `vllm serve` on a >= 70 GiB GPU that is not an A100
    # max_num_seqs 1024 (plan/launch.py _TIERS); the text plan says so beside the number.
    text, data = text_and_json(LLAMA, "--gpu", "H100-80GB", "--max-model-len", "32768")
    row = next(line for line in text if line.strip().startswith("max_num_seqs"))
    assert "1,024 (default: vllm serve on H100-80GB" in row, row
    assert "max_num_seqs" in data["batch_defaults"]["applied"]
    text, _ = text_and_json(LLAMA, "--gpu", "H100-80GB", "--max-model-len", "32768",
                            "--max-num-seqs", "64")
    row = next(line for line in text if line.strip().startswith("max_num_seqs"))
    assert row.split() == ["max_num_seqs", "64"], row

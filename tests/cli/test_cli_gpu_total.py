"""``--gpu-total-bytes N`` with no ``--gpu`` is a complete budget: the engine's utilization
and reserves against that total, compute capability assumed SM90 and said so."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main
from release_pin import as_release

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
GIB = 1 << 30


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(as_release(["plan", LLAMA, "--json", *argv])) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def _line(data: dict[str, Any], key: str) -> int:
    return next(int(ln["bytes"]) for ln in data["budget"] if ln["key"] == key)


def test_total_alone_plans_with_the_engines_utilization(
        capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, "--gpu-total-bytes", "80G")
    assert _line(data, "gpu_total") == 85_899_345_920  # 80 × 2**30
    # int(85,899,345,920 × 0.92) = int(79,027,398,246.4): vLLM's default utilization 0.92
    assert _line(data, "utilization") == 79_027_398_246
    assert any("assumed SM90" in w for w in data["warnings"])
    # The same reserves as a named Hopper preset with the same total, but for the Triton
    # top-k/top-p buffer, whose rows an unknown GPU caps at the largest known SM count (188)
    # where the H100 has 132: (188 − 132) × 128,256 × 4 B = 28,729,344 B more reserved.
    named = _plan(capsys, "--gpu", "H100-80GB", "--gpu-total-bytes", "80G")
    assert _line(named, "kv_budget") - _line(data, "kv_budget") == 28_729_344
    assert not any("assumed SM90" in w for w in named["warnings"])


def test_total_alone_takes_a_given_utilization(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, "--gpu-total-bytes", "80G", "--gpu-memory-utilization", "0.5")
    assert _line(data, "utilization") == 42_949_672_960  # 85,899,345,920 / 2


def test_no_budget_hint_names_each_flag_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", LLAMA]) == 2
    err = capsys.readouterr().err
    assert "--gpu-total-bytes N" in err
    assert "--gpu-total-bytes / --gpu-total-bytes" not in err
    assert main(["plan", LLAMA, "--gpu", "H1000"]) == 2
    err = capsys.readouterr().err
    assert err.count("--gpu-total-bytes") == 1


def test_report_takes_a_total_alone(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "r.html"
    assert main(as_release(["report", LLAMA, "--gpu-total-bytes", "80G", "-o", str(out)])) == 0
    capsys.readouterr()  # its "wrote …" line
    # The page's plan is the same as plan's with the same total.
    tokens = _plan(capsys, "--gpu-total-bytes", "80G")["kv_cache_tokens"]
    assert f"{tokens:,}" in out.read_text()


def _warnings(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(["plan", "meta-llama/Meta-Llama-3.1-8B", "--max-model-len", "8192", *argv,
                 "--json"]) == 0
    out: list[str] = json.loads(capsys.readouterr().out)["warnings"]
    return out


@pytest.mark.parametrize(("argv", "said"), [
    # An NVIDIA device-report preset under vLLM: its nvidia-smi total sits above what CUDA
    # reports (vLLM logs total_gpu_memory 79.22-79.33 GiB on an H100 80GB; the preset is
    # 81,559 MiB = 79.65 GiB), so the plan says the budget is likely high.
    (("--gpu", "H100-80GB"), True),
    (("--gpu", "H100-80GB", "--engine", "vllm==0.32"), True),
    # A total the user measured, and engines whose total kvledger has no log of: no such note.
    (("--gpu-total-bytes", "85000000000"), False),
    (("--gpu", "H100-80GB", "--engine", "sglang"), False),
    # A datasheet preset is labelled estimated already (MI300X: AMD, rocminfo's total).
    (("--gpu", "MI300X", "--engine", "vllm"), False),
])
def test_an_nvml_preset_says_cuda_reports_less(capsys: pytest.CaptureFixture[str],
                                                argv: tuple[str, ...], said: bool) -> None:
    found = [w for w in _warnings(capsys, *argv) if "torch.cuda.mem_get_info" in w]
    assert bool(found) is said, found
    if said:
        assert "0.3-0.6 GiB lower" in found[0]

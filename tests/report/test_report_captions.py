"""The report says what its columns say and draws only what an engine would run: the
layouts caption's native cap is the native column's own max_num_seqs, and an NVIDIA GPU gets
no ATOM curve (``plan --engine atom --gpu H100-80GB`` refuses: ATOM runs on AMD Instinct)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from kvledger.cli.main import main

pytest.importorskip("matplotlib", reason="the report needs the plotting extra: "
                    "pip install 'kvledger[report]'")

if TYPE_CHECKING:
    from kvledger.report.series import ReportData

LLAMA = "meta-llama/Meta-Llama-3.1-8B"


@pytest.fixture(scope="module")
def data() -> ReportData:
    from kvledger.plan.request import PlanRequest
    from kvledger.report.series import build_report_data

    return build_report_data(LLAMA, PlanRequest(gpu="H100-80GB", engine="vllm==0.33"))


def test_no_atom_curve_on_an_nvidia_gpu(data: ReportData,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", LLAMA, "--gpu", "H100-80GB", "--engine", "atom"]) == 2
    assert "AMD" in capsys.readouterr().err
    labels = [curve.label for curve in data.layouts]
    assert "atom" not in labels and "vllm" in labels and "native" in labels
    assert any(note.startswith("atom not drawn: ") for note in data.notes)


def test_the_native_cap_in_the_caption_is_its_column(data: ReportData) -> None:
    from kvledger.report.html import render_report

    native = next(c for c in data.layouts if c.label == "native")
    assert native.note == ""  # planned at every context (a pinned vLLM release is vLLM's)
    page = render_report(data)
    cap = re.search(r"native never counts more than max_num_seqs requests \(([\d,]+) here\)",
                    page)
    assert cap is not None
    stated = int(cap.group(1).replace(",", ""))
    assert stated == native.max_num_seqs
    # The column never passes the stated cap, and reaches it at the shortest context
    # (Llama-3.1-8B: 131,072 B a token; the headline budget holds far more than the cap).
    counts = [v for _, v in native.points if v is not None]
    assert max(counts) == stated

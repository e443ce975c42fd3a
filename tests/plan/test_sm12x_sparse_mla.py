"""vLLM 0.33 on an SM12x GPU (RTX 5090, RTX PRO 6000 Blackwell) serves sparse MLA only with
FLASHINFER_MLA_SPARSE_SM120 (``platforms/cuda.py`` ``_get_backend_priorities``, major 12),
which kvledger does not model: refused by name, where SM90's FlashMLA-sparse rules were used
before. Dense MLA on SM12x keeps TRITON_MLA (engine="vllm==0.33")."""

from __future__ import annotations

import json

import pytest

from kvledger.cli.main import main


def test_sparse_mla_on_sm120_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--engine", "vllm==0.33", "--gpu", "RTX-PRO-6000", "--offline", "--",
                 "vllm", "serve",
                 "deepseek-ai/DeepSeek-V3.2", "-tp", "8"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "FLASHINFER_MLA_SPARSE_SM120" in err and "--gpu" in err


def test_dense_mla_on_sm120_takes_triton_mla(capsys: pytest.CaptureFixture[str]) -> None:
    # major 12: [TRITON_MLA, …]; TRITON_MLA takes 16 (MultipleOf(16)), also with an fp8 cache
    # (where SM90 takes FLASHMLA's 64).
    code = main(["plan", "--engine", "vllm==0.33", "--gpu", "RTX-PRO-6000", "--offline", "--json",
                 "--kv-cache-memory-bytes", str(8 << 30), "--", "vllm", "serve",
                 "deepseek-ai/DeepSeek-V2-Lite", "--kv-cache-dtype", "fp8",
                 "--max-model-len", "8192"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["block_size"] == 16

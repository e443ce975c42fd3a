"""Nemotron-Super-49B (Nemotron-NAS block_configs) plans and fits on H100-80GB once its
weights are counted from its blocks: 49,867,145,216 parameters (tests/derive/
test_params_by_hand.py), 99,734,290,432 B at bf16, 49,867,145,216 B a GPU at TP 2.

Before, the generic decoder formula counted every block as a full Llama-70B-like layer
(88.00B parameters, 176 GB): ``plan -tp 2`` refused ("no memory left for the KV cache:
-11.55 GiB per GPU") and ``fit`` needed 4 GPUs.
"""

from __future__ import annotations

import json

import pytest

from kvledger.cli.main import main

MODEL = "nvidia/Llama-3_3-Nemotron-Super-49B-v1"


def test_nemotron_super_49b_plans_on_two_h100(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", MODEL, "--gpu", "H100-80GB", "-tp", "2", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    [weights] = [line for line in data["budget"] if line["key"] == "weights"]
    # 2 B × 49,867,145,216 parameters / 2 GPUs
    assert weights["bytes"] == 49_867_145_216
    assert weights["basis"] == "estimated"
    [kv] = [line for line in data["budget"] if line["key"] == "kv_budget"]
    assert kv["bytes"] > 0


def test_nemotron_super_49b_fits_on_two_h100(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fit", MODEL, "--gpu", "H100-80GB", "--concurrency", "1", "--context",
                 "32768", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["chosen"]["gpus"] == 2
    assert (data["chosen"]["tensor_parallel_size"], data["chosen"]["pipeline_parallel_size"]) \
        == (2, 1)

"""Nemotron-Super-49B (Nemotron-NAS block_configs) plans and fits on H100-80GB once its
weights are counted from its blocks: 49,867,145,216 parameters (tests/derive/
test_params_by_hand.py), 99,734,290,432 B at bf16, 49,867,145,216 B a GPU at TP 2.

Before, the generic decoder formula counted every block as a full Llama-70B-like layer
(88.00B parameters, 176 GB): ``plan -tp 2`` refused ("no memory left for the KV cache:
-11.55 GiB per GPU") and ``fit`` needed 4 GPUs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvledger.cli.main import main
from kvledger.source.resolve import load_source
from plan.test_mtp_weights import DEEPSEEK_TENSORS
from plan.tiny_safetensors import write_safetensors

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


def test_inspect_reports_the_checkpoint_weights(capsys: pytest.CaptureFixture[str]) -> None:
    # Catalog config, no checkpoint: estimated from its blocks, 49,867,145,216 parameters
    # (tests/derive/test_params_by_hand.py) × 2 B (bfloat16, stored and served alike).
    code = main(["inspect", MODEL, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    weights = json.loads(out)["weights"]
    assert weights == {"parameters": 49_867_145_216, "stored_bytes": 99_734_290_432,
                       "served_bytes": 99_734_290_432, "basis": "estimated",
                       "by_dtype": {"BF16": 99_734_290_432}, "warnings": []}
    assert main(["inspect", MODEL]) == 0
    text, _ = capsys.readouterr()
    assert "weights: 49.87B parameters" in text and "stored 99,734,290,432 B" in text


def test_inspect_weights_exact_from_headers(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    # DeepSeek-V3's config over toy safetensors (tests/plan/test_mtp_weights.py): stored
    # 256 + 2 × 68 + 324 + 256 = 972 B; served without the MTP layer (layer 61, 324 B) 648 B.
    # The parameter count is still the architecture's (684,489,845,504: 671.03B decoder +
    # 13.46B MTP).
    model = tmp_path / "deepseek-v3"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps(load_source("deepseek-ai/DeepSeek-V3").config))
    write_safetensors(model / "model.safetensors", DEEPSEEK_TENSORS)
    assert main(["inspect", str(model), "--json"]) == 0
    weights = json.loads(capsys.readouterr()[0])["weights"]
    assert weights["basis"] == "exact"
    assert (weights["stored_bytes"], weights["served_bytes"]) == (972, 648)
    assert weights["by_dtype"] == {"BF16": 768, "F8_E4M3": 192, "F32": 12}

"""``kvledger audit`` and ``--model-local-kv-from`` on a model that declares with vLLM-Omni's
own classes (``tests/vllm_omni_shape.py``: same field names as seed A), vllm-omni not
installed. Bytes by hand there."""

from __future__ import annotations

import json

import pytest

from kvledger.cli.main import main

LLAMA = "meta-llama/Meta-Llama-3.1-8B"  # a catalog id: runs offline


def test_model_local_kv_from_takes_them(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", LLAMA, "--gpu", "H100-80GB", "--max-model-len", "8192", "--max-num-seqs",
            "4", "--json"]
    assert main(args) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*args, "--model-local-kv-from", "vllm_omni_shape:build"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["name"]: r for r in data["model_local_kv"]}
    # talker_static_cache FIXED 1 × 25,165,824 B; local_transformer 4 rows × 131,072 B.
    assert rows["talker_static_cache"]["peak_bytes"] == 25_165_824
    assert rows["local_transformer"]["peak_bytes"] == 4 * 131_072
    assert plain["available_bytes"] - data["available_bytes"] == 25_690_112


def test_audit_takes_them(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    assert main(["audit", "vllm_omni_shape:audited", "--max-num-seqs", "1", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["declarations"]
    assert (row["verdict"], row["declared_bytes"], row["logical_bytes"]) == ("ok", 512, 512)

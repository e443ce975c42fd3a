"""Catalog models' weights from their checkpoints' recorded facts (source/catalog_weights.json).

A catalog id whose checkpoint index was found in a public repository plans its weights with
basis ``exact`` from the recorded ``metadata.total_size``, naming the file; one without stays
estimated and says why. Expected figures are the recorded facts themselves, written here as
literals (not read back through the code under test), and hand arithmetic.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.inspect import inspect_payload
from kvledger.plan.api import plan_model
from kvledger.plan.request import PlanRequest
from kvledger.plan.weights import model_weights
from kvledger.source import catalog
from kvledger.source.catalog import catalog_ids, catalog_rows, catalog_weight_facts
from kvledger.source.headers import DTYPE_BITS
from kvledger.source.resolve import load_source
from kvledger.source.weights import catalog_totals

TABLE = Path(__file__).resolve().parents[2] / "src" / "kvledger" / "source" / \
    "catalog_weights.json"
FACTS: dict[str, dict[str, Any]] = json.loads(TABLE.read_text())["models"]

# The recorded total_size of each catalog model with facts, as its index states it, the file's
# repository and commit (the plan's detail must name them), and a plan that fits it: (engine,
# GPU, TP, bytes per GPU by hand).
EXPECTED = {
    # PANDASANG1231/llama_3.2-3B-huggingface-shard0 model.safetensors.index.json @76307d2a:
    # {"metadata": {"total_size": 6425499648}, ...}; bf16 stored = served, TP 1: the whole.
    "meta-llama/Llama-3.2-3B-Instruct": (
        6_425_499_648, "PANDASANG1231/llama_3.2-3B-huggingface-shard0", "76307d2a",
        ("vllm", "H100", 1, 6_425_499_648)),
    # MiniMax-AI/MiniMax-M1 model.safetensors.index.json @2abb4f45:
    # {"metadata": {"total_size": 912210767872}, ...}; no split by dtype, so counted as
    # stored; vLLM 0.33 has no MiniMax-M1 class, so the native layout plans it, TP 8:
    # 912,210,767,872 / 8 = 114,026,345,984 B per GPU.
    "MiniMaxAI/MiniMax-M1-80k": (
        912_210_767_872, "MiniMax-AI/MiniMax-M1", "2abb4f45",
        ("native", "H200", 8, 114_026_345_984)),
}


def _weights_line(plan: Any) -> dict[str, Any]:
    return next(row for row in plan.to_json()["budget"] if row["key"] == "weights")


def test_every_facts_row_is_a_catalog_model_and_cites_its_file() -> None:
    first_ids = {row["ids"][0] for row in catalog_rows()}
    assert set(FACTS) == set(EXPECTED)
    for model_id, facts in FACTS.items():
        assert model_id in first_ids, model_id
        src = facts["source"]
        assert set(src) == {"repo", "path", "commit"}, model_id
        assert re.fullmatch(r"[0-9a-f]{40}", src["commit"]), model_id
        assert src["path"].endswith(("safetensors.index.json", ".safetensors")), model_id
        assert isinstance(facts["total_size"], int) and facts["total_size"] > 0
        assert facts["checkpoint"], model_id


def test_bytes_by_dtype_add_up_to_the_total() -> None:
    for model_id, facts in FACTS.items():
        by_dtype = facts.get("by_dtype")
        if by_dtype is None:
            continue
        assert facts["by_dtype_how"], model_id  # how the split is known, said
        assert set(by_dtype) <= set(DTYPE_BITS), model_id
        assert sum(by_dtype.values()) == facts["total_size"], model_id
        for dtype, size in (facts.get("mtp_by_dtype") or {}).items():
            assert 0 < size <= by_dtype[dtype], model_id


@pytest.mark.parametrize("model_id", sorted(EXPECTED))
def test_a_catalog_model_with_facts_plans_exact_weights(model_id: str) -> None:
    total, repo, commit, (engine, gpu, tp, per_gpu) = EXPECTED[model_id]
    source = load_source(model_id)
    whole = inspect_payload(source)["weights"]
    assert (whole["basis"], whole["stored_bytes"], whole["served_bytes"]) == \
        ("exact", total, total)
    plan = plan_model(source, PlanRequest(engine=engine, gpu=gpu, tensor_parallel_size=tp))
    line = _weights_line(plan)
    assert line["bytes"] == per_gpu
    assert line["basis"] == ("exact" if tp == 1 else "estimated")  # the per-GPU share
    assert f"from {repo} " in line["label"] and f"@{commit}" in line["label"]
    assert not any("weights estimated" in w for w in plan.to_json()["warnings"])


def test_split_over_tensor_parallel_ranks_is_as_before() -> None:
    # TP 2: the exact total divided by the engine's rule, ceil(6,425,499,648 / 2) =
    # 3,212,749,824 B per GPU, which is an estimate of the per-GPU share.
    plan = plan_model(load_source("meta-llama/Llama-3.2-3B-Instruct"),
                      PlanRequest(engine="vllm", gpu="H100", tensor_parallel_size=2))
    line = _weights_line(plan)
    assert line["bytes"] == 3_212_749_824
    assert line["basis"] == "estimated"
    assert "per GPU: total / (2 TP × 1 PP)" in line["label"]


def test_a_catalog_model_without_facts_stays_estimated() -> None:
    model_id = "meta-llama/Llama-3.2-1B-Instruct"
    assert model_id in catalog_ids() and catalog_weight_facts(model_id) is None
    plan = plan_model(load_source(model_id), PlanRequest(engine="vllm", gpu="H100"))
    line = _weights_line(plan)
    assert line["basis"] == "estimated"
    assert any("no index or header of this catalog model's checkpoint is recorded" in w
               for w in plan.to_json()["warnings"])


def test_facts_are_found_under_any_spelling_of_the_id() -> None:
    assert catalog_weight_facts("META-LLAMA/llama-3.2-3b-instruct") is not None
    # the row's other id (the 40k checkpoint shares the 80k's config and tensors)
    facts = catalog_weight_facts("minimaxai/minimax-m1-40k")
    assert facts is not None and facts["total_size"] == 912_210_767_872
    assert catalog_weight_facts("not-a/catalog-model") is None
    assert catalog_totals("not-a/catalog-model") is None


def test_an_mtp_part_is_left_out_unless_speculating(monkeypatch: pytest.MonkeyPatch) -> None:
    # A made-up facts row for DeepSeek-V3 (num_nextn_predict_layers 1): 1,000 B in all, 100 B
    # of them the MTP layer's. vLLM loads the MTP layer only for MTP speculation, so the plan
    # holds 1,000 − 100 = 900 B, or all 1,000 B when speculating.
    rows = dict(catalog.catalog_weight_rows())
    rows["deepseek-ai/DeepSeek-V3"] = {
        "total_size": 1000, "by_dtype": {"BF16": 600, "F8_E4M3": 400},
        "by_dtype_how": "made up", "mtp_by_dtype": {"BF16": 60, "F8_E4M3": 40},
        "checkpoint": "a test", "revision": None,
        "source": {"repo": "o/r", "path": "model.safetensors.index.json", "commit": "0" * 40}}
    monkeypatch.setattr(catalog, "_WEIGHTS", rows)
    source = load_source("deepseek-ai/DeepSeek-V3")
    totals = source.safetensors()
    assert totals is not None and totals.total_bytes == 1000
    without = model_weights(source.config, model_dtype="bfloat16", exact=totals)
    assert (without.total_bytes, without.basis) == (900, "exact")
    assert "without its MTP layers' 100 B stored" in without.detail
    with_mtp = model_weights(source.config, model_dtype="bfloat16", exact=totals,
                             speculative_mtp=True)
    assert with_mtp.total_bytes == 1000

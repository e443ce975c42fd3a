"""One ``--dtype auto`` rule per engine (``Layout.serving_dtype``): the weights line and vLLM's
profile run read the same one, vLLM's ``_resolve_auto_dtype`` (config/model.py), which
serves float16 gemma2/3 and glm4 checkpoints in bfloat16 (``_FLOAT16_NOT_SUPPORTED_MODELS``)
and a float32 one in bfloat16. Release named: ``vllm==0.33``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.plan.api import load_facts, plan_model
from kvledger.plan.engines.base import get_layout
from kvledger.plan.request import PlanRequest
from oracle_cases import SHARED, needs_shared

GEMMA2 = SHARED / "configs" / "google--gemma-2-9b.json"


def _gemma2(dtype: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(GEMMA2.read_text())
    config["torch_dtype"] = dtype
    return config


def _weights_label(config: dict[str, Any], engine: str, release: str | None) -> str:
    result = plan_model(config, PlanRequest(gpu="H100-80GB", engine=engine,
                                            engine_release=release))
    (line,) = [row for row in result.to_json()["budget"] if row["key"] == "weights"]
    return str(line["label"])


@needs_shared
@pytest.mark.parametrize(("stated", "served"), [("float16", "bfloat16"),
                                                 ("float32", "bfloat16"),
                                                 ("bfloat16", "bfloat16")])
def test_vllm_serves_gemma2_as_its_rule_says_and_the_weights_line_reads_it(
        stated: str, served: str) -> None:
    config = _gemma2(stated)
    layout = get_layout("vllm", "0.33")
    facts, _ = load_facts(config, PlanRequest(engine="vllm", engine_release="0.33"))
    assert layout.serving_dtype(facts) == served
    assert f"parameters at {served})" in _weights_label(config, "vllm", "0.33")


@needs_shared
def test_a_layout_without_the_rule_keeps_a_float16_checkpoint() -> None:
    # The native layout is no vLLM: a float16 gemma2 is weighed as stored (the core default),
    # where vLLM 0.33's line above says bfloat16.
    assert "parameters at float16)" in _weights_label(_gemma2("float16"), "native", None)

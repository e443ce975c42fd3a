"""Planning time is linear in layers, whatever the pipeline split (issue 10).

Before: 30,000 layers took 5.7 s at PP 1 and 24 s at PP 4 (stage assignment tested list
membership and scanned every stage per layer), and PP equal to the layer count was
quadratic in the projection of groups onto stages. Measured in CPU time (``process_time``),
so a busy machine does not fail the test; the bound is ~10x what the linear code needs.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.derive.limits import MAX_LAYERS
from kvledger.plan.api import plan_model
from kvledger.plan.parallel import split_stages
from kvledger.plan.request import PlanRequest


def _deep(model: str, layers: int) -> dict[str, Any]:
    cfg = dict(derive_model(model).config)
    cfg["num_hidden_layers"] = layers
    return cfg


@pytest.mark.parametrize("engine", ["vllm", "native"])
def test_max_layers_at_max_pipeline_split(engine: str) -> None:
    cfg = _deep("mistralai/Mistral-7B-v0.1", MAX_LAYERS)
    request = PlanRequest(engine=engine, kv_cache_memory_bytes=1 << 40, max_model_len=4096,
                          pipeline_parallel_size=MAX_LAYERS)
    started = time.process_time()
    result = plan_model(cfg, request)
    assert time.process_time() - started < 60
    assert len(result.ranks) == MAX_LAYERS  # one stage per layer, each planned


def test_split_stages_is_linear() -> None:
    facts = derive_model(_deep("meta-llama/Meta-Llama-3.1-8B", MAX_LAYERS))
    started = time.process_time()
    stages = split_stages(facts.layers, 1, MAX_LAYERS)
    assert time.process_time() - started < 5  # quadratic: ~50 M list probes, minutes
    assert [s.layer_range for s in stages[:2]] == [(0, 1), (1, 2)]


def test_more_layers_than_the_bound_refused() -> None:
    from kvledger.derive import ConfigError

    with pytest.raises(ConfigError, match="num_hidden_layers' must be <= 10,000"):
        derive_model(_deep("meta-llama/Meta-Llama-3.1-8B", MAX_LAYERS + 1))

"""Shared fixtures for the derive tests: fresh copies of bundled configs (to inject keys into),
per-kind byte sums of derived facts, and vLLM 0.32's own per-layer specs from ../shared/oracles
(skipped cleanly when that folder is absent).
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from kvledger.derive import Kind, ModelFacts, Role
from kvledger.derive.source import load_source
from oracle_cases import ORACLE_FILE, SHARED_MISSING

ORACLE = ORACLE_FILE
# vLLM KV-cache spec class for each of our position-indexed kinds.
SPEC_OF_KIND = {
    Kind.FULL: "FullAttentionSpec",
    Kind.SLIDING: "SlidingWindowSpec",
    Kind.CHUNKED: "ChunkedLocalAttentionSpec",
    Kind.CROSS: "CrossAttentionSpec",
}


@pytest.fixture
def config_copy() -> Callable[[str], dict[str, Any]]:
    """A deep copy of a catalog config, safe to modify."""

    def load(model_id: str) -> dict[str, Any]:
        return copy.deepcopy(load_source(model_id).config)

    return load


def _kind_bytes(facts: ModelFacts) -> dict[str, int]:
    out: dict[str, int] = {}
    for layer in facts.layers:
        if not layer.owns_memory or layer.kind in (Kind.NONE, Kind.CROSS):
            continue
        key = str(layer.kind) if layer.role is Role.DECODER else f"{layer.kind}/{layer.role}"
        out[key] = out.get(key, 0) + layer.bytes_per_token()
    return out


@pytest.fixture
def kind_bytes() -> Callable[[ModelFacts], dict[str, int]]:
    """Bytes per token summed by layer kind ("full", "sliding", ...; "full/mtp" for non-decoder
    roles). Cross-attention is per request, not per token, so it is left out."""
    return _kind_bytes


def _oracle_groups(
    config_file: str, tp: int = 1
) -> Counter[tuple[str, int, int, int, int | None]]:
    if not ORACLE.is_file():
        pytest.skip(SHARED_MISSING)
    for line in ORACLE.read_text().splitlines():
        case = json.loads(line)
        inputs = case["inputs"]
        if (
            case["config"] == config_file
            and not case["hf_quant_config"]
            and inputs["tensor_parallel_size"] == tp
            and inputs["kv_cache_dtype"] == "auto"
        ):
            groups: Counter[tuple[str, int, int, int, int | None]] = Counter()
            for spec in case["layer_specs"]:
                window = spec.get("sliding_window") or spec.get("attention_chunk_size")
                key = (
                    spec["spec"], spec["num_kv_heads"], spec["head_size"], spec["head_size_v"],
                    window,
                )
                groups[key] += spec["num_layers"]
            return groups
    pytest.skip(f"no TP={tp} auto-dtype oracle case for {config_file}")


def _fact_groups(
    facts: ModelFacts, tp: int = 1
) -> Counter[tuple[str, int, int, int, int | None]]:
    groups: Counter[tuple[str, int, int, int, int | None]] = Counter()
    for fact in facts.by_role(Role.DECODER):
        if fact.kind is Kind.NONE:
            continue
        layer = fact.split(tp)
        window = getattr(layer, "window", None) or getattr(layer, "chunk", None)
        key = (
            SPEC_OF_KIND[layer.kind], layer.k_heads, layer.k_dim,  # type: ignore[attr-defined]
            layer.v_dim, window,  # type: ignore[attr-defined]
        )
        groups[key] += 1
    return groups


@pytest.fixture
def oracle_agrees() -> Callable[..., None]:
    """Assert the decoder facts (split for ``tp`` ranks) group into exactly vLLM's per-layer
    specs for that TP size (spec class, KV heads, head size K and V, window or chunk; counts
    per group). Facts are unsplit; vLLM's specs are per rank."""

    def check(facts: ModelFacts, config_file: str, tp: int = 1) -> None:
        assert _fact_groups(facts, tp) == _oracle_groups(config_file, tp)

    return check

"""Layer groups (``ModelFacts.groups``): the layers a layout plans once each, and ``at``,
which places one derived layer at another index."""

from __future__ import annotations

import pytest

from kvledger.derive import ConfigError, derive_model
from kvledger.derive.layers import FullAttention, LayerCache, Role, SlidingAttention, group_layers


def full(i: int, **kw: object) -> FullAttention:
    geometry: dict[str, object] = {"k_heads": 8, "k_dim": 128, "v_heads": 8, "v_dim": 128}
    return FullAttention(index=i, **{**geometry, **kw})  # type: ignore[arg-type]


def test_layers_equal_but_for_their_index_form_one_group() -> None:
    layers: list[LayerCache] = [
        full(0), full(1),
        SlidingAttention(index=2, k_heads=8, k_dim=128, v_heads=8, v_dim=128, window=4096),
        full(3),
        full(4, role=Role.MTP),  # another role: another group
        full(5, dtype="fp8_e4m3"),  # another dtype: another group
        full(6, k_heads=4, v_heads=4),  # other heads: another group
    ]
    groups = group_layers(layers)
    assert [(g.indices, g.ordinals) for g in groups] == [
        ((0, 1, 3), (0, 1, 3)), ((2,), (2,)), ((4,), (4,)), ((5,), (5,)), ((6,), (6,)),
    ]
    assert [g.layer for g in groups] == [layers[0], layers[2], layers[4], layers[5], layers[6]]


def test_groups_of_a_catalog_model_and_their_memo() -> None:
    # Llama-3.1-8B: 32 identical full-attention layers.
    facts = derive_model("meta-llama/Meta-Llama-3.1-8B")
    (group,) = facts.groups
    assert group.indices == tuple(range(32)) and group.ordinals == tuple(range(32))
    assert facts.groups is facts.groups  # computed once per facts object
    # Qwen3-Next-80B: 48 layers, every 4th full attention, the rest Gated DeltaNet; its one
    # MTP layer (num_nextn_predict_layers 1) is full attention with the MTP role.
    hybrid = derive_model("Qwen/Qwen3-Next-80B-A3B-Thinking")
    assert [(str(g.layer.kind), str(g.layer.role), len(g.indices)) for g in hybrid.groups] == [
        ("state", "decoder", 36), ("full", "decoder", 12), ("full", "mtp", 1)]


def test_at_places_the_same_facts_at_another_index() -> None:
    layer = full(0)
    moved = layer.at(7, Role.MTP)
    assert (moved.index, moved.role, layer.index, layer.role) == (7, Role.MTP, 0, Role.DECODER)
    assert moved == full(7, role=Role.MTP)
    assert layer.at(3) == full(3)
    with pytest.raises(ConfigError, match="index"):
        layer.at(-1)


def test_a_layer_with_an_unhashable_fact_is_a_group_alone() -> None:
    from collections.abc import Sequence

    from kvledger.derive.layers import RecurrentState, StateTensor
    from kvledger.records import record

    @record(frozen=True, kw_only=True)
    class ListState(RecurrentState):
        sizes: list[int]  # a list field: facts that cannot be a dict key

        def tensors(self) -> Sequence[StateTensor]:
            return (StateTensor("s", tuple(self.sizes), "float32"),)

    layers = [ListState(index=i, sizes=[4]) for i in range(3)]
    groups = group_layers(layers)
    assert [g.indices for g in groups] == [(0,), (1,), (2,)]

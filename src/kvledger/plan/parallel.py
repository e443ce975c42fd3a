"""Tensor, pipeline and data parallelism over per-layer facts.

- **TP** splits each layer with its own rule (``LayerCache.split(tp)``): KV heads divided, or
  replicated one per rank when there are fewer heads than ranks; MLA latents and indexers
  replicated; recurrent states split as vLLM splits them.
- **PP** assigns decoder layers to stages exactly as vLLM's ``get_pp_indices``
  (``vllm/distributed/utils.py``) does without ``VLLM_PP_LAYER_PARTITION``: every stage gets
  ``num_layers // pp``; the ``num_layers % pp`` remaining layers go one each to the stages
  *before the last*, starting from the second-to-last and moving toward the first (the last
  stage also holds the final norm and LM head; vLLM balances compute that way). The
  ``VLLM_PP_LAYER_PARTITION`` override is out of scope: planning never reads the environment.
  MTP and draft layers go to the last stage (next to the LM head, where the drafter runs);
  encoder layers to the first.
- Each stage is planned alone, then all are reconciled to the smallest page count (vLLM takes
  the minimum number of blocks over workers; the seed engine did an all-reduce MIN), with
  ``PoolPlan.with_paged_entries`` for native plans.
- **DP** replicates the whole pipeline: totals multiply, per-GPU numbers do not change.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvledger.derive.layers import LayerCache, Role, group_layers
from kvledger.records import record


def pp_partition(num_layers: int, pp: int) -> list[tuple[int, int]]:
    """``[start, end)`` of decoder layers per stage (vLLM ``get_pp_indices``, default path).

    20 layers over 3 stages: 6 each, remainder 2 → stages -2 and -3 get one more:
    [(0, 7), (7, 14), (14, 20)].
    """
    if isinstance(pp, bool) or not isinstance(pp, int) or pp < 1:
        raise ValueError(f"pipeline_parallel_size must be an int >= 1, got {pp!r}")
    if num_layers < pp:
        raise ValueError(
            f"pipeline_parallel_size {pp} exceeds the {num_layers} decoder layers to split"
        )
    sizes = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        sizes[-i] += 1
    out, start = [], 0
    for size in sizes:
        out.append((start, start + size))
        start += size
    return out


@record(frozen=True)
class Stage:
    """One pipeline stage: which decoder layers it owns and its TP-split facts."""

    index: int
    layer_range: tuple[int, int]  # [start, end) over decoder layers, in model order
    layers: tuple[LayerCache, ...]  # already split for one TP rank


def split_stages(layers: Sequence[LayerCache], tp: int, pp: int) -> list[Stage]:
    """Assign layers to ``pp`` stages and split each for one of ``tp`` ranks."""
    # A decoder layer may carry several caches (Whisper: self- and cross-attention under one
    # index); stages split decoder *layers*, so positions are over distinct indices.
    order = list(dict.fromkeys(layer.index for layer in layers if layer.role == Role.DECODER))
    ranges = pp_partition(len(order), pp) if order else [(0, 0)] * pp
    stage_of = {index: s for s, (a, b) in enumerate(ranges) for index in order[a:b]}
    # One split per group of identical layers, placed at each member's index.
    split: dict[int, LayerCache] = {}
    if tp > 1:
        for group in group_layers(layers):
            one = group.layer.split(tp)
            split.update((o, one.at(i)) for o, i in zip(group.ordinals, group.indices,
                                                          strict=True))
    buckets: list[list[LayerCache]] = [[] for _ in range(pp)]
    for ordinal, layer in enumerate(layers):
        if layer.role == Role.DECODER:
            stage = stage_of[layer.index]
        elif layer.role == Role.ENCODER:
            stage = 0
        else:  # MTP, DRAFT
            stage = pp - 1
        buckets[stage].append(split[ordinal] if tp > 1 else layer)
    return [Stage(i, ranges[i], tuple(b)) for i, b in enumerate(buckets)]


def reconcile_min(counts: Sequence[int]) -> int:
    """The page count every stage can honour: the minimum (0 for no stages)."""
    return min(counts) if counts else 0

"""One ledger: model-local declarations (protocol A) enter the same plan as engine pools (B).

- A ``MAX_NUM_SEQS`` declaration becomes a STATE class: one entry of ``bytes_per_row`` per
  request, so ``plan_pools`` reserves ``max_num_seqs × bytes_per_row``.
- A ``FIXED`` declaration becomes a FIXED class of ``rows_fixed`` entries of ``bytes_per_row``:
  its size does not move with ``max_num_seqs``.
- Declarations the engine's profiling run already paid for (e.g. captured into a CUDA-graph
  pool before profiling) are named by the caller in ``already_charged``. They are not reserved
  again — that would count them twice — but kept apart, by name and bytes, so a report can
  still show them.

Class names are ``"local:<declaration name>"`` so a model-local cache can never merge by
accident with an engine class of the same name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from kvledger.declare.foreign import adopt_spec
from kvledger.declare.model_local import ModelLocalKVSpec, RowDriver
from kvledger.declare.pools import SubPoolSpec, fixed_pool, state_pool
from kvledger.records import field, record

LOCAL_PREFIX = "local:"


@record(frozen=True)
class ModelLocalPoolSpecs:
    """What the bridge hands to ``plan_pools``: classes to reserve, and bytes already charged."""

    specs: tuple[SubPoolSpec, ...]
    already_charged: dict[str, int] = field(default_factory=dict)

    def __iter__(self) -> Iterator[SubPoolSpec]:
        return iter(self.specs)


def model_local_to_pool_specs(
    specs: Iterable[ModelLocalKVSpec | tuple[str, ModelLocalKVSpec]],
    *,
    max_num_seqs: int = 1,
    already_charged: Iterable[str] = (),
) -> ModelLocalPoolSpecs:
    """Turn declarations (or ``collect_model_local_kv_specs`` output) into pool classes.

    ``already_charged`` names declarations the engine's profiling already counted; their peak
    bytes at ``max_num_seqs`` are recorded, not reserved. An unknown name there is an error:
    a typo would otherwise double-count silently.
    """
    declared: list[ModelLocalKVSpec] = []
    for item in specs:
        # vLLM-Omni's own ModelLocalKVSpec (same fields) is adopted; anything else refused.
        declared.append(adopt_spec(item[1] if isinstance(item, tuple) else item))
    charged_names = set(already_charged)
    unknown = charged_names - {s.name for s in declared}
    if unknown:
        raise ValueError(f"already_charged names no declaration: {', '.join(sorted(unknown))}")
    out: list[SubPoolSpec] = []
    charged: dict[str, int] = {}
    for spec in declared:
        cls = LOCAL_PREFIX + spec.name
        if spec.name in charged_names:
            charged[cls] = charged.get(cls, 0) + spec.peak_bytes(max_num_seqs)
        elif spec.rows is RowDriver.MAX_NUM_SEQS:
            out.append(state_pool(cls, spec.bytes_per_row, entries_per_req=1, source=spec.name))
        else:
            out.append(fixed_pool(cls, spec.bytes_per_row, entries=spec.rows_fixed,
                                  source=spec.name))
    return ModelLocalPoolSpecs(tuple(out), charged)


def declared_peak_bytes(specs: Sequence[ModelLocalKVSpec], max_num_seqs: int) -> int:
    return sum(s.peak_bytes(max_num_seqs) for s in specs)

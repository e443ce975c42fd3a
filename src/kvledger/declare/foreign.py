"""Declarations made with another copy of seed A: vLLM-Omni's own ``ModelLocalKVSpec``.

vLLM-Omni ships the protocol as ``vllm_omni/model_executor/models/model_local_kv.py`` (read at
reputationly/vllm-omni 884a45d011ec01f186e7344f631c15a1092d8d65): the same field names as
kvledger's (``name, layers, kv_heads, head_dim, dtype, physical_capacity_positions,
capacity_source, scope, rows, rows_fixed, rows_reason, allocation_note``), but its own
classes — a frozen dataclass whose ``dtype`` is a ``torch.dtype`` and whose ``scope`` /
``rows`` are ``str``-valued enums of its own module (``"model"``, ``"max_num_seqs"``, …) — and
its ``HasModelLocalKV`` protocol is the same one method, ``model_local_kv_specs()``. So a
vLLM-Omni model's declarations are kvledger declarations by their fields: ``adopt_spec``
rebuilds one as kvledger's ``ModelLocalKVSpec`` (the seed's checks run again), without
importing vllm-omni or torch. Anything else is refused by name.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from kvledger.declare.from_json import FIELDS, REQUIRED
from kvledger.declare.model_local import ModelLocalKVSpec


def adopt_spec(obj: Any) -> ModelLocalKVSpec:
    """``obj`` as kvledger's ``ModelLocalKVSpec``: itself if it is one, else rebuilt from the
    seed's fields read off it (an enum field by its value). ``TypeError`` naming the missing
    fields for an object that is not a declaration; the seed's own errors for a bad one."""
    if isinstance(obj, ModelLocalKVSpec):
        return obj
    missing = [f for f in REQUIRED if not hasattr(obj, f)]
    if missing:
        raise TypeError(f"{type(obj).__name__} is not a ModelLocalKVSpec: it has no "
                        f"{', '.join(missing)}")
    values = {f: getattr(obj, f) for f in FIELDS if hasattr(obj, f)}
    for key in ("scope", "rows"):
        if isinstance(values[key], Enum):
            values[key] = values[key].value
    return ModelLocalKVSpec(**values)


def adopt_item(item: Any) -> Any:
    """A declaration or an ``(owner path, declaration)`` pair, with the declaration adopted."""
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        return item[0], adopt_spec(item[1])
    return adopt_spec(item)

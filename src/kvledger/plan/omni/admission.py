"""vLLM-Omni's per-device admission check, as its source states it.

``vllm_omni/engine/stage_admission.py`` (commit 0e0d3b78fd43143361ca311159ffae03ccffbb85):
``evaluate`` proves, for every physical device *g*, before any stage launches::

    Σ_{s on g} int(capacity(g) · utilization(s)) + Σ graph_reserve(s)
        + external_reserve + safety_margin  ≤  capacity(g)

with ``_DEFAULT_EXTERNAL_RESERVE_BYTES`` = 1 GiB, ``_DEFAULT_SAFETY_MARGIN_BYTES`` = 1 GiB and
``graph_reserve_bytes`` = ``_DEFAULT_GRAPH_RESERVE_BYTES`` (2 GiB) for a stage that captures
CUDA graphs, 0 when ``_cudagraph_disabled`` (``enforce_eager``, or a ``cudagraph_mode``
ending in ``NONE``). A stage on several devices (tensor parallel) claims its utilization on
each (``for dev in d.device_ids``). ``DeviceLedger.required_bytes`` is the left side;
``fits`` is ``required_bytes <= capacity_bytes``. Capacity is the device's total memory
(``device_total_memory``): here the GPU preset's total, the same number for every device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kvledger.records import record

GIB = 1 << 30
GRAPH_RESERVE_BYTES = 2 * GIB
EXTERNAL_RESERVE_BYTES = 1 * GIB
SAFETY_MARGIN_BYTES = 1 * GIB


@record(frozen=True)
class Demand:
    """One stage's claim (``StageDemand``): its devices, fraction and graph reserve."""

    stage_id: int
    devices: tuple[int, ...]
    utilization: float
    graph_reserve_bytes: int


@record(frozen=True)
class DeviceAdmission:
    """One device's ledger (``DeviceLedger``)."""

    device: int
    capacity_bytes: int
    kv_budget_bytes: int  # Σ int(capacity · utilization)
    graph_reserve_bytes: int
    external_reserve_bytes: int
    safety_margin_bytes: int
    stages: tuple[int, ...]

    @property
    def required_bytes(self) -> int:
        return (self.kv_budget_bytes + self.graph_reserve_bytes + self.external_reserve_bytes
                + self.safety_margin_bytes)

    @property
    def ok(self) -> bool:
        return self.required_bytes <= self.capacity_bytes

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "capacity_bytes": self.capacity_bytes,
                "required_bytes": self.required_bytes, "ok": self.ok,
                "kv_budget_bytes": self.kv_budget_bytes,
                "graph_reserve_bytes": self.graph_reserve_bytes,
                "external_reserve_bytes": self.external_reserve_bytes,
                "safety_margin_bytes": self.safety_margin_bytes, "stages": list(self.stages)}


def graph_reserve(enforce_eager: bool, cudagraph_none: bool) -> int:
    """``graph_reserve_bytes``: 2 GiB when the stage captures graphs, else 0."""
    return 0 if enforce_eager or cudagraph_none else GRAPH_RESERVE_BYTES


def admit(demands: Sequence[Demand], capacity_bytes: int) -> tuple[DeviceAdmission, ...]:
    """Every device's ledger, in device order (``evaluate``, without raising)."""
    kv: dict[int, int] = {}
    graphs: dict[int, int] = {}
    stages: dict[int, list[int]] = {}
    for d in demands:
        for dev in d.devices:
            kv[dev] = kv.get(dev, 0) + int(capacity_bytes * d.utilization)
            graphs[dev] = graphs.get(dev, 0) + d.graph_reserve_bytes
            stages.setdefault(dev, []).append(d.stage_id)
    return tuple(
        DeviceAdmission(device=dev, capacity_bytes=capacity_bytes, kv_budget_bytes=kv[dev],
                        graph_reserve_bytes=graphs[dev],
                        external_reserve_bytes=EXTERNAL_RESERVE_BYTES,
                        safety_margin_bytes=SAFETY_MARGIN_BYTES, stages=tuple(stages[dev]))
        for dev in sorted(kv))

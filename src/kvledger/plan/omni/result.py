"""What ``plan_omni`` returns: each stage's plan, each device's admission, the split.

``OmniPlan.to_json`` is the machine interface of ``kvledger plan --omni-deploy --json``:
``stages`` (``stage_id``, ``role``, ``devices``, ``gpu_memory_utilization``, ``max_num_seqs``,
``plan`` — the stage's plan object, or null with ``reason``), ``admission`` (``device``,
``capacity_bytes``, ``required_bytes``, ``ok``) and, with a concurrency, ``split``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger import records
from kvledger.plan.omni.admission import DeviceAdmission
from kvledger.plan.result import PlanResult
from kvledger.records import field, record


@record(frozen=True)
class LocalDeclaration:
    """A model-local declaration on a stage with no plan: its bytes at that stage's rows."""

    name: str
    rows: str
    row_count: int
    bytes_per_row: int
    peak_bytes: int

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in records.fields(self)}


@record(frozen=True)
class StagePlan:
    stage_id: int
    role: str
    execution_type: str
    model_part: str | None  # the sub-config's key; None: the whole config
    devices: tuple[int, ...]
    gpu_memory_utilization: float
    utilization_source: str  # "deploy file" or the engine default's words
    max_num_seqs: int
    max_num_batched_tokens: int
    enable_prefix_caching: bool | None
    enforce_eager: bool
    graph_reserve_bytes: int
    plan: PlanResult | None
    reason: str | None = None
    model_local_kv: tuple[LocalDeclaration, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "stage_id": self.stage_id, "role": self.role, "execution_type": self.execution_type,
            "model_part": self.model_part, "devices": list(self.devices),
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "utilization_source": self.utilization_source, "max_num_seqs": self.max_num_seqs,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "enable_prefix_caching": self.enable_prefix_caching,
            "enforce_eager": self.enforce_eager,
            "graph_reserve_bytes": self.graph_reserve_bytes,
            "plan": self.plan.to_json() if self.plan is not None else None,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        if self.model_local_kv:
            out["model_local_kv"] = [d.to_json() for d in self.model_local_kv]
        return out


@record(frozen=True)
class DeviceSplit:
    """On one device: each stage's smallest fraction for ``concurrency`` requests, or why none."""

    device: int
    concurrency: int
    fractions: Mapping[int, float]  # stage id → fraction (stages without a plan: as deployed)
    required_bytes: int | None
    capacity_bytes: int
    ok: bool
    reasons: tuple[str, ...] = ()

    @property
    def spare_fraction(self) -> float | None:
        """The device left over, in whole hundredths (what a stage could be given on top):
        floor(100 × (capacity − required) / capacity) / 100; None without a split."""
        if self.required_bytes is None or not self.ok:
            return None
        return (100 * (self.capacity_bytes - self.required_bytes) // self.capacity_bytes) / 100

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "concurrency": self.concurrency,
                "fractions": {str(k): v for k, v in self.fractions.items()},
                "required_bytes": self.required_bytes, "capacity_bytes": self.capacity_bytes,
                "ok": self.ok, "spare_fraction": self.spare_fraction,
                "reasons": list(self.reasons)}


@record(frozen=True)
class OmniPlan:
    model: str
    deploy: str
    pipeline: str
    platform: str
    gpu: str
    capacity_bytes: int
    engine_release: str
    stages: tuple[StagePlan, ...]
    admission: tuple[DeviceAdmission, ...]
    split: tuple[DeviceSplit, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model, "omni_deploy": self.deploy, "pipeline": self.pipeline,
            "platform": self.platform, "gpu": self.gpu, "capacity_bytes": self.capacity_bytes,
            "engine": "vllm", "engine_release": self.engine_release,
            "stages": [s.to_json() for s in self.stages],
            "admission": [a.to_json() for a in self.admission],
            "warnings": list(self.warnings),
        }
        if self.split:
            out["split"] = [s.to_json() for s in self.split]
        return out

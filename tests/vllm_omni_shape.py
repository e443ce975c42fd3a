"""Objects shaped like vLLM-Omni's own seed-A classes
(``vllm_omni/model_executor/models/model_local_kv.py``: a frozen dataclass
``ModelLocalKVSpec`` with the seed's field names, ``str``-valued enums of its own module for
``scope`` and ``rows``, ``dtype`` a ``torch.dtype``), written here so the interop tests run
without vllm-omni. ``TorchLikeDtype`` stands in for a ``torch.dtype`` where torch is not
installed: a class named ``dtype`` in module ``torch``, printed ``torch.<name>``. Imported by
the CLI test as the top-level module ``vllm_omni_shape``: absolute imports only."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class ModelLocalKVScope(str, Enum):  # noqa: UP042 - vLLM-Omni's shape, not StrEnum
    INVOCATION = "invocation"
    REQUEST = "request"
    SESSION = "session"
    MODEL = "model"


class RowDriver(str, Enum):  # noqa: UP042 - vLLM-Omni's shape, not StrEnum
    FIXED = "fixed"
    MAX_NUM_SEQS = "max_num_seqs"


class dtype:  # named as torch names its class
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


dtype.__module__ = "torch"
TorchLikeDtype = dtype


@dataclass(frozen=True)
class ModelLocalKVSpec:
    name: str
    layers: int
    kv_heads: int
    head_dim: int
    dtype: Any
    physical_capacity_positions: int
    capacity_source: str
    scope: ModelLocalKVScope
    rows: RowDriver
    rows_fixed: int = 1
    rows_reason: str = ""
    allocation_note: str | None = None


def talker_static_cache(dtype_: Any = None) -> ModelLocalKVSpec:
    """Ming's talker static cache as vLLM-Omni declares it (FIXED 1): 24 layers × 2 KV heads ×
    64 × 2,048 positions, bf16: 2 × 24 × 2 × 64 × 2,048 × 2 B = 25,165,824 B."""
    return ModelLocalKVSpec(
        name="talker_static_cache", layers=24, kv_heads=2, head_dim=64,
        dtype=dtype_ if dtype_ is not None else TorchLikeDtype("bfloat16"),
        physical_capacity_positions=2048, capacity_source="StaticCache(max_cache_len=2048)",
        scope=ModelLocalKVScope.MODEL, rows=RowDriver.FIXED, rows_fixed=1,
        rows_reason="talker calls are serialized")


def local_transformer() -> ModelLocalKVSpec:
    """MiMo-Audio's local transformer (MAX_NUM_SEQS rows): 4 layers × 8 heads × 64 × 16
    positions, bf16: 2 × 4 × 8 × 64 × 16 × 2 B = 131,072 B a row."""
    return ModelLocalKVSpec(
        name="local_transformer", layers=4, kv_heads=8, head_dim=64,
        dtype=TorchLikeDtype("bfloat16"), physical_capacity_positions=16,
        capacity_source="group size", scope=ModelLocalKVScope.REQUEST,
        rows=RowDriver.MAX_NUM_SEQS)


class Owner:
    """A ``HasModelLocalKV`` owner deep in a plain-object tree (no torch)."""

    def __init__(self, *specs: ModelLocalKVSpec) -> None:
        self._specs = list(specs)

    def model_local_kv_specs(self) -> list[ModelLocalKVSpec]:
        return self._specs


class Model:
    """A model whose ``named_modules()`` reaches two owners."""

    def __init__(self) -> None:
        self.talker = Owner(talker_static_cache())
        self.local = Owner(local_transformer())

    def named_modules(self) -> list[tuple[str, Any]]:
        return [("", self), ("talker", self.talker), ("mimo.local", self.local)]


def build() -> Model:
    """The ``--model-local-kv-from vllm_omni_shape:build`` target."""
    return Model()


def audited() -> tuple[Any, Any]:
    """The ``kvledger audit vllm_omni_shape:audited`` target (needs torch and transformers): a
    torch module declaring with vLLM-Omni's classes (``dtype`` a real ``torch.float32``) and
    holding a ``DynamicCache`` of 1 layer × 2 heads × 4 positions × 8, 1 row: 2 × 1 × 2 × 8 ×
    4 × 4 B = 512 B, as declared."""
    import torch
    from torch import nn
    from transformers import DynamicCache

    class Talker(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kv = DynamicCache()

        def model_local_kv_specs(self) -> list[ModelLocalKVSpec]:
            return [ModelLocalKVSpec(
                name="kv", layers=1, kv_heads=2, head_dim=8, dtype=torch.float32,
                physical_capacity_positions=4, capacity_source="test",
                scope=ModelLocalKVScope.MODEL, rows=RowDriver.FIXED,
                rows_reason="one serialized call")]

    model = nn.Sequential(nn.Linear(8, 8), Talker())

    def run() -> None:
        kv = torch.zeros(1, 2, 4, 8)
        model[1].kv.update(kv, kv.clone(), 0)

    return model, run

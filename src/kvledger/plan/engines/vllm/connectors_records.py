"""The records of ``connectors.py``: an instance's GPU KV pool as a connector sees it, a host
tier, and what a connector adds (kept apart so the LMCache module and the dispatcher both read
them without importing each other)."""

from __future__ import annotations

from typing import Any

from kvledger.errors import PlanError
from kvledger.records import record

GIB = 1 << 30


class ConnectorNotModelled(PlanError):
    """A ``--kv-transfer-config`` setting kvledger does not size; names it."""


@record(frozen=True)
class PoolFacts:
    """One vLLM instance's GPU KV pool, as its plan found it (per GPU)."""

    num_blocks: int
    bytes_per_block: int  # one GPU's block over all its layers
    block_size: int
    world_size: int  # ranks of the instance (TP × PP)
    groups: int  # KV cache groups
    use_mla: bool

    @property
    def bytes_per_token(self) -> int:
        """One token's KV on one GPU (all its layers)."""
        return self.bytes_per_block // self.block_size


@record(frozen=True)
class Tier:
    """A KV store outside the GPU pool: its size and what it holds (a capacity, not a hit
    rate)."""

    name: str  # "cpu" / "disk"
    bytes: int  # on each holder (see ``per``)
    chunk_bytes: int  # one chunk in the tier's layout, alignment included
    tokens_per_chunk: int
    chunks: int
    layout: str
    per: str = "instance"  # "instance": one store for all ranks; "gpu": one store per rank

    @property
    def tokens(self) -> int:
        """Tokens the tier holds (every rank's share of each token, for ``per`` "gpu")."""
        return self.chunks * self.tokens_per_chunk

    def to_json(self) -> dict[str, Any]:
        return {"tier": self.name, "bytes": self.bytes, "per": self.per,
                "chunk_bytes": self.chunk_bytes, "tokens_per_chunk": self.tokens_per_chunk,
                "chunks": self.chunks, "tokens": self.tokens, "layout": self.layout}


@record(frozen=True)
class ConnectorMemory:
    connector: str
    role: str
    gpu_bytes_per_gpu: int  # beyond the KV pool, allocated after vLLM's memory profiling
    host_bytes: int  # over the whole instance (all its ranks)
    kv_layout: str | None  # the layout vLLM is asked for (None: its default)
    tiers: tuple[Tier, ...] = ()
    notes: tuple[str, ...] = ()
    children: tuple[ConnectorMemory, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "connector": self.connector, "kv_role": self.role,
            "gpu_bytes_per_gpu": self.gpu_bytes_per_gpu, "host_bytes": self.host_bytes,
            "kv_cache_layout": self.kv_layout, "tiers": [t.to_json() for t in self.tiers],
            "notes": list(self.notes)}
        if self.children:
            out["children"] = [c.to_json() for c in self.children]
        return out

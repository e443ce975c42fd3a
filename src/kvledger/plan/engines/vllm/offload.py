"""Weights offloaded to the CPU (``--cpu-offload-gb``) and the CPU KV tier
(``--kv-offloading-size``), as vLLM sizes them.

Weights (model_executor/offloader/uva.py ``UVAOffloader``, chosen by offloader/base.py
``create_offloader`` when ``cpu_offload_gb > 0``): the budget is ``int(cpu_offload_gb ×
1024**3)`` bytes per GPU. ``make_layers`` (model_executor/models/utils.py) hands it the decoder
layers one by one, in order; ``_maybe_offload_to_cpu`` moves whole parameters, in
``named_parameters`` order, while the bytes moved so far are below the budget — so the last
parameter moved may overshoot it, and the embedding and LM head (built outside
``make_layers``) never move. Moved parameters leave GPU memory before the profiling run:
the weights line shrinks by exactly those bytes.

CPU KV tier (config/vllm.py ``_post_init_kv_transfer_config``: backend "native" sets the
``OffloadingConnector`` with ``cpu_bytes_to_use = kv_offloading_size × 2**30``;
v1/kv_offload/cpu/spec.py ``CPUOffloadingSpec.__init__``): a chunk is one GPU block
(``blocks_per_chunk`` 1 unless the connector's extra config says otherwise) of every layer on
every worker — ``worker_kv_bytes_per_block × world_size`` (the GPU tensor's bytes / its
blocks: distributed/kv_transfer/kv_connector/v1/offloading/config.py), rounded up to the
page size (``mmap.PAGESIZE``: 4,096 on x86-64 Linux); the tier holds
``int(cpu_bytes_to_use) // chunk`` chunks of ``block_size`` tokens. It allocates pinned CPU
memory, not GPU memory: the GPU KV plan is unchanged. The same in vLLM 0.32.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.errors import PlanError
from kvledger.plan.engines.vllm.launch import VllmLaunch
from kvledger.plan.engines.vllm.linear_shapes import NotLlamaLike, dims, layer_parameters
from kvledger.records import record

GIB = 1 << 30
PAGE_SIZE = 4096  # mmap.PAGESIZE on x86-64 Linux (SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT)


class OffloadNotModelled(PlanError):
    """An offload setting kvledger does not size; names why."""


@record(frozen=True)
class CpuOffload:
    target_bytes: int  # int(cpu_offload_gb × 2**30)
    moved_bytes: int  # the whole parameters moved (may overshoot the target)
    detail: str


def cpu_offload(cfg: Mapping[str, Any], launch: VllmLaunch, *, model_dtype: str, tp: int,
                pp: int) -> CpuOffload:
    """The weight bytes one GPU moves to the CPU (module docstring)."""
    from kvledger.plan.weights import serving_dtype

    flag = "--cpu-offload-gb"
    if launch.quantization is not None:
        raise OffloadNotModelled(f"{flag} with online quantization: the parameters are "
                                 "offloaded before they are quantized, which kvledger does "
                                 "not model")
    if pp > 1:
        raise OffloadNotModelled(f"{flag} with pipeline parallelism: each stage offloads from "
                                 "its own layers, which kvledger does not split exactly")
    try:
        d = dims(cfg, tp)
    except NotLlamaLike as exc:
        raise OffloadNotModelled(f"{flag}: kvledger does not size the offloaded parameters of "
                                 f"{exc}") from None
    width = 2 if serving_dtype(model_dtype) in ("bfloat16", "float16") else 4
    target = int(launch.cpu_offload_gb * GIB)
    params = layer_parameters(d)
    moved = 0
    count = 0
    for _layer in range(d.layers):
        for _name, elements in params:
            if moved >= target:
                break
            moved += elements * width
            count += 1
        if moved >= target:
            break
    layer_bytes = sum(n for _, n in params) * width
    whole, rest = divmod(moved, layer_bytes)
    detail = (f"{flag} {launch.cpu_offload_gb:g}: {target:,} B asked; whole parameters in "
              f"decoder-layer order move until it is reached: {moved:,} B ({count} "
              f"parameters: {whole} layer(s) of {layer_bytes:,} B + {rest:,} B)")
    if moved < target:
        detail += "; every decoder layer moved (the embedding and LM head stay)"
    return CpuOffload(target, moved, detail)


@record(frozen=True)
class CpuKvTier:
    backend: str
    cpu_bytes: int
    chunk_bytes: int  # one block of every layer on every worker, page-aligned
    chunks: int
    tokens: int

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "cpu_bytes": self.cpu_bytes,
                "chunk_bytes": self.chunk_bytes, "chunks": self.chunks,
                "cpu_tokens": self.tokens}


def kv_tier(launch: VllmLaunch, *, bytes_per_block: int, block_size: int, world_size: int,
            groups: int, use_mla: bool) -> CpuKvTier:
    """The CPU tier's capacity (module docstring); ``bytes_per_block``: one GPU's block over
    all its layers."""
    size = launch.kv_offloading_size
    assert size is not None
    flag = "--kv-offloading-size"
    if launch.kv_offloading_backend != "native":
        raise OffloadNotModelled(f"{flag} with --kv-offloading-backend "
                                 f"{launch.kv_offloading_backend}: the LMCache server sizes the "
                                 "tier, and kvledger does not model its GPU buffers")
    if groups != 1:
        raise OffloadNotModelled(f"{flag} on a model with {groups} KV cache groups: the "
                                 "connector's per-group chunks are not modelled")
    if use_mla and world_size > 1:
        raise OffloadNotModelled(f"{flag} with MLA over {world_size} ranks: vLLM may keep one "
                                 "replicated copy, which kvledger does not model")
    cpu_bytes = int(size * GIB)
    raw = bytes_per_block * world_size
    chunk = -(-raw // PAGE_SIZE) * PAGE_SIZE
    chunks = cpu_bytes // chunk
    return CpuKvTier("native", cpu_bytes, chunk, chunks, chunks * block_size)

"""Will it start, and stay up: the free-memory admission and the headroom after the KV cache,
for vLLM and SGLang, when other processes (another engine, a second model) share the GPU.

vLLM 0.28-0.33 (``v1/worker/utils.py request_memory``, called by ``gpu_worker.init_device``
after the CUDA context, the communicators and — 0.33 — the cuBLAS handles exist, "BEFORE taking
memory snapshot")::

    requested = ceil(total × gpu_memory_utilization)
    if free_at_snapshot < requested: raise ValueError("Free memory on device ... on startup is
        less than desired GPU memory utilization ...")

``total`` is the whole device's, never what is free: utilization is a fraction of the *total*,
so two vLLM engines on one GPU start only when their fractions (plus what each process takes
before its snapshot) fit in it — 0.5 + 0.4 of an 80 GiB GPU starts, 0.5 + 0.5 does not.
``free_at_snapshot`` = the free memory before the engine starts (``--gpu-free-bytes``, or total
− ``--gpu-memory-in-use``, or the whole device) − what the engine's own process takes before
the snapshot (the CUDA context, NCCL, cuBLAS). That last part is no rule in vLLM's source but
the device's: public start-up logs print it as total − free in "Free memory on device (F/T
GiB) on startup" on otherwise idle GPUs — one NVIDIA GPU 0.41, 0.49, 0.51, 0.53 GiB (H100,
L40S, a 24 GiB card, H100), two GPUs 0.45 GiB (RTX 5090 TP 2), 0.96 GiB (H100 NVL, TP > 1),
MI300X 0.33 GiB. So kvledger says "refuses" only when even the smallest of those (0.4 GiB)
does not fit, and "may refuse" up to the largest seen (0.55 GiB one GPU, 1 GiB with
communicators).

After the cache is allocated (0.28-0.33 ``gpu_worker.compile_or_warm_up_model``) vLLM captures
the CUDA graphs; 0.21+ took an *estimate* of them from the budget beforehand
(``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``=1), so only the capture beyond the estimate needs
memory outside the requested fraction: the headroom is ``free_at_snapshot − requested``.
Public logs' "CUDA graph pool memory: X GiB (actual), Y GiB (estimated)" range from 0.84 GiB
below the estimate to 0.41 GiB above it — a headroom under 0.5 GiB is flagged, with that basis.

SGLang 0.5.23 (``model_executor/model_runner.py`` measures ``pre_model_load_memory``, the free
memory before the weights load; ``pool_configurator.py`` sizes the pools from
``pre_model_load_memory × mem_fraction_static − weights``; "Not enough memory. Please try to
increase --mem-fraction-static" when nothing is left): its fraction is of the memory *free*
when it starts, so a co-tenant shrinks its pool instead of stopping it. What stays outside the
pools, ``pre_model_load_memory × (1 − mem_fraction_static)``, must hold the activations and the
CUDA graphs at run time: too little there is SGLang's runtime out-of-memory, checked against
kvledger's activation estimate plus the graph pool estimate.
"""

from __future__ import annotations

import math

from kvledger.errors import PlanError
from kvledger.records import record

GIB = 1 << 30
MIB = 1 << 20

# What the engine's own process holds before its memory snapshot (module docstring: public
# start-up logs, total − free on idle GPUs).
PRE_SNAPSHOT_MIN = 4 * GIB // 10  # the smallest seen on NVIDIA (0.41 GiB)
PRE_SNAPSHOT_MAX_ONE_GPU = 55 * GIB // 100  # the largest seen on one GPU (0.53 GiB)
PRE_SNAPSHOT_MAX_MULTI_GPU = 1 * GIB  # with communicators (0.96 GiB seen)
# How far a capture went beyond vLLM's pre-capture estimate in public logs (0.41 GiB).
GRAPH_OVERSHOOT = GIB // 2


class StartupRefusal(PlanError):
    """The engine refuses to start before it sizes a cache (not enough free memory)."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


@record(frozen=True)
class FreeMemory:
    """What else holds the GPU when the engine starts: ``free_bytes`` (free before the engine
    starts, as nvidia-smi reports it) or ``in_use_bytes`` (held by other processes)."""

    free_bytes: int | None = None
    in_use_bytes: int | None = None

    def others(self, total: int) -> int:
        if self.free_bytes is not None:
            return max(0, total - self.free_bytes)
        return self.in_use_bytes or 0

    def source(self) -> str:
        if self.free_bytes is not None:
            return f"--gpu-free-bytes {self.free_bytes / GIB:.2f} GiB"
        if self.in_use_bytes:
            return f"--gpu-memory-in-use {self.in_use_bytes / GIB:.2f} GiB"
        return "no other process on the GPU (none given)"


def vllm_requested(total: int, utilization: float) -> int:
    """``request_memory``: ``math.ceil(total × gpu_memory_utilization)``."""
    return math.ceil(total * utilization)


def vllm_startup(total: int, utilization: float, free: FreeMemory, *, multi_gpu: bool,
                 release: str) -> list[str]:
    """vLLM's free-memory admission (module docstring): ``StartupRefusal`` when it refuses
    whatever its own process takes (the smallest seen); else the verdicts, as warnings:
    "may refuse" within the observed range, then the headroom after the KV cache."""
    requested = vllm_requested(total, utilization)
    others = free.others(total)
    high = PRE_SNAPSHOT_MAX_MULTI_GPU if multi_gpu else PRE_SNAPSHOT_MAX_ONE_GPU
    room = total - others - requested  # left for the engine's pre-snapshot use
    left = f"{total / GIB:.2f} GiB × (1 − {utilization:g})"
    if others:
        left += f" − {others / GIB:.2f} GiB held by others ({free.source()})"
    if room < PRE_SNAPSHOT_MIN:
        most = (total - others - high) / total  # starts even at the largest use seen
        raise StartupRefusal(
            f"{release} refuses to start: free memory at its start-up snapshot is below "
            f"the desired GPU memory utilization ({utilization:g}, {requested / GIB:.2f} GiB = "
            f"ceil(total × utilization), v1/worker/utils.py request_memory); {left} = "
            f"{room / GIB:.2f} GiB is left for what vLLM's own process takes before the "
            f"snapshot (CUDA context, NCCL, cuBLAS: 0.41-0.53 GiB on one GPU in public logs)",
            hint=f"lower --gpu-memory-utilization to {math.floor(most * 100) / 100:.2f} or "
                 "less, free the GPU, or give the budget with --kv-cache-memory-bytes")
    notes = []
    if room < high:
        notes.append(
            f"vLLM may refuse to start: {left} = {room / GIB:.2f} GiB is left for its own "
            f"process before the start-up snapshot, which public logs put at 0.41-0.53 GiB on "
            f"one GPU{' and up to 0.96 GiB with communicators' if multi_gpu else ''} "
            "(estimated); vLLM refuses when free memory then is below ceil(total × "
            "utilization)")
    headroom = room - PRE_SNAPSHOT_MIN
    enough = headroom >= GRAPH_OVERSHOOT
    if enough and free.free_bytes is None and not free.in_use_bytes:
        return notes  # a GPU of its own with room to spare: nothing worth a warning
    verdict = "enough for" if enough else "may be too little for"
    notes.append(
        f"headroom after the KV cache: at most {headroom / GIB:.2f} GiB ({left} − vLLM's own "
        f"pre-snapshot memory, at least 0.4 GiB; estimated) — {verdict} a CUDA-graph capture "
        "beyond the estimate vLLM took from the budget (public logs: up to 0.41 GiB beyond)")
    return notes


def sglang_startup(pre_load_bytes: int, fraction: float, runtime_need: int, *,
                   others: int, basis: str) -> list[str]:
    """SGLang's runtime-out-of-memory direction: ``pre_model_load × (1 − mem_fraction_static)``
    against the activations and CUDA graphs it must hold (``runtime_need``, estimated)."""
    outside = pre_load_bytes - int(pre_load_bytes * fraction)
    share = f"; {others / GIB:.2f} GiB held by other processes is not in it" if others else ""
    if outside >= runtime_need:
        return [f"headroom beside the pools: {outside / GIB:.2f} GiB (memory free before the "
                f"weights × (1 − {fraction:g}){share}), at least the {runtime_need / GIB:.2f} "
                f"GiB SGLang itself keeps back for activations and CUDA graphs by default "
                f"({basis})"]
    return [f"SGLang may run out of memory at run time: {outside / GIB:.2f} GiB stays outside "
            f"the pools (memory free before the weights × (1 − {fraction:g}){share}), below "
            f"the {runtime_need / GIB:.2f} GiB SGLang itself keeps back for activations and "
            f"CUDA graphs by default ({basis}); lower --mem-fraction-static, "
            "--max-running-requests or --chunked-prefill-size"]

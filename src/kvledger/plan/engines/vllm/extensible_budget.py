"""vLLM 0.34's extensible KV cache: the GPU budget of a default launch on CUDA or ROCm, and
the block count its granule-rounded commit leaves.

When it applies (``config/vllm.py VllmConfig._resolve_extensible_kv_cache``): the release's
profile says the mode exists (``VllmRelease.extensible_kv_cache``), on CUDA and ROCm, unless
``kv_cache_memory_bytes`` is given (then kvledger plans that budget, as vLLM does),
``num_gpu_blocks_override``, elastic EP, or a KV connector that shares the cache through legacy
CUDA IPC or a custom memory pool is set, or ``--no-enable-extensible-kv-cache``
(``VllmLaunch.enable_extensible_kv_cache`` False); and, the flag not given, a connector whose
peers import the cache through FABRIC handles (NIXL) on a host without an IMEX channel.
kvledger models the first, the connectors (``connectors.py extensible_cache_off``: each
connector's ``kv_cache_access``; no IMEX channel assumed) and the last; elastic EP is not
modelled (the launch options it takes have none). Off, the budget is the profile run's at
``CacheConfig.DEFAULT_GPU_MEMORY_UTILIZATION`` 0.92, as in 0.33.

How 0.34 sizes the cache (read in ``v1/worker/gpu_worker.py``, ``v1/worker/
extensible_kv_cache.py``, ``v1/core/kv_cache_planning.py``, ``v1/engine/core.py``):

- ``CacheConfig.resolved_gpu_memory_utilization``: ``gpu_memory_utilization`` is ``None`` by
  default and resolves to 1.0 in this mode (``CacheConfig.DEFAULT_GPU_MEMORY_UTILIZATION``,
  0.92, when the mode is off). ``request_memory`` = ceil(total × utilization), as before.
- ``Worker.determine_available_memory`` still runs the profile run, but
  ``GPUModelRunner.profile_cudagraph_memory`` returns 0 in this mode: no CUDA-graph estimate is
  subtracted; the capacity it gives is only the address space reserved.
- ``compile_or_warm_up_model`` runs the warm-up and sizing steps, records their transient peak
  (``record_transient_peak``: allocated peak − current, at least the profiled activation
  peak), captures the CUDA graphs, and ``measure_kv_cache_bytes`` then takes
  ``min(requested − non_kv_used, headroom − margin) − max(transient_peak, torch growth)``, where
  ``non_kv_used`` is everything resident after warm-up and capture (weights, runner buffers,
  the graphs' pool, non-torch growth since the start-up snapshot), ``headroom`` the free memory
  plus the committed KV prefix (= the memory free at the snapshot − ``non_kv_used``) and
  ``margin = max(KV_CACHE_MARGIN_FLOOR_BYTES, 0.75 × transient_peak)`` — 1 GiB floor, 3 GiB on
  ROCm (``KV_CACHE_MARGIN_FRACTION``). The log says "Memory after warmup: …".
- ``ExtensibleKVCache.blocks_within``: the most blocks whose physical footprint fits, each
  segment (one per layer region in layer-outermost layouts, one in block-outermost ones)
  rounded up to whole granules (``utils/extensible_tensor.py granule_size``: the driver's
  granularity floored at 2 MiB); ``finalize_extensible_kv_cache`` keeps the minimum over ranks.

In kvledger's lines: with utilization 1.0, ``headroom − margin`` binds, so the budget is
``total − memory in use at the snapshot − margin − weights − non-torch − CUDA graphs −
activation peak``. The memory in use at the snapshot (CUDA context, communicators, cuBLAS
handles) was never subtracted before — it lived in the ``1 − utilization`` left over — and is
an estimate here (``BEFORE_SNAPSHOT_*``: not measured by kvledger; vLLM reads it from the
device). With an explicit utilization whose request leaves at least that much free, the
request binds and the budget is 0.33's (no margin). The CUDA-graph line is the captured pool,
measured by vLLM after capture and estimated by kvledger as before (``reserves.py``).
"""

from __future__ import annotations

from kvledger.plan.budget import (
    ACTIVATION_PEAK,
    CUDA_GRAPHS,
    ESTIMATED,
    EXACT,
    GIB,
    KV_BUDGET,
    UTILIZATION,
    Budget,
    BudgetLine,
    BudgetTooSmall,
)
from kvledger.records import replace

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from kvledger.plan.engines.vllm.releases.profile import VllmRelease

# Stable machine keys of the two lines this mode adds (plan/budget.py keeps the others).
KV_MARGIN = "kv_margin"
BEFORE_SNAPSHOT = "before_snapshot"
# v1/worker/extensible_kv_cache.py KV_CACHE_MARGIN_FLOOR_BYTES / KV_CACHE_MARGIN_FRACTION.
MARGIN_FLOOR = 1 * GIB
MARGIN_FLOOR_ROCM = 3 * GIB
MARGIN_FRACTION = 0.75
# utils/extensible_tensor.py _MIN_GRANULARITY (2 MiB; the CUDA driver's granularity is 2 MiB,
# ROCm's 4 KiB is floored to it).
GRANULE = 2 << 20
# Memory in use when vLLM takes its start-up snapshot (CUDA context, NCCL communicators and
# custom all-reduce buffers, cuBLAS handles): an estimate, not read from any source (vLLM
# measures it). One GPU: a CUDA context with lazy module loading; with communicators: NCCL's
# buffers besides it.
BEFORE_SNAPSHOT_ONE_GPU = GIB // 2
BEFORE_SNAPSHOT_MULTI_GPU = 1 * GIB


def applies(request: Any, release: VllmRelease) -> bool:
    """Whether the release sizes this launch's KV cache with the extensible KV cache (on
    CUDA and ROCm alike: every GPU kvledger knows is one or the other)."""
    if not release.extensible_kv_cache or request.kv_cache_memory_bytes is not None:
        return False
    launch = getattr(request, "vllm_launch", None)
    requested = getattr(launch, "enable_extensible_kv_cache", None)
    return requested is not False and connector_turns_it_off(request) is None


def connector_turns_it_off(request: Any) -> str | None:
    """Why the launch's KV connector turns the extensible KV cache off (connectors.py
    ``extensible_cache_off``); None without a connector or when it stays on."""
    launch = getattr(request, "vllm_launch", None)
    text = getattr(launch, "kv_transfer_config", None)
    if not isinstance(text, str):
        return None
    from kvledger.plan.engines.vllm.connectors import extensible_cache_off
    from kvledger.plan.engines.vllm.hardware import capability

    # A GPU that is no CUDA device is an AMD one here (plan/gpus.py: gfx targets).
    rocm = getattr(request, "gpu", None) is not None and capability(request.gpu)[0] is None
    return extensible_cache_off(text, requested=getattr(launch, "enable_extensible_kv_cache",
                                                        None), rocm=rocm)


def default_utilization(request: Any, release: VllmRelease) -> tuple[float, str]:
    """``CacheConfig.resolved_gpu_memory_utilization`` when the user gives none."""
    if applies(request, release):
        return 1.0, f"{release.short}'s default with the extensible KV cache"
    why = connector_turns_it_off(request) if release.extensible_kv_cache else None
    if why is not None and request.kv_cache_memory_bytes is None:
        return (release.default_gpu_memory_utilization,
                f"{release.short}'s default: the extensible KV cache is off, {why}")
    return release.default_gpu_memory_utilization, f"{release.short}'s default"


def margin_bytes(activation_peak: int, *, rocm: bool) -> int:
    """``max(KV_CACHE_MARGIN_FLOOR_BYTES, int(transient_peak × 0.75))``."""
    return max(MARGIN_FLOOR_ROCM if rocm else MARGIN_FLOOR,
               int(activation_peak * MARGIN_FRACTION))


def extensible_budget(budget: Budget, release: VllmRelease, *, multi_gpu: bool,
                      rocm: bool) -> Budget:
    """``budget`` (the profile-run budget at the resolved utilization) as 0.34's measured
    sizing takes it: capped by the snapshot's free memory less the margin (module
    docstring). ``BudgetTooSmall`` when nothing is left."""
    lines = [replace(ln, label="− CUDA graph pool, captured before the cache is sized (vLLM "
                     f"{release.short.split()[-1]} measures it after capture and subtracts no "
                     "pre-capture estimate)") if ln.key == CUDA_GRAPHS and ln.basis != "given"
             else ln for ln in budget.lines]
    budget = replace(budget, lines=tuple(lines))
    total = budget.total_bytes or 0
    usable = budget.line(UTILIZATION)
    peak = budget.line(ACTIVATION_PEAK)
    final = budget.line(KV_BUDGET)
    if usable is None or peak is None or final is None:
        raise ValueError("the extensible budget needs a GPU budget")
    before = BEFORE_SNAPSHOT_MULTI_GPU if multi_gpu else BEFORE_SNAPSHOT_ONE_GPU
    margin = margin_bytes(peak.bytes, rocm=rocm)
    cap = total - before - margin
    if cap >= usable.bytes:
        return budget  # the requested memory binds: 0.33's budget, no margin
    taken = usable.bytes - cap
    floor = "3 GiB on ROCm" if rocm else "1 GiB"
    # The floor is source; 0.75 × the peak is as certain as the peak line.
    margin_basis = ESTIMATED if peak.basis == ESTIMATED and margin > (
        MARGIN_FLOOR_ROCM if rocm else MARGIN_FLOOR) else EXACT
    added = [
        BudgetLine(BEFORE_SNAPSHOT, f"− in use at {release.short}'s start-up snapshot (CUDA "
                   "context, communicators, cuBLAS handles; vLLM measures it, kvledger "
                   "estimates it)", before, ESTIMATED),
        BudgetLine(KV_MARGIN, f"− extensible KV cache margin: max({floor}, 0.75 × transient "
                   "peak) (extensible_kv_cache.py measure_kv_cache_bytes)", margin,
                   margin_basis),
    ]
    at = next(i + 1 for i, ln in enumerate(lines) if ln.key == UTILIZATION)
    lines[at:at] = added
    available = budget.available_bytes - taken
    basis = ESTIMATED if any(ln.basis == ESTIMATED for ln in added) else final.basis
    lines[-1] = BudgetLine(KV_BUDGET, f"{final.label} (sized after warm-up and CUDA-graph "
                           "capture: the extensible KV cache)", available, basis)
    frozen = tuple(lines)
    if available <= 0:
        raise BudgetTooSmall(frozen, available)
    return replace(budget, available_bytes=available, lines=frozen,
                   non_kv_bytes=budget.non_kv_bytes + taken)


def granule_blocks(available: int, bytes_per_block: int, segment_strides: list[int],
                   granule: int = GRANULE) -> int:
    """``ExtensibleKVCache.blocks_within``: the most blocks whose footprint — each segment's
    ``blocks × stride`` rounded up to whole granules — fits in ``available``."""
    if bytes_per_block <= 0:
        return 0
    blocks = available // bytes_per_block

    def physical(n: int) -> int:
        return sum(-(-n * stride // granule) * granule for stride in segment_strides)

    while blocks > 0 and physical(blocks) > available:
        blocks -= 1
    return blocks

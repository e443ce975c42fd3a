"""SGLang's KV budget on a GPU preset, line by line (each given, exact or estimated).

SGLang (``KVCacheConfigurator._profile_available_bytes``) takes the free memory after the
weights loaded and keeps back ``pre_model_load_memory × (1 − mem_fraction_static)`` for
activations and CUDA graphs, where ``pre_model_load_memory`` is the free memory measured
before loading (``ModelRunner``: after the CUDA context and the communicators exist). So::

    KV budget = (total − in use before loading) × mem_fraction_static − weights
                − multimodal reservation

``mem_fraction_static`` is ``--mem-fraction-static`` or SGLang's own formula
(``memory.memory_settings``). What the CUDA context and communicators take before loading
is not in any config: it is estimated as for vLLM (0.5 GiB on one GPU, 1 GiB with tensor or
pipeline parallelism; ``Reserves.non_torch_bytes`` overrides it), and the line says so.
"""

from __future__ import annotations

from kvledger.plan.budget import (
    DEFAULT_NON_TORCH_BYTES,
    DEFAULT_NON_TORCH_BYTES_MULTI_GPU,
    ESTIMATED,
    EXACT,
    GIVEN,
    GPU_TOTAL,
    KV_BUDGET,
    NON_TORCH,
    UTILIZATION,
    WEIGHTS,
    Budget,
    BudgetLine,
    BudgetTooSmall,
)
from kvledger.plan.engines.sglang.memory import VLM_CACHE_RESERVATION, MemorySettings
from kvledger.plan.gpus import GpuPreset
from kvledger.plan.weights import Weights

MIB = 1 << 20
GIB = 1 << 30
# The budget line keys SGLang's budget uses besides the shared ones (kvledger.plan.budget):
# its multimodal reservation.
MULTIMODAL = "multimodal_reservation"
# SGLang's own flags for the way out (server_args.py), never vLLM's.
REMEDY = ("use a larger GPU, more --tensor-parallel-size, a higher --mem-fraction-static (SGLang's "
          "words: 'Not enough memory. Please try to increase --mem-fraction-static'), or give "
          "the budget with --kv-cache-memory-bytes")


def sglang_gpu_budget(
    preset: GpuPreset,
    settings: MemorySettings,
    *,
    weights: Weights,
    multi_gpu: bool,
    multimodal: bool,
    pre_load_in_use_bytes: int | None = None,
    total_bytes: int | None = None,
    others_bytes: int = 0,
    own_reserve_mib: float | None = None,
) -> Budget:
    """The KV bytes SGLang gives one GPU of this deployment, with every line labelled.

    ``others_bytes``: memory other processes hold when SGLang starts (``--gpu-memory-in-use``,
    or total − ``--gpu-free-bytes``): SGLang's fraction is of the memory free before the
    weights load (``pre_model_load_memory``), so a co-tenant shrinks the pools. It is folded
    into the in-use line. ``own_reserve_mib``: SGLang's own default reservation for these
    settings (``memory.memory_settings`` without a fraction), against which what stays
    outside the pools is checked (``plan/startup_memory.sglang_startup``: the runtime OOM
    direction)."""
    total = preset.total_bytes if total_bytes is None else total_bytes
    in_use = pre_load_in_use_bytes
    if in_use is None:
        in_use = DEFAULT_NON_TORCH_BYTES_MULTI_GPU if multi_gpu else DEFAULT_NON_TORCH_BYTES
    in_use_label = "− in use before the model loads (CUDA context, communicators)"
    if others_bytes:
        in_use_label += f" and {others_bytes / GIB:.2f} GiB held by other processes (given)"
    in_use += others_bytes
    pre = total - in_use
    fraction = settings.mem_fraction_static
    static = int(pre * fraction)
    how = ("--mem-fraction-static" if settings.mem_fraction_given else
           f"SGLang's default: (GPU MiB − {settings.reserved_mib:g} MiB reserved) / GPU MiB")
    if settings.scaled_by:
        how += f", {settings.scaled_by}"
    lines = [
        BudgetLine(GPU_TOTAL, f"GPU memory ({preset.name}; {preset.source})", total,
                   preset.basis if total_bytes is None else GIVEN),
        BudgetLine(NON_TORCH, in_use_label,
                   in_use, ESTIMATED if pre_load_in_use_bytes is None else GIVEN),
        BudgetLine(UTILIZATION, f"× mem_fraction_static {fraction:g} ({how})", static,
                   GIVEN if settings.mem_fraction_given else EXACT),
        BudgetLine(WEIGHTS, f"− model weights per GPU ({weights.detail})",
                   weights.per_rank_bytes, weights.per_rank_basis),
    ]
    available = static - weights.per_rank_bytes
    if multimodal:
        lines.append(BudgetLine(MULTIMODAL, "− multimodal reservation (SGLANG_VLM_CACHE_SIZE_MB)",
                                VLM_CACHE_RESERVATION, EXACT))
        available -= VLM_CACHE_RESERVATION
    basis = ESTIMATED if any(line.basis == ESTIMATED for line in lines) else EXACT
    lines.append(BudgetLine(KV_BUDGET, "= KV cache budget per GPU (SGLang)", available, basis))
    frozen = tuple(lines)
    if available <= 0:
        raise BudgetTooSmall(frozen, available, remedy=REMEDY)
    notes: tuple[str, ...] = ()
    after_kv: tuple[BudgetLine, ...] = ()
    if own_reserve_mib is not None:
        from kvledger.plan.startup_memory import sglang_headroom

        after_kv = (sglang_headroom(pre, fraction, int(own_reserve_mib * MIB)),)
    if own_reserve_mib is not None and (settings.mem_fraction_given or others_bytes):
        from kvledger.plan.startup_memory import sglang_startup

        notes = tuple(sglang_startup(
            pre, fraction, int(own_reserve_mib * MIB), others=others_bytes,
            basis=f"SGLang's own default reservation for these settings, "
                  f"{own_reserve_mib:,.0f} MiB (memory_hook.py handle_gpu_memory_settings; on a "
                  "GPU above 60 GiB at least 10 GiB)"))
    return Budget(available, frozen, total, fraction, total - available, preset.name,
                  notes=notes, after_kv=after_kv)

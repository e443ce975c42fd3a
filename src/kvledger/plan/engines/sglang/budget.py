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
# The budget line keys SGLang's budget uses besides the shared ones (kvledger.plan.budget):
# its multimodal reservation.
MULTIMODAL = "multimodal_reservation"


def sglang_gpu_budget(
    preset: GpuPreset,
    settings: MemorySettings,
    *,
    weights: Weights,
    multi_gpu: bool,
    multimodal: bool,
    pre_load_in_use_bytes: int | None = None,
    total_bytes: int | None = None,
) -> Budget:
    """The KV bytes SGLang gives one GPU of this deployment, with every line labelled."""
    total = preset.total_bytes if total_bytes is None else total_bytes
    in_use = pre_load_in_use_bytes
    if in_use is None:
        in_use = DEFAULT_NON_TORCH_BYTES_MULTI_GPU if multi_gpu else DEFAULT_NON_TORCH_BYTES
    pre = total - in_use
    fraction = settings.mem_fraction_static
    static = int(pre * fraction)
    how = ("--mem-fraction-static" if settings.mem_fraction_given else
           f"SGLang's default: (GPU MiB − {settings.reserved_mib:g} MiB reserved) / GPU MiB")
    lines = [
        BudgetLine(GPU_TOTAL, f"GPU memory ({preset.name}; {preset.source})", total,
                   preset.basis if total_bytes is None else GIVEN),
        BudgetLine(NON_TORCH, "− in use before the model loads (CUDA context, communicators)",
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
        raise BudgetTooSmall(frozen, available)
    return Budget(available, frozen, total, fraction, total - available, preset.name)

"""ATOM's KV budget on a GPU preset (``ModelRunner.get_num_blocks``), line by line.

ATOM measures, after warm-up: ``total`` (``torch.cuda.mem_get_info``), ``peak_torch`` (the
allocator's high-water mark: weights + the warm-up activation peak), ``non_torch`` (device
memory outside the allocator) and a CUDA-graph estimate (default ``--cudagraph-mode FULL``:
``0.2 × (peak − current)``, i.e. a fifth of the activation peak; 0 with ``--enforce-eager``).
Then::

    budget           = int(total × gpu_memory_utilization)
    non_kv_overhead  = peak_torch + non_torch + cudagraph + int(total × 0.02)
    available_for_kv = min(budget − non_kv_overhead − extra_reserve, free)

``extra_reserve`` is 0 for ``ModelRunner`` (``_kv_budget_extra_reserve``). The ``free`` clamp
is not modelled: on a GPU no other process uses, ``free`` after warm-up is ``total`` less what
the allocator holds and ``non_torch``, which the budget has already subtracted (at most
``peak_torch``), so the clamp only binds on a shared GPU. What kvledger cannot measure — the
activation peak, ``non_torch`` — are its documented estimates (``kvledger.plan.budget``) unless
given, and are labelled so; the CUDA-graph line follows ATOM's own rule from the activation
line unless given. A budget at or below zero is not refused here: ATOM plans it, and refuses
as ``refusal`` says.
"""

from __future__ import annotations

from kvledger.plan.budget import (
    ACTIVATION_PEAK,
    CUDA_GRAPHS,
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
    estimate_activation_peak,
)
from kvledger.plan.engines.atom.releases import (
    CUDAGRAPH_ACTIVATION_FRACTION,
    GPU_MEMORY_UTILIZATION,
    NEWEST,
    SAFETY_FRACTION,
)
from kvledger.plan.engines.base import GpuBudgetInput

SAFETY = "safety_margin"  # the budget line key ATOM's budget adds: int(total × 0.02)


class NotAnAtomGpu(ValueError):
    """ATOM runs on AMD Instinct GPUs only (ROCm, aiter kernels)."""


def atom_gpu_budget(inp: GpuBudgetInput) -> Budget:
    preset, req = inp.preset, inp.request
    if preset.vendor != "amd":
        raise NotAnAtomGpu(
            f"{NEWEST.label} runs on AMD Instinct GPUs (ROCm, aiter kernels); {preset.name} "
            "is not one: pass an AMD --gpu (MI300X, MI325X, MI355X) or give "
            "--kv-cache-memory-bytes")
    given_util = req.gpu_memory_utilization
    util = GPU_MEMORY_UTILIZATION if given_util is None else given_util
    total = preset.total_bytes if req.gpu_total_bytes is None else req.gpu_total_bytes
    total_basis = preset.basis if req.gpu_total_bytes is None else GIVEN
    budget = int(total * util)
    if given_util is None:
        util_label = f"× gpu_memory_utilization {util:g} ({NEWEST.label}'s default; not given)"
        util_basis = total_basis
    else:
        util_label = f"× gpu_memory_utilization {util:g}"
        util_basis = ESTIMATED if total_basis == ESTIMATED else GIVEN
    activation = req.activation_peak_bytes
    act_bytes = estimate_activation_peak(inp.text_config, req, inp.facts.model_dtype) \
        if activation is None else activation
    graphs = req.cuda_graph_bytes
    multi = req.tensor_parallel_size * req.pipeline_parallel_size > 1
    non_torch = req.non_torch_bytes
    lines = [
        BudgetLine(GPU_TOTAL, f"GPU memory ({preset.name}; {preset.source})", total,
                   total_basis),
        BudgetLine(UTILIZATION, util_label, budget, util_basis),
        BudgetLine(WEIGHTS, f"− model weights per GPU ({inp.weights.detail}; part of "
                   "peak_torch)", inp.weights.per_rank_bytes, inp.weights.per_rank_basis),
        BudgetLine(ACTIVATION_PEAK, "− activation peak (part of peak_torch)", act_bytes,
                   ESTIMATED if activation is None else GIVEN),
        BudgetLine(CUDA_GRAPHS, "− CUDA graphs (ATOM's estimate: 0.2 × activation peak)"
                   if graphs is None else "− CUDA graphs",
                   int(act_bytes * CUDAGRAPH_ACTIVATION_FRACTION) if graphs is None else graphs,
                   (ESTIMATED if activation is None else EXACT) if graphs is None else GIVEN),
        BudgetLine(NON_TORCH, "− non-torch memory (RCCL buffers, HIP context)",
                   (DEFAULT_NON_TORCH_BYTES_MULTI_GPU if multi else DEFAULT_NON_TORCH_BYTES)
                   if non_torch is None else non_torch,
                   ESTIMATED if non_torch is None else GIVEN),
        BudgetLine(SAFETY, "− safety margin (int(total × 0.02))", int(total * SAFETY_FRACTION),
                   total_basis),
    ]
    non_kv = sum(ln.bytes for ln in lines[2:])
    available = budget - non_kv
    basis = ESTIMATED if any(ln.basis == ESTIMATED for ln in lines) else EXACT
    lines.append(BudgetLine(KV_BUDGET, f"= available_for_kv per GPU ({NEWEST.label})",
                            available, basis))
    # Not BudgetTooSmall at <= 0: ATOM goes on to plan_pools, whose refusal (with the
    # minimum utilization) or the "Not enough memory" assertion is what the user sees.
    return Budget(available, tuple(lines), total, util, non_kv, preset.name)

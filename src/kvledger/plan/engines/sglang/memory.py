"""SGLang's GPU-dependent defaults and its KV budget on a GPU preset.

**Defaults** (``handle_gpu_memory_settings``, ``arg_groups/memory_hook.py``), from the GPU's
memory in MiB as ``nvidia-smi`` reports it (``get_nvgpu_memory_capacity``):

* ``chunked_prefill_size``: 2048 below 20 GiB, 4096 below 60 GiB, 8192 below 160 GiB, else
  16384.
* decode CUDA-graph ``max_bs`` (``--cuda-graph-max-bs``): 8 below 20 GiB; 48 / 160 (TP < 4 /
  TP >= 4) below 35 GiB; 32 / 160 below 60 GiB; 256 / 512 below 160 GiB; else 512 — at most
  ``--max-running-requests`` when that is given.
* ``mem_fraction_static`` = ``round((gpu_mem − reserved) / gpu_mem, 3)`` with ``reserved``
  (MiB) = 512 + 1.5 × max(chunked_prefill_size, 2048) + TP × PP / 8 × 1024 + the CUDA-graph
  reserve (``reserve_for_graph_mb``: 2 × decode max_bs; with DP attention 3 × max_bs ×
  dp (+1.5 × max_bs × dp above 300); the breakable prefill graph — on by default on CUDA
  (``default_prefill_backend``), off with PP > 1 (``apply_cuda_graph_compatibility``) —
  8 MiB per captured prefill size, or 1.5 GiB for MLA), and at least 10 GiB on GPUs above
  60 GiB.

**Budget** (``KVCacheConfigurator._profile_available_bytes``): free memory after the weights
load, minus ``pre_model_load_memory × (1 − mem_fraction_static)``. With ``pre`` the free
memory before loading (the GPU's total minus what the CUDA context and communicators took)
that is ``pre × mem_fraction_static − weights − other allocations made while loading``;
multimodal models also give up SGLang's multimodal reservation (``mm_runtime_reservation_gb``,
``SGLANG_VLM_CACHE_SIZE_MB`` = 100 MiB with the default CPU feature transport).
"""

from __future__ import annotations

from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.plan.gpus import GpuPreset

MIB = 1 << 20
GIB = 1 << 30
VLM_CACHE_RESERVATION = 100 * MIB  # environ.py: SGLANG_VLM_CACHE_SIZE_MB

def gpu_arch(gpu: str | GpuPreset | None) -> str:
    """The platform SGLang's checks (``is_sm90`` / ``is_sm100`` / ``is_hip``) would see, from
    the preset's own compute capability (``plan/gpus.py``: "sm90", "sm103", "gfx942"): the
    family "sm80", "sm86", "sm89", "sm90", "sm100" (any SM10x), "sm120" (any SM12x), or the
    ROCm GPU's own gfx name ("gfx942": ``backends.is_rocm``). No GPU named, or one known only
    by its total → Hopper (sm90), the common deployment. ``gpu``: a preset or its name."""
    if gpu is None:
        return "sm90"
    from kvledger.plan.gpus import gpu_preset

    preset = gpu_preset(gpu)
    stated = str(getattr(preset, "compute_capability", "") or "")
    if stated.startswith("gfx"):
        return stated
    digits = stated.removeprefix("sm")
    if not stated.startswith("sm") or not digits.isdigit():
        return "sm90"
    major = int(digits[:-1])
    if major in (10, 12):
        return f"sm{major}0"
    return stated


def default_chunked_prefill_size(gpu_mem_mib: float) -> int:
    if gpu_mem_mib < 20 * 1024:
        return 2048
    if gpu_mem_mib < 60 * 1024:
        return 4096
    if gpu_mem_mib < 160 * 1024:
        return 8192
    return 16384


def default_cuda_graph_max_bs(gpu_mem_mib: float, tp: int) -> int:
    if gpu_mem_mib < 20 * 1024:
        return 8
    if gpu_mem_mib < 35 * 1024:
        return 48 if tp < 4 else 160
    if gpu_mem_mib < 60 * 1024:
        return 32 if tp < 4 else 160
    if gpu_mem_mib < 160 * 1024:
        return 256 if tp < 4 else 512
    return 512


def vlm_fraction(fraction: float, vit_layers: int, vit_hidden: int) -> float:
    """``adjust_mem_fraction_for_vlm``: × 0.95, and × (1 − 0.1 × (complexity − 1)) clamped to
    [0.8, 1.05], the complexity being layers × hidden² relative to a ViT-L/14 (24 × 1024²)."""
    ratio = vit_layers * vit_hidden ** 2 / (24 * 1024 ** 2)
    factor = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
    return fraction * (0.95 * factor)


def prefill_graph_sizes(max_bs: int) -> list[int]:
    """``generate_prefill_cuda_graph_batch_sizes`` (arg_groups/cuda_graph_hook.py)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1025, 64)) + list(range(1280, 4097, 256))
             + list(range(4608, max_bs + 1, 512)))
    return [s for s in sizes if s <= max_bs]


@record(frozen=True)
class MemorySettings:
    """What ``handle_gpu_memory_settings`` resolves, with the reserve it subtracted."""

    gpu_mem_mib: float
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    mem_fraction_static: float
    mem_fraction_given: bool
    reserved_mib: float | None  # None when mem_fraction_static was given
    # What scaled the fraction after it was given or derived (ROCm's aiter factor:
    # backends.aiter_fraction), "" when nothing did.
    scaled_by: str = ""


def memory_settings(
    gpu_mem_mib: float,
    *,
    tp: int,
    pp: int,
    mla: bool,
    attn_dp_size: int,
    dp_attention: bool,
    chunked_prefill_size: int | None,
    cuda_graph_max_bs: int | None,
    max_running_requests: int | None,
    max_total_tokens: int | None,
    mem_fraction_static: float | None,
    model_name: str,
    multimodal: bool = False,
    prefill_graph: bool = True,
    vision_tower: tuple[int, int] | None = None,
) -> MemorySettings:
    chunked = chunked_prefill_size or default_chunked_prefill_size(gpu_mem_mib)
    max_bs = cuda_graph_max_bs
    if max_bs is None:
        max_bs = default_cuda_graph_max_bs(gpu_mem_mib, tp)
        if max_running_requests is not None and max_bs > max_running_requests:
            max_bs = max_running_requests
    if mem_fraction_static is not None:
        return MemorySettings(gpu_mem_mib, chunked, max_bs, float(mem_fraction_static), True,
                              None)
    reserved = 512.0 + max(chunked, 2048) * 1.5
    reserved += tp * pp / 8 * 1024
    graphs = max_bs * 2.0
    if dp_attention:
        graphs += max_bs * attn_dp_size * 3
        if max_bs > 300:
            graphs += max_bs * attn_dp_size * 1.5
    # The breakable prefill graph is off by default under PP and for multimodal models
    # outside SGLang's allow-list (apply_cuda_graph_compatibility).
    if pp == 1 and prefill_graph:
        if mla:
            graphs += 1.5 * 1024
        else:
            prefill_max = chunked if not mla else min(8192, chunked)
            if max_total_tokens is not None:
                prefill_max = min(prefill_max, max_total_tokens)
            if "llama-2" in model_name.lower():
                prefill_max = min(prefill_max, 4096)
            graphs += len(prefill_graph_sizes(prefill_max)) * 8
    reserved += graphs
    if gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    fraction = round((gpu_mem_mib - reserved) / gpu_mem_mib, 3)
    if multimodal and vision_tower is not None:
        fraction = vlm_fraction(fraction, *vision_tower)
    return MemorySettings(gpu_mem_mib, chunked, max_bs, fraction, False, reserved)

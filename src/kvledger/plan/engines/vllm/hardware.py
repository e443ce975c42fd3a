"""What a CUDA worker resolves from the device: its compute capability, and the kernels that
follow from it (the GDN prefill backend, hence the hybrid block alignment of vLLM 0.33).

The capability comes from ``--gpu`` (the preset's own figure where it states one, else this
table of NVIDIA's published capabilities); with only a byte budget given, SM90 (H100/H200) is
assumed, as the oracle cases were computed, and the plan says so.
"""

from __future__ import annotations

# NVIDIA's CUDA compute capabilities (developer.nvidia.com/cuda-gpus): Ampere A100 / A10 8.0 /
# 8.6, Ada L4 / L40 / RTX 6000 Ada / RTX 4090 8.9, Hopper 9.0, Blackwell data-centre 10.0
# (B200, GB200) and 10.3 (B300), Blackwell workstation / GeForce 12.0.
_CAPABILITY: dict[str, tuple[int, int]] = {
    "H100-80GB": (9, 0), "H100-PCIE": (9, 0), "H100-94GB": (9, 0), "H200": (9, 0),
    "H20": (9, 0), "GH200-96GB": (9, 0), "GH200-144GB": (9, 0),
    "B200": (10, 0), "GB200": (10, 0), "B300": (10, 3),
    "A100-40GB": (8, 0), "A100-80GB": (8, 0), "A10": (8, 6), "A10G": (8, 6),
    "L40S": (8, 9), "L40": (8, 9), "L4": (8, 9), "T4": (7, 5),
    "RTX-4090": (8, 9), "RTX-5090": (12, 0), "RTX-3090": (8, 6), "RTX-A6000": (8, 6),
    "RTX-6000-ADA": (8, 9), "RTX-PRO-6000": (12, 0),
}
ASSUMED = (9, 0)


def capability(gpu: str | None) -> tuple[tuple[int, int] | None, str]:
    """(compute capability, a note when assumed) for ``--gpu``; (None, why) for a GPU that
    is not NVIDIA's (the CUDA kernel rules do not apply)."""
    if gpu is None:
        return ASSUMED, ("no --gpu given: the CUDA kernels of an SM90 GPU (H100/H200) are "
                         "assumed for the attention and GDN prefill backends")
    from kvledger.plan.gpus import gpu_preset

    preset = gpu_preset(gpu)
    stated = getattr(preset, "compute_capability", None)
    if isinstance(stated, tuple) and len(stated) == 2:
        return (int(stated[0]), int(stated[1])), ""
    if preset.vendor != "nvidia":
        return None, f"{preset.name} is not a CUDA GPU"
    found = _CAPABILITY.get(preset.name)
    if found is None:
        return ASSUMED, (f"kvledger has no compute capability for {preset.name}: SM90's "
                         "kernels are assumed")
    return found, ""


def gdn_flashinfer_prefill(cap: tuple[int, int] | None, linear_key_head_dim: int) -> bool:
    """Whether vLLM's ``auto`` GDN prefill backend is FlashInfer (vLLM 0.33
    ``qwen_gdn_linear_attn._resolve_gdn_prefill_backend``, CUDA 13 runtime): on SM90, and on
    SM10x / SM12x when ``linear_key_head_dim == 128``; Triton elsewhere."""
    if cap is None:
        return False
    major = cap[0]
    if major == 9:
        return True
    return major in (10, 12) and linear_key_head_dim == 128

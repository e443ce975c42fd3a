"""What a CUDA worker resolves from the device: its compute capability, and the kernels that
follow from it (the GDN prefill backend, hence the hybrid block alignment of vLLM 0.33).

The capability is the ``--gpu`` preset's own (``plan/gpus.py``: "sm90", "sm100", …, sources
cited there); with only a byte budget given, SM90 (H100/H200) is assumed, as the oracle cases
were computed, and the plan says so.
"""

from __future__ import annotations

ASSUMED = (9, 0)


def _parse(text: str) -> tuple[int, int] | None:
    """``"sm90"`` → (9, 0), ``"sm103"`` → (10, 3); None for an AMD target ("gfx942")."""
    if not text.startswith("sm") or not text[2:].isdigit():
        return None
    digits = text[2:]
    return int(digits[:-1]), int(digits[-1])


def capability(gpu: str | None) -> tuple[tuple[int, int] | None, str]:
    """(compute capability, a note when assumed) for ``--gpu``; (None, why) for a GPU that
    is not a CUDA device (the CUDA kernel rules do not apply)."""
    if gpu is None:
        return ASSUMED, ("no --gpu given: the CUDA kernels of an SM90 GPU (H100/H200) are "
                         "assumed for the attention and GDN prefill backends")
    from kvledger.plan.gpus import gpu_preset

    preset = gpu_preset(gpu)
    stated = str(getattr(preset, "compute_capability", "") or "")
    found = _parse(stated)
    if found is not None:
        return found, ""
    if stated.startswith("gfx"):
        return None, f"{preset.name} ({stated}) is not a CUDA GPU"
    return ASSUMED, (f"kvledger has no compute capability for {preset.name}: SM90's kernels "
                     "are assumed")


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

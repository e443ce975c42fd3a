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


# Attention backends that run on one compute-capability major only, as each states in
# ``supports_compute_capability`` (vLLM 0.34, ``v1/attention/backends/mla/``: cutlass_mla.py,
# flashinfer_mla.py, flashinfer_mla_sparse.py and tokenspeed_mla.py ``major == 10``;
# flashattn_mla.py ``major == 9``; FlashInferMLASparseSM120Backend ``major == 12``; the same in
# 0.26.0). A log
# that names one was written on a GPU of that family.
BACKEND_MAJOR: dict[str, int] = {
    "CUTLASS_MLA": 10, "FLASHINFER_MLA": 10, "FLASHINFER_MLA_SPARSE": 10, "TOKENSPEED_MLA": 10,
    "FLASH_ATTN_MLA": 9, "FLASHINFER_MLA_SPARSE_SM120": 12,
}
# The preset whose kernels stand for a family when a log names no GPU (its total is not used:
# the log's own total is).
_FAMILY_PRESET = {9: "H100-80GB", 10: "B200", 12: "RTX-PRO-6000"}


def family_from_backends(names: list[str] | tuple[str, ...]) -> tuple[str, str] | None:
    """(a preset of the family, why) when the attention backends a log says vLLM used run on
    one compute-capability major only; None when none does, or they disagree."""
    majors = {BACKEND_MAJOR[n] for n in names if n in BACKEND_MAJOR}
    if len(majors) != 1:
        return None
    major = majors.pop()
    which = ", ".join(n for n in names if n in BACKEND_MAJOR)
    return _FAMILY_PRESET[major], (
        f"the log names no GPU, but vLLM used {which}, which runs only on compute capability "
        f"{major}.x (supports_compute_capability): that family's kernels are planned "
        f"({_FAMILY_PRESET[major]}'s, its SM count too), on the log's own device total")

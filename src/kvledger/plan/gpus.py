"""GPU presets: total device memory, as the device reports it, with the source of each figure.

Why the device's own figure and not the datasheet's: a datasheet "80 GB" is a marketing round
number; NVML reports 81,559 MiB for an H100 80GB, and the KV budget is a fraction of what the
device reports. Where no device report could be found, the entry uses the vendor's datasheet
capacity and is labelled ``estimated`` so the budget line says so.

Caveat, stated once here: vLLM multiplies ``gpu_memory_utilization`` by the total that
``torch.cuda.mem_get_info()`` returns, which on NVIDIA parts can be a few hundred MiB below the
NVML total (driver-reserved memory). The presets are the NVML figures; pass
``total_bytes`` to the budget to use a measured ``torch`` total instead.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20
KIB = 1 << 10
GIB = 1 << 30

EXACT = "exact"  # reported by a device (nvidia-smi / NVML, rocminfo)
ESTIMATED = "estimated"  # vendor datasheet capacity; no device report found


@dataclass(frozen=True)
class GpuPreset:
    name: str
    total_bytes: int
    basis: str  # EXACT (device-reported) or ESTIMATED (datasheet)
    source: str
    vendor: str = "nvidia"


def _mib(n: int) -> int:
    return n * MIB


_PRESETS: tuple[GpuPreset, ...] = (
    # nvidia-smi "81559MiB": modal-labs/modal-client PR #2797 (NVML totals of Modal's fleet);
    # google/gvisor issue #10413 (nvidia-smi on "NVIDIA H100 80GB HBM3").
    GpuPreset("H100-80GB", _mib(81559), EXACT, "nvidia-smi 81559MiB (modal-client#2797)"),
    # nvidia-smi "95830MiB" on "NVIDIA H100 NVL": NVIDIA/gpu-admin-tools issue #4.
    GpuPreset("H100-94GB", _mib(95830), EXACT, "nvidia-smi 95830MiB (gpu-admin-tools#4)"),
    # nvidia-smi 143,771 MiB: thundergolfer.com/blog/nvidia-gpu-memory-capacity (Modal).
    GpuPreset("H200", _mib(143771), EXACT, "nvidia-smi 143771MiB (thundergolfer.com blog)"),
    # nvidia-smi "183359MiB" on "NVIDIA B200": NVIDIA/TensorRT-LLM issue #10278.
    GpuPreset("B200", _mib(183359), EXACT, "nvidia-smi 183359MiB (TensorRT-LLM#10278)"),
    # No device report found: NVIDIA's Blackwell Ultra datasheet, 288 GB HBM3e per GPU.
    GpuPreset("B300", 288 * 10**9, ESTIMATED, "datasheet 288 GB HBM3e (no device report found)"),
    # No device report found: GB200 NVL72, 13.4 TB HBM3e over 72 GPUs = 186 GB per GPU.
    GpuPreset("GB200", 186 * 10**9, ESTIMATED, "datasheet 186 GB HBM3e (no device report found)"),
    # nvidia-smi "40960MiB" / "81920MiB": modal-client#2797; NVIDIA/mig-parted issue #31.
    GpuPreset("A100-40GB", _mib(40960), EXACT, "nvidia-smi 40960MiB (modal-client#2797)"),
    GpuPreset("A100-80GB", _mib(81920), EXACT, "nvidia-smi 81920MiB (mig-parted#31)"),
    # nvidia-smi "46068MiB" / "23034MiB": modal-client#2797.
    GpuPreset("L40S", _mib(46068), EXACT, "nvidia-smi 46068MiB (modal-client#2797)"),
    GpuPreset("L4", _mib(23034), EXACT, "nvidia-smi 23034MiB (modal-client#2797)"),
    # nvidia-smi "23028MiB" on "NVIDIA A10G": NVIDIA/DCGM issue #232.
    GpuPreset("A10G", _mib(23028), EXACT, "nvidia-smi 23028MiB (DCGM#232)"),
    # nvidia-smi "24564MiB" on "NVIDIA GeForce RTX 4090": RLinf/RLinf issue #255.
    GpuPreset("RTX-4090", _mib(24564), EXACT, "nvidia-smi 24564MiB (RLinf#255)"),
    # nvidia-smi "32607MiB" on "NVIDIA GeForce RTX 5090": noonghunna/club-3090 issue #617.
    GpuPreset("RTX-5090", _mib(32607), EXACT, "nvidia-smi 32607MiB (club-3090#617)"),
    # rocminfo GLOBAL pool "201310208(0xbffc000) KB" on gfx942 MI300X: ROCm/rocm-examples #187.
    GpuPreset("MI300X", 201310208 * KIB, EXACT, "rocminfo 201310208 KB (rocm-examples#187)",
              vendor="amd"),
    # No device report found: AMD datasheets, 256 GB / 288 GB HBM3E (AMD's GB are GiB here:
    # the MI300X "192 GB" reports 191.98 GiB).
    GpuPreset("MI325X", 256 * GIB, ESTIMATED, "datasheet 256 GB HBM3E (no device report found)",
              vendor="amd"),
    GpuPreset("MI355X", 288 * GIB, ESTIMATED, "datasheet 288 GB HBM3E (no device report found)",
              vendor="amd"),
)

GPUS: dict[str, GpuPreset] = {g.name: g for g in _PRESETS}


def _key(name: str) -> str:
    return "".join(ch for ch in name.upper() if ch.isalnum())


_BY_KEY: dict[str, GpuPreset] = {_key(g.name): g for g in _PRESETS}
# Common spellings people type.
_ALIASES: dict[str, str] = {
    "H100": "H100-80GB", "H10080G": "H100-80GB", "H100SXM": "H100-80GB",
    "H100NVL": "H100-94GB", "A100": "A100-80GB", "A10080G": "A100-80GB",
    "A10040G": "A100-40GB", "RTX4090": "RTX-4090", "RTX5090": "RTX-5090",
    "4090": "RTX-4090", "5090": "RTX-5090",
}


def gpu_names() -> list[str]:
    return [g.name for g in _PRESETS]


def gpu_preset(name: str | GpuPreset) -> GpuPreset:
    """Look a preset up by name (case and punctuation ignored). Unknown → ``ValueError``."""
    if isinstance(name, GpuPreset):
        return name
    if not isinstance(name, str):
        raise TypeError(f"gpu must be a preset name, got {type(name).__name__}")
    key = _key(name)
    found = _BY_KEY.get(key)
    if found is None and key in _ALIASES:
        found = GPUS[_ALIASES[key]]
    if found is None:
        raise ValueError(f"unknown gpu {name!r}; known: {', '.join(gpu_names())}")
    return found

"""GPU presets: total device memory, as the device reports it, with the source of each figure.

Why the device's own figure and not the datasheet's: a datasheet "80 GB" is a marketing round
number; NVML reports 81,559 MiB for an H100 80GB, and the KV budget is a fraction of what the
device reports. Where no device report could be found, the entry uses the vendor's datasheet
capacity and is labelled ``estimated`` so the budget line says so.

Caveat, stated once here: vLLM multiplies ``gpu_memory_utilization`` by the total that
``torch.cuda.mem_get_info()`` returns, which on NVIDIA parts can be a few hundred MiB below the
NVML total (driver-reserved memory). The presets are the NVML figures; pass
``total_bytes`` to the budget to use a measured ``torch`` total instead.

Names: a preset is found by its own name, by the name ``nvidia-smi`` / ``rocm-smi`` print for
the device (``smi_names``: "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "AMD Instinct
MI300X"), or by a common short form (``aliases``: ``H100``, ``a100 80gb``). Case, spaces and
punctuation are ignored, and a leading vendor word (NVIDIA, AMD, Tesla, GeForce, Instinct) is
dropped. A short form that fits devices with different memory (``A100``: 40 or 80 GB) is in
``_AMBIGUOUS`` and refused with the choices — silently picking one would be a wrong budget.
All of it is data in the tables below; a new device is one row.

Sources: "device report" rows quote the total ``nvidia-smi`` / ``rocminfo`` printed on a real
device in a public issue or log; where several independent public logs agree and no single
issue is cited, the row says so. Datasheet rows are ``estimated``.
"""

from __future__ import annotations

from kvledger.records import record, replace

MIB = 1 << 20
KIB = 1 << 10
GIB = 1 << 30

EXACT = "exact"  # reported by a device (nvidia-smi / NVML, rocminfo)
ESTIMATED = "estimated"  # vendor datasheet capacity; no device report found


@record(frozen=True)
class GpuPreset:
    name: str
    total_bytes: int
    basis: str  # EXACT (device-reported) or ESTIMATED (datasheet)
    source: str
    vendor: str = "nvidia"
    # CUDA compute capability ("sm90") or the AMD GPU target ("gfx942"); sources in _CAPS.
    compute_capability: str = ""
    # The device names nvidia-smi / rocm-smi print, and the short forms people type.
    smi_names: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()


def _mib(n: int) -> int:
    return n * MIB


_ROWS: tuple[GpuPreset, ...] = (
    # nvidia-smi "81559MiB": modal-labs/modal-client PR #2797 (NVML totals of Modal's fleet);
    # NVIDIA/nccl issue #1264 and google/gvisor issue #10413 (nvidia-smi on
    # "NVIDIA H100 80GB HBM3").
    GpuPreset("H100-80GB", _mib(81559), EXACT, "nvidia-smi 81559MiB (a public device report)",
              smi_names=("NVIDIA H100 80GB HBM3",),
              aliases=("H100", "H100-SXM", "H100-SXM5", "H100-80G", "H100-SXM5-80GB",
                       "H100-80GB-HBM3")),
    # "NVIDIA H100 PCIe, 81559 MiB": several independent public run logs (nvidia-smi
    # --query-gpu=name,memory.total) agree; same 80 GB total as the SXM part.
    GpuPreset("H100-PCIE", _mib(81559), EXACT,
              "nvidia-smi 'NVIDIA H100 PCIe, 81559 MiB' (several public run logs)",
              smi_names=("NVIDIA H100 PCIe",), aliases=("H100-PCIE-80GB",)),
    # nvidia-smi "95830MiB" on "NVIDIA H100 NVL": NVIDIA/gpu-admin-tools issue #4.
    GpuPreset("H100-94GB", _mib(95830), EXACT, "nvidia-smi 95830MiB (a public device report)",
              smi_names=("NVIDIA H100 NVL",), aliases=("H100-NVL", "H100-94G")),
    # nvidia-smi 143,771 MiB: thundergolfer.com/blog/nvidia-gpu-memory-capacity (Modal).
    GpuPreset("H200", _mib(143771), EXACT, "nvidia-smi 143771MiB (thundergolfer.com blog)",
              smi_names=("NVIDIA H200",), aliases=("H200-SXM", "H200-141GB")),
    # "NVIDIA H20, 97,871 MiB": several independent public run logs agree.
    GpuPreset("H20", _mib(97871), EXACT,
              "nvidia-smi 'NVIDIA H20, 97871 MiB' (several public run logs)",
              smi_names=("NVIDIA H20",), aliases=("H20-96GB",)),
    # "NVIDIA GH200 480GB, 97871 MiB" (the 96 GB HBM3 Grace Hopper) and
    # "NVIDIA GH200 144G HBM3e, 146831": several independent public logs agree.
    GpuPreset("GH200-96GB", _mib(97871), EXACT,
              "nvidia-smi 'NVIDIA GH200 480GB, 97871 MiB' (several public logs)",
              smi_names=("NVIDIA GH200 480GB",), aliases=("GH200-480GB",)),
    GpuPreset("GH200-144GB", _mib(146831), EXACT,
              "nvidia-smi 'NVIDIA GH200 144G HBM3e, 146831' (public log)",
              smi_names=("NVIDIA GH200 144G HBM3e",), aliases=("GH200-144G",)),
    # nvidia-smi "183359MiB" on "NVIDIA B200": NVIDIA/TensorRT-LLM issue #10278.
    GpuPreset("B200", _mib(183359), EXACT, "nvidia-smi 183359MiB (a public device report)",
              smi_names=("NVIDIA B200",)),
    # No device report found: NVIDIA's Blackwell Ultra datasheet, 288 GB HBM3e per GPU.
    GpuPreset("B300", 288 * 10**9, ESTIMATED, "datasheet 288 GB HBM3e (no device report found)",
              smi_names=("NVIDIA B300 SXM6 AC",)),
    # No device report found: GB200 NVL72, 13.4 TB HBM3e over 72 GPUs = 186 GB per GPU.
    GpuPreset("GB200", 186 * 10**9, ESTIMATED, "datasheet 186 GB HBM3e (no device report found)",
              smi_names=("NVIDIA GB200",)),
    # nvidia-smi "40960MiB" / "81920MiB": modal-client#2797; NVIDIA/mig-parted issue #31. The
    # PCIe parts report the same totals ("NVIDIA A100-PCIE-40GB, 40960 MiB", "NVIDIA A100 80GB
    # PCIe, 81920 MiB" in several public run logs).
    GpuPreset("A100-40GB", _mib(40960), EXACT, "nvidia-smi 40960MiB (a public device report)",
              smi_names=("NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"),
              aliases=("A100-40G", "A100-SXM-40GB", "A100-PCIE-40GB")),
    GpuPreset("A100-80GB", _mib(81920), EXACT, "nvidia-smi 81920MiB (a public device report)",
              smi_names=("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"),
              aliases=("A100-80G", "A100-SXM-80GB", "A100-PCIE-80GB")),
    # nvidia-smi "46068MiB" / "23034MiB" / "23028MiB" / "15360MiB": modal-client#2797 (L40S,
    # L4, A10, T4). "NVIDIA L40, 46068 MiB": several independent public run logs agree.
    GpuPreset("L40S", _mib(46068), EXACT, "nvidia-smi 46068MiB (a public device report)",
              smi_names=("NVIDIA L40S",)),
    GpuPreset("L40", _mib(46068), EXACT,
              "nvidia-smi 'NVIDIA L40, 46068 MiB' (several public run logs)",
              smi_names=("NVIDIA L40",)),
    GpuPreset("L4", _mib(23034), EXACT, "nvidia-smi 23034MiB (a public device report)",
              smi_names=("NVIDIA L4",)),
    GpuPreset("A10", _mib(23028), EXACT, "nvidia-smi 23028MiB (a public device report)",
              smi_names=("NVIDIA A10",)),
    # nvidia-smi "23028MiB" on "NVIDIA A10G": NVIDIA/DCGM issue #232.
    GpuPreset("A10G", _mib(23028), EXACT, "nvidia-smi 23028MiB (a public device report)",
              smi_names=("NVIDIA A10G",)),
    GpuPreset("T4", _mib(15360), EXACT, "nvidia-smi 15360MiB (a public device report)",
              smi_names=("Tesla T4",)),
    # nvidia-smi "24564MiB" on "NVIDIA GeForce RTX 4090": RLinf/RLinf issue #255.
    GpuPreset("RTX-4090", _mib(24564), EXACT, "nvidia-smi 24564MiB (a public device report)",
              smi_names=("NVIDIA GeForce RTX 4090",), aliases=("4090",)),
    # nvidia-smi "32607MiB" on "NVIDIA GeForce RTX 5090": noonghunna/club-3090 issue #617.
    GpuPreset("RTX-5090", _mib(32607), EXACT, "nvidia-smi 32607MiB (a public device report)",
              smi_names=("NVIDIA GeForce RTX 5090",), aliases=("5090",)),
    # nvidia-smi "24576MiB" on "NVIDIA GeForce RTX 3090": noonghunna/club-3090 issue #1127.
    GpuPreset("RTX-3090", _mib(24576), EXACT, "nvidia-smi 24576MiB (a public device report)",
              smi_names=("NVIDIA GeForce RTX 3090",), aliases=("3090",)),
    # "NVIDIA RTX A6000, 49140 MiB", "NVIDIA RTX 6000 Ada Generation, 49140 MiB",
    # "NVIDIA RTX PRO 6000 Blackwell Workstation Edition, 97887 MiB": several public logs.
    GpuPreset("RTX-A6000", _mib(49140), EXACT,
              "nvidia-smi 'NVIDIA RTX A6000, 49140 MiB' (several public run logs)",
              smi_names=("NVIDIA RTX A6000",), aliases=("A6000",)),
    GpuPreset("RTX-6000-ADA", _mib(49140), EXACT,
              "nvidia-smi 'NVIDIA RTX 6000 Ada Generation, 49140 MiB' (several public logs)",
              smi_names=("NVIDIA RTX 6000 Ada Generation",), aliases=("RTX-6000-Ada-48GB",)),
    GpuPreset("RTX-PRO-6000", _mib(97887), EXACT,
              "nvidia-smi 'NVIDIA RTX PRO 6000 Blackwell Workstation Edition, 97887 MiB' "
              "(public log)",
              smi_names=("NVIDIA RTX PRO 6000 Blackwell Workstation Edition",),
              aliases=("RTX-PRO-6000-Blackwell",)),
    # No device report found for these: the vendor's datasheet capacity (decimal GB).
    # H200 NVL: NVIDIA H200 datasheet, 141 GB HBM3e (same memory as the SXM part).
    GpuPreset("H200-NVL", 141 * 10**9, ESTIMATED, "datasheet 141 GB HBM3e (NVIDIA H200 "
              "datasheet; no device report found)", smi_names=("NVIDIA H200 NVL",)),
    # A30: NVIDIA A30 datasheet, 24 GB HBM2.
    GpuPreset("A30", 24 * 10**9, ESTIMATED,
              "datasheet 24 GB HBM2 (NVIDIA A30 datasheet; no device report found)",
              smi_names=("NVIDIA A30",)),
    # V100: NVIDIA V100 datasheet, 16 GB / 32 GB HBM2.
    GpuPreset("V100-16GB", 16 * 10**9, ESTIMATED,
              "datasheet 16 GB HBM2 (NVIDIA V100 datasheet; no device report found)",
              smi_names=("Tesla V100-SXM2-16GB", "Tesla V100-PCIE-16GB"),
              aliases=("V100-16G", "V100-SXM2-16GB", "V100-PCIE-16GB")),
    GpuPreset("V100-32GB", 32 * 10**9, ESTIMATED,
              "datasheet 32 GB HBM2 (NVIDIA V100 datasheet; no device report found)",
              smi_names=("Tesla V100-SXM2-32GB", "Tesla V100-PCIE-32GB"),
              aliases=("V100-32G", "V100-SXM2-32GB", "V100-PCIE-32GB")),
    # rocminfo GLOBAL pool "201310208(0xbffc000) KB" on gfx942 MI300X: ROCm/rocm-examples #187.
    GpuPreset("MI300X", 201310208 * KIB, EXACT, "rocminfo 201310208 KB (a public device report)",
              vendor="amd", smi_names=("AMD Instinct MI300X",)),
    # No device report found: AMD datasheets, 256 GB / 288 GB HBM3E (AMD's GB are GiB here:
    # the MI300X "192 GB" reports 191.98 GiB).
    GpuPreset("MI325X", 256 * GIB, ESTIMATED, "datasheet 256 GB HBM3E (no device report found)",
              vendor="amd", smi_names=("AMD Instinct MI325X",)),
    GpuPreset("MI355X", 288 * GIB, ESTIMATED, "datasheet 288 GB HBM3E (no device report found)",
              vendor="amd", smi_names=("AMD Instinct MI355X",)),
    # The air-cooled sibling of the MI355X: AMD Instinct MI350X datasheet, 288 GB HBM3E.
    GpuPreset("MI350X", 288 * GIB, ESTIMATED, "datasheet 288 GB HBM3E (no device report found)",
              vendor="amd", smi_names=("AMD Instinct MI350X",)),
    # One MI250X is two GCDs; each is one device to ROCm, torch and vLLM ("AMD Instinct
    # MI250X/MI250" in rocminfo: ROCm/rocm_smi_lib issues #160, #165). Datasheet: 128 GB HBM2e
    # per OAM = 64 GiB per GCD; the MI250 has the same memory, so it shares the preset. No
    # MI250X total found; the sister gfx90a part MI210 reports a 67,092,480 KB pool
    # (63.98 GiB), so the true total is likely ~16 MiB below this estimate.
    GpuPreset("MI250X", 64 * GIB, ESTIMATED,
              "datasheet 128 GB HBM2e per OAM = 64 GiB per GCD (no device report found)",
              vendor="amd", smi_names=("AMD Instinct MI250X/MI250", "AMD Instinct MI250X"),
              aliases=("MI250X-GCD", "MI250")),
    # AMD Instinct MI210 datasheet: 64 GB HBM2e (AMD's GB are GiB, as for the MI300X below).
    GpuPreset("MI210", 64 * GIB, ESTIMATED,
              "datasheet 64 GB HBM2e (AMD Instinct MI210 datasheet; no device report found)",
              vendor="amd", smi_names=("AMD Instinct MI210",)),
    # AMD Instinct MI300A datasheet: 128 GB unified HBM3, shared by the CPU and GPU dies.
    GpuPreset("MI300A", 128 * GIB, ESTIMATED,
              "datasheet 128 GB unified HBM3 (AMD Instinct MI300A datasheet; shared with the "
              "CPU; no device report found)",
              vendor="amd", smi_names=("AMD Instinct MI300A",)),
)

# Compute capability per preset. NVIDIA: the "CUDA GPU Compute Capability" table
# (developer.nvidia.com/cuda-gpus) — V100 7.0, T4 7.5, A100/A30 8.0, A10/A10G/RTX A6000/
# RTX 3090 8.6, L4/L40/L40S/RTX 4090/RTX 6000 Ada 8.9, H100/H200/H20/GH200 9.0, B200/GB200
# 10.0, B300 10.3, RTX 5090/RTX PRO 6000 Blackwell 12.0. AMD: ROCm's "GPU hardware
# specifications" table (rocm.docs.amd.com) — MI210/MI250/MI250X gfx90a, MI300A/MI300X/MI325X
# gfx942, MI350X/MI355X gfx950.
_CAPS: dict[str, str] = {
    "H100-80GB": "sm90", "H100-PCIE": "sm90", "H100-94GB": "sm90", "H200": "sm90",
    "H200-NVL": "sm90", "H20": "sm90", "GH200-96GB": "sm90", "GH200-144GB": "sm90",
    "B200": "sm100", "GB200": "sm100", "B300": "sm103",
    "A100-40GB": "sm80", "A100-80GB": "sm80", "A30": "sm80",
    "A10": "sm86", "A10G": "sm86", "RTX-A6000": "sm86", "RTX-3090": "sm86",
    "L40S": "sm89", "L40": "sm89", "L4": "sm89", "RTX-4090": "sm89", "RTX-6000-ADA": "sm89",
    "RTX-5090": "sm120", "RTX-PRO-6000": "sm120",
    "T4": "sm75", "V100-16GB": "sm70", "V100-32GB": "sm70",
    "MI210": "gfx90a", "MI250X": "gfx90a",
    "MI300A": "gfx942", "MI300X": "gfx942", "MI325X": "gfx942", "MI350X": "gfx950",
    "MI355X": "gfx950",
}
_PRESETS = tuple(replace(g, compute_capability=_CAPS[g.name]) for g in _ROWS)

GPUS: dict[str, GpuPreset] = {g.name: g for g in _PRESETS}

# Short forms that fit more than one preset with different memory: refused with the choices.
_AMBIGUOUS: dict[str, tuple[str, ...]] = {
    "A100": ("A100-40GB", "A100-80GB"),
    "A100-SXM4": ("A100-40GB", "A100-80GB"),
    "GH200": ("GH200-96GB", "GH200-144GB"),
    "A100-PCIE": ("A100-40GB", "A100-80GB"),
    "RTX-6000": ("RTX-6000-ADA", "RTX-PRO-6000"),
    "V100": ("V100-16GB", "V100-32GB"),
}

# Leading vendor / brand words that nvidia-smi and rocm-smi print before the model.
_VENDOR_WORDS = ("NVIDIA", "AMD", "TESLA", "GEFORCE", "INSTINCT")


def _key(name: str) -> str:
    """Upper case, vendor words dropped, only letters and digits: "NVIDIA GeForce RTX 4090"
    and "rtx-4090" are both ``RTX4090``."""
    words = name.upper().replace("-", " ").replace("_", " ").split()
    while words and words[0] in _VENDOR_WORDS:
        words = words[1:]
    return "".join(ch for ch in "".join(words) if ch.isalnum())


def _index() -> dict[str, str]:
    index: dict[str, str] = {}
    for preset in _PRESETS:
        for spelling in (preset.name, *preset.smi_names, *preset.aliases):
            key = _key(spelling)
            owner = index.setdefault(key, preset.name)
            if owner != preset.name:  # pragma: no cover - a table error, caught by the tests
                raise AssertionError(f"{spelling!r} names both {owner} and {preset.name}")
    return index


_BY_KEY: dict[str, str] = _index()
_AMBIGUOUS_BY_KEY: dict[str, tuple[str, ...]] = {_key(k): v for k, v in _AMBIGUOUS.items()}


# The compute capability assumed when only a total is given (no GPU named): Hopper, the
# common deployment; the plan says so in a warning (``ASSUMED_NOTE``).
ASSUMED_CAPABILITY = "sm90"
# How far below NVML's total CUDA's own figure sits (driver-reserved memory): vLLM start-up
# logs' total_gpu_memory (bench/data/vllm_startup_logs.csv, each row with its URL) give
# H100-80GB 79.22-79.33 GiB against the preset's 79.65, RTX-3090 23.56-23.58 against 24.00,
# L40S 44.42 against 44.99.
CUDA_BELOW_NVML_GIB = (0.3, 0.6)


def nvml_total_note(preset: GpuPreset) -> str | None:
    """Why an NVIDIA device-report preset may plan a budget a few hundred MiB high under an
    engine that multiplies CUDA's total (vLLM: ``torch.cuda.mem_get_info()``); None for other
    presets (a datasheet figure is already ``estimated``; AMD totals are rocminfo's)."""
    if preset.vendor != "nvidia" or preset.basis != EXACT:
        return None
    low, high = CUDA_BELOW_NVML_GIB
    return (f"{preset.name}'s total is nvidia-smi's (NVML); vLLM multiplies "
            "gpu_memory_utilization by the total CUDA reports (torch.cuda.mem_get_info), "
            f"which public start-up logs put {low}-{high} GiB lower (H100-80GB: 79.22-79.33 "
            "GiB against 79.65), so this KV budget is likely that much times the utilization "
            "high; --gpu-total-bytes with the device's torch.cuda.mem_get_info()[1] plans on "
            "CUDA's figure")


ASSUMED_NOTE = ("no GPU named: planned on the given gpu_total_bytes with the engine's "
                "utilization and reserves; compute capability assumed SM90 (Hopper) for the "
                "engine's defaults")


def given_total_preset(total_bytes: int) -> GpuPreset:
    """A preset for a device known only by its total (``gpu_total_bytes`` with no ``gpu``):
    its memory is the given total, its compute capability ``ASSUMED_CAPABILITY``."""
    return GpuPreset("given total", total_bytes, EXACT, "gpu_total_bytes, no GPU named",
                     compute_capability=ASSUMED_CAPABILITY)


def gpu_names() -> list[str]:
    return [g.name for g in _PRESETS]


def _choices(names: tuple[str, ...]) -> str:
    return " or ".join(f"{n} ({GPUS[n].total_bytes // MIB:,} MiB)" for n in names)


def gpu_preset(name: str | GpuPreset) -> GpuPreset:
    """Look a preset up by name, nvidia-smi / rocm-smi name or short form.

    Unknown → ``ValueError`` with the closest names ("did you mean"); ambiguous (``A100``)
    → ``ValueError`` with the choices.
    """
    if isinstance(name, GpuPreset):
        return name
    if not isinstance(name, str):
        raise TypeError(f"gpu must be a preset name, got {type(name).__name__}")
    key = _key(name)
    found = _BY_KEY.get(key)
    if found is not None:
        return GPUS[found]
    if key in _AMBIGUOUS_BY_KEY:
        choices = _AMBIGUOUS_BY_KEY[key]
        raise ValueError(f"gpu {name!r} is ambiguous: {_choices(choices)}; name one")
    raise ValueError(_unknown(name, key))


def _unknown(name: str, key: str) -> str:
    import difflib  # only on this error path

    keys = list(_BY_KEY) + list(_AMBIGUOUS_BY_KEY)
    close = difflib.get_close_matches(key, keys, n=6, cutoff=0.6)
    suggestions: list[str] = []
    for k in close:
        for preset_name in (_BY_KEY[k],) if k in _BY_KEY else _AMBIGUOUS_BY_KEY[k]:
            if preset_name not in suggestions:
                suggestions.append(preset_name)
    if suggestions:
        return (f"unknown gpu {name!r}; did you mean {', '.join(suggestions[:4])}? "
                "(or give the device's total memory: gpu_total_bytes)")
    return f"unknown gpu {name!r}; known: {', '.join(gpu_names())}"

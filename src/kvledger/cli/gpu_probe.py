"""``--gpu auto``: the GPU this machine has, read from ``nvidia-smi`` (or ``rocm-smi``).

The probing lives here, in the CLI, because ``plan/`` never reads the environment: what is
read becomes ordinary request fields (``gpu`` — a preset when the device name is one —
``gpu_total_bytes`` and ``gpu_free_bytes``), and one line on stderr says what was read.

- ``nvidia-smi --query-gpu=name,memory.total,memory.free,compute_cap --format=csv,noheader,
  nounits``: one CSV line per device, memory in MiB. The first device is planned (the plan is
  per GPU); a machine with different devices says which was taken.
- ``rocm-smi --showproductname --showmeminfo vram --csv``: the card series and
  ``VRAM Total Memory (B)`` / ``VRAM Total Used Memory (B)`` in bytes.

Without either tool, ``UsageError`` (exit 2) names the flags to use instead.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess

from kvledger.cli.errors import UsageError
from kvledger.records import record

MIB = 1 << 20
GIB = 1 << 30
NVIDIA_QUERY = ("--query-gpu=name,memory.total,memory.free,compute_cap",
                "--format=csv,noheader,nounits")
ROCM_QUERY = ("--showproductname", "--showmeminfo", "vram", "--csv")
NO_TOOL = ("--gpu auto: neither nvidia-smi nor rocm-smi is on PATH; name the GPU with --gpu "
           "NAME (kvledger gpus lists them) or give --gpu-total-bytes N, and --gpu-free-bytes N "
           "if other processes hold memory")


@record(frozen=True)
class Probed:
    """What the tool printed for the device planned."""

    tool: str
    name: str
    total_bytes: int
    free_bytes: int | None
    compute_capability: str  # "9.0", "" when not printed
    devices: int

    def describe(self) -> str:
        free = "" if self.free_bytes is None else f", {self.free_bytes / GIB:.2f} GiB free"
        cc = f", compute capability {self.compute_capability}" if self.compute_capability \
            else ""
        more = f" (device 0 of {self.devices})" if self.devices > 1 else ""
        return (f"--gpu auto: {self.tool} reports {self.name}{more}: "
                f"{self.total_bytes / GIB:.2f} GiB total{free}{cc}")


def _run(tool: str, args: tuple[str, ...]) -> str:
    path = shutil.which(tool)
    if path is None:
        raise FileNotFoundError(tool)
    try:
        done = subprocess.run([path, *args], capture_output=True, text=True, timeout=20,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"--gpu auto: {tool} could not be run ({exc})",
                         hint=NO_TOOL.partition("; ")[2]) from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise UsageError(f"--gpu auto: {tool} failed (exit {done.returncode}"
                         f"{': ' + said[0] if said else ''})", hint=NO_TOOL.partition("; ")[2])
    return done.stdout


def parse_nvidia(text: str) -> Probed:
    rows = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
    if not rows or len(rows[0]) < 3:
        raise UsageError(f"--gpu auto: nvidia-smi printed no device ({text.strip()[:80]!r})",
                         hint=NO_TOOL.partition("; ")[2])
    cells = [c.strip() for c in rows[0]]
    try:
        total = int(float(cells[1]) * MIB)
        free = int(float(cells[2]) * MIB)
    except ValueError:
        raise UsageError(f"--gpu auto: nvidia-smi's memory is not a number ({rows[0]!r})",
                         hint=NO_TOOL.partition("; ")[2]) from None
    cc = cells[3] if len(cells) > 3 and cells[3] not in ("[N/A]", "N/A") else ""
    return Probed("nvidia-smi", cells[0], total, free, cc, len(rows))


def parse_rocm(text: str) -> Probed:
    rows = list(csv.DictReader(io.StringIO(text.strip())))
    if not rows:
        raise UsageError("--gpu auto: rocm-smi printed no device",
                         hint=NO_TOOL.partition("; ")[2])
    row = {k.strip(): (v or "").strip() for k, v in rows[0].items() if k}
    try:
        total = int(row["VRAM Total Memory (B)"])
        used = int(row.get("VRAM Total Used Memory (B)") or 0)
    except (KeyError, ValueError):
        raise UsageError("--gpu auto: rocm-smi printed no VRAM total",
                         hint=NO_TOOL.partition("; ")[2]) from None
    name = row.get("Card Series") or row.get("Card series") or row.get("Card Model") or "?"
    return Probed("rocm-smi", name, total, total - used, row.get("GFX Version", ""), len(rows))


def probe() -> Probed:
    """The first device as nvidia-smi (else rocm-smi) reports it; ``UsageError`` without."""
    try:
        return parse_nvidia(_run("nvidia-smi", NVIDIA_QUERY))
    except FileNotFoundError:
        pass
    try:
        return parse_rocm(_run("rocm-smi", ROCM_QUERY))
    except FileNotFoundError:
        raise UsageError(NO_TOOL) from None


def request_fields(probed: Probed) -> dict[str, object]:
    """The request fields the probe gives: the preset when the device's name is one (its
    compute capability then comes with it), the total and the free memory as read."""
    from kvledger.plan.gpus import gpu_preset

    try:
        preset: str | None = gpu_preset(probed.name).name
    except ValueError:
        preset = None  # planned on the total alone (the plan says which capability it assumed)
    return {"gpu": preset, "gpu_total_bytes": probed.total_bytes,
            "gpu_free_bytes": probed.free_bytes}

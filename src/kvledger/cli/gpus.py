"""What ``kvledger gpus`` lists: every GPU preset with its memory, basis, compute capability
and the names it is found by (read from ``kvledger.plan.gpus``, the one table)."""

from __future__ import annotations

from typing import Any

MIB = 1 << 20


def gpus_payload() -> dict[str, Any]:
    """``{"gpus": [{"name", "total_bytes", "total_mib", "basis", "compute_capability",
    "vendor", "smi_names", "aliases", "source"}, ...]}`` in table order."""
    from kvledger.plan.gpus import GPUS

    rows = [{
        "name": g.name, "total_bytes": g.total_bytes, "total_mib": g.total_bytes / MIB,
        "basis": g.basis, "compute_capability": g.compute_capability, "vendor": g.vendor,
        "smi_names": list(g.smi_names), "aliases": list(g.aliases), "source": g.source,
    } for g in GPUS.values()]
    return {"gpus": rows}


def render_gpus(data: dict[str, Any]) -> str:
    """Plain text, one preset a line: name, memory in MiB (``~`` when a datasheet figure),
    compute capability, the nvidia-smi / rocm-smi name."""
    lines = [f"{'name':<14} {'memory':>14} {'cc':<7} smi name"]
    for row in data["gpus"]:
        mark = "~" if row["basis"] == "estimated" else " "
        memory = f"{mark}{row['total_mib']:,.0f} MiB"
        smi = row["smi_names"][0] if row["smi_names"] else ""
        lines.append(f"{row['name']:<14} {memory:>14} {row['compute_capability']:<7} {smi}")
    lines.append("~ = the vendor's datasheet capacity (no device report found); "
                 "others as the device reports them")
    return "\n".join(lines) + "\n"

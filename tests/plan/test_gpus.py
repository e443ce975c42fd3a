"""GPU presets by the names nvidia-smi / rocm-smi print and the short forms people type.

Expected totals are the device reports each row cites (nvidia-smi MiB × 1,048,576), never
values read back from the table under test.
"""

from __future__ import annotations

import pytest

from kvledger.cli.main import main
from kvledger.plan.gpus import ESTIMATED, EXACT, GPUS, gpu_preset

MIB = 1 << 20

# (name as printed by nvidia-smi / rocm-smi or typed, preset, total bytes from the source)
SMI_NAMES = [
    ("NVIDIA H100 80GB HBM3", "H100-80GB", 81559 * MIB),  # nvidia-smi 81559MiB
    ("NVIDIA H100 PCIe", "H100-PCIE", 81559 * MIB),
    ("NVIDIA H100 NVL", "H100-94GB", 95830 * MIB),
    ("NVIDIA A100-SXM4-40GB", "A100-40GB", 40960 * MIB),
    ("NVIDIA A100-PCIE-40GB", "A100-40GB", 40960 * MIB),
    ("NVIDIA A100-SXM4-80GB", "A100-80GB", 81920 * MIB),
    ("NVIDIA A100 80GB PCIe", "A100-80GB", 81920 * MIB),
    ("NVIDIA L40S", "L40S", 46068 * MIB),
    ("NVIDIA L40", "L40", 46068 * MIB),
    ("NVIDIA L4", "L4", 23034 * MIB),
    ("NVIDIA A10G", "A10G", 23028 * MIB),
    ("NVIDIA A10", "A10", 23028 * MIB),
    ("NVIDIA H20", "H20", 97871 * MIB),
    ("NVIDIA H200", "H200", 143771 * MIB),
    ("NVIDIA B200", "B200", 183359 * MIB),
    ("NVIDIA GH200 480GB", "GH200-96GB", 97871 * MIB),
    ("NVIDIA GeForce RTX 4090", "RTX-4090", 24564 * MIB),
    ("NVIDIA GeForce RTX 3090", "RTX-3090", 24576 * MIB),
    ("NVIDIA RTX 6000 Ada Generation", "RTX-6000-ADA", 49140 * MIB),
    ("Tesla T4", "T4", 15360 * MIB),
    # rocminfo "201310208(0xbffc000) KB" × 1024
    ("AMD Instinct MI300X", "MI300X", 201310208 * 1024),
    # datasheet 128 GB per OAM / 2 GCDs = 64 GiB (estimated)
    ("AMD Instinct MI250X/MI250", "MI250X", 64 << 30),
]

SHORT_FORMS = [
    ("H100", "H100-80GB"), ("h100", "H100-80GB"), ("H100-PCIE", "H100-PCIE"),
    ("h100 pcie", "H100-PCIE"), ("H100 NVL", "H100-94GB"), ("L40", "L40"), ("l40s", "L40S"),
    ("A100-40GB", "A100-40GB"), ("a100 80gb", "A100-80GB"), ("A100-80G", "A100-80GB"),
    ("RTX 4090", "RTX-4090"), ("4090", "RTX-4090"), ("rtx-5090", "RTX-5090"),
    ("MI250X", "MI250X"), ("mi300x", "MI300X"), ("B200", "B200"), ("GH200-144GB", "GH200-144GB"),
]


@pytest.mark.parametrize(("name", "preset", "total"), SMI_NAMES)
def test_smi_names_find_their_preset(name: str, preset: str, total: int) -> None:
    found = gpu_preset(name)
    assert found.name == preset
    assert found.total_bytes == total


@pytest.mark.parametrize(("name", "preset"), SHORT_FORMS)
def test_short_forms(name: str, preset: str) -> None:
    assert gpu_preset(name).name == preset


def test_a100_is_ambiguous_not_silently_80gb() -> None:
    """Issue #10: '--gpu A100 silently means 80 GB'. It fits 40 GB and 80 GB parts."""
    with pytest.raises(ValueError, match="ambiguous") as info:
        gpu_preset("A100")
    assert "A100-40GB (40,960 MiB)" in str(info.value)
    assert "A100-80GB (81,920 MiB)" in str(info.value)


@pytest.mark.parametrize("name", ["GH200", "RTX 6000", "A100 PCIe"])
def test_other_ambiguous_forms(name: str) -> None:
    with pytest.raises(ValueError, match="ambiguous"):
        gpu_preset(name)


def test_unknown_gpu_suggests_close_names() -> None:
    with pytest.raises(ValueError, match=r"did you mean .*L40") as info:
        gpu_preset("L40G")
    assert "L40S" in str(info.value)


def test_unknown_gpu_without_close_name_lists_known() -> None:
    with pytest.raises(ValueError, match=r"known: .*H100-80GB"):
        gpu_preset("TPU-v5")


def test_every_preset_cites_a_source_and_estimates_say_so() -> None:
    for preset in GPUS.values():
        assert preset.source
        assert preset.basis in (EXACT, ESTIMATED)
        if preset.basis == ESTIMATED:
            assert "datasheet" in preset.source
        else:
            assert any(word in preset.source for word in ("nvidia-smi", "rocminfo"))


def test_cli_refuses_ambiguous_gpu_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "meta-llama/Meta-Llama-3.1-8B", "--engine", "vllm", "--gpu", "A100"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "A100-40GB" in err and "A100-80GB" in err


def test_cli_accepts_nvidia_smi_name(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "meta-llama/Meta-Llama-3.1-8B", "--engine", "vllm",
                 "--gpu", "NVIDIA H100 80GB HBM3", "--max-model-len", "8192", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    # The GPU total line is the nvidia-smi figure: 81,559 MiB = 85,520,809,984 B.
    assert "85520809984" in out


# Compute capability, from NVIDIA's "CUDA GPU Compute Capability" table and ROCm's "GPU
# hardware specifications" table (the sources gpus.py cites), typed here by hand.
CAPABILITIES = [
    ("NVIDIA H100 80GB HBM3", "sm90"), ("NVIDIA H200 NVL", "sm90"), ("NVIDIA H20", "sm90"),
    ("NVIDIA GH200 480GB", "sm90"), ("NVIDIA B200", "sm100"), ("NVIDIA GB200", "sm100"),
    ("NVIDIA B300 SXM6 AC", "sm103"), ("NVIDIA A100-SXM4-40GB", "sm80"), ("NVIDIA A30", "sm80"),
    ("NVIDIA A10", "sm86"), ("NVIDIA L40S", "sm89"), ("NVIDIA L4", "sm89"),
    ("NVIDIA RTX 6000 Ada Generation", "sm89"), ("Tesla V100-SXM2-32GB", "sm70"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "sm120"),
    ("AMD Instinct MI210", "gfx90a"), ("AMD Instinct MI250X/MI250", "gfx90a"),
    ("AMD Instinct MI300A", "gfx942"), ("AMD Instinct MI325X", "gfx942"),
    ("AMD Instinct MI355X", "gfx950"), ("AMD Instinct MI350X", "gfx950"),
]


@pytest.mark.parametrize(("name", "cc"), CAPABILITIES)
def test_compute_capability(name: str, cc: str) -> None:
    assert gpu_preset(name).compute_capability == cc


# New rows with no device report: the datasheet figure, labelled estimated.
DATASHEET = [
    ("NVIDIA H200 NVL", 141 * 10**9),  # H200 datasheet 141 GB
    ("NVIDIA A30", 24 * 10**9),  # A30 datasheet 24 GB
    ("Tesla V100-SXM2-16GB", 16 * 10**9), ("Tesla V100-PCIE-32GB", 32 * 10**9),
    ("AMD Instinct MI210", 64 << 30),  # 64 GB, AMD's GB = GiB (module docstring)
    ("AMD Instinct MI300A", 128 << 30),
    ("AMD Instinct MI350X", 288 << 30),  # MI350X datasheet 288 GB HBM3E
]


@pytest.mark.parametrize(("name", "total"), DATASHEET)
def test_datasheet_rows_are_estimated(name: str, total: int) -> None:
    found = gpu_preset(name)
    assert (found.total_bytes, found.basis) == (total, ESTIMATED)


def test_every_preset_states_a_compute_capability() -> None:
    assert all(g.compute_capability for g in GPUS.values())


def test_v100_alone_is_ambiguous() -> None:
    with pytest.raises(ValueError, match=r"V100-16GB .* or V100-32GB"):
        gpu_preset("V100")


def test_gpus_command_lists_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["gpus", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["gpus"]}
    assert rows["H100-80GB"]["total_bytes"] == 81559 * MIB  # nvidia-smi 81559MiB
    assert rows["H100-80GB"]["compute_capability"] == "sm90"
    assert rows["MI300X"]["compute_capability"] == "gfx942"
    assert "NVIDIA H200 NVL" in rows["H200-NVL"]["smi_names"]
    assert main(["gpus"]) == 0
    text = capsys.readouterr().out
    assert "81,559 MiB" in text and "Tesla V100-SXM2-16GB" in text

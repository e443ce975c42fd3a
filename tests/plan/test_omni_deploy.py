"""vLLM-Omni deploy files read as vLLM-Omni reads them (``kvledger.plan.omni.deploy``):
the real files in ../shared/omni (copied from the vllm-omni 0.30.0 package), and files written
here for what those do not cover (engine_args, runtime, a bad file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvledger.errors import DeployFileError
from kvledger.plan.omni.admission import GIB, Demand, admit
from kvledger.plan.omni.deploy import deploy_from_mapping, load_deploy
from oracle_cases import SHARED, SHARED_MISSING

OMNI = SHARED / "omni"
H100 = 85_520_809_984  # nvidia-smi 81559 MiB × 2**20: the H100-80GB preset's total


def _real(name: str) -> Path:
    if not OMNI.is_dir():
        pytest.skip(SHARED_MISSING)
    return OMNI / name


def test_qwen2_5_omni_stages_as_the_file_states_them() -> None:
    deploy = load_deploy(_real("qwen2_5_omni.yaml"))
    got = [(s.stage_id, s.devices, s.gpu_memory_utilization, s.max_num_seqs,
            s.max_num_batched_tokens, s.enforce_eager, s.enable_prefix_caching)
           for s in deploy.stages]
    assert got == [(0, (0,), 0.8, 1, 32768, True, False), (1, (1,), 0.8, 1, 32768, True, False),
                   (2, (0,), 0.15, 1, 32768, True, False)]


def test_a_platform_overlay_wins_per_field() -> None:
    # qwen3_omni_moe.yaml platforms.npu: stage 0 → 0.6 of devices "0,1" at TP 2; stage 2 → 0.3
    # on device 2. Fields the overlay leaves (max_num_seqs 64) stay.
    npu = load_deploy(_real("qwen3_omni_moe.yaml"), platform="npu")
    s0, s1, s2 = npu.stages
    assert (s0.gpu_memory_utilization, s0.devices, s0.tensor_parallel_size,
            s0.max_num_batched_tokens, s0.max_num_seqs) == (0.6, (0, 1), 2, 8192, 64)
    assert (s1.devices, s2.devices, s2.gpu_memory_utilization) == ((2,), (2,), 0.3)
    cuda = load_deploy(_real("qwen3_omni_moe.yaml"))
    assert [s.gpu_memory_utilization for s in cuda.stages] == [0.9, 0.6, 0.1]
    assert [s.enforce_eager for s in cuda.stages] == [False, False, False]


def test_ming_and_mimo_read() -> None:
    ming = load_deploy(_real("ming_flash_omni.yaml"))
    assert [(s.devices, s.tensor_parallel_size, s.gpu_memory_utilization)
            for s in ming.stages] == [((0, 1, 2, 3), 4, 0.74), ((3,), 1, 0.18)]
    # enable_prefix_caching is pipeline-wide there (top level): every stage takes it.
    assert [s.enable_prefix_caching for s in ming.stages] == [False, False]
    assert ming.pipeline == "ming_flash_omni"
    mimo = load_deploy(_real("mimo_audio.yaml"))
    assert [(s.devices, s.gpu_memory_utilization, s.max_model_len) for s in mimo.stages] == [
        ((0,), 0.5, 8192), ((0,), 0.3, 8192)]


def test_admission_of_the_real_qwen3_omni_file_by_hand() -> None:
    # stage_admission.py evaluate, on two H100s (85,520,809,984 B each):
    # device 0: thinker 0.9 → int(76,968,728,985.6) = 76,968,728,985, CUDA graphs (not eager)
    #   2 GiB, + 1 GiB external + 1 GiB margin = 76,968,728,985 + 4 GiB = 81,263,696,281 ≤ cap.
    # device 1: talker 0.6 → 51,312,485,990 (…990.4), code2wav 0.1 → 8,552,080,998 (…998.4),
    #   both capture graphs (enforce_eager false): 2 × 2 GiB; + 2 GiB:
    #   59,864,566,988 + 6 GiB = 66,307,017,932.
    deploy = load_deploy(_real("qwen3_omni_moe.yaml"))
    ledgers = admit([Demand(s.stage_id, s.devices, s.gpu_memory_utilization or 0,
                            0 if s.enforce_eager else 2 * GIB) for s in deploy.stages], H100)
    assert [(a.device, a.required_bytes, a.ok) for a in ledgers] == [
        (0, 81_263_696_281, True), (1, 66_307_017_932, True)]


def test_engine_args_and_runtime_blocks() -> None:
    deploy = deploy_from_mapping({
        "enable_prefix_caching": True, "dtype": "bfloat16",
        "stages": [{"stage_id": 1, "engine_args": {"gpu_memory_utilization": 0.4,
                                                   "max_num_seqs": 8},
                    "runtime": {"devices": "2,3"}, "devices": "0"},
                   {"stage_id": 0, "devices": 0, "enable_prefix_caching": False}]})
    first, second = deploy.stages  # sorted by stage_id
    assert (first.stage_id, first.devices, first.enable_prefix_caching) == (0, (0,), False)
    assert (second.devices, second.gpu_memory_utilization, second.max_num_seqs,
            second.enable_prefix_caching, second.dtype) == ((2, 3), 0.4, 8, True, "bfloat16")
    assert first.gpu_memory_utilization is None  # omitted: vLLM's default, resolved later


@pytest.mark.parametrize(("data", "words"), [
    ({"stages": []}, "non-empty list"),
    ([1, 2], "a mapping"),
    ({"stages": [{"devices": "0"}]}, "integer stage_id"),
    ({"stages": [{"stage_id": 0}, {"stage_id": 0}]}, "duplicate stage_id"),
    ({"stages": [{"stage_id": 0, "gpu_memory_utilization": 1.5}]}, "(0, 1]"),
    ({"stages": [{"stage_id": 0, "max_num_seqs": "many"}]}, "max_num_seqs must be"),
    ({"stages": [{"stage_id": 0, "devices": "0,x"}]}, "devices must be"),
    ({"stages": [{"stage_id": 0}], "platforms": {"cuda": {"stages": [{"stage_id": 3}]}}},
     "does not define"),
])
def test_bad_deploy_files_are_refused_naming_the_field(data: object, words: str) -> None:
    with pytest.raises(DeployFileError, match=words.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[")):
        deploy_from_mapping(data, where="x.yaml")


def test_not_yaml(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("stages: [\n  - stage_id: 0\n")
    with pytest.raises(DeployFileError, match=r"bad.yaml: not valid YAML at line \d"):
        load_deploy(bad)

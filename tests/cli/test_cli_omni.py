"""``kvledger plan MODEL --omni-deploy DEPLOY.yaml``: the JSON shape the machine interface
promises, the text, and bad input as one line with exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from omni_cases import TINY, TINY_YAML
from oracle_cases import CONFIGS, SHARED, SHARED_MISSING


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _files(tmp_path: Path) -> tuple[str, str]:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY))
    deploy = tmp_path / "deploy.yaml"
    deploy.write_text(TINY_YAML)
    return str(config), str(deploy)


def test_json_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, deploy = _files(tmp_path)
    code, out, err = _run(capsys, "plan", config, "--omni-deploy", deploy, "--gpu-total-bytes",
                          "16GiB", "--concurrency", "2", "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    assert [s["stage_id"] for s in data["stages"]] == [0, 1, 2]
    for stage in data["stages"]:
        assert {"stage_id", "role", "devices", "gpu_memory_utilization", "max_num_seqs",
                "plan"} <= set(stage)
    assert data["stages"][2]["plan"] is None and data["stages"][2]["reason"]
    assert data["stages"][1]["plan"]["num_blocks"] > 0
    for device in data["admission"]:
        assert {"device", "capacity_bytes", "required_bytes", "ok"} <= set(device)
    assert data["split"] and data["split"][0]["concurrency"] == 2


def test_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, deploy = _files(tmp_path)
    code, out, err = _run(capsys, "plan", config, "--omni-deploy", deploy, "--gpu-total-bytes",
                          "16GiB")
    assert code == 0, err
    assert "stage 1  talker (talker_config)" in out and "admission per device" in out
    assert "12,884,901,888 B of 17,179,869,184 B: ok" in out  # device 0, by hand in plan tests


@pytest.mark.parametrize(("yaml_text", "extra", "words"), [
    ("stages: [\n", (), "not valid YAML"),
    ("stages: 3\n", (), "'stages' must be"),
    ("stages:\n  - stage_id: 0\n    gpu_memory_utilization: 2\n", (), "(0, 1]"),
    ("stages:\n  - stage_id: 0\n", ("--kv-cache-memory-bytes", "1GiB"), "fraction"),
    ("stages:\n  - stage_id: 0\n", ("--gpu-memory-utilization", "0.5"), "deploy file"),
    ("stages:\n  - stage_id: 9\n", (), "not a stage of the qwen2_5_omni pipeline"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          yaml_text: str, extra: tuple[str, ...],
                                          words: str) -> None:
    config, _ = _files(tmp_path)
    deploy = tmp_path / "bad.yaml"
    deploy.write_text(yaml_text)
    code, out, err = _run(capsys, "plan", config, "--omni-deploy", str(deploy),
                          "--gpu-total-bytes", "16GiB", *extra)
    assert code == 2 and out == ""
    assert words in err and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if not ln.startswith("hint:")]) == 1


def test_the_real_deployment(capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # each admission sum on one line
    if not SHARED.is_dir():
        pytest.skip(SHARED_MISSING)
    code, out, err = _run(capsys, "plan", str(CONFIGS / "Qwen--Qwen2.5-Omni-7B.json"),
                          "--omni-deploy", str(SHARED / "omni" / "qwen2_5_omni.yaml"),
                          "--gpu", "H100-80GB", "--concurrency", "4")
    assert code == 0, err
    assert "83,392,253,132 B of 85,520,809,984 B: ok" in out
    assert "split for 4 concurrent requests" in out


def test_an_installed_vllm_030_plans_the_stages_as_030_without_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # vllm-omni 0.30 installs vLLM 0.30, which kvledger reproduces (releases/v0_30.py): the
    # installed release is pinned and the stages are planned as it, with nothing to warn of.
    dist = tmp_path / "site" / "vllm-0.30.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.30.0\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    config, deploy = _files(tmp_path)
    code, out, err = _run(capsys, "plan", config, "--omni-deploy", deploy, "--gpu-total-bytes",
                          "16GiB", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert "a release kvledger does not reproduce" not in err
    assert data["engine_release"] == "0.30.0"
    assert not any("every stage is planned as" in w for w in data["warnings"]), data["warnings"]

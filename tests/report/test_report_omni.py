"""``kvledger report --omni-deploy``: the page carries the deployment's section with the numbers
``kvledger plan --omni-deploy --json`` prints (the tiny deployment of tests/omni_cases.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvledger.cli.main import main
from omni_cases import TINY, TINY_YAML

pytest.importorskip("matplotlib", reason="the report needs the plotting extra: "
                    "pip install 'kvledger[report]'")


def test_the_page_has_the_deployment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, deploy, out = tmp_path / "config.json", tmp_path / "d.yaml", tmp_path / "r.html"
    config.write_text(json.dumps(TINY))
    deploy.write_text(TINY_YAML)
    args = [str(config), "--omni-deploy", str(deploy), "--gpu", "H100-80GB", "--concurrency", "2"]
    assert main(["plan", *args, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert main(["report", *args, "-o", str(out)]) == 0, capsys.readouterr().err
    page = out.read_text(encoding="utf-8")
    assert 'id="omni"' in page and "admission per device" in page
    talker = plan["stages"][1]["plan"]
    assert f"{talker['num_blocks']:,}" in page
    for device in plan["admission"]:
        assert f"{device['required_bytes']:,}" in page
    assert "split for 2 concurrent requests" in page
    for split in plan["split"]:
        assert f"{split['spare_fraction']:g} of the device spare" in page

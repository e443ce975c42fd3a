"""Any Hugging Face model id, through a loopback Hub (tests/source/hub_server.py).

Nothing here reaches the Internet: HF_ENDPOINT points at 127.0.0.1 for every test (the
suite's conftest), and at the loopback server for these.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from oracle_cases import CONFIGS

from .conftest import (
    BUDGET,
    FP8,
    MAIN,
    MOE,
    OLD,
    SHARDED_BYTES,
    SHARDED_SERVED,
    SINGLE_BYTES,
    SINGLE_SERVED,
    TOKEN,
    Online,
)

GPU = ["--gpu", "H100-80GB", "--max-model-len", "4096"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = _run(capsys, "plan", *argv, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def _fails(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = _run(capsys, *argv)
    assert code == 2, (out, err)
    assert out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _same_plan(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Equal in every key but where the config came from."""
    strip = ("model", "source")
    assert {k: v for k, v in a.items() if k not in strip} == \
        {k: v for k, v in b.items() if k not in strip}


def _weights_line(data: dict[str, Any]) -> dict[str, Any]:
    lines = [ln for ln in data["budget"] if "model weights" in ln["label"]]
    assert len(lines) == 1, data["budget"]
    return lines[0]


def test_first_fetch_plans_as_the_config_file(
        online: Online, capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen/Qwen3-0.6B is not a catalog id: it comes from the Hub, and plans exactly as
    its config.json given as a file."""
    hub = _plan(capsys, "Qwen/Qwen3-0.6B", *BUDGET)
    local = _plan(capsys, str(CONFIGS / "Qwen--Qwen3-0.6B.json"), *BUDGET)
    _same_plan(hub, local)
    assert hub["model"] == "Qwen/Qwen3-0.6B"
    assert hub["source"] == {"kind": "hub", "revision": MAIN,
                             "location": f"{online.endpoint}/Qwen/Qwen3-0.6B"}
    assert local["source"]["kind"] == "path"
    # huggingface_hub wrote its cache: refs/main → the commit, the config in its snapshot.
    repo = online.cache / "models--Qwen--Qwen3-0.6B"
    assert (repo / "refs" / "main").read_text() == MAIN
    assert (repo / "snapshots" / MAIN / "config.json").read_bytes() == \
        (CONFIGS / "Qwen--Qwen3-0.6B.json").read_bytes()


def test_weights_are_the_served_headers(online: Online, capsys: pytest.CaptureFixture[str],
                                        ) -> None:
    data = _plan(capsys, "Qwen/Qwen3-0.6B", *GPU)
    line = _weights_line(data)
    # Σ tensor bytes of the served model.safetensors, by hand in conftest.SINGLE: 5,124 B
    # stored; on the GPU at bfloat16 4,868 B (conftest.SINGLE_SERVED). The label says both.
    assert (line["bytes"], line["basis"]) == (SINGLE_SERVED, "exact")
    assert "BF16 4,096 B" in line["label"] and "F32 516 B" in line["label"]
    assert f"stored {SINGLE_BYTES:,} B, served at bfloat16 {SINGLE_SERVED:,} B" in line["label"]
    assert not any("weights estimated" in w for w in data["warnings"])
    # Headers only: every GET of a safetensors file asked for a byte range.
    gets = [(path, rng) for method, path, rng in online.hub.log
            if method == "GET" and path.endswith(".safetensors")]
    assert gets and all(rng is not None for _, rng in gets)


def test_sharded_weights_are_the_sum_of_shard_headers(
        online: Online, capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, "Qwen/Qwen3-30B-A3B", *GPU)
    line = _weights_line(data)
    # conftest.SHARD_1 + SHARD_2 by hand: 16,384 + 128 + 400 + 12 = 16,924 B stored; the F32
    # lm_head served in bfloat16: 16,724 B (conftest.SHARDED_SERVED).
    assert (line["bytes"], line["basis"]) == (SHARDED_SERVED, "exact")
    assert f"stored {SHARDED_BYTES:,} B" in line["label"]
    assert data["source"]["revision"] == MOE
    read = {path.rsplit("/", 1)[1] for method, path, rng in online.hub.log
            if method == "GET" and rng is not None}
    assert read == {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}


def test_second_run_offline_from_the_cache(
        online: Online, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    first = _plan(capsys, "Qwen/Qwen3-0.6B", *GPU)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = len(online.hub.log)
    second = _plan(capsys, "Qwen/Qwen3-0.6B", *GPU)
    assert len(online.hub.log) == before  # not one request
    _same_plan(first, second)  # weights included: their headers were cached by commit
    assert second["source"] == {"kind": "hf-cache", "revision": MAIN,
                                "location": str(online.cache / "models--Qwen--Qwen3-0.6B"
                                                / "snapshots" / MAIN)}
    assert _weights_line(second)["basis"] == "exact"


def test_cache_folder_path_form(online: Online, capsys: pytest.CaptureFixture[str]) -> None:
    first = _plan(capsys, "Qwen/Qwen3-0.6B", *BUDGET)
    folder = online.cache / "models--Qwen--Qwen3-0.6B"
    again = _plan(capsys, str(folder), *BUDGET, "--offline")
    _same_plan(first, again)
    assert again["source"]["kind"] == "hf-cache" and again["source"]["revision"] == MAIN


def test_revision(online: Online, capsys: pytest.CaptureFixture[str]) -> None:
    """Tag v0 is another commit whose config.json is Qwen3-1.7B's: the plan is that file's."""
    old = _plan(capsys, "Qwen/Qwen3-0.6B", "--revision", "v0", *BUDGET)
    local = _plan(capsys, str(CONFIGS / "Qwen--Qwen3-1.7B.json"), *BUDGET)
    _same_plan(old, local)
    assert old["source"]["revision"] == OLD
    # By commit too, and offline once cached.
    by_sha = _plan(capsys, "Qwen/Qwen3-0.6B", "--revision", OLD, *BUDGET, "--offline")
    _same_plan(by_sha, local)


def test_hf_quant_config_is_fetched(online: Online, capsys: pytest.CaptureFixture[str],
                                    tmp_path: Path) -> None:
    model = tmp_path / "fp8"
    model.mkdir()
    for name in ("config.json", "hf_quant_config.json"):
        stem = "nvidia--Llama-3.1-70B-Instruct-FP8" + ("" if name == "config.json" else
                                                       ".hf_quant_config")
        (model / name).write_bytes((CONFIGS / f"{stem}.json").read_bytes())
    hub = _plan(capsys, "nvidia/Llama-3.1-70B-Instruct-FP8", *BUDGET, "--engine", "native")
    local = _plan(capsys, str(model), *BUDGET, "--engine", "native")
    _same_plan(hub, local)
    assert hub["source"]["revision"] == FP8
    assert hub["kv_cache_dtype"] == local["kv_cache_dtype"]


def test_no_hf_quant_config_is_remembered(online: Online, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _plan(capsys, "Qwen/Qwen3-0.6B", *BUDGET)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = _plan(capsys, "Qwen/Qwen3-0.6B", *BUDGET)
    assert not any("hf_quant_config" in w for w in data["warnings"])


def test_gated(online: Online, capsys: pytest.CaptureFixture[str],
               monkeypatch: pytest.MonkeyPatch) -> None:
    line = _fails(capsys, "plan", "meta-llama/Meta-Llama-3.1-405B", *BUDGET)
    assert "meta-llama/Meta-Llama-3.1-405B" in line and "gated" in line
    assert "HF_TOKEN" in line and "hf auth login" in line
    monkeypatch.setenv("HF_TOKEN", "hf_wrongtoken")
    line = _fails(capsys, "plan", "meta-llama/Meta-Llama-3.1-405B", *BUDGET)
    assert "no access" in line
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    data = _plan(capsys, "meta-llama/Meta-Llama-3.1-405B", *BUDGET)
    assert data["source"]["kind"] == "hub"


def test_missing_model_suggests_the_catalog(online: Online,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(capsys, "inspect", "meta-llama/Meta-Llama-3.1-8C")  # a near miss
    assert "meta-llama/Meta-Llama-3.1-8C: no such model" in line
    assert "did you mean meta-llama/Meta-Llama-3.1-8B" in line
    assert "kvledger models" in line


def test_missing_revision(online: Online, capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(capsys, "plan", "Qwen/Qwen3-0.6B", "--revision", "v9", *BUDGET)
    assert "no revision 'v9'" in line and "--revision" in line


def test_server_down(online: Online, capsys: pytest.CaptureFixture[str],
                     monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    start = time.monotonic()
    line = _fails(capsys, "fit", "Qwen/Qwen3-0.6B", "--gpu", "H100-80GB", "--concurrency",
                  "1", "--context", "1024")
    assert time.monotonic() - start < 10  # no retry loop
    assert "cannot be reached" in line and "--offline" in line
    assert "config.json" in line and "models--org--name" in line
    # A catalog id never asks the Hub, so the README's first command works here too.
    assert _run(capsys, "plan", "meta-llama/Meta-Llama-3.1-8B", *BUDGET, "--json")[0] == 0


def test_cached_config_with_the_hub_gone_estimates_weights(
        online: Online, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The config is cached, the headers were never read and the Hub is gone: the plan goes
    ahead from the cache, the weights estimated and saying why — not an error, not 'exact'."""
    _plan(capsys, "Qwen/Qwen3-0.6B", *BUDGET)  # caches the config, reads no header
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    data = _plan(capsys, "Qwen/Qwen3-0.6B", *GPU)
    assert data["source"]["kind"] == "hf-cache"
    assert _weights_line(data)["basis"] == "estimated"
    assert any("could not be read" in w for w in data["warnings"])


def test_catalog_id_with_revision_reads_the_hub(
        online: Online, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    line = _fails(capsys, "plan", "meta-llama/Meta-Llama-3.1-8B", "--revision", "main",
                  *BUDGET)
    assert "no such model" in line  # our loopback Hub does not hold it
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    line = _fails(capsys, "plan", "meta-llama/Meta-Llama-3.1-8B", "--revision", "main",
                  *BUDGET)
    assert "drop --revision" in line


def test_malformed_remote_header_is_refused(online: Online,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(capsys, "plan", "broken/header", *GPU)
    assert "broken/header@" in line and "model.safetensors" in line and "'Q7'" in line
    # With the budget given the weights are not needed, and the plan goes ahead.
    assert _run(capsys, "plan", "broken/header", *BUDGET, "--json")[0] == 0


def test_truncated_remote_file_is_refused(online: Online,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    # BF16 [1024, 1024] = 1,048,576 × 2 B = 2,097,152 B of data claimed; the file has 4,096.
    line = _fails(capsys, "plan", "broken/truncated", *GPU)
    assert "broken/truncated@" in line and "2,097,152" in line and "4,096" in line


def test_console_script_end_to_end(online: Online, tmp_path: Path) -> None:
    """A real process: the environment is read at start-up, as a user's shell sets it."""
    import shutil
    import subprocess
    import sys

    script = shutil.which("kvledger", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("console script not installed (pip install -e .)")
    env = dict(os.environ)
    args = [script, "plan", "Qwen/Qwen3-30B-A3B", *GPU, "--json"]
    first = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    assert first.stderr == ""  # no progress bars, no retries, no warnings
    env["HF_HUB_OFFLINE"] = "1"
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    second = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 0, second.stderr
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    _same_plan(a, b)
    assert _weights_line(b)["bytes"] == SHARDED_SERVED

"""``kvledger fit … -- vllm serve … --kv-transfer-config …``: the serve line fit prints keeps
the connector (and ``--kv-offloading-size``, ``--enable-extensible-kv-cache``) it planned
with, so pasting it back plans the same pool (``cli/serve/emit.py``). SGLang's HiCache flags
likewise. Engine: the default, vLLM 0.34.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from kvledger.cli.main import main

L70 = "meta-llama/Llama-3.1-70B-Instruct"
NIXL = '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}'
ASK = ["fit", "--gpu", "H100-80GB", "--offline", "--concurrency", "20", "--context", "32768",
       "--json", "--"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


def test_fit_keeps_the_kv_transfer_config(capsys: pytest.CaptureFixture[str]) -> None:
    fit = run(capsys, *ASK, "vllm", "serve", L70, "--max-model-len", "32768",
              "--kv-transfer-config", NIXL)
    argv = fit["serve_line_argv"]
    at = argv.index("--kv-transfer-config")
    assert json.loads(argv[at + 1]) == json.loads(NIXL)
    # The line pasted back plans the pool fit chose (NIXL: 0.34's 0.92 budget).
    again = run(capsys, "plan", "--gpu", "H100-80GB", "--offline", "--json", "--", *argv)
    assert again["num_blocks"] == fit["plan"]["num_blocks"]
    assert again["kv_transfer"]["connector"] == "NixlConnector"


def test_fit_keeps_the_cpu_tier_and_the_extensible_switch(
        capsys: pytest.CaptureFixture[str]) -> None:
    fit = run(capsys, *ASK, "vllm", "serve", L70, "--max-model-len", "32768",
              "--kv-offloading-size", "64", "--enable-extensible-kv-cache")
    line = shlex.split(fit["serve_line"])
    assert line[line.index("--kv-offloading-size") + 1] == "64"
    assert "--enable-extensible-kv-cache" in line


def test_fit_keeps_sglang_hicache(capsys: pytest.CaptureFixture[str]) -> None:
    fit = run(capsys, *ASK, "python", "-m", "sglang.launch_server", "--model-path", L70,
              "--context-length", "32768", "--enable-hierarchical-cache", "--hicache-ratio", "2")
    line = fit["serve_line_argv"]
    assert "--enable-hierarchical-cache" in line
    assert line[line.index("--hicache-ratio") + 1] == "2"

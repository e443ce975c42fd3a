"""SGLang lines with ``--ep`` dividing ``--tp`` or ``--attention-backend triton`` plan the same
pool as without them (engine="sglang==0.5.23"): ``moe_tp_size = tp // ep``
(runtime_context.py) keeps 1/tp of the expert bytes per GPU, and triton forces no page size
(overrides.py ``_page_size_constraints``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main


def plan(capsys: pytest.CaptureFixture[str], *line: str) -> dict[str, Any]:
    code = main(["plan", "--gpu", "H200", "--offline", "--json", "--", *line])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def budget(data: dict[str, Any], key: str) -> int:
    return int(next(row["bytes"] for row in data["budget"] if row["key"] == key))


def test_ep_dividing_tp_keeps_the_weights_per_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    line = ("python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-30B-A3B-FP8",
            "--tp", "4", "--context-length", "32768")
    plain = plan(capsys, *line)
    ep = plan(capsys, *line, "--ep", "2")
    assert budget(ep, "weights") == budget(plain, "weights")
    assert ep["kv_cache_tokens"] == plain["kv_cache_tokens"]


def test_ep_not_dividing_tp_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--gpu", "H200", "--offline", "--", "python3", "-m",
                 "sglang.launch_server", "--model-path", "Qwen/Qwen3-30B-A3B-FP8", "--tp", "4",
                 "--ep", "3"])
    _, err = capsys.readouterr()
    assert code == 2 and "--ep" in err


@pytest.mark.parametrize("backend", ["triton", "flashinfer"])
def test_page_one_backend_plans_the_default_pool(capsys: pytest.CaptureFixture[str],
                                                 backend: str) -> None:
    line = ("sglang", "serve", "--model-path", "Qwen/Qwen3.5-397B-A17B", "--tp", "8",
            "--mem-fraction-static", "0.8")
    plain = plan(capsys, *line)
    data = plan(capsys, *line, "--attention-backend", backend)
    assert data["block_size"] == 1
    assert data["kv_cache_tokens"] == plain["kv_cache_tokens"]


def test_page_forcing_backend_stays_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # trtllm_mha moves the page to 64 unless given 16/32/64/128: not planned from the flag.
    code = main(["plan", "--gpu", "H200", "--offline", "--", "sglang", "serve",
                 "--model-path", "Qwen/Qwen3-30B-A3B-FP8", "--attention-backend", "trtllm_mha"])
    _, err = capsys.readouterr()
    assert code == 2 and "--attention-backend" in err

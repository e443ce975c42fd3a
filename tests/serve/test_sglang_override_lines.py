"""The cookbook lines SGLang 0.5.23's per-architecture overrides decide off Hopper, planned through
``kvledger plan --gpu ... -- <line>`` (``--engine sglang==0.5.23``): gpt-oss on B200 and
Qwen3.5 on MI300X with ``--attention-backend triton`` (the flag now carried into the plan).
Both were refused by name before ("SGLang's model override for this architecture sets its own
attention backend / page size there"). The oracle tool cannot emulate SM100 / ROCm backend
selection (tests/plan/engines/sglang/test_blackwell_rocm_model_overrides.py says why); the
numbers are worked by hand there."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main


def plan(capsys: pytest.CaptureFixture[str], gpu: str, *line: str,
         budget: tuple[str, ...] = ()) -> dict[str, Any]:
    code = main(["plan", "--gpu", gpu, "--offline", "--json", "--engine", "sglang==0.5.23",
                 *budget, "--", *line])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_gpt_oss_cookbook_line_on_b200(capsys: pytest.CaptureFixture[str]) -> None:
    # _gpt_oss_overrides → trtllm_mha → page 64; 10 GiB / 8,294.4 B = 1,294,538 → 20,227
    # pages of 64 = 1,294,528 tokens (worked in test_blackwell_rocm_model_overrides.py).
    data = plan(capsys, "B200", "python", "-m", "sglang.launch_server", "--model",
                "openai/gpt-oss-120b", "--tp", "8",
                budget=("--kv-cache-memory-bytes", str(10 << 30)))
    assert data["sglang_resolved"]["attention_backend"] == "trtllm_mha"
    assert (data["block_size"], data["kv_cache_tokens"]) == (64, 1_294_528)


def test_qwen35_triton_line_on_mi300x(capsys: pytest.CaptureFixture[str]) -> None:
    # The given triton wins over aiter: page 1, and --mem-fraction-static 0.8 is not scaled
    # by aiter's 0.85 (without the flag: 0.68).
    line = ("python", "-m", "sglang.launch_server", "--model", "Qwen/Qwen3.5-397B-A17B",
            "--tp", "8", "--mem-fraction-static", "0.8")
    given = plan(capsys, "MI300X", *line, "--attention-backend", "triton")
    resolved = given["sglang_resolved"]
    assert (resolved["attention_backend"], given["block_size"]) == ("triton", 1)
    assert resolved["mem_fraction_static"] == pytest.approx(0.8)
    default = plan(capsys, "MI300X", *line)
    assert default["sglang_resolved"]["mem_fraction_static"] == \
        pytest.approx(0.68)

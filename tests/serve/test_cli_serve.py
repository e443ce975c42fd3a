"""``kvledger plan [options] -- SERVE LINE`` end to end, on bundled real configs.

Hand-worked numbers (Meta-Llama-3.1-8B config: 32 layers, 8 KV heads, head_dim 128):
at TP 4 each GPU holds 8 / 4 = 2 KV heads; fp8 KV is 1 byte, so one token costs
32 × 2 (K and V) × 2 × 128 × 1 = 16,384 B per GPU and a 16-token block 262,144 B.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main

LLAMA = "meta-llama/Meta-Llama-3.1-8B"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def plan_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, "plan", "--json", *argv)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_issue_serve_line_plans_that_deployment(capsys: pytest.CaptureFixture[str]) -> None:
    data = plan_json(capsys, "--engine", "vllm==0.33", "--", "vllm", "serve", LLAMA,
                     "--tensor-parallel-size", "4",
                     "--max-model-len", "32k", "--kv-cache-memory-bytes", "10G",
                     "--kv-cache-dtype", "fp8", "--port", "8000")
    assert data["engine"] == "vllm"
    assert data["max_model_len"] == 32000           # 32k = 32 × 1000 in vLLM
    assert data["available_bytes"] == 10 << 30      # 10G = 10 GiB in vLLM
    assert data["num_blocks"] == (10 << 30) // 262_144 == 40_960
    assert data["kv_cache_tokens"] == 40_960 * 16 == 655_360
    assert data["max_concurrency"] == pytest.approx(655_360 / 32_000)  # 20.48
    assert data["serve_line"]["ignored"] == {"inert": ["--port"]}


def test_serve_line_equals_the_same_plan_typed_as_flags(
        capsys: pytest.CaptureFixture[str]) -> None:
    """On a GPU budget: the line, plus vLLM's own batch defaults (1024 sequences / 8192
    batched tokens on an H100), is the plan typed flag by flag."""
    line = plan_json(capsys, "--gpu", "NVIDIA H100 80GB HBM3", "--", "vllm", "serve", LLAMA,
                     "--max-model-len", "16k", "--gpu-memory-utilization", "0.9")
    typed = plan_json(capsys, LLAMA, "--engine", "vllm", "--gpu", "H100-80GB",
                      "--max-model-len", "16000", "--gpu-memory-utilization", "0.9",
                      "--max-num-seqs", "1024", "--max-num-batched-tokens", "8192")
    line.pop("serve_line")
    assert line == typed
    assert line["num_blocks"] > 0


def test_unstated_utilization_is_the_engine_default_not_given(
        capsys: pytest.CaptureFixture[str]) -> None:
    # vLLM 0.33's default 0.92, as 0.32's (config/cache.py): int(81,559 MiB × 0.92) of the
    # H100 preset,
    # labelled as the default, with the GPU total's basis rather than "given".
    data = plan_json(capsys, "--engine", "vllm==0.33", "--gpu", "H100-80GB", "--", "vllm",
                     "serve", LLAMA)
    [line] = [b for b in data["budget"] if b["key"] == "utilization"]
    assert line["bytes"] == int(81_559 * 2**20 * 0.92)
    assert "vLLM 0.33's default; not given" in line["label"]
    assert line["basis"] != "given"
    assert "--gpu-memory-utilization" not in data["serve_line"]["engine_defaults"]
    # Stated on the line, it is given.
    data = plan_json(capsys, "--gpu", "H100-80GB", "--", "vllm", "serve", LLAMA,
                     "--gpu-memory-utilization", "0.92")
    [line] = [b for b in data["budget"] if b["key"] == "utilization"]
    assert line["basis"] == "given" and "not given" not in line["label"]


def test_one_quoted_string(capsys: pytest.CaptureFixture[str]) -> None:
    data = plan_json(capsys, "--kv-cache-memory-bytes", "8GiB", "--",
                     f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve {LLAMA} -tp 2 "
                     "--max_model_len=8K --api-key secret")
    assert data["max_model_len"] == 8192
    assert data["serve_line"]["env"] == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
    assert "secret" not in json.dumps(data)


def test_human_output_lists_what_was_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "--", "vllm", "serve", LLAMA, "--kv-cache-memory-bytes",
                       "8G", "--port", "8000", "--max-cudagraph-capture-size", "64")
    assert code == 0
    assert "note: ignored (cannot change memory): --port" in err
    assert "--max-cudagraph-capture-size" in err


@pytest.mark.parametrize(("line", "named"), [
    (["--offload-group-size", "4"], "--offload-group-size"),
    (["--kv-transfer-config", '{"kv_connector": "NixlConnector"}'], "--kv-transfer-config"),
    (["--hf-overrides", '{"num_hidden_layers": 2}'], "--hf-overrides"),
    (["--max-model-len", "auto"], "auto"),
    (["--bogus-flag", "1"], "not a vllm 0.33 flag"),
    (["--dtype", "float32"], "--dtype float32"),
    (["--quantization", "mxfp8"], "--quantization mxfp8"),
])
def test_memory_changing_or_unknown_flags_refused_by_name(
        capsys: pytest.CaptureFixture[str], line: list[str], named: str) -> None:
    code, out, err = run(capsys, "plan", "--engine", "vllm==0.33", "--gpu", "H100", "--",
                         "vllm", "serve", LLAMA, *line)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and named in err
    assert "Traceback" not in err and "unexpected" not in err


def test_same_width_dtype_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    data = plan_json(capsys, "--", "vllm", "serve", LLAMA, "--dtype", "half",
                     "--kv-cache-memory-bytes", "8G")
    assert any("same bytes" in note for note in data["serve_line"]["notes"])


def test_option_given_twice_with_different_values(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "--max-model-len", "4096", "--kv-cache-memory-bytes",
                       "8G", "--", "vllm", "serve", LLAMA, "--max-model-len", "8192")
    assert code == 2 and "--max-model-len" in err and "given twice" in err
    data = plan_json(capsys, "--max-model-len", "8192", "--kv-cache-memory-bytes", "8G",
                     "--", "vllm", "serve", LLAMA, "--max-model-len", "8192")
    assert data["max_model_len"] == 8192


def test_user_options_override_engine_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    data = plan_json(capsys, "--gpu", "H100", "--gpu-memory-utilization", "0.5", "--",
                     "vllm", "serve", LLAMA, "--max-model-len", "8192")
    assert "--gpu-memory-utilization" not in data["serve_line"]["engine_defaults"]
    assert data["serve_line"]["engine_defaults"]["--max-num-seqs"] == "1024"


def test_nothing_after_the_separator(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "--")
    assert code == 2 and "nothing after" in err


def test_sglang_line(capsys: pytest.CaptureFixture[str]) -> None:
    """Refused with one line while kvledger has no SGLang layout; planned once it has."""
    from kvledger.plan.engines.registry import engine_names

    engines = engine_names()
    code, out, err = run(capsys, "plan", "--kv-cache-memory-bytes", "8G", "--json", "--",
                         "python", "-m", "sglang.launch_server", "--model-path", LLAMA, "--tp",
                         "2")
    if "sglang" in (engines or ()):
        assert code == 0, err
        assert json.loads(out)["engine"] == "sglang"
    else:
        assert code == 2
        assert err.count("\n") == 1 and "SGLang layout is not available" in err

"""Every vLLM 0.32 oracle case, through the command line, must match exactly.

The oracle numbers were computed by vLLM's own planner (see ../shared/oracles/README.md).
Each case's ``inputs`` become CLI options with ``--engine vllm``; where the case had the
model's ``hf_quant_config.json`` beside ``config.json``, the model is passed as a directory
holding both, otherwise the config file alone (never the catalog id: the catalog attaches a
companion quant config by itself, which would change cases that ran without it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from oracle_cases import CONFIGS, SHARED_MISSING, load_cases


def _cases() -> list[dict[str, Any]]:
    return load_cases()


def _case_id(case: dict[str, Any]) -> str:
    i = case["inputs"]
    parts = [
        case["config"].removesuffix(".json"),
        f"mem{i['kv_cache_memory_bytes'] >> 20}M",
        f"bs{i['block_size']}",
        f"len{i['max_model_len']}",
        f"{i['kv_cache_dtype']}",
        f"tp{i['tensor_parallel_size']}",
        f"seqs{i['max_num_seqs']}",
        f"mbt{i['max_num_batched_tokens']}",
    ]
    if i.get("num_speculative_tokens"):
        parts.append(f"{i['speculative_method']}{i['num_speculative_tokens']}")
    parts.append("pc" if i.get("enable_prefix_caching") else "nopc")
    if case.get("hf_quant_config"):
        parts.append("hfq")
    return "-".join(parts)


CASES = _cases()


def _argv(case: dict[str, Any], model: str) -> list[str]:
    i = case["inputs"]
    argv = [
        "plan", model, "--engine", "vllm==0.32", "--json",
        "--kv-cache-memory-bytes", str(i["kv_cache_memory_bytes"]),
        "--block-size", str(i["block_size"]),
        "--max-model-len", str(i["max_model_len"]),
        "--kv-cache-dtype", str(i["kv_cache_dtype"]),
        "--tensor-parallel-size", str(i["tensor_parallel_size"]),
        "--max-num-seqs", str(i["max_num_seqs"]),
        "--max-num-batched-tokens", str(i["max_num_batched_tokens"]),
    ]
    if i.get("num_speculative_tokens"):
        argv += [
            "--num-speculative-tokens", str(i["num_speculative_tokens"]),
            "--speculative-method", str(i["speculative_method"]),
        ]
    if i.get("enable_prefix_caching") is not None:
        argv.append(
            "--enable-prefix-caching" if i["enable_prefix_caching"] else
            "--no-enable-prefix-caching"
        )
    return argv


def _model_arg(case: dict[str, Any], tmp_path: Path) -> str:
    # A model directory holding what the oracle's vLLM saw: config.json, and its
    # hf_quant_config.json only when the case had it (a bare path would bring the companion
    # that sits beside it in ../shared/configs).
    config = CONFIGS / case["config"]
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_bytes(config.read_bytes())
    if case.get("hf_quant_config"):
        quant = CONFIGS / case["config"].replace(".json", ".hf_quant_config.json")
        (model_dir / "hf_quant_config.json").write_bytes(quant.read_bytes())
    return str(model_dir)


@pytest.mark.skipif(not CASES, reason=SHARED_MISSING)
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_oracle_case(
    case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(_argv(case, _model_arg(case, tmp_path)))
    out, err = capsys.readouterr()
    assert code == 0, err
    got = json.loads(out)
    want = case["expected"]
    assert got["block_size"] == want["block_size"]
    assert got["num_blocks"] == want["num_blocks"]
    assert got["kv_cache_tokens"] == want["kv_cache_tokens"]
    assert round(got["max_concurrency"], 2) == round(want["max_concurrency"], 2)
    assert got["vllm_refuses_to_start"] is want["vllm_refuses_to_start"]
    assert got["max_model_len"] == case["inputs"]["max_model_len"]
    assert got["engine"] == "vllm"

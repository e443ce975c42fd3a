"""``kvledger plan/fit --engine sglang``: the machine interface and SGLang's flag names.

Expected numbers are SGLang's own: Llama-3.1-8B with a 10 GiB pool is 81,920 tokens at
131,072 B/token and the line below (../shared/oracles/sglang-tool/README.md, and oracle case
``llama31-8b-10g`` in tests/oracles/sglang-0.5.23/cases.jsonl).
"""

from __future__ import annotations

import json

import pytest

from kvledger.cli.main import main

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
TEN_GIB = ["--kv-cache-memory-bytes", "10737418240"]
SGLANG_LINE = ("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 81920, K size: 5.00 GB, "
               "V size: 5.00 GB")


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["plan", *argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert isinstance(out, dict)
    return out


def test_plan_json_has_sglangs_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, LLAMA, "--engine", "sglang", *TEN_GIB, "--page-size", "1")
    assert out["engine"] == "sglang"
    assert out["kv_cache_tokens"] == 81920
    assert out["max_running_requests"] == 2048
    assert out["sglang_log_line"] == SGLANG_LINE


def test_sglang_flag_names(capsys: pytest.CaptureFixture[str]) -> None:
    # --context-length 8192 on a 40 GiB pool: 327,680 tokens; SGLang's request estimate
    # int(327680 / 8192 × 512) = 20480 is clamped to 4096 (resolve_max_num_reqs).
    out = _json(capsys, LLAMA, "--engine", "sglang", "--kv-cache-memory-bytes",
                str(40 << 30), "--context-length", "8192", "--page-size", "1")
    assert (out["kv_cache_tokens"], out["max_running_requests"]) == (327680, 4096)
    out = _json(capsys, LLAMA, "--engine", "sglang", *TEN_GIB, "--max-running-requests", "64",
                "--max-total-tokens", "50001", "--page-size", "16")
    # 50001 tokens rounded down to 16-token pages: 50000.
    assert (out["kv_cache_tokens"], out["max_running_requests"]) == (50000, 64)


def test_sglang_flags_need_engine_sglang(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", LLAMA, *TEN_GIB, "--engine", "vllm", "--mem-fraction-static",
                 "0.8"]) == 2
    err = capsys.readouterr().err
    assert "--mem-fraction-static" in err and "--engine sglang" in err


def test_unreproduced_rule_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", LLAMA, *TEN_GIB, "--engine", "sglang", "--kv-cache-dtype",
                 "nvfp4"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "NVFP4" in err


def test_concurrency_and_fit_work_for_sglang(capsys: pytest.CaptureFixture[str]) -> None:
    # 81,920 tokens hold 4 requests of 20,480 tokens and not of 20,481.
    out = _json(capsys, LLAMA, "--engine", "sglang", *TEN_GIB, "--page-size", "1",
                "--concurrency", "4")
    answers = out["answers"]
    assert isinstance(answers, dict)
    assert answers["max_context_at_concurrency"] == 20480
    assert main(["fit", LLAMA, "--engine", "sglang", "--gpu", "H100-80GB", "--concurrency",
                 "8", "--context", "32768", "--json"]) == 0
    fit = json.loads(capsys.readouterr().out)
    assert fit["engine"] == "sglang" and fit["fits"] is True

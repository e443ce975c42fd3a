"""``-dcp N`` / ``--decode-context-parallel-size N`` in a pasted ``vllm serve`` line reaches the
same launch field as ``plan --dcp N`` (``VllmLaunch.decode_context_parallel_size``;
``cli/serve/vllm_launch_map.py``), and plans what vLLM allocates (``plan/engines/vllm/dcp.py``;
the arithmetic is worked in ``tests/plan/engines/vllm/test_decode_context_parallel.py``).

The CPU oracle cannot check these lines: vLLM's CPU model runner refuses decode context
parallelism (config/vllm.py), so the numbers are worked from the 0.33 / 0.34 source by hand.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.cli.serve.translate import translate
from kvledger.cli.serve.translation import Context

DSV32 = "deepseek-ai/DeepSeek-V3.2"
CTX = Context(kv_cache_dtypes=("auto", "bfloat16", "fp8"))
BUDGET = ["--kv-cache-memory-bytes", str(10 << 30), "--max-model-len", "32768"]


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(["plan", "--json", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_recipe_line_dcp_8_maps_to_the_plan_option() -> None:
    out = translate(["vllm", "serve", DSV32, "-tp", "8", "-dcp", "8"], CTX)
    assert out.options["--decode-context-parallel-size"] == "8"
    assert out.options["--tensor-parallel-size"] == "8"
    long = translate(["vllm", "serve", DSV32, "-tp", "8", "--decode-context-parallel-size=8",
                      "--cp-kv-cache-interleave-size", "64"], CTX)
    assert long.options["--decode-context-parallel-size"] == "8"
    assert long.options["--cp-kv-cache-interleave-size"] == "64"


def test_pasted_line_and_plan_option_agree_vllm_034(
        capsys: pytest.CaptureFixture[str]) -> None:
    """vllm==0.34, DeepSeek-V3.2 -tp 8 -dcp 8, 10 GiB, 32,768 tokens: 78,324 B a token, block
    64, 2,142 blocks; a request cdiv(32,768, 8) / 64 = 64 blocks; 2,142 / 64 × 32,768 =
    1,096,704 tokens (33.46875 requests)."""
    pasted = _json(capsys, "--engine", "vllm==0.34", "--", "vllm", "serve", DSV32, "-tp", "8",
                   "-dcp", "8", *BUDGET)
    typed = _json(capsys, DSV32, "--engine", "vllm==0.34", "-tp", "8", "--dcp", "8", *BUDGET)
    for data in (pasted, typed):
        assert data["engine_release"] == "0.34.0"
        assert data["num_blocks"] == 2_142
        assert data["kv_cache_tokens"] == 1_096_704
        assert data["max_concurrency"] == 33.46875
        assert data["decode_context_parallel_size"] == 8
    argv = pasted["serve_line"]["kvledger_argv"]
    assert argv[argv.index("--decode-context-parallel-size") + 1] == "8"


def test_pasted_line_vllm_033(capsys: pytest.CaptureFixture[str]) -> None:
    """vllm==0.33, Qwen3-8B -tp 16 -dcp 2, 4 GiB, 32,768 tokens: 18,432 B a token a rank,
    block 16, 14,563 blocks; a request 16,384 / 16 = 1,024 blocks; 14,563 × 32 = 466,016."""
    data = _json(capsys, "--engine", "vllm==0.33", "--", "vllm", "serve", "Qwen/Qwen3-8B",
                 "-tp", "16", "-dcp", "2", "--kv-cache-memory-bytes", str(4 << 30),
                 "--max-model-len", "32768")
    assert (data["num_blocks"], data["kv_cache_tokens"]) == (14_563, 466_016)


def test_pasted_line_vllm_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    """``kvledger plan --gpu H200 -- vllm serve Qwen/Qwen3-8B -dcp 2 -tp 2``: vLLM's own
    words (config/model.py ModelConfig.verify_with_parallel_config), exit 2."""
    code = main(["plan", "--engine", "vllm==0.34", "--gpu", "H200", "--", "vllm", "serve",
                 "Qwen/Qwen3-8B", "-dcp", "2", "-tp", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert "vLLM 0.34 refuses to start: Decode context parallelism for GQA/MQA requires " \
           "`--tensor-parallel-size` (2) to be greater than the model's total number of KV " \
           "heads (8)." in err
    assert "does not model" not in err


def test_prefill_context_parallelism_stays_refused() -> None:
    from kvledger.cli.serve.errors import ServeLineError

    with pytest.raises(ServeLineError, match="prefill-context-parallel-size"):
        translate(["vllm", "serve", DSV32, "-tp", "8", "--prefill-context-parallel-size", "2"],
                  CTX)


def test_dcp_interleave_flag_is_ignored_by_name() -> None:
    """config/vllm.py adjust_dcp_kv_cache_interleave_size reads it only with a NIXL P/D
    connector: it places tokens, sizes nothing."""
    out = translate(["vllm", "serve", DSV32, "-tp", "8", "-dcp", "8",
                     "--dcp-kv-cache-interleave-size", "64"], CTX)
    assert out.ignored == {"inert": ["--dcp-kv-cache-interleave-size"]}

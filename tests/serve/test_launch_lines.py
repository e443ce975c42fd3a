"""The launch lines of issue 22 that were refused, pasted after ``plan --gpu H100-80GB --``:
each plans (the numbers worked by hand in tests/plan/engines/vllm/test_launch.py) or is refused
for a stated reason; the same flags before ``--`` are kvledger's own, and give the same plan."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
GPU = ["--gpu", "H100-80GB", "--max-model-len", "8192"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def planned(capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, Any]:
    code, out, err = run(capsys, "plan", "--gpu", "H100-80GB", "--json", "--", "vllm", "serve",
                         LLAMA, "--max-model-len", "8192", *flags)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def budget(data: dict[str, Any], key: str) -> int:
    rows = [row for row in data["budget"] if row["key"] == key]
    assert len(rows) == 1, key
    return int(rows[0]["bytes"])


def test_lora_line_plans_with_a_lora_budget_line(capsys: pytest.CaptureFixture[str]) -> None:
    plain = planned(capsys)
    data = planned(capsys, "--enable-lora", "--max-loras", "4", "--max-lora-rank", "64")
    # 738,852,864 elements × 2 B (tests/plan/engines/vllm/test_launch.py LLAMA_L4_R64).
    assert budget(data, "lora") == 1_477_705_728
    assert budget(data, "kv_budget") == budget(plain, "kv_budget") - 1_477_705_728
    assert data["serve_line"]["kvledger_argv"][-5:] == [
        "--enable-lora", "--max-loras", "4", "--max-lora-rank", "64"]


def test_online_fp8_line_plans_smaller_weights(capsys: pytest.CaptureFixture[str]) -> None:
    data = planned(capsys, "--quantization", "fp8")
    # 2,101,878,784 B kept in bf16 + 6,979,321,856 linear weights at 1 B.
    assert budget(data, "weights") == 9_081_200_640
    assert any("quantizes its linear layers" in n for n in data["serve_line"]["notes"])


def test_offload_lines_plan(capsys: pytest.CaptureFixture[str]) -> None:
    plain = planned(capsys)
    off = planned(capsys, "--cpu-offload-gb", "10")
    assert budget(off, "cpu_offload") == 10_788_143_104  # 24 layers + qkv, o, gate_up
    assert budget(off, "weights") == budget(plain, "weights") - 10_788_143_104
    # vLLM 0.33, whose OffloadingConnector kvledger read (releases/v0_33.py).
    code, out, err = run(capsys, "plan", "--engine", "vllm==0.33", "--gpu", "H100-80GB",
                         "--json", "--", "vllm", "serve", LLAMA, "--max-model-len", "8192",
                         "--kv-offloading-size", "64")
    assert code == 0, err
    tier = json.loads(out)
    assert tier["kv_offload"]["cpu_tokens"] == 524_288  # 64 GiB / 2 MiB blocks × 16
    assert tier["kv_offload"]["chunk_bytes"] == 16 * 131_072  # one 16-token block, 32 layers
    # vLLM 0.34 sizes the tier as 0.33 (releases/v0_34.py) on its 64-token block: a chunk
    # is 64 × 131,072 B = 8,388,608 B; 64 GiB holds 8,192 chunks × 64 = 524,288 tokens.
    code, out, err = run(capsys, "plan", "--gpu", "H100-80GB", "--json", "--", "vllm",
                         "serve", LLAMA, "--max-model-len", "8192", "--kv-offloading-size", "64")
    assert code == 0, err
    tier = json.loads(out)["kv_offload"]
    assert (tier["chunk_bytes"], tier["chunks"], tier["cpu_tokens"]) == \
        (8_388_608, 8_192, 524_288)


def test_flags_before_the_line_are_the_same_plan(capsys: pytest.CaptureFixture[str]) -> None:
    line = planned(capsys, "--enable-lora", "--max-loras", "2", "--cpu-offload-gb", "4")
    code, out, err = run(capsys, "plan", LLAMA, *GPU, "--json", "--enable-lora",
                         "--max-loras", "2", "--cpu-offload-gb", "4",
                         "--max-num-seqs", "1024")  # the line's vLLM default on an H100
    assert code == 0, err
    own = json.loads(out)
    for key in ("lora", "cpu_offload", "weights", "kv_budget"):
        assert budget(own, key) == budget(line, key), key


def test_removed_log_flag_is_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    # Read as vLLM 0.32 reads the line (0.12 dropped the flag; 0.33 takes it again as
    # --enable-log-requests' negative twin: test_removed_flags.py).
    code, out, err = run(capsys, "plan", "--gpu", "H100-80GB", "--json", "--engine",
                         "vllm==0.32", "--", "vllm", "serve", LLAMA, "--max-model-len", "8192",
                         "--disable-log-requests", "--enable-lora")
    assert code == 0, err
    data = json.loads(out)
    assert any("--disable-log-requests" in n and "0.12.0 removed it" in n
               for n in data["serve_line"]["notes"])
    assert budget(data, "lora") > 0


@pytest.mark.parametrize(("flags", "why"), [
    (["--quantization", "mxfp8"], "--quantization mxfp8 on an unquantized checkpoint"),
    (["--enable-lora", "--lora-target-modules", "o_proj"], "--lora-target-modules"),
    (["--kv-offloading-size", "8", "--kv-offloading-backend", "lmcache"], "LMCache"),
    (["--offload-group-size", "4"], "--offload-group-size"),
    (["--enable-lora", "--max-lora-rank", "48"], "--max-lora-rank: invalid choice"),
    (["--enable-lora", "--enable-expert-parallel"], "experts' LoRA stacks is not modelled"),
])
def test_launch_lines_refused_for_a_stated_reason(capsys: pytest.CaptureFixture[str],
                                                  flags: list[str], why: str) -> None:
    code, out, err = run(capsys, "plan", "--gpu", "H100-80GB", "--", "vllm", "serve", LLAMA,
                         *flags)
    assert code == 2 and out == ""
    assert why in err and err.count("\n") <= 2 and "Traceback" not in err


def test_vllm_launch_flags_need_the_vllm_engine(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(capsys, "plan", LLAMA, *GPU, "--engine", "sglang", "--enable-lora")
    assert code == 2 and "--enable-lora apply to --engine vllm only" in err

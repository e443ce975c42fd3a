"""The launch people use is the default: ``plan --gpu`` takes ``vllm serve``'s batch defaults.

The tiers are vLLM's ``EngineArgs.get_batch_defaults`` (``vllm/engine/arg_utils.py``, 0.28
to 0.34 alike; 0.26 and older lack the first): ≥ 160 GiB → 1024 / 16384 (both contexts);
≥ 70 GiB and not an A100 → serve 1024 / 8192, LLM class 1024 / 16384; otherwise serve
256 / 2048, LLM class 256 / 8192; then ``_set_default_max_num_seqs_and_batched_tokens_args``
(an unset max_num_seqs is min(default, max_num_batched_tokens)). Without a GPU:
SchedulerConfig's 256 / 8192.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.plan.api import plan_model
from kvledger.plan.engines.vllm.batch_defaults import vllm_tier
from kvledger.plan.request import PlanRequest
from kvledger.records import replace

GIB = 1 << 30
MIB = 1 << 20


@pytest.mark.parametrize(("context", "total", "name", "expected"), [
    # H100 80GB: NVML 81,559 MiB ≥ 70 GiB (71,680 MiB), not an A100.
    ("serve", 81559 * MIB, "H100-80GB", (1024, 8192)),
    ("llm", 81559 * MIB, "H100-80GB", (1024, 16384)),
    # A100 80GB: ≥ 70 GiB, but get_batch_defaults keeps "a100" off that tier.
    ("serve", 81920 * MIB, "A100-80GB", (256, 2048)),
    ("llm", 81920 * MIB, "A100-80GB", (256, 8192)),
    # 180 GiB (a B200's class) ≥ 160 GiB: the largest tier, even for a name with "a100".
    ("serve", 180 * GIB, "B200", (1024, 16384)),
    ("llm", 180 * GIB, "B200", (1024, 16384)),
    # 24 GiB (an L4's class): the smallest tier.
    ("serve", 24 * GIB, "L4", (256, 2048)),
    # Exactly 70 GiB is on the 70 GiB tier (>=); one byte less is not.
    ("serve", 70 * GIB, None, (1024, 8192)),
    ("serve", 70 * GIB - 1, None, (256, 2048)),
    # No GPU: SchedulerConfig's DEFAULT_MAX_NUM_SEQS / DEFAULT_MAX_NUM_BATCHED_TOKENS.
    ("serve", None, None, (256, 8192)),
    ("llm", None, None, (256, 8192)),
])
def test_tiers_are_get_batch_defaults(context: str, total: int | None, name: str | None,
                                      expected: tuple[int, int]) -> None:
    picked = vllm_tier(context, total, name)
    assert (picked.max_num_seqs, picked.max_num_batched_tokens) == expected


@pytest.mark.parametrize(("release", "expected"), [
    # vLLM 0.26.0 / 0.19.0 engine/arg_utils.py _set_default_args: the largest tier is
    # "device_memory >= 70 * GiB_bytes and 'a100' not in device_name" → serve 1024 / 8192.
    ("0.26", (1024, 8192)),
    ("0.19", (1024, 8192)),
    # vLLM 0.28.0 adds "device_memory >= 160 * GiB_bytes" → 1024 / 16384 for serve too.
    ("0.28", (1024, 16384)),
])
def test_the_160_gib_tier_is_0_28_s(release: str, expected: tuple[int, int]) -> None:
    request = PlanRequest(engine=f"vllm=={release}", gpu="B200")
    assert (request.max_num_seqs, request.max_num_batched_tokens) == expected


def test_a_request_on_a_gpu_takes_the_serve_tier_and_says_so() -> None:
    request = PlanRequest(gpu="H100-80GB")
    assert (request.max_num_seqs, request.max_num_batched_tokens) == (1024, 8192)
    assert request.batch_defaults.applied == ("max_num_batched_tokens", "max_num_seqs")
    offline = PlanRequest(gpu="H100-80GB", usage_context="llm")
    assert (offline.max_num_seqs, offline.max_num_batched_tokens) == (1024, 16384)
    # A given max_num_batched_tokens caps the defaulted max_num_seqs: min(1024, 512).
    small = PlanRequest(gpu="H100-80GB", max_num_batched_tokens=512)
    assert (small.max_num_seqs, small.batch_defaults.applied) == (512, ("max_num_seqs",))
    given = PlanRequest(gpu="H100-80GB", max_num_seqs=64, max_num_batched_tokens=4096)
    assert (given.max_num_seqs, given.max_num_batched_tokens) == (64, 4096)
    assert given.batch_defaults is None


def test_without_a_gpu_the_scheduler_defaults_are_named() -> None:
    request = PlanRequest(kv_cache_memory_bytes=10 * GIB)
    assert (request.max_num_seqs, request.max_num_batched_tokens) == (256, 8192)
    assert "no GPU named" in request.batch_defaults.basis


def test_a_replace_to_another_gpu_takes_that_gpus_tier() -> None:
    small = PlanRequest(gpu="L4")
    assert (small.max_num_seqs, small.max_num_batched_tokens) == (256, 2048)
    big = replace(small, gpu="H100-80GB")
    assert (big.max_num_seqs, big.max_num_batched_tokens) == (1024, 8192)
    # A value changed by the replace is the caller's, and stays.
    pinned = replace(small, gpu="H100-80GB", max_num_seqs=100)
    assert (pinned.max_num_seqs, pinned.max_num_batched_tokens) == (100, 8192)


def test_other_engines_keep_their_own_defaults() -> None:
    assert PlanRequest(engine="sglang", gpu="H100-80GB").max_num_batched_tokens == 8192
    assert PlanRequest(engine="atom", gpu="H100-80GB").max_num_seqs == 512
    with pytest.raises(ValueError, match="usage_context applies to engine vllm only"):
        PlanRequest(engine="sglang", gpu="H100-80GB", usage_context="llm")
    with pytest.raises(ValueError, match="usage_context must be one of"):
        PlanRequest(gpu="H100-80GB", usage_context="offline")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["plan", "--json", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _plan(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


NUMBERS = ("kv_cache_tokens", "num_blocks", "available_bytes", "reserved_bytes", "max_num_seqs",
           "max_concurrency", "budget")


@pytest.mark.parametrize(("model", "tp"), [
    ("meta-llama/Llama-3.1-8B", 1), ("google/gemma-3-27b-it", 1), ("Qwen/Qwen3-8B", 1),
    ("mistralai/Mixtral-8x7B-v0.1", 4), ("openai/gpt-oss-20b", 1),
    ("nvidia/Nemotron-H-56B-Base-8K", 2), ("Qwen/Qwen3-Next-80B-A3B-Thinking", 4),
])
@pytest.mark.parametrize("gpu", ["H100-80GB", "A100-80GB", "B200", "L40S"])
def test_plan_gpu_is_the_pasted_serve_line(model: str, tp: int, gpu: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    typed = _run([model, "--gpu", gpu, "-tp", str(tp)], capsys)
    pasted = _run(["--gpu", gpu, "--", "vllm", "serve", model, "--tensor-parallel-size",
                   str(tp)], capsys)
    assert typed[0] == pasted[0], (typed[2], pasted[2])
    if typed[0] != 0:  # the same refusal (a model too large for the GPU)
        assert typed[1:] == pasted[1:]
        return
    mine, line = json.loads(typed[1]), json.loads(pasted[1])
    assert {k: mine.get(k) for k in NUMBERS} == {k: line.get(k) for k in NUMBERS}
    assert mine["batch_defaults"]["usage_context"] == "serve"


def test_the_library_and_the_cli_agree_on_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    model = "meta-llama/Llama-3.1-8B"
    cli = _plan([model, "--engine", "vllm==0.33", "--gpu", "H100-80GB"], capsys)
    library = plan_model(model, PlanRequest(engine="vllm==0.33", gpu="H100-80GB")).to_json()
    assert cli == json.loads(json.dumps(library, default=str))
    # The serve line on an H100 at max_num_seqs 1024, vLLM 0.33's reserves (engines/vllm/
    # reserves.py): int(85,520,809,984 × 0.92) = 78,679,145,185 − weights 16,060,522,496
    # − activation max(MLP 738,197,504, sampler 1,024 × 128,256 × (2 + 12) = 1,838,678,016
    # + hidden states 8,192 × 4,096 × 2 = 67,108,864) = 1,905,786,880 − CUDA graphs
    # 536,870,912 − non-torch (268,435,456 + the Triton top-k/top-p buffer, 132 rows ×
    # 128,256 × 4 = 67,719,168) 336,154,624 = 59,839,810,273 B; / (32 × 2 × 8 × 128 × 2 × 16
    # = 2,097,152 B a block) = 28,533 blocks = 456,528 tokens.
    assert (cli["max_num_seqs"], cli["kv_cache_tokens"]) == (1024, 456528)
    assert cli["batch_defaults"]["applied"] == ["max_num_batched_tokens", "max_num_seqs"]


def test_usage_context_llm_is_the_offline_class(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(["meta-llama/Llama-3.1-8B", "--gpu", "H100-80GB", "--usage-context", "llm"],
                 capsys)
    assert data["batch_defaults"]["max_num_batched_tokens"] == 16384
    assert data["max_num_seqs"] == 1024


def test_usage_context_llm_with_a_serve_line_is_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--gpu", "H100-80GB", "--usage-context", "llm", "--", "vllm", "serve",
                 "meta-llama/Llama-3.1-8B"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "--usage-context llm" in err and len(err.strip().splitlines()) <= 2


def test_without_a_gpu_the_json_says_which_defaults(
        capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(["meta-llama/Llama-3.1-8B", "--kv-cache-memory-bytes", "10GiB"], capsys)
    assert data["batch_defaults"]["max_num_seqs"] == 256
    assert data["batch_defaults"]["max_num_batched_tokens"] == 8192
    assert "no GPU named" in data["batch_defaults"]["basis"]


def test_usage_context_with_another_engine_is_one_line_exit_2(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "meta-llama/Llama-3.1-8B", "--gpu", "H100-80GB", "--engine", "sglang",
                 "--usage-context", "llm"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip().splitlines() == [
        "error: --usage-context applies to engine vllm only, got engine 'sglang'"]

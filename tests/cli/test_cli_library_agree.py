"""``kvledger plan X ... --json`` is ``plan_model(X, PlanRequest(...)).to_json()``, option for
option: the CLI builds the request a library user builds, with the same defaults, and the two
agree on refusals too (the same message, one line and exit 2 on the CLI).

A grid over engine × KV dtype × block size × TP × max_num_seqs × max_num_batched_tokens ×
prefix caching × speculative decoding: a fixed sample of the whole product (seeded, so a
failure names a case that reruns), plus the case that used to split them — a small
``max_num_batched_tokens`` with ``max_num_seqs`` not given, which vLLM starts with
``max_num_seqs = min(256, max_num_batched_tokens)`` (EngineArgs.
_set_default_max_num_seqs_and_batched_tokens_args) and the library refused.
"""

from __future__ import annotations

import io
import itertools
import json
import random
from typing import Any

import pytest

from kvledger.cli.errors import report
from kvledger.cli.main import main
from kvledger.plan.api import plan_model
from kvledger.plan.request import PlanRequest

BUDGET = 10 * 2**30
MODELS = ("meta-llama/Meta-Llama-3.1-8B", "Qwen/Qwen3-Next-80B-A3B-Thinking")
AXES: dict[str, tuple[Any, ...]] = {
    "model": MODELS,
    "engine": ("vllm", "native", "sglang"),
    "kv_cache_dtype": ("auto", "fp8", "bfloat16"),
    "block_size": (None, 16, 64),
    "tensor_parallel_size": (1, 2),
    "max_num_seqs": (None, 64, 512),
    "max_num_batched_tokens": (None, 128, 4096),
    "enable_prefix_caching": (None, True, False),
    "speculative": (None, ("ngram", 2), ("mtp", 1)),
}
GRID = random.Random(20261201).sample(list(itertools.product(*AXES.values())), 40)
CASES = [dict(zip(AXES, case, strict=True)) for case in GRID] + [
    {"model": MODELS[0], "engine": "vllm", "kv_cache_dtype": "auto", "block_size": None,
     "tensor_parallel_size": 1, "max_num_seqs": None, "max_num_batched_tokens": 128,
     "enable_prefix_caching": None, "speculative": None},
]


def _argv(case: dict[str, Any]) -> list[str]:
    argv = ["plan", case["model"], "--kv-cache-memory-bytes", str(BUDGET), "--json",
            "--engine", case["engine"], "--kv-cache-dtype", case["kv_cache_dtype"],
            "--tensor-parallel-size", str(case["tensor_parallel_size"])]
    for name in ("block_size", "max_num_seqs", "max_num_batched_tokens"):
        if case[name] is not None:
            argv += ["--" + name.replace("_", "-"), str(case[name])]
    if case["enable_prefix_caching"] is not None:
        argv.append("--enable-prefix-caching" if case["enable_prefix_caching"]
                    else "--no-enable-prefix-caching")
    if case["speculative"] is not None:
        method, tokens = case["speculative"]
        argv += ["--speculative-method", method, "--num-speculative-tokens", str(tokens)]
    return argv


def _request(case: dict[str, Any]) -> PlanRequest:
    given = {name: case[name] for name in ("engine", "kv_cache_dtype", "block_size",
                                           "tensor_parallel_size", "max_num_seqs",
                                           "max_num_batched_tokens", "enable_prefix_caching")
             if case[name] is not None}
    if case["speculative"] is not None:
        given["speculative_method"], given["num_speculative_tokens"] = case["speculative"]
    return PlanRequest(kv_cache_memory_bytes=BUDGET, **given)


@pytest.mark.parametrize("case", CASES, ids=lambda c: " ".join(_argv(c)[1:]))
def test_cli_json_is_the_library_result(
    case: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(_argv(case))
    out, err = capsys.readouterr()
    try:
        library = plan_model(case["model"], _request(case)).to_json()
    except (ValueError, TypeError) as exc:
        # The same refusal: the CLI's JSON error (the line has --json) is the library's error
        # as cli.errors words it.
        said = io.StringIO()
        assert report(exc, said, as_json="--json" in _argv(case)) == 2
        assert (code, out, err) == (2, "", said.getvalue())
        return
    assert code == 0, err
    assert json.loads(out) == json.loads(json.dumps(library, default=str))


def test_an_unset_max_num_seqs_follows_the_token_budget() -> None:
    # vLLM: max_num_seqs not given → min(256, max_num_batched_tokens); given → as given, and
    # refused at start-up when it exceeds max_num_batched_tokens.
    assert PlanRequest(max_num_batched_tokens=128).max_num_seqs == 128
    assert PlanRequest(max_num_batched_tokens=8192).max_num_seqs == 256
    assert PlanRequest().max_num_seqs == 256
    assert PlanRequest(max_num_seqs=300, max_num_batched_tokens=128).max_num_seqs == 300

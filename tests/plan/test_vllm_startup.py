"""vLLM's start-up refusals (plan/engines/vllm/startup.py), each against the oracle's answer.

``tests/oracles/vllm-0.32/vllm-0.32-startup.jsonl`` and ``vllm-0.33/vllm-0.33-startup.jsonl`` hold
what
each vLLM release itself did for each setting (``tests/oracles/run_startup_oracle.py`` ran
0.32's, ``make_vllm_cases.py --release 0.33`` the same 13
questions of 0.33; the checks read the same in
both releases' config/model.py and config/scheduler.py, and the answers agree line for line),
each replayed as its release: refused, with its message, or started, with the max_model_len,
block size and block count it settled on. Every line is replayed: kvledger must refuse exactly
where vLLM does (with vLLM's words) and plan the same numbers elsewhere.
"""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.releases import vllm_release
from kvledger.plan.engines.vllm.startup import (
    VllmStartupError,
    default_max_model_len,
    derived_max_model_len,
)
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS, LOCAL_DIR, config_path, needs_shared

STARTUP_FILE = LOCAL_DIR / "vllm-0.32" / "vllm-0.32-startup.jsonl"
# release -> (its file, the --engine that plans as it)
RELEASE_FILES = {"0.32": (STARTUP_FILE, "vllm==0.32"),
                 "0.33": (LOCAL_DIR / "vllm-0.33" / "vllm-0.33-startup.jsonl", "vllm==0.33")}
RELEASE_CASES = [(release, json.loads(line)) for release, (path, _) in RELEASE_FILES.items()
                 if path.is_file() for line in path.read_text().splitlines() if line.strip()]
CASES = [case for release, case in RELEASE_CASES if release == "0.32"]
# (what vLLM's error says, what kvledger's refusal must say): vLLM's own words, except for
# the bare AssertionError of LlamaAttention, which kvledger quotes by its condition.
PHRASES = (
    ("must be divisible by tensor parallel size", "must be divisible by tensor parallel size"),
    ("assert tp_size % self.total_num_kv_heads == 0",
     "assert tp_size % self.total_num_kv_heads == 0"),
    ("No valid attention backend found for cuda", "No valid attention backend found for cuda"),
    ("is greater than the derived max_model_len", "is greater than the derived max_model_len"),
    ("must be greater than or equal to max_num_seqs",
     "must be greater than or equal to max_num_seqs"),
)
BUDGET = 214748364800  # the oracle runs' 200 GiB


def _extra_args(case: dict[str, Any]) -> list[str]:
    """The oracle arguments after the budget (0.33's lines keep them in the command only)."""
    if "extra_args" in case:
        extra: list[str] = case["extra_args"]
        return extra
    words = case["command"].split()
    return words[words.index("--kv-cache-memory-bytes") + 2:]


def _request(args: list[str], engine: str = "vllm==0.32") -> PlanRequest:
    flags = dict(zip(args[::2], args[1::2], strict=True))
    return PlanRequest(
        engine=engine,  # the release whose oracle answered
        kv_cache_memory_bytes=BUDGET,
        tensor_parallel_size=int(flags.get("--tp", 1)),
        block_size=flags.get("--block-size", "auto") if flags.get("--block-size") == "auto"
        else int(flags.get("--block-size", 16)),
        max_model_len=int(flags["--max-model-len"]) if "--max-model-len" in flags else None,
        max_num_seqs=int(flags.get("--max-num-seqs", 256)),
        max_num_batched_tokens=int(flags.get("--max-num-batched-tokens", 8192)),
    )


def test_the_oracle_file_covers_every_rule() -> None:
    if not STARTUP_FILE.is_file():
        pytest.skip("tests/oracles/vllm-0.32/vllm-0.32-startup.jsonl not written yet")
    errors = " ".join(c.get("error", "") for c in CASES)
    assert all(vllm in errors for vllm, _ in PHRASES)
    assert any(c["ok"] for c in CASES)


@pytest.mark.parametrize(("release", "case"), RELEASE_CASES,
                         ids=[f"{r}-{c['why'][:40]}" for r, c in RELEASE_CASES])
def test_startup_as_vllm(release: str, case: dict[str, Any]) -> None:
    facts = derive_model(str(config_path(case)))
    request = _request(_extra_args(case), RELEASE_FILES[release][1])
    if not case["ok"]:
        phrase = next(ours for vllm, ours in PHRASES if vllm in case["error"])
        with pytest.raises(VllmStartupError, match=re.escape(phrase)) as caught:
            plan_vllm(facts, request, BUDGET)
        assert str(caught.value).startswith(f"{vllm_release(release).short} refuses to start: ")
        return
    plan = plan_vllm(facts, request, BUDGET)
    assert (plan.max_model_len, plan.block_size, plan.num_blocks) == (
        case["max_model_len"], case["block_size"], case["num_blocks"])


def test_allow_long_max_model_len_plans_past_the_config() -> None:
    # VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: vLLM warns and starts; so does the plan.
    facts = derive_model("meta-llama/Meta-Llama-3.1-8B")
    request = PlanRequest(kv_cache_memory_bytes=BUDGET, max_model_len=131_073,
                          allow_long_max_model_len=True)
    assert plan_vllm(facts, request, BUDGET).max_model_len == 131_073


def test_derived_length_rules() -> None:
    base = dict(derive_model("meta-llama/Meta-Llama-3.1-8B").config)
    # The smallest length key wins; model_max_length then overrides (Command-R's form).
    smaller = derive_model({**base, "seq_length": 4096})
    assert derived_max_model_len(smaller) == (4096.0, "seq_length")
    override = derive_model({**base, "model_max_length": 200_000})
    assert derived_max_model_len(override) == (200_000.0, "model_max_length")
    # A "dynamic" RoPE factor 2 scales the length; llama3 (Llama-3.1's own) does not.
    dynamic = derive_model({**base, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}})
    assert derived_max_model_len(dynamic) == (262_144.0, "max_position_embeddings")
    assert derived_max_model_len(derive_model(base)) == (131_072.0, "max_position_embeddings")
    # LongRoPE (Phi-3-mini-128k's form): the derived length is max_position_embeddings, but
    # vLLM's default is original_max_position_embeddings.
    phi3 = json.loads((CONFIGS / "microsoft--Phi-3-mini-4k-instruct.MODIFIED.json").read_text())
    longrope = derive_model({**phi3, "max_position_embeddings": 131072, "rope_scaling": {
        "type": "longrope", "short_factor": [1.0] * 48, "long_factor": [1.0] * 48}})
    assert derived_max_model_len(longrope) == (131_072.0, "max_position_embeddings")
    assert default_max_model_len(longrope) == 4096


def test_memory_refusal_is_a_reason_in_the_json() -> None:
    # A budget too small for one request: exit 0, the figures, and vLLM's reason.
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["plan", "meta-llama/Meta-Llama-3.1-8B", "--engine", "vllm==0.33",
                     "--kv-cache-memory-bytes", "1GiB", "--max-model-len", "32768", "--json"])
    data = json.loads(out.getvalue())
    assert code == 0 and data["vllm_refuses_to_start"] is True
    # One 32,768-token request: 2 (K, V) x 32 layers x 8 heads x 128 x 2 B = 131,072 B a
    # token -> 4 GiB; 1 GiB less one 2 MiB null block is usable.
    assert data["vllm_refusal_reason"].startswith(
        "To serve at least one request with the model's max seq len (32768), (4.00 GiB KV "
        "cache is needed, which is larger than the available KV cache memory (1.00 GiB) "
        "[4,294,967,296 B needed, 1,071,644,672 B usable")
    assert data["num_blocks"] == 512  # 1 GiB / 2 MiB: still shown


def test_refusals_are_one_line_through_the_cli(tmp_path: Path) -> None:
    for argv in (["-tp", "3"], ["--block-size", "24"], ["--max-model-len", "131073"],
                 ["--max-num-seqs", "512", "--max-num-batched-tokens", "256"]):
        err = io.StringIO()
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            code = main(["plan", "meta-llama/Meta-Llama-3.1-8B", "--engine", "vllm==0.32",
                         "--kv-cache-memory-bytes",
                         "20GiB", *argv])
        assert code == 2, argv
        line = err.getvalue().strip()
        assert "\n" not in line and line.startswith("error: vLLM 0.32 refuses to start: ")


@needs_shared
def test_unset_max_num_seqs_follows_a_small_token_budget() -> None:
    # EngineArgs: an unset max_num_seqs is min(default, max_num_batched_tokens), so 100
    # batched tokens is no refusal: vLLM admits 100 sequences. Given explicitly, 256 > 100 is.
    llama = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
    for argv in (["plan", llama, "--kv-cache-memory-bytes", "20GiB"],
                 ["plan", "--gpu", "H100", "--json", "--", "vllm", "serve", llama]):
        code, out = _run([*argv[:1], *argv[1:], "--max-num-batched-tokens", "100",
                          "--max-model-len", "4096", *([] if "--" in argv else ["--json"])])
        assert code == 0 and json.loads(out)["max_num_seqs"] == 100, out
    code, _ = _run(["plan", llama, "--kv-cache-memory-bytes", "20GiB", "--max-num-seqs", "256",
                    "--max-num-batched-tokens", "100"])
    assert code == 2


def _run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(argv)
    return code, out.getvalue()


@needs_shared
def test_serve_line_environment_allows_a_long_max_model_len() -> None:
    llama = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
    line = ["vllm", "serve", llama, "--max-model-len", "131073"]
    assert _run(["plan", "--gpu", "H200", "--json", "--", *line])[0] == 2
    code, out = _run(["plan", "--gpu", "H200", "--json", "--",
                      "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", *line])
    assert code == 0 and json.loads(out)["max_model_len"] == 131073


def test_allow_long_max_model_len_is_a_bool() -> None:
    with pytest.raises(TypeError, match="allow_long_max_model_len must be a bool"):
        PlanRequest(allow_long_max_model_len="1")  # type: ignore[arg-type]


@pytest.mark.parametrize(("factor", "match"), [
    ("x", "RoPE 'factor' must be a positive number"), (float("nan"), "positive number"),
    (1e6, "beyond kvledger's bound of 4,294,967,296 positions"),
])
def test_absurd_rope_factor_refused(factor: Any, match: str) -> None:
    from kvledger.derive import ConfigError

    base = dict(derive_model("meta-llama/Meta-Llama-3.1-8B").config)
    facts = derive_model({**base, "rope_scaling": {"rope_type": "linear", "factor": factor}})
    with pytest.raises(ConfigError, match=match):
        derived_max_model_len(facts)

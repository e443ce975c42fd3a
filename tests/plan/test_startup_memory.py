"""Will it start, and stay up: vLLM's free-memory admission, two engines on one GPU, the
headroom after the KV cache, and SGLang's co-tenant, runtime-OOM direction and hint
(``plan/startup_memory.py``). The rules are vLLM 0.33's (``v1/worker/utils.py
request_memory``: ``ceil(total × gpu_memory_utilization)`` against the free memory at the
start-up snapshot; the same in 0.32) and SGLang 0.5.23's (``pre_model_load_memory ×
mem_fraction_static − weights``); the arithmetic is in the comments.
"""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.plan.api import plan_model
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PlanResult
from kvledger.plan.startup_memory import StartupRefusal

GIB = 1 << 30
MIB = 1 << 20
LLAMA = "meta-llama/Meta-Llama-3.1-8B"
RTX_4090 = 24_564 * MIB  # the preset: nvidia-smi 24564MiB = 25,757,220,864 B
H100 = 81_559 * MIB  # the preset: nvidia-smi 81559MiB = 85,520,809,984 B


def _plan(**kw: Any) -> PlanResult:
    return plan_model(LLAMA, PlanRequest(max_model_len=8192, **kw))


def test_vllm_refuses_099_on_a_24_gib_card() -> None:
    # vllm==0.33: requested = ceil(25,757,220,864 × 0.99) = 25,499,648,656 B (23.75 GiB);
    # 25,757,220,864 − 25,499,648,656 = 257,572,208 B = 0.24 GiB is left for what vLLM's own
    # process takes before its snapshot — public logs show 0.41-0.53 GiB on one GPU — so the
    # free memory at the snapshot is below the request: vLLM refuses to start.
    assert RTX_4090 == 25_757_220_864
    with pytest.raises(StartupRefusal) as info:
        _plan(engine="vllm==0.33", gpu="RTX-4090", gpu_memory_utilization=0.99)
    text = str(info.value)
    assert "vLLM 0.33 refuses to start" in text
    assert "23.75 GiB" in text and "0.24 GiB is left" in text
    # (23.99 − 0.55) / 23.99 = 0.977 → 0.97 starts even at the largest pre-snapshot use seen
    assert "0.97 or less" in info.value.hint


def test_vllm_099_refusal_on_the_command_line_is_one_line() -> None:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["plan", LLAMA, "--engine", "vllm==0.32", "--gpu", "RTX-4090",
                     "--gpu-memory-utilization", "0.99", "--max-model-len", "8192"])
    assert code == 2 and out.getvalue() == ""
    assert len(err.getvalue().splitlines()) == 1
    assert "vLLM 0.32 refuses to start" in err.getvalue()
    assert "--gpu-memory-utilization to 0.97" in err.getvalue()


def test_vllm_098_may_refuse_and_says_its_basis() -> None:
    # 25,757,220,864 × 0.02 = 0.48 GiB left: inside the 0.41-0.53 GiB seen, so "may refuse".
    plan = _plan(engine="vllm==0.33", gpu="RTX-4090", gpu_memory_utilization=0.98)
    notes = [w for w in plan.warnings if "may refuse to start" in w]
    assert len(notes) == 1 and "0.48 GiB is left" in notes[0] and "estimated" in notes[0]


def test_the_default_utilization_on_its_own_gpu_says_nothing_new() -> None:
    plan = _plan(engine="vllm==0.33", gpu="RTX-4090")
    assert not [w for w in plan.warnings if "refuse" in w or "headroom" in w]


def test_two_vllm_engines_share_an_80_gib_gpu() -> None:
    # Engine A at 0.5 requests ceil(85,520,809,984 × 0.5) = 42,760,404,992 B and its own
    # process takes ~0.5 GiB before that: 43,297,275,904 B held when B starts.
    a_holds = 42_760_404_992 + GIB // 2
    a = _plan(engine="vllm==0.33", gpu="H100-80GB", gpu_memory_utilization=0.5)
    assert a.available_bytes > 0
    # B at 0.4 requests ceil(85,520,809,984 × 0.4) = 34,208,323,994 B; left for its own
    # pre-snapshot use: 85,520,809,984 − 43,297,275,904 − 34,208,323,994 = 8,015,210,086 B
    # (7.46 GiB): it starts, and the headroom after its cache is 7.46 − 0.4 = 7.06 GiB.
    b = _plan(engine="vllm==0.33", gpu="H100-80GB", gpu_memory_utilization=0.4,
              gpu_memory_in_use=a_holds)
    head = [w for w in b.warnings if w.startswith("headroom after the KV cache")]
    assert len(head) == 1 and "at most 7.06 GiB" in head[0] and "40.32 GiB held" in head[0]
    assert not [w for w in b.warnings if "refuse" in w]
    # Utilization is a fraction of the total, not of what is free: B's KV budget is the
    # same as on a GPU of its own.
    alone = _plan(engine="vllm==0.33", gpu="H100-80GB", gpu_memory_utilization=0.4)
    assert b.available_bytes == alone.available_bytes
    # B at 0.5: 85,520,809,984 − 43,297,275,904 − 42,760,404,992 = −536,870,912 B: refused.
    with pytest.raises(StartupRefusal, match=r"refuses to start: .* = -0\.50 GiB is left"):
        _plan(engine="vllm==0.33", gpu="H100-80GB", gpu_memory_utilization=0.5,
              gpu_memory_in_use=a_holds)


def test_gpu_free_bytes_is_the_same_question() -> None:
    # 43,297,275,904 B held = 85,520,809,984 − 42,223,534,080 B free
    b = _plan(engine="vllm==0.33", gpu="H100-80GB", gpu_memory_utilization=0.4,
              gpu_free_bytes=42_223_534_080)
    assert any("at most 7.06 GiB" in w for w in b.warnings)
    with pytest.raises(ValueError, match="give one"):
        PlanRequest(gpu_free_bytes=1, gpu_memory_in_use=1)


def test_sglang_beside_a_vllm_engine_plans_on_what_is_free() -> None:
    # SGLang 0.5.23 sizes from the memory free before its weights: pre = 85,520,809,984 −
    # 536,870,912 (its own context, estimated) − 43,297,275,904 (the vLLM engine) =
    # 41,686,663,168 B; × 0.4 → int(16,674,665,267.2) = 16,674,665,267 B before the weights.
    # (gpu_memory_utilization is SGLang's mem_fraction_static when no SGLang option gives it)
    plan = _plan(engine="sglang", gpu="H100-80GB", gpu_memory_utilization=0.4,
                 gpu_memory_in_use=43_297_275_904)
    lines = {ln.key: ln for ln in plan.budget.lines}
    assert lines["non_torch"].bytes == 536_870_912 + 43_297_275_904
    assert "40.32 GiB held by other processes" in lines["non_torch"].label
    assert lines["utilization"].bytes == 16_674_665_267


def test_sglang_runtime_oom_direction() -> None:
    # mem_fraction_static 0.95 on an H100: pre = 85,520,809,984 − 536,870,912 =
    # 84,983,939,072 B; outside the pools 84,983,939,072 − int(× 0.95) = 4,249,196,954 B =
    # 3.96 GiB, below what SGLang itself keeps back by default on a GPU above 60 GiB (at
    # least 10 GiB, memory_hook.py): it may run out of memory at run time.
    plan = plan_model(LLAMA, PlanRequest(engine="sglang", gpu="H100-80GB",
                                         gpu_memory_utilization=0.95, max_model_len=8192))
    notes = [w for w in plan.warnings if "run out of memory" in w]
    assert len(notes) == 1 and "3.96 GiB stays outside" in notes[0]
    assert "--mem-fraction-static" in notes[0] and "gpu-memory-utilization" not in notes[0]
    fine = plan_model(LLAMA, PlanRequest(engine="sglang", gpu="H100-80GB",
                                         gpu_memory_utilization=0.8, max_model_len=8192))
    assert not [w for w in fine.warnings if "run out of memory" in w]


def test_sglang_refusal_hint_names_sglangs_flags() -> None:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["plan", LLAMA, "--engine", "sglang", "--gpu", "L4",
                     "--mem-fraction-static", "0.5"])
    assert code == 2 and len(err.getvalue().splitlines()) == 1
    assert "--mem-fraction-static" in err.getvalue()
    assert "gpu-memory-utilization" not in err.getvalue()

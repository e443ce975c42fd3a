"""The ``headroom`` budget line (``plan/startup_memory.py``): what is left after the KV cache
against what the engine still allocates then, basis ``estimated``, after ``kv_budget`` and
never subtracted from it. vLLM 0.33 captures its CUDA graphs after sizing the cache
(``gpu_worker.compile_or_warm_up_model``), having taken their estimate from the budget;
SGLang 0.5.23 keeps ``pre_model_load_memory × (1 − mem_fraction_static)`` beside its pools.
The plan's JSON has it as its own key, ``headroom``: the ``budget`` rows still add up to
``kv_budget``, their last.
"""

from __future__ import annotations

from typing import Any

from kvledger.plan.api import plan_model
from kvledger.plan.engines.sglang.options import SglangOptions
from kvledger.plan.request import PlanRequest

GIB = 1 << 30
LLAMA = "meta-llama/Meta-Llama-3.1-8B"


def _lines(**kw: Any) -> tuple[list[str], dict[str, Any], int]:
    """The budget rows' keys, every line by key (the plan's ``headroom`` key with them), and
    the plan's available bytes."""
    data = plan_model(LLAMA, PlanRequest(max_model_len=8192, **kw)).to_json()
    rows = data["budget"]
    by_key = {r["key"]: r for r in rows}
    by_key["headroom"] = data["headroom"]
    return [r["key"] for r in rows], by_key, data["available_bytes"]


def test_vllm_headroom_on_a_gpu_of_its_own() -> None:
    # vllm==0.33 on an H100-80GB (85,520,809,984 B) at 0.9: ceil(total × 0.9) =
    # 76,968,728,986 B; left outside it 8,552,080,998 B, less vLLM's own pre-snapshot memory
    # at the smallest seen (0.4 GiB = 429,496,729 B): 8,122,584,269 B, against up to 0.5 GiB
    # (536,870,912 B) of capture beyond the estimate.
    keys, rows, available = _lines(engine="vllm==0.33", gpu="H100-80GB",
                                   gpu_memory_utilization=0.9)
    # The rows still end with kv_budget (they add up to it); headroom is its own key.
    assert keys[-1] == "kv_budget" and "headroom" not in keys
    head = rows["headroom"]
    assert head["bytes"] == 8_122_584_269 and head["basis"] == "estimated"
    assert [p["bytes"] for p in head["parts"]] == [8_122_584_269, 536_870_912, 0]
    assert "enough" in head["label"] and "may be too little" not in head["label"]
    assert rows["kv_budget"]["bytes"] == available  # not subtracted


def test_vllm_headroom_too_little_at_097_on_a_24_gib_card() -> None:
    # RTX 4090 (25,757,220,864 B) at 0.97: ceil(total × 0.97) = 24,984,504,239 B; left
    # 772,716,625 B − 429,496,729 B = 343,219,896 B (0.32 GiB) < 0.5 GiB.
    _, rows, _ = _lines(engine="vllm==0.33", gpu="RTX-4090", gpu_memory_utilization=0.97)
    head = rows["headroom"]
    assert head["bytes"] == 343_219_896
    assert "may be too little" in head["label"]


def test_sglang_headroom_beside_its_pools() -> None:
    # SGLang 0.5.23 on an H100-80GB at --mem-fraction-static 0.8: pre_model_load = total −
    # 0.5 GiB (its context, estimated) = 84,983,939,072 B; × 0.8 = 67,987,151,257 B (int);
    # outside the pools 84,983,939,072 − 67,987,151,257 = 16,996,787,815 B.
    keys, rows, _ = _lines(engine="sglang", gpu="H100-80GB",
                           sglang=SglangOptions(mem_fraction_static=0.8))
    assert keys[-1] == "kv_budget"
    head = rows["headroom"]
    assert head["bytes"] == 16_996_787_815 and head["basis"] == "estimated"
    assert head["parts"][0]["bytes"] == 16_996_787_815
    need = head["parts"][1]["bytes"]
    assert ("enough" in head["label"]) == (need <= 16_996_787_815)


def test_sglang_headroom_too_little_at_a_high_fraction() -> None:
    # At 0.97: 84,983,939,072 − int(84,983,939,072 × 0.97) = 2,549,518,173 B (2.37 GiB) beside
    # the pools, below SGLang's own default reservation for these settings (above 10 GiB on a
    # GPU over 60 GiB: memory_hook.py handle_gpu_memory_settings): its runtime-OOM direction.
    _, rows, _ = _lines(engine="sglang", gpu="H100-80GB",
                        sglang=SglangOptions(mem_fraction_static=0.97))
    head = rows["headroom"]
    assert head["bytes"] == 84_983_939_072 - int(84_983_939_072 * 0.97) == 2_549_518_173
    assert head["parts"][1]["bytes"] >= 10 * GIB
    assert "may be too little" in head["label"]

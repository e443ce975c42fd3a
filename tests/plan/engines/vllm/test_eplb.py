"""vLLM's expert-parallel load balancing (``--enable-eplb``): what it takes from each GPU.

Expected values are worked by hand from vLLM's source (``plan/engines/vllm/eplb.py`` cites
each file: 0.32.0, 0.33.0 and 0.34.0) and DeepSeek-V3's config (catalog): 256 routed experts,
61 layers of which the first 3 are dense (58 MoE layers), hidden 7,168, moe_intermediate_size
2,048, fp8 weights with one float32 scale per 128 × 128 block. One expert of one layer:
3 × 7,168 × 2,048 = 44,040,192 fp8 bytes + (2 × 2,048 × 7,168 + 7,168 × 2,048) / 16,384 ×
4 B = 10,752 B of scales = 44,050,944 B. No oracle case: vLLM's CPU build has no expert
parallelism.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.errors import PlanError
from kvledger.plan.api import plan_model
from kvledger.plan.engines.vllm.launch import VllmLaunch
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PlanResult

DSV3 = "deepseek-ai/DeepSeek-V3"
EXPERT = 44_050_944


def plan(release: str = "0.34", *, eplb: dict[str, Any] | None = None, on: bool = True,
         tp: int = 1, dp: int = 8, ep: bool = True, **request: Any) -> PlanResult:
    launch = VllmLaunch(enable_eplb=on, eplb_config=json.dumps(eplb) if eplb else None)
    return plan_model(DSV3, PlanRequest(
        gpu="H200", tensor_parallel_size=tp, data_parallel_size=dp,
        enable_expert_parallel=ep, engine_release=release, vllm_launch=launch, **request))


def line(result: PlanResult) -> int:
    found = result.budget.line("eplb")
    assert found is not None
    return found.bytes


def test_two_redundant_experts_under_vllm_034() -> None:
    # 258 physical experts over EP 8: the first rank holds ceil(258 / 8) = 33 (32 without).
    # Redundant: 1 × 58 × 44,050,944 = 2,554,954,752; buffer: 33 × 44,050,944 =
    # 1,453,681,152; window: 1,000 × 58 × 258 × 4 = 59,856,000; maps (R + 1 = 3 slots):
    # 58 × (258 × (4 + 8) + 256 × (8 + 8 + 3 × 8)) = 58 × 13,336 = 773,488.
    got = plan(eplb={"num_redundant_experts": 2, "window_size": 1000, "step_interval": 3000})
    assert line(got) == 2_554_954_752 + 1_453_681_152 + 59_856_000 + 773_488 == 4_069_265_392
    plain = plan(on=False)
    assert plain.available_bytes - got.available_bytes == 4_069_265_392


def test_vllm_033_keeps_1024_slots_a_logical_expert() -> None:
    # 0.33: logical_to_physical_map (58, 256, 1,024) int64: maps = 58 × (258 × 12 + 256 ×
    # (16 + 1,024 × 8)) = 58 × 2,104,344 = 122,051,952.
    got = plan("0.33", eplb={"num_redundant_experts": 2})
    assert line(got) == 2_554_954_752 + 1_453_681_152 + 59_856_000 + 122_051_952


def test_the_default_is_the_fewest_redundant_experts_ep_allows() -> None:
    # compute_eplb_num_redundant_experts: (8 − 256 % 8) % 8 = 0. No extra expert; buffer
    # 32 × 44,050,944 = 1,409,630,208; window 1,000 × 58 × 256 × 4 = 59,392,000; maps (1 slot):
    # 58 × (256 × 12 + 256 × 24) = 534,528.
    assert line(plan()) == 1_409_630_208 + 59_392_000 + 534_528


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"ep": False}, "enable_expert_parallel must be True to use EPLB"),
    ({"dp": 1}, "EPLB requires tensor, prefill-context, or data parallelism"),
    ({"release": "0.31"}, r"plan with --engine vllm==0\.32\.0 or later"),
    ({"eplb": {"communicator": "symm_mem"}}, "symm_mem"),
    # EPLBConfig's literals: policy "default" only; 0.33 has no symm_mem communicator.
    ({"eplb": {"policy": "greedy"}}, "policy must be 'default'"),
    ({"release": "0.33", "eplb": {"communicator": "symm_mem"}},
     "communicator must be one of nixl, pynccl, torch_gloo, torch_nccl, torch_xccl"),
    ({"eplb": {"num_redundant_expert": 2}}, "not an EPLBConfig field"),
    ({"speculative_method": "mtp", "num_speculative_tokens": 1}, "MTP draft"),
])
def test_what_vllm_refuses_or_kvledger_does_not_size_is_named(kwargs: dict[str, Any],
                                                               words: str) -> None:
    with pytest.raises(PlanError, match=words):
        plan(**kwargs)


def test_a_pasted_line_plans_with_its_eplb_config(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--gpu", "H200", "--json", "--", "vllm", "serve", DSV3,
                 "--data-parallel-size", "8", "--enable-expert-parallel", "--enable-eplb",
                 "--eplb-config", '{"num_redundant_experts": 2}'])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = {b["key"]: b["bytes"] for b in json.loads(out)["budget"]}
    assert lines["eplb"] == 4_069_265_392


def test_redundant_experts_without_eplb_are_vllms_refusal(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--gpu", "H200", "--", "vllm", "serve", DSV3, "-dp", "8",
                 "--enable-expert-parallel", "--eplb-config", '{"num_redundant_experts": 2}'])
    _, err = capsys.readouterr()
    assert code == 2 and "but EPLB is not enabled" in err


def test_a_given_kv_budget_is_not_cut_by_eplb() -> None:
    # With kv_cache_memory_bytes vLLM skips its profiling: the given bytes are the KV budget,
    # and the note says what EPLB then changes (before: a note with no subject).
    got = plan(kv_cache_memory_bytes=20 << 30)
    assert got.available_bytes == 20 << 30
    assert any(w.startswith("EPLB's experts and buffers change the weights' memory")
               for w in got.warnings)


def test_a_model_class_without_mixture_of_experts_gets_no_eplb_state() -> None:
    # vLLM 0.34 gpt_oss.py: GptOssForCausalLM does not implement MixtureOfExperts, so
    # get_mixture_of_experts_model finds none and maybe_register_model builds no EPLB state;
    # the model file passes no redundant experts. The flag changes nothing: an eplb line of 0
    # that says so (before: the MoE formula was applied to it).
    got = plan_model("openai/gpt-oss-120b", PlanRequest(
        gpu="H200", data_parallel_size=2, enable_expert_parallel=True,
        vllm_launch=VllmLaunch(enable_eplb=True)))
    eplb = got.budget.line("eplb")
    assert eplb is not None and eplb.bytes == 0 and "MixtureOfExperts" in eplb.label

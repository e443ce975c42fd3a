"""vLLM data × expert parallelism: which expert bytes one GPU holds, and the DP group's totals.

The rule (plan/engines/vllm/experts.py) is vLLM's FusedMoEParallelConfig.make: the routed
experts over DP × TP GPUs (whole experts with --enable-expert-parallel, TP slices without),
everything else divided by TP on each DP rank, shared experts whole on every GPU under
sequence-parallel MoE (DeepSeek's DeepseekV2MLP disable_tp). Expected bytes are the configs'
own sizes worked by hand below, not the planner's output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvledger import PlanRequest, plan_model
from kvledger.cli.main import main

CONFIGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "configs"
DSV3 = CONFIGS / "deepseek-ai--DeepSeek-V3.json"
QWEN3_MOE = CONFIGS / "Qwen--Qwen3-30B-A3B.json"
LLAMA = CONFIGS / "Qwen--Qwen3-8B.json"

# DeepSeek-V3 (config: n_routed_experts 256, hidden 7168, moe_intermediate 2048, 61 layers of
# which first_k_dense_replace 3 are dense → 58 MoE layers, n_shared_experts 1; fp8 with one
# float32 scale per 128 × 128 block: 8 + 32 / 16384 bits = 1 + 1/4096 bytes a weight).
DSV3_ROUTED_PARAMS = 256 * 3 * 7168 * 2048 * 58  # 653,908,770,816
DSV3_ROUTED_BYTES = DSV3_ROUTED_PARAMS + DSV3_ROUTED_PARAMS // 4096  # 654,068,416,512
DSV3_SHARED_PARAMS = 1 * 3 * 7168 * 2048 * 58  # 2,554,331,136
DSV3_SHARED_BYTES = DSV3_SHARED_PARAMS + DSV3_SHARED_PARAMS // 4096  # 2,554,954,752
# Qwen3-30B-A3B: 128 experts, hidden 2048, moe_intermediate 768, 48 MoE layers, bfloat16.
QWEN_ROUTED_BYTES = 128 * 3 * 2048 * 768 * 48 * 2  # 57,982,058,496


def _plan(model: Path, **fields: object) -> dict[str, object]:
    request = PlanRequest(gpu="H200", max_model_len=32768, **fields)  # type: ignore[arg-type]
    return plan_model(str(model), request).to_json()


def test_deepseek_v3_dp8_ep_holds_an_eighth_of_the_routed_experts() -> None:
    data = _plan(DSV3, data_parallel_size=8, enable_expert_parallel=True)
    split = data["weights_per_gpu"]
    assert isinstance(split, dict)
    assert split["expert_parallel"] is True and split["expert_ranks"] == 8
    assert split["routed_experts_bytes"] == DSV3_ROUTED_BYTES
    assert split["routed_experts_per_gpu"] == DSV3_ROUTED_BYTES // 8  # 81,758,552,064
    assert split["shared_experts_bytes"] == DSV3_SHARED_BYTES
    # TP 1 on each DP rank: the shared experts and the rest are whole on every GPU.
    assert split["shared_experts_per_gpu"] == DSV3_SHARED_BYTES
    assert split["other_weights_per_gpu"] == split["other_weights_bytes"]
    weights = next(ln for ln in data["budget"] if ln["key"] == "weights")  # type: ignore[union-attr]
    assert weights["bytes"] == split["weights_per_gpu"] == (
        DSV3_ROUTED_BYTES // 8 + DSV3_SHARED_BYTES + split["other_weights_bytes"])
    # Each DP rank is its own engine: the group holds 8 × its tokens and requests.
    totals = data["totals"]
    assert isinstance(totals, dict)
    assert totals["gpus"] == 8 and totals["replicas"] == 8
    assert totals["kv_cache_tokens"] == 8 * data["kv_cache_tokens"]  # type: ignore[operator]
    assert totals["max_concurrency"] == 8 * data["max_concurrency"]  # type: ignore[operator]
    assert totals["max_num_seqs"] == 8 * data["max_num_seqs"]  # type: ignore[operator]


def test_one_dp_rank_plans_as_a_single_gpu_with_that_budget() -> None:
    """The per-rank KV plan is an ordinary TP-1 plan on the rank's KV budget."""
    data = _plan(DSV3, data_parallel_size=8, enable_expert_parallel=True)
    kv = next(ln["bytes"] for ln in data["budget"] if ln["key"] == "kv_budget")  # type: ignore[union-attr]
    alone = plan_model(str(DSV3), PlanRequest(kv_cache_memory_bytes=kv, max_model_len=32768,
                                              max_num_seqs=data["max_num_seqs"]))  # type: ignore[arg-type]
    assert alone.kv_cache_tokens == data["kv_cache_tokens"]
    assert alone.max_concurrency == data["max_concurrency"]


def test_dp_without_ep_slices_the_experts_over_the_same_gpus() -> None:
    """No --enable-expert-parallel: vLLM still flattens TP over DP for the MoE layers (every
    expert TP-sliced over DP × TP), so a GPU holds the same expert bytes."""
    with_ep = _plan(DSV3, data_parallel_size=8, enable_expert_parallel=True)
    without = _plan(DSV3, data_parallel_size=8)
    split = without["weights_per_gpu"]
    assert isinstance(split, dict) and split["expert_parallel"] is False
    assert split["routed_experts_per_gpu"] == DSV3_ROUTED_BYTES // 8
    assert without["kv_cache_tokens"] == with_ep["kv_cache_tokens"]


def test_dp2_tp4_ep_keeps_deepseek_shared_experts_whole() -> None:
    """EP with TP 4 and DP 2 is sequence-parallel MoE (ParallelConfig.
    use_sequence_parallel_moe): DeepSeek's shared experts are built with disable_tp."""
    data = _plan(DSV3, data_parallel_size=2, tensor_parallel_size=4,
                 enable_expert_parallel=True)
    split = data["weights_per_gpu"]
    assert isinstance(split, dict)
    assert split["expert_ranks"] == 8 and split["shared_expert_ranks"] == 1
    assert split["routed_experts_per_gpu"] == DSV3_ROUTED_BYTES // 8
    assert split["shared_experts_per_gpu"] == DSV3_SHARED_BYTES
    rest = split["other_weights_bytes"]
    assert isinstance(rest, int) and split["other_weights_per_gpu"] == -(-rest // 4)


def test_qwen3_moe_dp8_ep_holds_an_eighth_of_the_experts() -> None:
    data = _plan(QWEN3_MOE, data_parallel_size=8, enable_expert_parallel=True)
    split = data["weights_per_gpu"]
    assert isinstance(split, dict)
    assert split["routed_experts_bytes"] == QWEN_ROUTED_BYTES
    assert split["routed_experts_per_gpu"] == QWEN_ROUTED_BYTES // 8  # 7,247,757,312
    assert split["shared_experts_bytes"] == 0


def test_one_dp_rank_keeps_the_tp_split() -> None:
    """DP 1: the EP group is the TP group, E / TP whole experts, the bytes of TP slices."""
    plain = _plan(DSV3, tensor_parallel_size=8)
    ep = _plan(DSV3, tensor_parallel_size=8, enable_expert_parallel=True)
    assert "weights_per_gpu" not in ep
    assert ep["kv_cache_tokens"] == plain["kv_cache_tokens"]
    assert ep["enable_expert_parallel"] is True


def test_a_dense_model_has_no_experts_to_split() -> None:
    data = _plan(LLAMA, data_parallel_size=4, enable_expert_parallel=True)
    assert "weights_per_gpu" not in data


@pytest.mark.parametrize("engine", ["native", "sglang"])
def test_other_layouts_refuse_expert_parallel(engine: str, capsys: pytest.CaptureFixture[str]
                                              ) -> None:
    code = main(["plan", str(DSV3), "--gpu", "H200", "--engine", engine, "-dp", "8",
                 "--enable-expert-parallel", "--max-model-len", "32768"])
    err = capsys.readouterr().err
    assert code == 2
    assert "does not model expert parallelism" in err and "Traceback" not in err


def test_the_serve_line_plans_dp_with_expert_parallel(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    code = main(["plan", "--gpu", "H200", "--json", "--", "vllm", "serve", str(DSV3), "-dp", "8",
                 "--enable-expert-parallel", "--max-model-len", "32768", "--max-num-seqs",
                 "256"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    direct = _plan(DSV3, data_parallel_size=8, enable_expert_parallel=True, max_num_seqs=256)
    assert data["kv_cache_tokens"] == direct["kv_cache_tokens"]
    assert data["weights_per_gpu"] == direct["weights_per_gpu"]

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
    fields.setdefault("engine", "vllm==0.33")  # the release these numbers are worked for
    request = PlanRequest(gpu="H200", max_model_len=32768, **fields)  # type: ignore[arg-type]
    return plan_model(str(model), request).to_json()


def _parts(data: dict[str, object]) -> dict[str, dict[str, int]]:
    split = data["weights_per_gpu"]
    assert isinstance(split, dict)
    parts: dict[str, dict[str, int]] = split["parts"]
    return parts


def test_deepseek_v3_dp8_ep_holds_an_eighth_of_the_routed_experts() -> None:
    data = _plan(DSV3, data_parallel_size=8, enable_expert_parallel=True)
    split = data["weights_per_gpu"]
    assert isinstance(split, dict) and split["expert_parallel"] is True
    parts = _parts(data)
    assert parts["routed_experts"] == {"bytes": DSV3_ROUTED_BYTES, "gpus": 8,
                                       "per_gpu": DSV3_ROUTED_BYTES // 8}  # 81,758,552,064
    # TP 1 on each DP rank: the shared experts and the rest are whole on every GPU.
    assert parts["shared_experts"] == {"bytes": DSV3_SHARED_BYTES, "gpus": 1,
                                       "per_gpu": DSV3_SHARED_BYTES}
    rest = parts["rest"]
    assert rest["gpus"] == 1 and rest["per_gpu"] == rest["bytes"]
    weights = next(ln for ln in data["budget"] if ln["key"] == "weights")  # type: ignore[union-attr]
    assert weights["bytes"] == split["weights_per_gpu"] == (
        DSV3_ROUTED_BYTES // 8 + DSV3_SHARED_BYTES + rest["bytes"])
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
    alone = plan_model(str(DSV3), PlanRequest(engine="vllm==0.33",
                                              kv_cache_memory_bytes=kv, max_model_len=32768,
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
    assert _parts(without)["routed_experts"]["per_gpu"] == DSV3_ROUTED_BYTES // 8
    assert without["kv_cache_tokens"] == with_ep["kv_cache_tokens"]


def test_dp2_tp4_ep_keeps_deepseek_shared_experts_whole() -> None:
    """EP with TP 4 and DP 2 is sequence-parallel MoE (ParallelConfig.
    use_sequence_parallel_moe): DeepSeek's shared experts are built with disable_tp."""
    data = _plan(DSV3, data_parallel_size=2, tensor_parallel_size=4,
                 enable_expert_parallel=True)
    parts = _parts(data)
    assert parts["routed_experts"]["gpus"] == 8 and parts["shared_experts"]["gpus"] == 1
    assert parts["routed_experts"]["per_gpu"] == DSV3_ROUTED_BYTES // 8
    assert parts["shared_experts"]["per_gpu"] == DSV3_SHARED_BYTES
    rest = parts["rest"]
    assert rest["gpus"] == 4 and rest["per_gpu"] == -(-rest["bytes"] // 4)


def test_qwen3_moe_dp8_ep_holds_an_eighth_of_the_experts() -> None:
    data = _plan(QWEN3_MOE, data_parallel_size=8, enable_expert_parallel=True)
    parts = _parts(data)
    assert parts["routed_experts"] == {"bytes": QWEN_ROUTED_BYTES, "gpus": 8,
                                       "per_gpu": QWEN_ROUTED_BYTES // 8}  # 7,247,757,312
    assert parts["shared_experts"]["bytes"] == 0


def test_one_dp_rank_keeps_the_tp_split() -> None:
    """DP 1: the EP group is the TP group, E / TP whole experts, the bytes of TP slices; only
    the parts every TP rank holds whole (plan/tp_replicated.py REPLICATED_ON_TP) are apart."""
    plain = _plan(DSV3, tensor_parallel_size=8)
    ep = _plan(DSV3, tensor_parallel_size=8, enable_expert_parallel=True)
    assert set(_parts(ep)) == {"attn_unsharded", "router", "rest"}
    assert ep["weights_per_gpu"] == plain["weights_per_gpu"]
    assert ep["kv_cache_tokens"] == plain["kv_cache_tokens"]
    assert ep["enable_expert_parallel"] is True


def test_mla_down_projections_and_the_router_are_whole_on_every_tp_rank() -> None:
    """vLLM 0.33 deepseek_v2.py: q_a_proj and kv_a_proj_with_mqa (DeepSeekV2FusedQkvAProjLinear,
    disable_tp) and the MoE gate (GateLinear, a ReplicatedLinear) are built whole on each TP
    rank. DeepSeek-V3: q_a 7,168 × 1,536 + kv_a 7,168 × (512 + 64) = 15,138,816 parameters a
    layer × 61 = 923,467,776, at fp8 with its block scales (+ 1/4096): 923,693,232 B; the
    gate 7,168 × 256 × 58 MoE layers = 106,430,464 parameters, unquantized (bfloat16):
    212,860,928 B. Before, both were divided by TP like the rest: 8 GPUs held 1/8 each."""
    parts = _parts(_plan(DSV3, tensor_parallel_size=8))
    assert parts["attn_unsharded"]["gpus"] == 1
    assert abs(parts["attn_unsharded"]["per_gpu"] - 923_693_232) <= 1  # a ceiling's byte
    assert parts["router"] == {"bytes": 212_860_928, "gpus": 1, "per_gpu": 212_860_928}
    assert parts["rest"]["gpus"] == 8


def test_a_dense_model_has_no_experts_to_split() -> None:
    data = _plan(LLAMA, data_parallel_size=4, enable_expert_parallel=True)
    assert "weights_per_gpu" not in data


@pytest.mark.parametrize(("engine", "words"), [
    ("native", "does not model expert parallelism"),
    ("sglang", "SGLang's expert parallelism is --ep-size")])
def test_other_layouts_refuse_expert_parallel(engine: str, words: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", str(DSV3), "--gpu", "H200", "--engine", engine, "-dp", "8",
                 "--enable-expert-parallel", "--max-model-len", "32768"])
    err = capsys.readouterr().err
    assert code == 2
    assert words in err and "Traceback" not in err


# DeepSeek-V3's MLA attention per layer (config: hidden 7168, q_lora_rank 1536, kv_lora_rank
# 512, 128 heads, qk_nope 128 + qk_rope 64, v_head 128): q_a 7168 × 1536 + q_b 1536 × 128 ×
# 192 + kv_a 7168 × (512 + 64) + kv_b 512 × 128 × (128 + 128) + o 128 × 128 × 7168
# = 187,105,280 weights × 61 layers, fp8 (+ 1/4096 for the block scales).
DSV3_ATTN_PARAMS = (7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256
                    + 128 * 128 * 7168) * 61
DSV3_ATTN_BYTES = DSV3_ATTN_PARAMS + DSV3_ATTN_PARAMS // 4096  # 11,416,208,560
DSV3_EMBED_BYTES = 129280 * 7168 * 2  # vocab × hidden at bfloat16: 1,853,358,080
# Of it, q_a and kv_a (7,168 × (1,536 + 576) × 61 = 923,467,776 weights + 1/4096) are whole
# on every TP rank in both engines (plan/tp_replicated.py REPLICATED_ON_TP): 923,693,232 B.
DSV3_UNSHARDED_BYTES = 923_467_776 + 923_467_776 // 4096
DSV3_ROUTER_BYTES = 7168 * 256 * 58 * 2  # the gates, bfloat16: 212,860,928


def test_sglang_dp_attention_holds_attention_whole_on_each_gpu(
        capsys: pytest.CaptureFixture[str]) -> None:
    """SGLang --tp 8 --dp 8 --enable-dp-attention: attn_tp = 1, so attention and the input
    embedding are whole on every GPU (deepseek_v2.py parallel_group "attn_tp",
    get_embedding_tp_kwargs), the rest over the 8 GPUs; --ep-size 8 = --tp-size: the
    experts' bytes are the TP slices'. The MLA down-projections and the gates are whole on
    every GPU under any TP (ReplicatedLinear, MoEGate)."""
    code = main(["plan", "--gpu", "H200", "--json", "--", "python", "-m",
                 "sglang.launch_server", "--model-path", str(DSV3), "--tp", "8", "--dp", "8",
                 "--enable-dp-attention", "--ep-size", "8", "--context-length", "32768"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    parts = data["weights_per_gpu"]["parts"]
    sharded = DSV3_ATTN_BYTES - DSV3_UNSHARDED_BYTES
    assert parts["attn"] == {"bytes": sharded, "gpus": 1, "per_gpu": sharded}
    assert parts["attn_unsharded"]["gpus"] == 1
    assert abs(parts["attn_unsharded"]["per_gpu"] - DSV3_UNSHARDED_BYTES) <= 1
    assert parts["embed"] == {"bytes": DSV3_EMBED_BYTES, "gpus": 1,
                              "per_gpu": DSV3_EMBED_BYTES}
    assert parts["router"]["per_gpu"] == DSV3_ROUTER_BYTES
    assert parts["rest"]["gpus"] == 8
    assert parts["rest"]["per_gpu"] == -(-parts["rest"]["bytes"] // 8)
    weights = next(ln for ln in data["budget"] if ln["key"] == "weights")
    assert weights["bytes"] == sum(p["per_gpu"] for p in parts.values())
    assert data["totals"]["attention_dp_groups"] == 8
    # Without DP attention, --dp 8 is 8 replicas of TP 8: attention divided by TP, but for
    # the parts every TP rank holds whole.
    code = main(["plan", "--gpu", "H200", "--json", "--", "python", "-m",
                 "sglang.launch_server", "--model-path", str(DSV3), "--tp", "8",
                 "--context-length", "32768"])
    plain = json.loads(capsys.readouterr().out)
    assert code == 0 and set(plain["weights_per_gpu"]["parts"]) == {
        "attn_unsharded", "router", "rest"}


def test_the_serve_line_plans_dp_with_expert_parallel(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    if not DSV3.is_file():  # the CLI answers a missing file with exit 2, not an exception
        from oracle_cases import SHARED_MISSING

        pytest.skip(SHARED_MISSING)
    code = main(["plan", "--engine", "vllm==0.33", "--gpu", "H200", "--json", "--", "vllm",
                 "serve", str(DSV3), "-dp", "8",
                 "--enable-expert-parallel", "--max-model-len", "32768", "--max-num-seqs",
                 "256"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    direct = _plan(DSV3, data_parallel_size=8, enable_expert_parallel=True, max_num_seqs=256)
    assert data["kv_cache_tokens"] == direct["kv_cache_tokens"]
    assert data["weights_per_gpu"] == direct["weights_per_gpu"]

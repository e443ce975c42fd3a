"""vLLM launch options, planned by hand arithmetic from the configs' own sizes: LoRA slots
(``lora``), online quantization (the weights line), ``--cpu-offload-gb`` (``cpu_offload``) and
the CPU KV tier (``kv_offload``); each refusal for a stated reason. Rules: the modules'
docstrings (plan/engines/vllm/{lora,online_quant,offload}.py) cite vLLM's source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kvledger.errors import PlanError
from kvledger.plan.api import plan_model
from kvledger.plan.engines.vllm.launch import VllmLaunch
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PlanResult

LLAMA = "meta-llama/Meta-Llama-3.1-8B"  # hidden 4096, 32 heads, 8 KV heads, 14336, 32 layers
QWEN2 = "Qwen/Qwen2.5-7B"  # hidden 3584, 28 heads, 4 KV heads, 18944, 28 layers
CONFIGS = Path(__file__).resolve().parents[2].parent / "shared" / "configs"  # real configs
QWEN3_MOE = str(CONFIGS / "Qwen--Qwen3-30B-A3B.json")


def plan(model: str = LLAMA, launch: VllmLaunch | None = None, *,
         gpu_override: str = "H100-80GB", **kw: Any) -> PlanResult:
    kw.setdefault("max_model_len", 8192)
    kw.setdefault("engine", "vllm==0.33")  # the release these numbers are worked for
    return plan_model(model, PlanRequest(gpu=gpu_override, vllm_launch=launch, **kw))


def line(result: PlanResult, key: str) -> int:
    found = result.budget.line(key)
    assert found is not None, key
    return found.bytes


def label(result: PlanResult, key: str) -> str:
    found = result.budget.line(key)
    assert found is not None, key
    return f"{found.label} ({found.basis})"


# -- LoRA ------------------------------------------------------------------------------------

# Llama-3.1-8B, max_loras L = 4, rank r = 64, bf16, TP 1 (elements; q 4096, k = v 1024):
#   qkv_proj      lora_a 3 × 4×64×4096 = 3,145,728      lora_b 4×(4096+1024+1024)×64 = 1,572,864
#   o_proj        lora_a 4×64×4096     = 1,048,576      lora_b 4×4096×64             = 1,048,576
#   gate_up_proj  lora_a 2 × 4×64×4096 = 2,097,152      lora_b 4×(2×14336)×64        = 7,340,032
#   down_proj     lora_a 4×64×14336    = 3,670,016      lora_b 4×4096×64             = 1,048,576
#   one layer: 20,971,520; × 32 layers = 671,088,640
#   embed_tokens  lora_a 4×128256×64 = 32,833,536 + lora_b 4×4096×64 = 1,048,576 = 33,882,112
#   lm_head       lora_a 4×64×4096 = 1,048,576 + lora_b 4×128256×64 = 32,833,536 = 33,882,112
#   738,852,864 elements × 2 B = 1,477,705,728 B.
LLAMA_L4_R64 = 1_477_705_728


def test_lora_slots_are_a_budget_line_taken_from_the_kv_budget() -> None:
    plain = plan()
    lora = plan(launch=VllmLaunch(enable_lora=True, max_loras=4, max_lora_rank=64))
    assert line(lora, "lora") == LLAMA_L4_R64
    assert label(lora, "lora").endswith("(exact)")
    assert line(lora, "kv_budget") == line(plain, "kv_budget") - LLAMA_L4_R64
    assert line(lora, "weights") == line(plain, "weights")
    keys = [ln.key for ln in lora.budget.lines]
    assert keys.index("lora") == keys.index("weights") + 1


def test_lora_under_tensor_parallelism_and_fully_sharded() -> None:
    # TP 2 per rank: q 2048, k = v 512, o_proj in 2048, intermediate 7168.
    #   qkv 3×4×64×4096 + 4×(2048+512+512)×64 = 3,145,728 + 786,432   = 3,932,160
    #   o   4×64×2048 + 4×4096×64               = 524,288 + 1,048,576   = 1,572,864
    #   gate_up 2×4×64×4096 + 4×(2×7168)×64     = 2,097,152 + 3,670,016 = 5,767,168
    #   down 4×64×7168 + 4×4096×64              = 1,835,008 + 1,048,576 = 2,883,584
    #   14,155,776 × 32 = 452,984,832 + embedding and head (not split) 67,764,224
    #   = 520,749,056 × 2 B = 1,041,498,112.
    tp2 = plan(launch=VllmLaunch(enable_lora=True, max_loras=4, max_lora_rank=64),
               tensor_parallel_size=2)
    assert line(tp2, "lora") == 1_041_498_112
    # Fully sharded: lora_a of column-parallel layers at rank 64 / 2 = 32, lora_b of
    # row-parallel layers at 4096 / 2 = 2048 rows.
    #   qkv 3×4×32×4096 + 786,432 = 2,359,296;  o 524,288 + 4×2048×64 = 1,048,576
    #   gate_up 2×4×32×4096 + 3,670,016 = 4,718,592;  down 1,835,008 + 524,288 = 2,359,296
    #   10,485,760 × 32 = 335,544,320 + 67,764,224 = 403,308,544 × 2 B = 806,617,088.
    sharded = plan(launch=VllmLaunch(enable_lora=True, max_loras=4, max_lora_rank=64,
                                     fully_sharded_loras=True), tensor_parallel_size=2)
    assert line(sharded, "lora") == 806_617_088


def test_qwen2_wraps_no_embedding() -> None:
    # Qwen2ForCausalLM lists no embedding_modules: only the linear layers. L 1, r 16, bf16:
    #   qkv 3×16×3584 + 16×(3584+512+512) = 172,032 + 73,728 = 245,760
    #   o 16×3584 + 3584×16 = 114,688;  gate_up 2×16×3584 + 2×18944×16 = 720,896
    #   down 16×18944 + 3584×16 = 360,448;  1,441,792 × 28 layers × 2 B = 80,740,352.
    result = plan(QWEN2, VllmLaunch(enable_lora=True))
    assert line(result, "lora") == 80_740_352
    assert "wraps no embedding" in label(result, "lora")


def test_lora_dtype_and_cpu_loras() -> None:
    # float16 stacks are the same width as bfloat16; max_cpu_loras holds CPU memory only.
    same = plan(launch=VllmLaunch(enable_lora=True, max_loras=4, max_lora_rank=64,
                                  lora_dtype="float16", max_cpu_loras=32))
    assert line(same, "lora") == LLAMA_L4_R64


def test_lora_on_a_mixture_of_experts() -> None:
    # Qwen3-30B-A3B (hidden 2048, 32 heads, 4 KV heads, head_dim 128, 128 experts of 768, 48
    # layers, vocab 151936) at TP 2, L 2, r 16; per rank q 2048, k = v 256, experts' I 384:
    #   qkv 3×2×16×2048 + 2×(2048+256+256)×16 = 278,528 × 48 × 2 B = 26,738,688
    #   o 2×16×2048 + 2×2048×16 = 131,072 × 48 × 2 B = 12,582,912
    #   router 2×16×2048 + 2×128×16 = 69,632 × 48 × 2 B = 6,684,672
    #   experts w13_a 2×2×128×16×2048 = 16,777,216, w2_a 2×128×16×384 = 1,572,864,
    #     w13_b 2×2×128×384×16 = 3,145,728, w2_b 2×128×2048×16 = 8,388,608:
    #     29,884,416 × 48 × 2 B = 2,868,903,936
    #   embedding and head 2 × (2×151936×16 + 2×2048×16) × 2 B = 19,709,952
    #   = 2,934,620,160 B, estimated (a MoE backend may pad the experts' intermediate size).
    result = plan(QWEN3_MOE, VllmLaunch(enable_lora=True, max_loras=2),
                  tensor_parallel_size=2, gpu_override="H200")
    assert line(result, "lora") == 2_934_620_160
    assert label(result, "lora").endswith("(estimated)")


@pytest.mark.parametrize(("model", "launch", "kw", "why"), [
    (str(CONFIGS / "deepseek-ai--DeepSeek-V2-Lite.json"), VllmLaunch(enable_lora=True), {},
     "DeepseekV2ForCausalLM"),
    (LLAMA, VllmLaunch(enable_lora=True, max_lora_rank=1, fully_sharded_loras=True),
     {"tensor_parallel_size": 2}, "not divisible by 2"),
])
def test_lora_refused_for_a_stated_reason(model: str, launch: VllmLaunch, kw: dict[str, Any],
                                          why: str) -> None:
    with pytest.raises(PlanError, match=why):
        plan(model, launch, **kw)


@pytest.mark.parametrize(("kw", "why"), [
    ({"max_lora_rank": 48}, "MaxLoRARanks"),
    ({"max_loras": 4, "max_cpu_loras": 2}, r"max_cpu_loras \(2\) must be >= max_loras \(4\)"),
    ({"lora_dtype": "float32"}, "lora_dtype must be one of"),
    ({"max_loras": 0}, "max_loras must be >= 1"),
    ({"kv_offloading_size": 0}, "kv_offloading_size must be > 0"),
    ({"cpu_offload_gb": -1}, "cpu_offload_gb must be >= 0"),
])
def test_launch_values_checked_as_vllm_checks_them(kw: dict[str, Any], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        VllmLaunch(**kw)


# -- online quantization ------------------------------------------------------------------

# Llama-3.1-8B parameters: embedding and LM head 2 × 128256 × 4096 = 1,050,673,152; norms
# 32 × 2 × 4096 + 4096 = 266,240; linear layers per layer 6144×4096 + 4096×4096 + 28672×4096
# + 4096×14336 = 218,103,808, × 32 = 6,979,321,856.
DENSE_BF16 = (1_050_673_152 + 266_240) * 2  # 2,101,878,784 B stay in bfloat16
LINEAR = 6_979_321_856


def test_online_fp8_stores_linear_layers_in_one_byte() -> None:
    result = plan(launch=VllmLaunch(quantization="fp8"))
    assert line(result, "weights") == DENSE_BF16 + LINEAR == 9_081_200_640
    assert "online fp8_per_tensor" in label(result, "weights")
    assert result.kv_cache_dtype == plan().kv_cache_dtype  # KV unaffected


def test_online_fp8_per_block_adds_a_float32_scale_per_128x128_block() -> None:
    # 6,979,321,856 / 16,384 = 425,984 blocks × 4 B = 1,703,936 B of scales.
    result = plan(launch=VllmLaunch(quantization="fp8_per_block"))
    assert line(result, "weights") == DENSE_BF16 + LINEAR + 1_703_936


def test_a_checkpoints_own_method_changes_nothing_another_is_refused() -> None:
    fp8 = str(CONFIGS / "Qwen--Qwen3-8B-FP8.json")
    assert line(plan(fp8, VllmLaunch(quantization="fp8")), "weights") == \
        line(plan(fp8), "weights")
    with pytest.raises(PlanError, match="vLLM refuses a method other than the checkpoint"):
        plan(fp8, VllmLaunch(quantization="fp8_per_block"))


@pytest.mark.parametrize(("model", "method", "why"), [
    (LLAMA, "mxfp8", "an online method kvledger does not size"),
    (LLAMA, "awq_ish", "not an online quantization method"),
    (str(CONFIGS / "Qwen--Qwen2-VL-7B-Instruct.json"), "fp8", "vision / audio towers"),
])
def test_online_quantization_refused_by_name(model: str, method: str, why: str) -> None:
    with pytest.raises(PlanError, match=why):
        plan(model, VllmLaunch(quantization=method))


# -- CPU offload ------------------------------------------------------------------------------

# Llama-3.1-8B layer at bf16, in named_parameters order: qkv_proj 6144×4096×2 = 50,331,648;
# o_proj 33,554,432; gate_up_proj 234,881,024; down_proj 117,440,512; two norms 2×4096×2 =
# 16,384: 436,224,000 B a layer. 10 GiB = 10,737,418,240 B: 24 layers = 10,469,376,000 B,
# 268,042,240 B still asked; qkv (50,331,648) and o (83,886,080 so far) stay below it,
# gate_up reaches it: 318,767,104 B. Moved: 10,469,376,000 + 318,767,104 = 10,788,143,104 B.
LLAMA_10_GIB_MOVED = 10_788_143_104


def test_cpu_offload_shrinks_the_weights_and_says_by_how_much() -> None:
    plain = plan()
    off = plan(launch=VllmLaunch(cpu_offload_gb=10))
    assert line(off, "cpu_offload") == LLAMA_10_GIB_MOVED
    assert line(off, "weights") == line(plain, "weights") - LLAMA_10_GIB_MOVED
    assert line(off, "kv_budget") == line(plain, "kv_budget") + LLAMA_10_GIB_MOVED


def test_cpu_offload_of_more_than_the_layers_moves_every_layer() -> None:
    # 32 layers × 436,224,000 = 13,959,168,000 B; the embedding and head stay.
    assert line(plan(launch=VllmLaunch(cpu_offload_gb=100)), "cpu_offload") == 13_959_168_000


def test_cpu_offload_counts_qwen2s_bias() -> None:
    # Qwen2.5-7B layer at bf16: qkv 4608×3584×2 = 33,030,144; its bias 4608×2 = 9,216;
    # o 25,690,112; gate_up 271,581,184; down 135,790,592; norms 14,336: 466,115,584 B.
    # 1 GiB: 2 layers 932,231,168, then qkv, bias, o (58,729,472 so far) and gate_up
    # (330,310,656 ≥ 141,510,656 still asked): 932,231,168 + 330,310,656 = 1,262,541,824.
    assert line(plan(QWEN2, VllmLaunch(cpu_offload_gb=1)), "cpu_offload") == 1_262_541_824


@pytest.mark.parametrize(("model", "launch", "kw", "why"), [
    (LLAMA, VllmLaunch(cpu_offload_gb=4), {"pipeline_parallel_size": 2},
     "pipeline parallelism"),
    (LLAMA, VllmLaunch(cpu_offload_gb=4, quantization="fp8"), {}, "online quantization"),
    (QWEN3_MOE, VllmLaunch(cpu_offload_gb=4), {}, "Qwen3MoeForCausalLM"),
])
def test_cpu_offload_refused_for_a_stated_reason(model: str, launch: VllmLaunch,
                                                 kw: dict[str, Any], why: str) -> None:
    with pytest.raises(PlanError, match=why):
        plan(model, launch, **kw)


# -- the CPU KV tier --------------------------------------------------------------------------


def test_kv_offloading_sizes_the_cpu_tier_in_tokens() -> None:
    # One GPU block: 2 × 16 tokens × 8 KV heads × 128 × 2 B × 32 layers = 2,097,152 B (already
    # a multiple of 4,096). 64 GiB / 2 MiB = 32,768 chunks × 16 tokens = 524,288 tokens.
    plain = plan()
    result = plan(launch=VllmLaunch(kv_offloading_size=64))
    assert result.num_blocks == plain.num_blocks  # the GPU plan is unchanged
    assert result.engine_fields["kv_offload"] == {
        "backend": "native", "cpu_bytes": 64 << 30, "chunk_bytes": 2_097_152,
        "chunks": 32_768, "cpu_tokens": 524_288}
    assert result.to_json()["kv_offload"]["cpu_tokens"] == 524_288
    # TP 2: 1 MiB a block per GPU × 2 workers = the same 2 MiB chunk, the same tokens; the
    # size is over all ranks (CacheConfig.kv_offloading_size).
    tp2 = plan(launch=VllmLaunch(kv_offloading_size=64), tensor_parallel_size=2)
    assert tp2.engine_fields["kv_offload"]["cpu_tokens"] == 524_288


def test_kv_offloading_rounds_the_chunk_up_to_a_page() -> None:
    # Qwen2.5-7B: 2 × 16 × 4 × 128 × 2 B × 28 layers = 917,504 B a block = 224 pages exactly;
    # 1.5 GiB = 1,610,612,736 B / 917,504 = 1,755 chunks (1,755.4) × 16 = 28,080 tokens.
    tier = plan(QWEN2, VllmLaunch(kv_offloading_size=1.5)).engine_fields["kv_offload"]
    assert tier["chunk_bytes"] == 917_504 and tier["chunks"] == 1_755
    assert tier["cpu_tokens"] == 28_080


@pytest.mark.parametrize(("model", "launch", "why"), [
    (LLAMA, VllmLaunch(kv_offloading_size=8, kv_offloading_backend="lmcache"), "LMCache"),
    (str(CONFIGS / "google--gemma-2-9b.json"), VllmLaunch(kv_offloading_size=8),
     "2 KV cache groups"),
])
def test_kv_offloading_refused_for_a_stated_reason(model: str, launch: VllmLaunch,
                                                   why: str) -> None:
    with pytest.raises(PlanError, match=why):
        plan(model, launch)


def test_a_given_kv_budget_is_not_changed_by_launch_options() -> None:
    # gpu_worker.determine_available_memory: kv_cache_memory_bytes is the budget itself.
    given = plan_model(LLAMA, PlanRequest(engine="vllm==0.33",
                                          kv_cache_memory_bytes=8 << 30, vllm_launch=VllmLaunch(
        enable_lora=True, cpu_offload_gb=4)))
    assert given.num_blocks == (8 << 30) // 2_097_152 == 4096
    assert any("LoRA slots and --cpu-offload-gb change the weights' memory" in w
               for w in given.warnings)


def test_kv_offloading_of_an_mla_cache() -> None:
    # DeepSeek-V2-Lite: 27 layers × (kv_lora_rank 512 + rope 64) × 2 B × 16 tokens = 497,664 B
    # a block = 121.5 pages → 122 pages = 499,712 B; 16 GiB / 499,712 = 34,379 chunks (34,379.6)
    # × 16 = 550,064 tokens. Over 2 ranks vLLM may keep one replicated copy: refused.
    lite = str(CONFIGS / "deepseek-ai--DeepSeek-V2-Lite.json")
    tier = plan_model(lite, PlanRequest(engine="vllm==0.33",
                                        kv_cache_memory_bytes=8 << 30, vllm_launch=VllmLaunch(
        kv_offloading_size=16))).engine_fields["kv_offload"]
    assert (tier["chunk_bytes"], tier["chunks"], tier["cpu_tokens"]) == (499_712, 34_379,
                                                                         550_064)
    with pytest.raises(PlanError, match="MLA over 2 ranks"):
        plan_model(lite, PlanRequest(engine="vllm==0.33",
                                     kv_cache_memory_bytes=8 << 30, tensor_parallel_size=2,
                                     vllm_launch=VllmLaunch(kv_offloading_size=16)))


def test_moe_lora_with_expert_parallelism_is_refused() -> None:
    import json

    from kvledger.plan.engines.vllm.lora import lora_bytes

    cfg = json.loads(Path(QWEN3_MOE).read_text())
    with pytest.raises(PlanError, match="with expert parallelism"):
        lora_bytes(cfg, VllmLaunch(enable_lora=True), model_dtype="bfloat16", tp=2, pp=1,
                   expert_parallel=True)

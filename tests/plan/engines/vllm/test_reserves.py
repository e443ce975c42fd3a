"""The reserves vLLM's profile run counts, per release (``engines/vllm/reserves.py``), worked by
hand from the configs' own values and the formulas in vLLM's source (cited in that module).

The configs (../shared/configs): DeepSeek-V3 (128 heads, qk_nope_head_dim 128, v_head_dim 128,
kv_lora_rank 512, hidden 7,168, vocab 129,280, 163,840 positions, bfloat16), DeepSeek-V2-Lite
(16 heads, the same head dims, hidden 2,048, vocab 102,400, 163,840 positions), Llama-3.1-8B
(hidden 4,096, intermediate 14,336, vocab 128,256), Qwen2-VL-7B-Instruct (hidden 3,584, a
vision_config).
"""

from __future__ import annotations

import pytest

from kvledger import records
from kvledger.plan.api import plan_model
from kvledger.plan.engines.vllm.releases import v0_32, v0_33
from kvledger.plan.engines.vllm.reserves import (
    ReserveInput,
    activation_line,
    mla_profile_bytes,
    mla_workspace_tokens,
    non_torch_line,
    sampler_bytes,
    topk_topp_buffer_bytes,
    topk_topp_buffer_rows,
    triton_mla_splits,
    triton_mla_workspace_bytes,
)
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS, skip_without_shared

GIB = 1 << 30
MIB = 1 << 20
DSV3_TEXT = {"num_attention_heads": 128, "qk_nope_head_dim": 128, "v_head_dim": 128,
             "kv_lora_rank": 512, "hidden_size": 7168, "vocab_size": 129280}
V2_LITE_TEXT = {"num_attention_heads": 16, "qk_nope_head_dim": 128, "v_head_dim": 128,
                "kv_lora_rank": 512, "hidden_size": 2048, "vocab_size": 102400}


def _inp(text: dict[str, int], **kw: object) -> ReserveInput:
    base: dict[str, object] = dict(text=text, model_dtype="bfloat16", tensor_parallel_size=1,
                                   multi_gpu=False, max_num_seqs=1024,
                                   max_num_batched_tokens=8192, max_model_len=163840)
    base.update(kw)
    return ReserveInput(**base)  # type: ignore[arg-type]


def test_mla_profile_tensor_is_4_gib_for_deepseek_v3_at_tp1() -> None:
    # W = min(max(8 × 163,840, 4 × 1,024 × 64), 65,536) = 65,536 (a multiple of 64);
    # 65,536 × 128 heads × (128 + 128) × 2 B = 4,294,967,296 B = 4 GiB.
    inp = _inp(DSV3_TEXT, mla=True, mla_block_size=64)
    assert mla_workspace_tokens(inp) == 65536
    assert mla_profile_bytes(inp) == 4 * GIB
    # TP 8: 16 heads a rank → 65,536 × 16 × 256 × 2 = 536,870,912 B.
    assert mla_profile_bytes(records.replace(inp, tensor_parallel_size=8)) == 536_870_912


def test_mla_workspace_rows_for_a_short_context() -> None:
    # max_model_len 4,096, 256 sequences, block 64: max(8 × 4,096 = 32,768,
    # 4 × 256 × 64 = 65,536) = 65,536, capped at 65,536. max_model_len 1,000, 8 sequences:
    # max(8,000, 4 × 8 × 64 = 2,048) = 8,000, rounded up to 64: 8,000 = 125 × 64 exactly;
    # 1,001 → 8,008 → 8,064 (126 × 64).
    assert mla_workspace_tokens(_inp(DSV3_TEXT, mla=True, mla_block_size=64,
                                     max_model_len=4096, max_num_seqs=256)) == 65536
    short = _inp(DSV3_TEXT, mla=True, mla_block_size=64, max_model_len=1000, max_num_seqs=8)
    assert mla_workspace_tokens(short) == 8000
    assert mla_workspace_tokens(records.replace(short, max_model_len=1001)) == 8064
    assert mla_profile_bytes(_inp(DSV3_TEXT)) == 0  # not an MLA model: no tensor


def test_sampler_dummy_run() -> None:
    # min(1,024, 8,192) = 1,024 rows × 128,256 × (2 bf16 logits + 4 fp32 copy + 4 softmax
    # + 4 exponential noise) = 1,024 × 128,256 × 14 = 1,838,678,016 B.
    llama = {"hidden_size": 4096, "intermediate_size": 14336, "vocab_size": 128256}
    assert sampler_bytes(_inp(llama)) == 1_838_678_016
    # 256 sequences, 2,048 batched tokens: 256 rows → 256 × 128,256 × 14 = 459,669,504 B.
    assert sampler_bytes(_inp(llama, max_num_seqs=256, max_num_batched_tokens=2048)) == \
        459_669_504
    # The peak is the larger phase: MLP 8,192 × (2 × 14,336 + 4 × 4,096) × 2 = 738,197,504
    # is below the sampler plus the hidden states (8,192 × 4,096 × 2 = 67,108,864):
    # 1,905,786,880 B.
    line, parts = activation_line(_inp(llama))
    assert line.bytes == 1_905_786_880
    assert line.basis == "estimated" and len(parts) == 3


def test_triton_mla_workspace_by_release() -> None:
    # DeepSeek-V2-Lite on an A100 (108 SMs), 256 sequences, no speculation, 163,840 tokens:
    # splits = min(next_pow2(163,840 // 512 = 320) = 512, 2 × 108 = 216) = 216;
    # 256 × 1 × 16 heads × 216 × (512 + 1) × 4 B = 1,815,478,272 B (0.33); 0.32 claims it
    # after the profile: nothing.
    new = _inp(V2_LITE_TEXT, mla=True, mla_backend="TRITON_MLA", sm_count=108, max_num_seqs=256,
               triton_mla_workspace_in_profile=True)
    assert triton_mla_splits(new) == 216
    assert triton_mla_workspace_bytes(new) == 1_815_478_272
    assert triton_mla_workspace_bytes(records.replace(
        new, triton_mla_workspace_in_profile=False)) == 0
    # Without an SM count the cap is not applied: 512 splits, an upper bound.
    assert triton_mla_splits(records.replace(new, sm_count=None)) == 512
    # Two speculative tokens: 256 × 3 decode rows.
    assert triton_mla_workspace_bytes(records.replace(new, num_speculative_tokens=2)) == \
        3 * 1_815_478_272


def test_non_torch_by_release() -> None:
    # 0.32 counts its cuBLAS handles (created after the snapshot, 64 MiB estimated) on top of
    # the 0.25 GiB growth; 0.33 creates them before the snapshot. Both keep the Triton
    # top-k/top-p buffer: an H100's 132 SMs, 1,024 rows → min(next_pow2(132) = 256, 132) = 132
    # rows × 128,256 × 4 B = 67,719,168 B.
    llama = {"hidden_size": 4096, "intermediate_size": 14336, "vocab_size": 128256}
    buffer = 67_719_168
    old, _ = non_torch_line(_inp(llama, sm_count=132))
    new, _ = non_torch_line(_inp(llama, sm_count=132, cublas_handles_before_snapshot=True))
    assert (old.bytes, new.bytes) == (GIB // 4 + 64 * MIB + buffer, GIB // 4 + buffer)
    multi, _ = non_torch_line(_inp(llama, sm_count=132, multi_gpu=True,
                                   cublas_handles_before_snapshot=True))
    assert multi.bytes == GIB // 2 + buffer


def test_triton_topk_topp_buffer() -> None:
    # gpt-oss (vocab 201,088) on an H100, 1,024 sequences: P = min(132, 1,024) = 132,
    # min(next_pow2(132) = 256, 132) = 132 rows × 201,088 × 4 B = 106,174,464 B.
    oss = {"hidden_size": 2880, "vocab_size": 201088}
    assert topk_topp_buffer_bytes(_inp(oss, sm_count=132)) == 106_174_464
    # 6 sequences: P = 6, next_pow2(6) = 8 rows: 8 × 201,088 × 4 = 6,434,816 B.
    assert topk_topp_buffer_rows(_inp(oss, sm_count=132, max_num_seqs=6)) == 8
    assert topk_topp_buffer_bytes(_inp(oss, sm_count=132, max_num_seqs=6)) == 6_434_816
    # An unknown GPU: the largest known SM count (RTX PRO 6000, 188) caps the rows:
    # min(next_pow2(188) = 256, 188) = 188 × 201,088 × 4 = 151,218,176 B, an estimate.
    unknown = _inp(oss)
    assert topk_topp_buffer_bytes(unknown) == 151_218_176
    _, parts = non_torch_line(unknown)
    part = next(p for p in parts if p.what.startswith("Triton top-k/top-p"))
    assert (part.bytes, part.basis) == (151_218_176, "estimated")
    assert next(p for p in non_torch_line(_inp(oss, sm_count=132))[1]
                if p.what.startswith("Triton top-k/top-p")).basis == "exact"


def test_cutlass_mla_workspace_in_both_releases() -> None:
    # cutlass_mla.py: SM100Workspace(128 * 1024 * 1024) at import, after the snapshot:
    # 0.25 GiB + 128 MiB (0.33); 0.32 adds its 64 MiB of cuBLAS handles. Both: the Triton
    # top-k/top-p buffer on a B200 (148 SMs): 148 × 102,400 × 4 = 60,620,800 B.
    inp = _inp(V2_LITE_TEXT, mla=True, mla_backend="CUTLASS_MLA", sm_count=148,
               cublas_handles_before_snapshot=True, triton_mla_workspace_in_profile=True)
    assert non_torch_line(inp)[0].bytes == GIB // 4 + 128 * MIB + 60_620_800
    old = records.replace(inp, cublas_handles_before_snapshot=False,
                          triton_mla_workspace_in_profile=False)
    assert non_torch_line(old)[0].bytes == GIB // 4 + 128 * MIB + 64 * MIB + 60_620_800
    # The Triton workspace is Triton MLA's only.
    assert triton_mla_workspace_bytes(inp) == 0


def test_release_profiles_state_the_differences() -> None:
    assert not v0_32.RELEASE.cublas_handles_before_snapshot
    assert not v0_32.RELEASE.triton_mla_workspace_in_profile
    assert v0_33.RELEASE.cublas_handles_before_snapshot
    assert v0_33.RELEASE.triton_mla_workspace_in_profile


def _budget(config: str, engine: str, gpu: str) -> dict[str, dict[str, object]]:
    skip_without_shared()
    data = plan_model(str(CONFIGS / config), PlanRequest(engine=engine, gpu=gpu)).to_json()
    return {ln["key"]: ln for ln in data["budget"]} | {"_": {"bytes": data["available_bytes"]}}


def test_the_releases_differ_on_deepseek_v2_lite_on_an_a100() -> None:
    # An A100 is SM80: the dense MLA backend is TRITON_MLA (mla_backends.py). The serve tier
    # on an A100: 256 sequences, 2,048 batched tokens. Both keep the Triton top-k/top-p
    # buffer: 108 SMs, P = min(108, 256) = 108, min(next_pow2(108) = 128, 108) = 108 rows ×
    # 102,400 × 4 = 44,236,800 B. non_torch: 0.32 = 0.25 GiB + 64 MiB + 44,236,800 =
    # 379,781,120 B; 0.33 = 0.25 GiB + the workspace 1,815,478,272 + 44,236,800 =
    # 2,128,150,528 B.
    old = _budget("deepseek-ai--DeepSeek-V2-Lite.json", "vllm==0.32", "A100-80GB")
    new = _budget("deepseek-ai--DeepSeek-V2-Lite.json", "vllm==0.33", "A100-80GB")
    assert old["non_torch"]["bytes"] == 379_781_120
    assert new["non_torch"]["bytes"] == 2_128_150_528
    # The MLA profile tensor is the same in both: 65,536 × 16 × 256 × 2 = 536,870,912 B, the
    # forward's peak (MLP 2,048 × (2 × 10,944 + 4 × 2,048) × 2 = 123,207,680 is smaller; the
    # sampler 256 × 102,400 × 14 = 367,001,600 + hidden 2,048 × 2,048 × 2 = 8,388,608 too).
    assert old["activation_peak"]["bytes"] == new["activation_peak"]["bytes"] == 536_870_912
    assert old["_"]["bytes"] - new["_"]["bytes"] == 2_083_913_728 - 335_544_320


def test_the_releases_differ_by_the_cublas_handles_on_a_dense_model() -> None:
    old = _budget("meta-llama--Meta-Llama-3.1-8B.json", "vllm==0.32", "H100-80GB")
    new = _budget("meta-llama--Meta-Llama-3.1-8B.json", "vllm==0.33", "H100-80GB")
    assert new["_"]["bytes"] - old["_"]["bytes"] == 64 * MIB


def test_a_multimodal_model_counts_the_encoder_outputs() -> None:
    # Qwen2-VL-7B on an H100 (serve tier 8,192 batched tokens): the encoder cache's dummy
    # outputs, 8,192 × 3,584 × 2 = 58,720,256 B, a part of the activation line.
    lines = _budget("Qwen--Qwen2-VL-7B-Instruct.json", "vllm", "H100-80GB")
    parts = lines["activation_peak"]["parts"]
    assert isinstance(parts, list)
    encoder = [p for p in parts if str(p["what"]).startswith("encoder cache")]
    assert [p["bytes"] for p in encoder] == [58_720_256]


@pytest.mark.parametrize("key", ["activation_peak_bytes", "cuda_graph_bytes", "non_torch_bytes"])
def test_a_given_reserve_is_taken_as_given(key: str) -> None:
    skip_without_shared()
    request = PlanRequest(gpu="H100-80GB", **{key: 12345})
    data = plan_model(str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"), request).to_json()
    line = {"activation_peak_bytes": "activation_peak", "cuda_graph_bytes": "cuda_graphs",
            "non_torch_bytes": "non_torch"}[key]
    found = next(ln for ln in data["budget"] if ln["key"] == line)
    assert (found["bytes"], found["basis"], "parts" in found) == (12345, "given", False)


def test_the_profile_tensors_take_the_dtype_vllm_runs() -> None:
    # The shared gpt-oss-120b config states no dtype (transformers would load float32); vLLM
    # downcasts to bfloat16, and so do the profile tensors. An H100's serve tier: 1,024 rows ×
    # 201,088 × (2 + 12) = 2,882,797,568 B of sampler + hidden states 8,192 × 2,880 × 2 =
    # 47,185,920 B = 2,929,983,488 B, above the MLP transient 8,192 × (2 × 4 × 2,880 + 4 ×
    # 2,880) × 2 = 566,231,040 B (float32 would have made them 3,294,625,792 + 94,371,840).
    lines = _budget("openai--gpt-oss-120b.json", "vllm", "H100-80GB")
    assert lines["activation_peak"]["bytes"] == 2_929_983_488



def test_a_reserve_without_its_config_key_is_refused_not_zero() -> None:
    # The sampler's rows × vocab tensors need vocab_size: 1,024 rows × 102,400 × (2 + 12) B
    # = 1,468,006,400 B with it; without it the reserve would silently be 0 B.
    from kvledger.errors import PlanError

    assert sampler_bytes(_inp(V2_LITE_TEXT)) == 1_468_006_400
    missing = {k: v for k, v in V2_LITE_TEXT.items() if k != "vocab_size"}
    with pytest.raises(PlanError, match="vocab_size"):
        sampler_bytes(_inp(missing))

"""SGLang 0.5.23's DeepSeek sparse attention kernel pair (``--dsa-prefill-backend`` /
``--dsa-decode-backend``) and DSA on ROCm (``plan/engines/sglang/dsa_backends.py``,
``settings.py``), worked by hand from GLM-5's catalog config. Before, DSA on ROCm and every
line naming the pair were refused, so every planned number below failed.

GLM-5 (``GlmMoeDsaForCausalLM``): 78 layers, kv_lora_rank 512, qk_rope_head_dim 64,
index_head_dim 128, no index_kpool (1), every layer keeps its own index keys. Per token:

* the latent row: bf16 (512 + 64) × 2 = 1,152 B a layer; fp8 raw (calculate_mla_kv_cache_dim,
  trtllm / ROCm kernels / both tilelang) 576 B; fp8 scaled 512 + 512 // 128 × 4 + 64 × 2 = 656 B;
* the indexer: ceil((128 + 128 // 128 × 4) / 1) = 132 B a layer (_compute_dsa_indexer_cell_size);
* so a cell of 78 × (1,152 + 132) = 100,152 B (bf16), 78 × (576 + 132) = 55,224 B (fp8 raw),
  78 × (656 + 132) = 61,464 B (fp8 scaled). MLA rows are not split by TP.

At a 10 GiB (10,737,418,240 B) budget: 10 GiB // 100,152 = 107,211 tokens; // 55,224 = 194,433;
// 61,464 = 174,694. In 64-token pages (64 × index_kpool): 107,200 / 194,432 / 174,656.

No oracle answer: the SGLang oracle (``../shared/oracles/sglang-tool/README.md``) runs SGLang's
CPU platform; its ``--emulate-cuda-capability`` patches ``torch.cuda.get_device_capability``
only, so ``get_platform().is_hip`` (which picks the ROCm pair, page and row) stays false, and it
takes no ``--dsa-*`` flag. Its recorded CUDA cases (``deepseek-v32-sm90-fp8``, scaled;
``deepseek-v32-sm100``, raw) are the default pairs these rules keep, and still pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.plan.api import plan_model
from kvledger.plan.engines.sglang.dsa_backends import capability_major
from kvledger.plan.engines.sglang.model import SglangLayoutError
from kvledger.plan.engines.sglang.options import SglangOptions
from kvledger.plan.request import PlanRequest

GIB = 1 << 30
ENGINE = "sglang==0.5.23"
GLM5 = "zai-org/GLM-5"


def plan(gpu: str, *, prefill: str | None = None, decode: str | None = None,
         kv_dtype: str = "auto", page: int | None = None, model: str = GLM5,
         tp: int = 8) -> tuple[Any, dict[str, Any]]:
    request = PlanRequest(
        engine=ENGINE, gpu=gpu, tensor_parallel_size=tp, kv_cache_memory_bytes=10 * GIB,
        kv_cache_dtype=kv_dtype, block_size=page,
        sglang=SglangOptions(dsa_prefill_backend=prefill, dsa_decode_backend=decode))
    result = plan_model(model, request)
    return result, result.engine_fields


def test_hip_capability_major_is_the_gfx_major() -> None:
    # torch.cuda.get_device_capability on ROCm is HIP's device major.minor: gfx942 → 9.4.
    assert [capability_major(p) for p in ("gfx942", "gfx950", "gfx90a", "gfx1100")] == \
        [9, 9, 9, 11]
    assert [capability_major(p) for p in ("sm90", "sm100", "sm120", "sm89")] == [9, 10, 12, 8]


def test_glm5_on_mi300x_tilelang_pair_and_default_pair_size_the_same_pool() -> None:
    # MI300X (gfx942): _dsa_kv_cache_dtype_default at major 9 → bfloat16; the unset pair is
    # triton / triton (is_hip); page 1 (no aiter preshuffle: SGLANG_USE_AITER unset).
    # bf16: 100,152 B a token whatever the pair → 107,211 tokens.
    default, fields = plan("MI300X")
    resolved = fields["sglang_resolved"]
    assert resolved["dsa_backends"].startswith("prefill triton, decode triton (ROCm default")
    assert "DSA default on gfx942" in resolved["kv_cache_dtype_source"]
    assert (default.block_size, fields["cell_bytes_per_token"]) == (1, 100_152)
    assert default.kv_cache_tokens == 107_211
    tilelang, fields = plan("MI300X", prefill="tilelang", decode="tilelang")
    assert fields["sglang_resolved"]["dsa_backends"].startswith(
        "prefill tilelang, decode tilelang (given")
    assert (tilelang.block_size, fields["cell_bytes_per_token"]) == (1, 100_152)
    assert tilelang.kv_cache_tokens == 107_211
    # fp8: on HIP tilelang, triton and aiter all read the raw row, so both pairs keep 576 B:
    # 55,224 B a token → 194,433 tokens.
    for pair in ((None, None), ("tilelang", "tilelang"), ("aiter", None)):
        result, fields = plan("MI300X", prefill=pair[0], decode=pair[1], kv_dtype="fp8_e4m3")
        assert (fields["cell_bytes_per_token"], result.kv_cache_tokens) == (55_224, 194_433)


def test_glm5_on_h200_fp8_the_tilelang_pair_drops_the_scales() -> None:
    # Hopper fp8: the unset pair is flashmla_kv / flashmla_kv, the scaled row: 61,464 B →
    # 174,694 tokens → 174,656 in 64-token pages. Both tilelang: the raw row, 55,224 B →
    # 194,432 tokens in pages.
    default, fields = plan("H200", kv_dtype="fp8_e4m3")
    assert fields["sglang_resolved"]["dsa_backends"].startswith(
        "prefill flashmla_kv, decode flashmla_kv")
    assert (fields["cell_bytes_per_token"], default.kv_cache_tokens) == (61_464, 174_656)
    tilelang, fields = plan("H200", prefill="tilelang", decode="tilelang", kv_dtype="fp8_e4m3")
    assert (fields["cell_bytes_per_token"], tilelang.kv_cache_tokens) == (55_224, 194_432)
    assert any("raw kv_lora_rank + rope layout" in w for w in tilelang.warnings)
    # One trtllm side is enough for the raw row.
    _, fields = plan("H200", decode="trtllm", kv_dtype="fp8_e4m3")
    assert fields["cell_bytes_per_token"] == 55_224


def test_glm5_on_b200_a_given_flashmla_pair_keeps_the_scaled_row() -> None:
    # Blackwell: auto → fp8 (major 10), pair trtllm → raw 55,224 B (as before). A given
    # flashmla_kv pair keeps scales: 61,464 B → 174,656 tokens.
    _, fields = plan("B200")
    assert fields["cell_bytes_per_token"] == 55_224
    result, fields = plan("B200", prefill="flashmla_kv", decode="flashmla_kv")
    assert (fields["cell_bytes_per_token"], result.kv_cache_tokens) == (61_464, 174_656)


def test_glm5_fp8_on_sm12x_takes_flashinfer_sparse_mla_and_its_scaled_row() -> None:
    # _dsa_split_backend_resolution: GlmMoeDsaForCausalLM, major 12, fp8, not HIP →
    # flashinfer_sparse_mla (scaled row, 61,464 B); kvledger planned the raw row (major >= 10)
    # before. auto → fp8 (major 12 >= 10).
    result, fields = plan("RTX-PRO-6000")
    assert fields["sglang_resolved"]["dsa_backends"].startswith(
        "prefill flashinfer_sparse_mla, decode flashinfer_sparse_mla")
    assert (fields["cell_bytes_per_token"], result.kv_cache_tokens) == (61_464, 174_656)


def test_rocm_dsa_page_is_one_or_the_preshuffle_page() -> None:
    # A given 64 (= 64 × index_kpool) plans the aiter preshuffle path: 107,211 // 64 × 64.
    result, _ = plan("MI300X", page=64)
    assert (result.block_size, result.kv_cache_tokens) == (64, 107_200)
    with pytest.raises(SglangLayoutError, match="page size 128 for DSA on ROCm"):
        plan("MI300X", page=128)


@pytest.mark.parametrize(("gpu", "prefill", "decode", "kv_dtype", "words"), [
    # Values whose platform path is not read: refused by name.
    ("MI300X", "fa3", None, "auto", "--dsa-prefill-backend fa3 on ROCm"),
    ("MI300X", None, "flashmla_kv", "auto", "--dsa-decode-backend flashmla_kv on ROCm"),
    ("H200", "aiter", None, "auto", "--dsa-prefill-backend aiter on sm90"),
    ("H200", None, "intel_xpu", "auto", "--dsa-decode-backend intel_xpu on sm90"),
    # SGLang's own refusals (_check_dsa_backend_constraints).
    ("H200", "triton", None, "auto", "only supported on ROCm/HIP"),
    ("H200", "tilelang", None, "fp8_e4m3", "both DSA backends to be tilelang"),
    ("A100-80GB", "tilelang", "tilelang", "fp8_e4m3", "requires SM89 or newer"),
    ("H200", "fastest", None, "auto", "no such choice"),
])
def test_unread_or_refused_values_stay_refused(gpu: str, prefill: str | None,
                                               decode: str | None, kv_dtype: str,
                                               words: str) -> None:
    with pytest.raises(SglangLayoutError, match=words):
        plan(gpu, prefill=prefill, decode=decode, kv_dtype=kv_dtype)


def test_dsa_flags_on_a_model_without_dsa_are_refused() -> None:
    with pytest.raises(SglangLayoutError, match="only for DeepSeek sparse-attention models"):
        plan("H200", prefill="flashmla_kv", model="meta-llama/Llama-3.1-8B", tp=1)

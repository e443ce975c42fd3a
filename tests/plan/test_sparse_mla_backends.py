"""The sparse MLA (DSA) backend an SM10x GPU picks, and the block stride it asks for.

Expected values are read from vLLM 0.33's source (the same in 0.32 but FA4): ``platforms/cuda.py
_get_backend_priorities`` (capability 10: a quantized cache tries FLASHINFER_MLA_SPARSE then
FLASHMLA_SPARSE; a float cache with > 16 heads a rank FLASHMLA_SPARSE then
FLASHINFER_MLA_SPARSE, with <= 16 FLASH_ATTN_MLA_SPARSE_FA4 first) and each backend's
``supports_combination`` / ``customize_spec`` under ``v1/attention/backends/mla/``
(``sparse_mla_backends.py`` cites them); FA4 is new in 0.33. The GLM-5.3-Flash and the
DeepSeek-V3.2 fp8 numbers are also the 0.33 oracle's (``tests/oracles/vllm-0.33/
vllm-0.33-new-behaviour.jsonl``, ``--gpu-capability 10.0``).
"""

from __future__ import annotations

import json

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.errors import VllmRefusesToStart
from kvledger.plan.engines.vllm.sparse_mla_backends import (
    FA4_MLA_SPARSE,
    FLASHINFER_MLA_SPARSE,
    FLASHMLA_SPARSE,
    choose_sm10x,
)
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS

# DeepSeek-V3.2: 512 latent + 64 RoPE = 576, qk_nope 128, index_topk 2048.
DSV32 = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
         "index_topk": 2048}
# GLM-5.3-Flash: no RoPE, head 512 = kv_lora_rank, qk_nope 256.
GLM = {"kv_lora_rank": 512, "qk_rope_head_dim": 0, "qk_nope_head_dim": 256, "index_topk": 2048}


@pytest.mark.parametrize(("text", "head", "dtype", "heads", "name", "ds", "rows"), [
    # FlashMLA-sparse takes head 512 on SM90 only, FA4 576 only: FlashInfer, 32-row pages.
    (GLM, 512, "auto", 64, FLASHINFER_MLA_SPARSE, False, 32),
    (GLM, 512, "auto", 16, FLASHINFER_MLA_SPARSE, False, 32),
    # fp8: FlashInfer first, standard one-byte rows (never fp8_ds_mla).
    (GLM, 512, "fp8", 64, FLASHINFER_MLA_SPARSE, False, 32),
    (DSV32, 576, "fp8", 128, FLASHINFER_MLA_SPARSE, False, 32),
    # bf16, 128 heads a rank: FlashMLA-sparse first, whole rows.
    (DSV32, 576, "auto", 128, FLASHMLA_SPARSE, False, 1),
    # bf16, 16 heads a rank (TP 8): FA4, a FlashInfer backend with MultipleOf(64) kernels.
    (DSV32, 576, "bfloat16", 16, FA4_MLA_SPARSE, False, 64),
    # 12 heads: FA4 wants 8/16/32/64/128, so FlashInfer.
    (DSV32, 576, "auto", 12, FLASHINFER_MLA_SPARSE, False, 32),
])
def test_choice(text: dict[str, int], head: int, dtype: str, heads: int, name: str,
                ds: bool, rows: int) -> None:
    chosen = choose_sm10x(dtype, "bfloat16", text, head, heads)
    assert chosen is not None
    assert (chosen.name, chosen.ds_mla_layout, chosen.alignment_rows) == (name, ds, rows)


def test_vllm_032_has_no_fa4() -> None:
    # 0.32's SM10x list for a float cache at <= 16 heads starts at FLASHINFER_MLA_SPARSE.
    chosen = choose_sm10x("bfloat16", "bfloat16", DSV32, 576, 16, fa4=False)
    assert chosen is not None and (chosen.name, chosen.alignment_rows) == (
        FLASHINFER_MLA_SPARSE, 32)


def test_flashmla_sparse_packs_fp8_when_flashinfer_refuses() -> None:
    # qk_nope 96 is outside FlashInfer's [128, 192]: FlashMLA-sparse, fp8 → fp8_ds_mla
    # (_canonicalize_sparse_mla_kv_cache_dtype), whole 656-byte rows on SM100.
    chosen = choose_sm10x("fp8", "bfloat16", {**DSV32, "qk_nope_head_dim": 96}, 576, 128)
    assert chosen is not None
    assert (chosen.name, chosen.ds_mla_layout, chosen.alignment_rows) == (
        FLASHMLA_SPARSE, True, 1)


def test_no_backend() -> None:
    # fp8_e5m2 is in neither list; a no-RoPE model with qk_nope 128 fits no FlashInfer shape.
    assert choose_sm10x("fp8_e5m2", "bfloat16", DSV32, 576, 128) is None
    assert choose_sm10x("auto", "bfloat16", {**GLM, "qk_nope_head_dim": 128}, 512, 64) is None


def _glm(kv_cache_dtype: str, gpu: str | None) -> tuple[int, int, int]:
    path = CONFIGS / "zai-org--GLM-5.3-Flash.json"
    if not path.is_file():
        pytest.skip("GLM-5.3-Flash's config is in ../shared/configs")
    request = PlanRequest(engine="vllm", kv_cache_memory_bytes=8 << 30, max_model_len=32768,
                          kv_cache_dtype=kv_cache_dtype, gpu=gpu)
    plan = plan_vllm(derive_model(json.loads(path.read_text())), request, 8 << 30)
    return plan.block_size, plan.bytes_per_block, plan.num_blocks


def test_glm_53_flash_bf16_on_sm100_block_stride() -> None:
    # Block 4,352 (as on SM90). The widest group is the 22 MLA-spec layers: 11 indexer pages
    # of 4,352 / 4 rows x 132 B = 143,616 and 11 attention pages of 4,352 x 1,024 B =
    # 4,456,448: 50,600,704 B. Block-outermost layout: rounded to the lcm of the layers'
    # alignments (kv_cache_planning.py _get_kv_cache_bytes_per_block): the indexer's
    # MultipleOf(256) is a 256-token page, 64 rows x 132 = 8,448 B; FlashInfer's 32 rows x
    # 1,024 = 32,768 B; lcm = 2^15 x 33 = 1,081,344; ceil(50,600,704 / 1,081,344) = 47 →
    # 50,823,168 B (SM90's one-row 1,024 B gives lcm 33,792 and 50,620,416 B).
    # 8 GiB / 50,823,168 = 169 blocks.
    assert _glm("bfloat16", "B200") == (4352, 50_823_168, 169)
    assert _glm("bfloat16", None) == (4352, 50_620_416, 169)


def test_fp8_e5m2_refused_on_sm100() -> None:
    path = CONFIGS / "zai-org--GLM-5.3-Flash.json"
    if not path.is_file():
        pytest.skip("GLM-5.3-Flash's config is in ../shared/configs")
    request = PlanRequest(engine="vllm", kv_cache_memory_bytes=8 << 30, max_model_len=32768,
                          kv_cache_dtype="fp8_e5m2", gpu="B200")
    with pytest.raises(VllmRefusesToStart, match="No valid attention backend"):
        plan_vllm(derive_model(json.loads(path.read_text())), request, 8 << 30)


def test_sm10x_choice_without_attention_heads_is_refused() -> None:
    # The sparse MLA backends' limits read the heads a rank holds; a config that states none
    # is refused by name (before: taken as 0 heads, and a backend chosen on that).
    from kvledger.plan.engines.vllm.errors import VllmLayoutError

    path = CONFIGS / "deepseek-ai--DeepSeek-V3.2.json"
    if not path.is_file():
        pytest.skip("DeepSeek-V3.2's config is in ../shared/configs")
    config = json.loads(path.read_text())
    del config["num_attention_heads"]
    request = PlanRequest(engine="vllm", gpu="B200", kv_cache_memory_bytes=8 << 30,
                          max_model_len=8192)
    with pytest.raises(VllmLayoutError, match="needs the config's num_attention_heads"):
        plan_vllm(derive_model(config), request, 8 << 30)


@pytest.mark.parametrize(("engine", "gpu", "per_token"), [
    # vLLM 0.34 on SM100, fp8: FLASHINFER_MLA_SPARSE keeps one-byte rows, 512 + 64 = 576 B a
    # layer; the 21 "full" indexer layers of indexer_types hold 128 fp8 + one fp32 scale =
    # 132 B: 78 x 576 + 21 x 132 = 44,928 + 2,772 = 47,700 B. (A real vLLM 0.26.0 start-up of
    # GLM-5.2-NVFP4 on this backend logged 1,139,456 tokens in 50.62 GiB: 47,693-47,705 B.)
    ("vllm==0.34", "B200", 47_700),
    # SM90: FLASHMLA_SPARSE packs fp8 as fp8_ds_mla, 512 + 4 x 4 + 64 x 2 = 656 B a layer:
    # 78 x 656 + 2,772 = 53,940 B.
    ("vllm==0.34", "H200", 53_940),
    # SGLang 0.5.23: trtllm on SM100 stores the raw 576-byte row, flashmla_* on SM90 the
    # scaled 656-byte one (_dsa_split_backend_resolution, calculate_mla_kv_cache_dim).
    ("sglang", "B200", 47_700),
    ("sglang", "H200", 53_940),
])
def test_layer_rows_state_the_row_the_backend_stores(
        capsys: pytest.CaptureFixture[str], engine: str, gpu: str, per_token: int) -> None:
    # The plan's bytes per token and its layer rows are the engine's rows, so they agree
    # with the page the pool is cut into (before: 656 B rows on SM100 beside 576-byte pages).
    from kvledger.cli.main import main

    path = CONFIGS / "nvidia--GLM-5.2-NVFP4.json"
    if not path.is_file():
        pytest.skip("GLM-5.2-NVFP4's config is in ../shared/configs")
    code = main(["plan", str(path), "--engine", engine, "--gpu", gpu, "-tp", "4",
                 "--kv-cache-dtype", "fp8_e4m3", "--kv-cache-memory-bytes", str(8 << 30),
                 "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["bytes_per_token"] == per_token
    (pool,) = data["pools"]
    assert pool["entry_bytes"] == per_token * data["block_size"]
    mla = {row["bytes_per_token"] for row in data["layers"]
           if row["kind"] == "mla" and row["role"] == "decoder"}
    assert mla == {(per_token - 21 * 132) // 78}


@pytest.mark.parametrize(("gpu", "row"), [
    # SM90: FLASHMLA_SPARSE canonicalises fp8 to fp8_ds_mla, whose MLAAttentionSpec rows are
    # 656 B whatever the dims (specs.py; vLLM's real_page_size_bytes), the no-RoPE 512 latent
    # included; before, the rows said derive's 512.
    ("H200", 656),
    # SM100: FLASHINFER_MLA_SPARSE keeps one-byte rows: 512 latent values, no RoPE = 512 B.
    ("B200", 512),
])
def test_glm_53_flash_fp8_rows_are_the_layout_vllm_stores(
        capsys: pytest.CaptureFixture[str], gpu: str, row: int) -> None:
    from kvledger.cli.main import main

    path = CONFIGS / "zai-org--GLM-5.3-Flash.json"
    if not path.is_file():
        pytest.skip("GLM-5.3-Flash's config is in ../shared/configs")
    code = main(["plan", str(path), "--gpu", gpu, "--kv-cache-dtype", "fp8",
                 "--kv-cache-memory-bytes", str(8 << 30), "--max-model-len", "8192", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = {r["bytes_per_token"] for r in json.loads(out)["layers"]
            if r["kind"] == "mla" and r["role"] == "decoder"}
    assert rows == {row}

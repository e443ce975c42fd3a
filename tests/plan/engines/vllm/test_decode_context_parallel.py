"""vLLM's decode context parallelism (``-dcp N``), worked by hand from vLLM 0.33.0's and
0.34.0's source (``plan/engines/vllm/dcp.py``): DCP reuses the TP ranks, so the bytes of a
token on a rank are TP's (``ModelConfig.get_num_kv_heads``: ``max(1, total // tp)``; MLA's one
latent on every rank), ``num_blocks = budget // bytes a block`` is unchanged, and a
``max_model_len`` request takes ``cdiv(cdiv(max_model_len, dcp), block)`` blocks a rank
(``FullAttentionSpec.max_memory_usage_bytes``; ``resolve_dcp_kv_block_size``: a block stands
for ``block × dcp`` tokens). ``get_max_concurrency_for_kv_cache_config`` divides the blocks by
that, and "GPU KV cache size" is ``int(concurrency × max_model_len)``.

The CPU oracle cannot run these: vLLM's CPU model runner refuses DCP ("The CPU model runner
without Triton does not yet support: decode context parallelism", config/vllm.py), so every
number here is worked from the source, and every test names the release it checks. Each
fails on the main branch before DCP was planned, which refused ``-dcp`` by name.

Configs (../shared/configs):

- Kimi-K2-Instruct (MLA): 61 layers, kv_lora_rank 512 + qk_rope_head_dim 64 = 576 bf16
  values = 1,152 B a token a layer, 70,272 B a token over the 61 layers, on every TP rank.
- DeepSeek-V3.2 (sparse MLA, DSA): the same 1,152 B latent plus the indexer's 128 fp8 keys +
  a 4-byte scale = 132 B; (1,152 + 132) × 61 = 78,324 B a token.
- Qwen3-8B (GQA): 36 layers, 32 query and 8 KV heads of 128; at TP 16 each rank holds
  max(1, 8 // 16) = 1 KV head: 2 × 128 × 2 B × 36 = 18,432 B a token.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.errors import KvledgerError
from kvledger.plan.api import plan_model
from kvledger.plan.engines.vllm.launch import VllmLaunch
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS, needs_shared

pytestmark = needs_shared

GIB = 1 << 30
KIMI = str(CONFIGS / "moonshotai--Kimi-K2-Instruct.json")
DSV32 = str(CONFIGS / "deepseek-ai--DeepSeek-V3.2.json")
QWEN3 = str(CONFIGS / "Qwen--Qwen3-8B.json")
QWEN25 = str(CONFIGS / "Qwen--Qwen2.5-7B.json")
EXAONE = str(CONFIGS / "LGAI-EXAONE--EXAONE-4.0-32B.json")
KIMI_K3 = str(CONFIGS / "moonshotai--Kimi-K3.json")


def _plan(model: str, engine: str, *, tp: int, dcp: int, kv: int, length: int,
          **launch: Any) -> dict[str, Any]:
    vllm_launch = VllmLaunch(decode_context_parallel_size=dcp, **launch) if dcp > 1 or launch \
        else None
    request = PlanRequest(engine=engine, kv_cache_memory_bytes=kv, max_model_len=length,
                          tensor_parallel_size=tp, vllm_launch=vllm_launch)
    out: dict[str, Any] = plan_model(model, request).to_json()
    return out


def _refusal(model: str, engine: str, *, tp: int, dcp: int, **launch: Any) -> str:
    with pytest.raises(KvledgerError) as caught:
        _plan(model, engine, tp=tp, dcp=dcp, kv=8 * GIB, length=32768, **launch)
    return str(caught.value)


# -- MLA ---------------------------------------------------------------------------------------


def test_kimi_k2_dcp_8_on_vllm_033() -> None:
    """vllm==0.33, -tp 8 -dcp 8, 8 GiB a GPU, max_model_len 65,536. No --gpu: SM90's dense MLA
    backend, block 16. A block: 16 × 70,272 = 1,124,352 B; 8,589,934,592 // 1,124,352 = 7,639
    blocks (the same with or without DCP). A request: cdiv(65,536, 8) = 8,192 tokens a rank
    = 512 blocks (4,096 without DCP). Concurrency 7,639 / 512 = 14.919921875; logged tokens
    int(14.919921875 × 65,536) = 977,792 (without DCP: 7,639 / 4,096 × 65,536 = 122,224)."""
    got = _plan(KIMI, "vllm==0.33", tp=8, dcp=8, kv=8 * GIB, length=65536)
    assert got["engine_release"] == "0.33.0"
    assert got["block_size"] == 16
    assert got["pools"][0]["entry_bytes"] == 1_124_352
    assert got["num_blocks"] == 7_639
    assert got["pools"][0]["entries_per_req"] == 512
    assert got["max_concurrency"] == 7_639 / 512 == 14.919921875
    assert got["kv_cache_tokens"] == 977_792
    assert got["decode_context_parallel_size"] == 8
    alone = _plan(KIMI, "vllm==0.33", tp=8, dcp=1, kv=8 * GIB, length=65536)
    assert (alone["num_blocks"], alone["kv_cache_tokens"]) == (7_639, 122_224)
    assert "decode_context_parallel_size" not in alone


def test_deepseek_v32_dcp_8_on_vllm_034() -> None:
    """vllm==0.34, the recipe's -tp 8 -dcp 8, 10 GiB a GPU, max_model_len 32,768. FlashMLA
    sparse: block 64. A block: 64 × 78,324 = 5,012,736 B (MLA latent and indexer keys, one
    group); 10,737,418,240 // 5,012,736 = 2,142 blocks. A request: cdiv(32,768, 8) = 4,096
    tokens a rank = 64 blocks (the indexer's too: its MLAAttentionSpec is DCP-sharded).
    Concurrency 2,142 / 64 = 33.46875; tokens 33.46875 × 32,768 = 1,096,704. Without DCP:
    512 blocks a request, 2,142 / 512 × 32,768 = 137,088."""
    got = _plan(DSV32, "vllm==0.34", tp=8, dcp=8, kv=10 * GIB, length=32768)
    assert got["engine_release"] == "0.34.0"
    assert got["block_size"] == 64
    assert got["pools"][0]["entry_bytes"] == 5_012_736
    assert got["num_blocks"] == 2_142
    assert got["pools"][0]["entries_per_req"] == 64
    assert got["max_concurrency"] == 33.46875
    assert got["kv_cache_tokens"] == 1_096_704
    alone = _plan(DSV32, "vllm==0.34", tp=8, dcp=1, kv=10 * GIB, length=32768)
    assert alone["kv_cache_tokens"] == 137_088


def test_kimi_k3_dcp_8_beside_kda_state_on_vllm_034() -> None:
    """vllm==0.34, -tp 8 -dcp 8, 8 GiB a GPU, max_model_len 32,768, no --gpu. Kimi-K3's KDA
    layers keep a MambaSpec, which DCP does not shard ("Mamba state is replicated across
    DCP/PCP ranks, never sharded", MambaSpec.max_num_blocks_per_req); its MLA layers shard as
    above. Before this rule kvledger refused DCP beside recurrent state by name.

    By hand from the config: a rank's KDA state is 96 / 8 = 12 heads of 128: conv 3 rows x
    (12 x 128 x 3 = 4,608) bf16 = 27,648 B, recurrent 12 x 128 x 128 fp32 = 786,432 B;
    814,080 B. MLA: 576 bf16 = 1,152 B a token. The hybrid block is the attention page's
    multiple of 128 tokens that holds the state: 128 x cdiv(814,080, 128 x 1,152) = 128 x 6
    = 768 tokens, a page of 768 x 1,152 = 884,736 B (the state padded to it). 24 layer slots a
    block: 21,233,664 B; 8,589,934,592 // 21,233,664 = 404 blocks, with or without DCP.
    A request: 3 KDA groups x 2 state blocks (mamba_cache_mode align) + the MLA group's
    cdiv(32,768, 768) = 43 = 49 blocks without DCP; with DCP 8 the MLA group holds
    cdiv(cdiv(32,768, 8), 768) = cdiv(4,096, 768) = 6, so 3 x 2 + 6 = 12. Concurrency 404 / 12
    = 33.666...; tokens int(404 x 32,768 / 12) = int(1,103,189.3) = 1,103,189 (without DCP
    int(404 x 32,768 / 49) = int(270,168.8) = 270,168)."""
    got = _plan(KIMI_K3, "vllm==0.34", tp=8, dcp=8, kv=8 * GIB, length=32768)
    assert got["block_size"] == 768
    assert got["pools"][0]["entry_bytes"] == 21_233_664
    assert got["num_blocks"] == 404
    assert got["pools"][0]["entries_per_req"] == 12
    assert got["max_concurrency"] == 404 / 12
    assert got["kv_cache_tokens"] == 1_103_189
    alone = _plan(KIMI_K3, "vllm==0.34", tp=8, dcp=1, kv=8 * GIB, length=32768)
    assert (alone["num_blocks"], alone["pools"][0]["entries_per_req"]) == (404, 49)
    assert alone["kv_cache_tokens"] == 270_168


# -- GQA ---------------------------------------------------------------------------------------


def test_qwen3_8b_dcp_2_on_tp_16_on_vllm_034() -> None:
    """vllm==0.34, -tp 16 -dcp 2 (TP 16 > 8 KV heads; 16 // 8 = 2 ranks share a head; 4 query
    heads a KV head divide by 2), 4 GiB, 32,768 tokens. Block 64 (0.34's default): 64 ×
    18,432 = 1,179,648 B; 4,294,967,296 // 1,179,648 = 3,640 blocks. A request: 16,384
    tokens a rank = 256 blocks; 3,640 / 256 = 14.21875; × 32,768 = 465,920 tokens."""
    got = _plan(QWEN3, "vllm==0.34", tp=16, dcp=2, kv=4 * GIB, length=32768)
    assert got["pools"][0]["entry_bytes"] == 1_179_648
    assert got["num_blocks"] == 3_640
    assert got["pools"][0]["entries_per_req"] == 256
    assert got["max_concurrency"] == 14.21875
    assert got["kv_cache_tokens"] == 465_920


def test_qwen3_8b_dcp_2_on_tp_16_on_vllm_033() -> None:
    """vllm==0.33, the same question: block 16 (0.33's default; DCP itself is the same in
    both releases). 16 × 18,432 = 294,912 B; 4 GiB // 294,912 = 14,563 blocks; a request
    16,384 / 16 = 1,024 blocks; 14,563 / 1,024 × 32,768 = 14,563 × 32 = 466,016 tokens."""
    got = _plan(QWEN3, "vllm==0.33", tp=16, dcp=2, kv=4 * GIB, length=32768)
    assert (got["block_size"], got["num_blocks"]) == (16, 14_563)
    assert got["pools"][0]["entries_per_req"] == 1_024
    assert got["kv_cache_tokens"] == 466_016


def test_odd_length_rounds_each_rank_up() -> None:
    """vllm==0.34: cdiv(32,769, 2) = 16,385 tokens a rank = cdiv(16,385, 64) = 257 blocks
    (not cdiv(32,769, 128) = 257 by coincidence: 32,767 gives 16,384 = 256 blocks either
    way, but 32,641 gives cdiv(32,641, 2) = 16,321 → 256 blocks)."""
    assert _plan(QWEN3, "vllm==0.34", tp=16, dcp=2, kv=4 * GIB,
                 length=32769)["pools"][0]["entries_per_req"] == 257
    assert _plan(QWEN3, "vllm==0.34", tp=16, dcp=2, kv=4 * GIB,
                 length=32641)["pools"][0]["entries_per_req"] == 256


# -- what vLLM refuses, in its words -----------------------------------------------------------


def test_gqa_needs_more_tp_ranks_than_kv_heads_vllm_034() -> None:
    """``kvledger plan --gpu H200 -- vllm serve Qwen/Qwen3-8B -dcp 2 -tp 2``: config/model.py
    ModelConfig.verify_with_parallel_config."""
    msg = _refusal(QWEN3, "vllm==0.34", tp=2, dcp=2)
    assert "vLLM 0.34 refuses to start: Decode context parallelism for GQA/MQA requires " \
           "`--tensor-parallel-size` (2) to be greater than the model's total number of KV " \
           "heads (8). Increase `--tensor-parallel-size` or set " \
           "`--decode-context-parallel-size 1`." in msg


def test_gqa_dcp_above_tp_over_kv_heads_vllm_033() -> None:
    msg = _refusal(QWEN3, "vllm==0.33", tp=16, dcp=4)
    assert "`--decode-context-parallel-size` (4) exceeds the maximum supported value (2) for " \
           "`--tensor-parallel-size` (16) and 8 model KV heads." in msg


def test_gqa_query_heads_per_kv_head_must_split_vllm_034() -> None:
    """Qwen2.5-7B: 28 query heads, 4 KV heads, 7 a KV head; TP 28, DCP 2 passes the other
    rules (28 // 4 = 7 >= 2) and not this one."""
    msg = _refusal(QWEN25, "vllm==0.34", tp=28, dcp=2)
    assert "The model's number of query heads per KV head (7) must be divisible by " \
           "`--decode-context-parallel-size` (2) for GQA/MQA." in msg


def test_tp_must_divide_by_dcp_vllm_033() -> None:
    """config/parallel.py ParallelConfig._validate_parallel_config (no PCP)."""
    assert "tp_size=8 must be divisible by dcp_size=3." in _refusal(KIMI, "vllm==0.33", tp=8,
                                                                     dcp=3)


def test_sliding_window_is_an_assertion_vllm_034() -> None:
    """EXAONE-4.0-32B (sliding-window layers, 40 query / 8 KV heads): TP 40, DCP 5 passes the
    GQA rules; SlidingWindowSpec.max_memory_usage_bytes then asserts."""
    assert "DCP not support sliding window." in _refusal(EXAONE, "vllm==0.34", tp=40, dcp=5)


def test_selected_backend_without_dcp_vllm_034() -> None:
    msg = _refusal(QWEN3, "vllm==0.34", tp=16, dcp=2, attention_backend="TRITON_ATTN")
    assert "Selected backend AttentionBackendEnum.TRITON_ATTN is not valid for this " \
           "configuration. Reason: ['DCP not supported']" in msg


def test_interleave_must_fit_the_block_vllm_033() -> None:
    """config/vllm.py VllmConfig.validate_block_size: Kimi-K2's block 16 under 0.33 and an
    interleave of 32; 16 plans (block-level interleave)."""
    msg = _refusal(KIMI, "vllm==0.33", tp=8, dcp=8, cp_kv_cache_interleave_size=32)
    assert "Block_size(16) should be greater than or equal to and divisible by " \
           "cp_kv_cache_interleave_size (32)." in msg
    got = _plan(KIMI, "vllm==0.33", tp=8, dcp=8, kv=8 * GIB, length=65536,
                cp_kv_cache_interleave_size=16)
    assert got["kv_cache_tokens"] == 977_792  # the interleave moves tokens, not bytes


def test_release_whose_dcp_code_was_not_read_refuses_by_name() -> None:
    msg = _refusal(KIMI, "vllm==0.32", tp=8, dcp=8)
    assert "--decode-context-parallel-size 8 under vLLM 0.32: kvledger has not read this " \
           "release's decode context parallelism; it plans it under vLLM 0.33, vLLM 0.34 " \
           "(pin one with --engine vllm==0.33)" in msg

"""ATOM's entry classes, one model per backend, worked by hand from the config's own values
and ATOM's source (ROCm/ATOM ffdf3bb5d; each test names the file and function). Counts are
``plan_pools``' rule (``atom/model_ops/attentions/sub_pool_spec.py``): each STATE class
reserves ``max_num_seqs × entries_per_req`` entries first, the PAGE class ("kv") gets
``remaining // entry_bytes``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kvledger.plan.api import plan_model
from kvledger.plan.engines.atom.served import NotServedByAtom
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PlanResult
from kvledger.source.resolve import load_source

GIB = 1 << 30
SHARED = Path(__file__).resolve().parents[4].parent / "shared" / "configs"


def _plan(model: Any, **kw: Any) -> PlanResult:
    kw.setdefault("kv_cache_memory_bytes", 64 * GIB)
    kw.setdefault("max_num_seqs", 512)  # ATOM's default (atom/config.py Config.max_num_seqs)
    return plan_model(model, PlanRequest(engine="atom", **kw))


def _pools(plan: PlanResult) -> dict[str, tuple[int, int, int]]:
    return {p.name: (p.entry_bytes, p.entries_per_req, p.entries) for p in plan.pools}


def test_mha_split_kv_plus_fp32_scale_llama() -> None:
    # aiter_attention.py AiterAttentionMetadataBuilder.sub_pool_specs, standard path. Llama-3.1-8B:
    # 32 layers, 8 KV heads, head_dim 4096 / 32 = 128, bf16 (2 B), B = P = 16:
    #   kv_cache 2 × 32 × 16 × 8 × 128 × 2 = 2,097,152; kv_scale 2 × 32 × 8 × 16 × 4 = 32,768
    #   → 2,129,920 B a block; 68,719,476,736 // 2,129,920 = 32,263 blocks.
    plan = _plan("meta-llama/Meta-Llama-3.1-8B")
    assert _pools(plan) == {"kv": (2129920, 0, 32263)}
    assert plan.kv_cache_tokens == 32263 * 16
    # The fp32 scale is reserved for bf16 too; an fp8 cache halves only the first term:
    #   1,048,576 + 32,768 = 1,081,344 B; 64 GiB // that = 63,550.
    assert _pools(_plan("meta-llama/Meta-Llama-3.1-8B", kv_cache_dtype="fp8")) == {
        "kv": (1081344, 0, 63550)}


def test_mha_gpt_oss_windows_are_paged_as_full_layers() -> None:
    # Same function: ATOM's MHA pool has no sliding-window class, so gpt-oss-20b's 12 sliding
    # layers cost a full layer: 24 layers, 8 KV heads, head_dim 64, bf16:
    #   2 × 24 × 16 × 8 × 64 × 2 = 786,432 + 2 × 24 × 8 × 16 × 4 = 24,576 → 811,008 B;
    #   64 GiB // 811,008 = 84,733.
    assert _pools(_plan("openai/gpt-oss-20b")) == {"kv": (811008, 0, 84733)}


def test_mimo_v2_per_layer_type() -> None:
    # AiterAttentionMetadataBuilder.sub_pool_specs, is_mimo_v2 branch. MiMo-V2-Flash:
    # hybrid_layer_pattern has 39 ones (SWA) and 9 zeros (full) over 48 layers; TP 4:
    # num_key_value_heads 4 → 1, swa_num_key_value_heads 8 → 2; head_dim 192 for K and V; bf16:
    #   full kv 2 × 9 × 16 × 1 × 192 × 2 = 110,592; swa kv 2 × 39 × 16 × 2 × 192 × 2 = 958,464
    #   full scale 2 × 9 × 1 × 16 × 4 = 1,152; swa scale 2 × 39 × 2 × 16 × 4 = 9,984
    #   → 1,080,192 B; 64 GiB // 1,080,192 = 63,617.
    path = SHARED / "XiaomiMiMo--MiMo-V2-Flash.json"
    if not path.exists():
        pytest.skip("../shared/configs (MiMo-V2-Flash's real config) is not beside this checkout")
    assert _pools(_plan(str(path), tensor_parallel_size=4)) == {"kv": (1080192, 0, 63617)}


def test_mla_576_packed_and_v32_indexer() -> None:
    # aiter_mla.py AiterMLAMetadataBuilder.sub_pool_specs: layers × B × 576 × e (the width is a
    # literal; no TP split, no V, no scale). DeepSeek-V3: 61 layers, bf16:
    #   61 × 16 × 576 × 2 = 1,124,352 B; 64 GiB // 1,124,352 = 61,119.
    assert _pools(_plan("deepseek-ai/DeepSeek-V3", tensor_parallel_size=8)) == {
        "kv": (1124352, 0, 61119)}
    # V3.2 (index_topk in the config): + 61 × 16 × align16(128 + 4 = 132 → 144) × 1 (fp8)
    #   = 140,544 → 1,264,896 B; 64 GiB // 1,264,896 = 54,328.
    assert _pools(_plan("deepseek-ai/DeepSeek-V3.2")) == {"kv": (1264896, 0, 54328)}
    # MTP (--method mtp): ModelRunner._get_total_num_layers adds the draft's one layer
    # (SpeculativeConfig forces num_nextn_predict_layers to 1): 62 × 16 × 576 × 2 = 1,142,784.
    mtp = _plan("deepseek-ai/DeepSeek-V3", speculative_method="mtp", num_speculative_tokens=1)
    assert _pools(mtp)["kv"][0] == 1142784


def test_gdn_full_attention_pages_plus_state() -> None:
    # gdn_attn.py GDNAttentionMetadataBuilder.sub_pool_specs + GDNStateMixin.state_spec.
    # Qwen3-Next-80B: 48 layers, full_attention_interval 4 → 12 full-attention layers, 36 GDN.
    # PAGE: 2 × 12 × 16 × 2 × 256 × 2 = 393,216 + 2 × 12 × 2 × 16 × 4 = 3,072 → 396,288 B.
    # STATE ("state", 1 + num_spec = 1 entry a request), per GDN layer at bf16:
    #   conv_dim = 128 × 16 × 2 + 128 × 32 = 8,192; conv (4 − 1) × 8,192 × 2 B = 49,152
    #   temporal 32 × 128 × 128 × 2 B = 1,048,576 → 1,097,728 × 36 = 39,518,208 B a slot.
    # Reserve 512 × 39,518,208 = 20,233,322,496; (68,719,476,736 − that) // 396,288 = 122,350.
    plan = _plan("Qwen/Qwen3-Next-80B-A3B-Thinking")
    assert _pools(plan) == {"kv": (396288, 0, 122350), "state": (39518208, 1, 512)}
    assert plan.answers["state_slots"] == 512


def test_kimi_mla_plus_kda_state() -> None:
    # kimi_mla_gdn_attn.py _KimiMLAGDNCommon.sub_pool_specs. Kimi-K3 text config: 24
    # full_attn_layers (MLA, kv_lora_rank 512 + qk_rope_head_dim 64), 69 kda_layers
    # (num_heads 96, head_dim 128, short_conv_kernel_size 4); TP 8, bf16 KV:
    #   PAGE 24 × 16 × 576 × 2 = 442,368 B
    #   STATE per KDA layer: conv_dim 128·96·2 + 128·96 = 36,864 // 8 = 4,608; (4 − 1) × 4,608
    #   × 2 B = 27,648; temporal 96 // 8 × 128 × 128 × 4 B (GDNStateMixin._state_dtypes: fp32
    #   for kimi_linear) = 786,432 → 814,080 × 69 = 56,171,520 B a slot.
    # 128 sequences: reserve 7,189,954,560; (68,719,476,736 − that) // 442,368 = 139,091.
    plan = _plan("moonshotai/Kimi-K3", tensor_parallel_size=8, max_num_seqs=128)
    assert _pools(plan) == {"kv": (442368, 0, 139091), "state": (56171520, 1, 128)}


def test_deepseek_v4_block_and_slot() -> None:
    # deepseek_v4_attn.py DeepseekV4AttentionMetadataBuilder.sub_pool_specs with
    # v4_pool_geometry.UnifiedPoolGeometry; bf16 KV on gfx950 (MI355X: FP4 indexer). V4-Flash
    # compress_ratios (44, MTP layer included): 3 dense, 21 CSA (4), 20 HCA (128); block 256.
    #   envelope rows 20 × 2 + 21 × 64 = 1,384; one plane of 512 × 2 = 1,024 B a row
    #   → 1,417,216 B + indexer 21 × (1 × 4 × 64 groups × 17 B = 4,352) = 91,392 → 1,508,608.
    #   window entry rows (ring 128): dense (3 − 1)·128 + 127 + 1 = 384; HCA (20 − 1)·2 +
    #   63·40 + 1 + 1 = 2,560; CSA (21 − 1)·64 + 1·1,344 + 63 + 1 = 2,688 → 5,632
    #   compressor state (fp32): 2 × 21 × 8 × 1,024 × 4 + 2 × 21 × 8 × 256 × 4
    #   + 2 × 20 × 128 × 512 × 4 = 12,206,080 B / 1,024 = 11,920 rows
    #   slot 11,920 + 5,632 = 17,552 rows × 1,024 = 17,973,248 B.
    # Reserve 512 × 17,973,248 = 9,202,302,976; (68,719,476,736 − that) // 1,508,608 = 39,451.
    plan = _plan("deepseek-ai/DeepSeek-V4-Flash", gpu="MI355X")
    assert _pools(plan) == {"kv": (1508608, 0, 39451), "state": (17973248, 1, 512)}
    assert plan.block_size == 256
    # gfx942 (MI300X): the FP8 indexer, 64 × (128 + 4) = 8,448 B a CSA layer:
    #   1,417,216 + 21 × 8,448 = 1,594,624 B a block.
    assert _pools(_plan("deepseek-ai/DeepSeek-V4-Flash", gpu="MI300X"))["kv"][0] == 1594624


def test_a_type_atom_does_not_serve_is_refused_by_name() -> None:
    # support_model_arch_dict (model_runner.py) has DeepseekV3/V32/V4 but no
    # DeepseekV2ForCausalLM, and MiniMax-M3 only as MiniMaxM3Sparse*.
    with pytest.raises(NotServedByAtom, match=r"'deepseek_v2' \(architecture "
                                              r"'DeepseekV2ForCausalLM'\)"):
        _plan("deepseek-ai/DeepSeek-V2-Lite")
    with pytest.raises(NotServedByAtom, match="'MiniMaxM3ForCausalLM'"):
        _plan("MiniMaxAI/MiniMax-M3")


def test_minimax_m3_sparse_needs_its_block_size() -> None:
    # AiterAttentionMetadataBuilder.__init__ asserts --block-size % sparse_block_size == 0.
    from kvledger.plan.engines.atom.specs import AtomConfigError

    cfg: dict[str, Any] = load_source("MiniMaxAI/MiniMax-M3").config
    cfg["architectures"] = ["MiniMaxM3SparseForCausalLM"]
    with pytest.raises(AtomConfigError, match="divisible by 128"):
        _plan(cfg, tensor_parallel_size=4)


def test_pipeline_stages_reconcile_to_the_fewest_blocks() -> None:
    # ModelRunner._get_total_num_layers: the stage's layers (models/utils.py get_pp_indices:
    # 61 over 2 → 30 each, the remainder to the second-last stage → [0, 31), [31, 61)).
    # Stage 0: 31 × 16 × 576 × 2 = 571,392 B → 64 GiB // 571,392 = 120,266;
    # stage 1: 30 × … = 552,960 B → 124,275. get_num_blocks: all_reduce MIN → 120,266 both.
    plan = _plan("deepseek-ai/DeepSeek-V3", pipeline_parallel_size=2)
    assert [(r.layers_range, r.pools[0].entry_bytes, r.num_blocks) for r in plan.ranks] == [
        ((0, 31), 571392, 120266), ((31, 61), 552960, 120266)]


def test_pipeline_parallel_refusals() -> None:
    from kvledger.plan.engines.atom.layout import AtomNotReproduced
    from kvledger.plan.engines.atom.refusal import AtomRefusesToStart

    # get_num_blocks: V4's StateTransfer.copy → "PAGE-backed state checkpoints do not yet
    # support pipeline parallelism".
    with pytest.raises(AtomRefusesToStart, match="PAGE-backed state checkpoints"):
        _plan("deepseek-ai/DeepSeek-V4-Flash", pipeline_parallel_size=2)
    # GDN under PP: ATOM computes num_draft = stage layers − num_hidden_layers (negative);
    # kvledger refuses rather than guess.
    with pytest.raises(AtomNotReproduced, match="pipeline parallelism"):
        _plan("Qwen/Qwen3-Next-80B-A3B-Thinking", pipeline_parallel_size=2)


def test_speculation_atom_does_not_take() -> None:
    from kvledger.plan.engines.atom.layout import AtomNotReproduced
    from kvledger.plan.engines.atom.refusal import AtomRefusesToStart

    # arg_utils.py --method choices mtp / eagle3 / dspark; eagle3 needs a draft config.
    with pytest.raises(AtomNotReproduced, match="eagle3"):
        _plan("meta-llama/Meta-Llama-3.1-8B", speculative_method="eagle3",
              num_speculative_tokens=2)
    # config.py SpeculativeConfig.__post_init__: 1 ≤ num_speculative_tokens ≤ 4 for MTP.
    with pytest.raises(AtomRefusesToStart, match="between 1 and 4, got 5"):
        _plan("deepseek-ai/DeepSeek-V3", speculative_method="mtp", num_speculative_tokens=5)


def test_max_model_len_is_capped_at_the_config() -> None:
    # atom/config.py Config.__post_init__: max_model_len = min(given, max_position_embeddings).
    plan = _plan("meta-llama/Meta-Llama-3.1-8B", max_model_len=1 << 20,
                 allow_long_max_model_len=True)
    assert plan.max_model_len == 131072
    assert any("min(max_model_len" in w for w in plan.warnings)


def test_minimax_m3_sparse_index_cache() -> None:
    # AiterAttentionMetadataBuilder.sub_pool_specs with sparse_attention_config (MiniMax-M3's
    # Sparse classes): P = sparse_block_size 128, --block-size 128; 60 layers, 4 KV heads → 1
    # at TP 4, head_dim 128, bf16; 57 of 60 sparse_attention_freq entries on, sparse_index_dim
    # 128, index cache at the KV dtype (_resolve_index_cache_dtype: bf16, 2 B):
    #   kv 2 × 60 × 128 × 1 × 128 × 2 = 3,932,160; scale 2 × 60 × 1 × 128 × 4 = 61,440;
    #   index 57 × 128 × 128 × 2 = 1,867,776 → 5,861,376 B; 60 GiB // that = 10,991.
    cfg: dict[str, Any] = load_source("MiniMaxAI/MiniMax-M3").config
    cfg["architectures"] = ["MiniMaxM3SparseForCausalLM"]
    plan = _plan(cfg, tensor_parallel_size=4, block_size=128, kv_cache_memory_bytes=60 * GIB)
    assert _pools(plan) == {"kv": (5861376, 0, 10991)}

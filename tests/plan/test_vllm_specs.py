"""The vLLM layout's arithmetic on hand-built facts, every expected number worked by hand.

Oracle agreement lives in test_vllm_oracles.py; these pin each rule on its own so a
regression names the rule that broke.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import pytest

from kvledger import records
from kvledger.derive.layers import (
    MLA,
    ChunkedAttention,
    CrossAttention,
    FullAttention,
    Indexer,
    LayerCache,
    ModelFacts,
    RecurrentState,
    Role,
    SlidingAttention,
    StateTensor,
)
from kvledger.plan.engines.vllm import VllmLayoutError, plan_vllm, plan_vllm_stage, pp_stages
from kvledger.plan.engines.vllm.specs import (
    QUANT_FP8_PER_TOKEN_HEAD,
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    MambaSpec,
    SlidingWindowSpec,
    SpecContext,
)
from kvledger.plan.request import PlanRequest
from kvledger.records import record

GIB = 1 << 30


def _facts(layers: Sequence[LayerCache], dtype: str = "bfloat16", **config: object) -> ModelFacts:
    return ModelFacts(
        model="hand", model_type="hand", architectures=("HandForCausalLM",),
        layers=tuple(layers), model_dtype=dtype, kv_dtype=dtype, kv_dtype_source="config",
        max_position_embeddings=131072, config=dict(config),
    )


def _req(**kw: object) -> PlanRequest:
    return PlanRequest(engine="vllm==0.33", **kw)  # type: ignore[arg-type]


def _llama8b() -> list[LayerCache]:
    return [FullAttention(index=i, k_heads=8, k_dim=128, v_heads=8, v_dim=128) for i in range(32)]


@record(frozen=True, kw_only=True)
class _GDN(RecurrentState):
    """Qwen3-Next-like gated delta net: conv (3, 8192) + recurrent (32, 128, 128) at TP=1."""

    state_kind: ClassVar[str] = "gdn"

    def tensors(self) -> Sequence[StateTensor]:
        return [
            StateTensor("conv", (3, 8192 // self.tp), "bfloat16"),
            StateTensor("recurrent", (32 // self.tp, 128, 128), "bfloat16"),
        ]


@record(frozen=True, kw_only=True)
class _Mamba2(RecurrentState):
    state_kind: ClassVar[str] = "mamba2"

    def tensors(self) -> Sequence[StateTensor]:
        return [
            StateTensor("conv", (3, 64), "bfloat16"),
            StateTensor("ssm", (4, 8, 16), "bfloat16"),
        ]


def _qwen3_next_like() -> list[LayerCache]:
    # 48 layers, every 4th full attention (2 KV heads x 256), the rest GDN.
    return [
        FullAttention(index=i, k_heads=2, k_dim=256, v_heads=2, v_dim=256) if i % 4 == 3
        else _GDN(index=i)
        for i in range(48)
    ]


CTX = SpecContext(
    max_model_len=32768, max_in_flight_tokens=16384, max_num_encoder_input_tokens=8192,
    mamba_cache_mode="align",
)


def test_dense_llama_issue_example() -> None:
    # page = 16 tokens x 8 heads x (128 + 128) x 2 B = 65,536 B; 32 layers -> 2,097,152 B/block
    # 10 GiB / 2,097,152 = 5,120 blocks; a 32,768-token request needs 32,768 / 16 = 2,048
    # blocks -> concurrency 5,120 / 2,048 = 2.5; tokens int(2.5 * 32,768) = 81,920.
    plan = plan_vllm(_facts(_llama8b()), _req(max_model_len=32768), 10 * GIB)
    assert (plan.bytes_per_block, plan.num_blocks) == (2_097_152, 5_120)
    assert (plan.max_concurrency, plan.kv_cache_tokens, plan.block_size) == (2.5, 81_920, 16)
    assert not plan.vllm_refuses_to_start
    assert plan.pools() == [{
        "name": "kv", "pool": "page", "entries": 5_120, "entry_bytes": 2_097_152,
        "entries_per_req": 2_048, "reserved_bytes": 5_120 * 2_097_152,
    }]


def test_fp8_halves_the_page_and_tp_splits_heads() -> None:
    # fp8: 16 x 8 x 256 x 1 B = 32,768 B/page; TP=4: 8 // 4 = 2 heads -> 16 x 2 x 256 x 2 = 16,384
    fp8 = plan_vllm(_facts(_llama8b()), _req(max_model_len=8192, kv_cache_dtype="fp8"), GIB)
    assert fp8.groups[0].page_size_bytes == 32_768
    tp4 = plan_vllm(_facts(_llama8b()), _req(max_model_len=8192, tensor_parallel_size=4), GIB)
    assert tp4.groups[0].page_size_bytes == 16_384
    assert tp4.tp_kv_heads_per_rank == 2


def test_per_token_head_scales_are_budgeted_in_the_page() -> None:
    # 16 x 8 x 256 x 1 B = 32,768 plus K and V fp32 scales 2 x 16 x 8 x 4 B = 1,024
    spec = FullAttentionSpec(
        block_size=16, num_kv_heads=8, head_size=128, head_size_v=128, dtype="uint8",
        quant=QUANT_FP8_PER_TOKEN_HEAD,
    )
    assert spec.page_size_bytes == 33_792


def test_sliding_window_reserves_in_flight_tokens_plus_one_block() -> None:
    # min(4096 - 1 + 16384, 32768) = 20,479 tokens -> cdiv(20479, 16) = 1,280 + 1 = 1,281 pages
    spec = SlidingWindowSpec(
        block_size=16, num_kv_heads=8, head_size=128, head_size_v=128, dtype="bfloat16",
        sliding_window=4096,
    )
    assert spec.blocks_per_request(CTX) == 1_281


def test_chunked_local_reserves_chunk_plus_in_flight_capped_by_max_model_len() -> None:
    spec = ChunkedLocalAttentionSpec(
        block_size=16, num_kv_heads=8, head_size=128, head_size_v=128, dtype="bfloat16",
        attention_chunk_size=8192,
    )
    # (8192 + 16384) / 16 = 1,536; at max_model_len 8,192: 8192 / 16 = 512
    assert spec.blocks_per_request(CTX) == 1_536
    short = SpecContext(8192, 16384, 8192, "none")
    assert spec.blocks_per_request(short) == 512


@pytest.mark.parametrize(("mode", "checkpoint", "pages"), [
    ("none", 0, 1), ("align", 0, 2), ("align", 1, 3),
])
def test_mamba_pages_per_request(mode: str, checkpoint: int, pages: int) -> None:
    spec = MambaSpec(
        block_size=16, shapes=((3, 64), (4, 8, 16)), dtypes=("bfloat16", "float32"),
        mamba_type="x", mamba_cache_mode=mode, num_prefill_checkpoint_blocks=checkpoint,
    )
    # 3 x 64 x 2 + 4 x 8 x 16 x 4 = 384 + 2,048 = 2,432 B
    assert spec.page_size_bytes == 2_432
    ctx = SpecContext(32768, 16384, 8192, mode)
    assert spec.blocks_per_request(ctx) == pages


def test_hybrid_alignment_raises_attention_block_size() -> None:
    # state = 3 x 8192 x 2 + 32 x 128 x 128 x 2 = 49,152 + 1,048,576 = 1,097,728 B
    # attention = 2 heads x (256 + 256) x 2 B = 2,048 B/token
    # block = 16 x cdiv(1,097,728, 16 x 2,048) = 16 x 34 = 544; page 544 x 2,048 = 1,114,112
    plan = plan_vllm(_facts(_qwen3_next_like()), _req(max_model_len=32768), 8 * GIB)
    assert plan.block_size == 544
    assert plan.mamba_page_size_padded == 1_114_112
    assert plan.mamba_block_size == 544
    # 36 GDN + 12 full: group size 12 -> 3 state groups + 1 attention group, 12 layers each
    assert [(g.spec, g.num_layers) for g in plan.groups] == [
        ("MambaSpec", 12), ("MambaSpec", 12), ("MambaSpec", 12), ("FullAttentionSpec", 12),
    ]
    # block = 12 x 1,114,112 = 13,369,344 B; 8 GiB // that = 642 blocks
    # per request: 3 x 2 (align) + cdiv(32768, 544) = 61 -> 67; 642 / 67 = 9.5820...
    assert (plan.bytes_per_block, plan.num_blocks, plan.blocks_per_request) == (
        13_369_344, 642, 67,
    )
    assert plan.kv_cache_tokens == int(642 / 67 * 32768)


def test_without_prefix_caching_state_keeps_one_page_per_request() -> None:
    plan = plan_vllm(
        _facts(_qwen3_next_like()), _req(max_model_len=32768, enable_prefix_caching=False),
        8 * GIB,
    )
    assert plan.resolved.mamba_cache_mode == "none"
    assert plan.mamba_block_size == 32768  # one state per request: block = max_model_len
    assert plan.blocks_per_request == 3 * 1 + 61


def test_mamba2_align_keeps_a_checkpoint_block() -> None:
    layers: list[LayerCache] = [_Mamba2(index=i) for i in range(6)]
    layers += [
        FullAttention(index=6 + i, k_heads=1, k_dim=64, v_heads=1, v_dim=64) for i in range(2)
    ]
    plan = plan_vllm(_facts(layers), _req(max_model_len=4096), GIB)
    assert {g.blocks_per_request for g in plan.groups if g.spec == "MambaSpec"} == {3}


def test_grouping_pads_the_short_groups_and_warns() -> None:
    # Gemma-3-like: 52 sliding + 10 full -> group size 10; 52 sliding split into
    # cdiv(52, 10) = 6 groups of layers[i::6] = 9,9,9,9,8,8; 8 padding layers.
    layers: list[LayerCache] = []
    for i in range(62):
        if i % 6 == 5 and len([x for x in layers if isinstance(x, FullAttention)]) < 10:
            layers.append(FullAttention(index=i, k_heads=16, k_dim=128, v_heads=16, v_dim=128))
        else:
            layers.append(SlidingAttention(
                index=i, k_heads=16, k_dim=128, v_heads=16, v_dim=128, window=1024))
    plan = plan_vllm(_facts(layers), _req(max_model_len=32768), 8 * GIB)
    assert [g.num_layers for g in plan.groups] == [9, 9, 9, 9, 8, 8, 10]
    assert plan.bytes_per_block == 10 * 16 * 16 * 256 * 2  # widest group x page
    assert any("8 padding layer" in w for w in plan.warnings)


def test_close_layer_counts_pad_to_the_larger_count() -> None:
    # 12 sliding + 13 full: 13 < 12 x 1.5, so group size 13 (not 12 with a 1-layer group).
    layers: list[LayerCache] = [
        SlidingAttention(index=i, k_heads=8, k_dim=64, v_heads=8, v_dim=64, window=128)
        for i in range(12)
    ]
    layers += [FullAttention(index=12 + i, k_heads=8, k_dim=64, v_heads=8, v_dim=64)
               for i in range(13)]
    plan = plan_vllm(_facts(layers), _req(max_model_len=8192), GIB)
    assert [g.num_layers for g in plan.groups] == [12, 13]


def test_sparse_mla_with_indexer_is_one_group_of_mixed_pages() -> None:
    layers: list[LayerCache] = []
    for i in range(61):
        layers.append(MLA(index=i, latent_dim=512, rope_dim=64))
        layers.append(Indexer(index=i, dtype="fp8_e4m3", head_dim=128, quant_block=128,
                              scale_bytes=4))
    plan = plan_vllm(_facts(layers), _req(max_model_len=32768, block_size=None), 8 * GIB)
    # auto -> FlashMLA-sparse's 64; MLA 64 x 576 x 2 = 73,728; indexer 64 x (128 + 4) = 8,448
    assert plan.block_size == 64
    assert plan.bytes_per_block == 61 * (73_728 + 8_448)
    assert plan.blocks_per_request == 32768 // 64
    with pytest.raises(VllmLayoutError, match="sparse MLA"):
        plan_vllm(_facts(layers), _req(max_model_len=32768, block_size=16), 8 * GIB)


def test_mla_fp8_is_one_byte_per_latent_value() -> None:
    layers = [MLA(index=i, latent_dim=512, rope_dim=64) for i in range(4)]
    # block 16 given: with "auto" an fp8 MLA cache gets FLASHMLA's 64 (test_vllm_rules.py)
    plan = plan_vllm(_facts(layers), _req(max_model_len=4096, kv_cache_dtype="fp8",
                                          block_size=16), GIB)
    assert plan.groups[0].page_size_bytes == 16 * 576  # 9,216
    assert plan.tp_kv_heads_per_rank == 1


def test_cross_attention_reserves_encoder_input_tokens() -> None:
    layers: list[LayerCache] = []
    for i in range(4):
        layers.append(FullAttention(index=i, k_heads=6, k_dim=64, v_heads=6, v_dim=64))
        layers.append(CrossAttention(index=i, k_heads=6, k_dim=64, v_heads=6, v_dim=64,
                                     encoder_len=1500))
    layers.append(FullAttention(index=0, role=Role.ENCODER, k_heads=6, k_dim=64, v_heads=6,
                                v_dim=64))
    plan = plan_vllm(_facts(layers), _req(max_model_len=448), GIB)
    # encoder layers keep no KV; cross: cdiv(8192 max_num_batched_tokens, 16) = 512 pages;
    # self: 448 / 16 = 28 pages
    assert [(g.spec, g.blocks_per_request) for g in plan.groups] == [
        ("FullAttentionSpec", 28), ("CrossAttentionSpec", 512),
    ]
    assert plan.resolved.enable_prefix_caching is False  # encoder-decoder default


def test_refuses_when_one_request_does_not_fit_after_the_null_block() -> None:
    # exactly one request's 2,048 blocks of 2,097,152 B: the null block leaves 2,047 usable
    budget = 2_048 * 2_097_152
    plan = plan_vllm(_facts(_llama8b()), _req(max_model_len=32768), budget)
    assert plan.num_blocks == 2_048
    assert plan.vllm_refuses_to_start
    ok = plan_vllm(_facts(_llama8b()), _req(max_model_len=32768), budget + 2_097_152)
    assert not ok.vllm_refuses_to_start


def test_pp_stages_follow_vllm_get_pp_indices() -> None:
    # 61 layers / 4 = 15 r 1: the extra layer goes to the second-to-last stage
    assert pp_stages(61, 4) == [(0, 15), (15, 30), (30, 46), (46, 61)]
    assert pp_stages(32, 2) == [(0, 16), (16, 32)]
    with pytest.raises(VllmLayoutError):
        pp_stages(2, 4)


def test_pipeline_stages_reconcile_to_the_fewest_blocks() -> None:
    # 33 layers over 2 stages: 16 each, the extra one to the second-to-last stage -> 17 + 16
    layers = [FullAttention(index=i, k_heads=8, k_dim=128, v_heads=8, v_dim=128)
              for i in range(33)]
    assert pp_stages(33, 2) == [(0, 17), (17, 33)]
    plan = plan_vllm(_facts(layers), _req(max_model_len=8192, pipeline_parallel_size=2), GIB)
    # stage 0: 17 x 65,536 B/block -> 1 GiB // 1,114,112 = 963; stage 1: 16 layers -> 1,024
    assert [s.bytes_per_block for s in plan.stages] == [17 * 65_536, 16 * 65_536]
    assert plan.num_blocks == 963
    assert all(s.num_blocks == 963 for s in plan.stages)
    assert [s.layer_range for s in plan.stages] == [(0, 17), (17, 33)]
    alone = plan_vllm_stage(_facts(layers), _req(max_model_len=8192, pipeline_parallel_size=2),
                            GIB, 1)
    assert alone.num_blocks == 1_024
    # vLLM VllmConfig.max_concurrent_batches: Model Runner V2 (the GPU default,
    # use_v2_model_runner) keeps async scheduling on with PP and pp + 1 = 3 batches in flight
    assert plan.resolved.async_scheduling
    assert plan.resolved.max_in_flight_tokens == 3 * 8192


def test_mtp_layers_count_only_when_speculating_with_mtp() -> None:
    layers = [MLA(index=i, latent_dim=512, rope_dim=64) for i in range(3)]
    layers.append(MLA(index=3, role=Role.MTP, latent_dim=512, rope_dim=64))
    plain = plan_vllm(_facts(layers), _req(max_model_len=4096), GIB)
    mtp = plan_vllm(
        _facts(layers),
        _req(max_model_len=4096, num_speculative_tokens=1, speculative_method="mtp"),
        GIB,
    )
    assert (plain.groups[0].num_layers, mtp.groups[0].num_layers) == (3, 4)


def test_float32_checkpoints_run_in_bfloat16() -> None:
    plan = plan_vllm(_facts(_llama8b(), dtype="float32"), _req(max_model_len=4096), GIB)
    assert plan.resolved.model_dtype == "bfloat16"
    assert plan.groups[0].page_size_bytes == 65_536


def test_state_dtypes_follow_vllm_policy() -> None:
    layers: list[LayerCache] = [_GDN(index=i) for i in range(3)]
    layers.append(FullAttention(index=3, k_heads=2, k_dim=256, v_heads=2, v_dim=256))
    # Qwen3_5ForConditionalGenerationConfig.verify_and_update_config reads mamba_ssm_dtype
    # for the Qwen3.5 architectures only (MODELS_CONFIG_MAP); another keeps "auto".
    other = plan_vllm(_facts(layers, mamba_ssm_dtype="float32"), _req(max_model_len=4096), GIB)
    assert other.resolved.mamba_ssm_cache_dtype == "auto"
    qwen35 = records.replace(_facts(layers, mamba_ssm_dtype="float32"),
                                 architectures=("Qwen3_5MoeForCausalLM",))
    plan = plan_vllm(qwen35, _req(max_model_len=4096), GIB)
    assert plan.resolved.mamba_ssm_cache_dtype == "float32"
    mamba = next(spec for spec, _ in plan.layer_specs if spec["spec"] == "MambaSpec")
    assert mamba["dtypes"] == ("bfloat16", "float32")
    # 3 x 8192 x 2 + 32 x 128 x 128 x 4 = 49,152 + 2,097,152
    assert mamba["real_page_size_bytes"] == 2_146_304


def test_chunked_attention_layers_become_chunked_local_specs() -> None:
    layers: list[LayerCache] = [
        ChunkedAttention(index=i, k_heads=8, k_dim=128, v_heads=8, v_dim=128, chunk=8192)
        for i in range(3)
    ]
    layers.append(FullAttention(index=3, k_heads=8, k_dim=128, v_heads=8, v_dim=128))
    plan = plan_vllm(_facts(layers), _req(max_model_len=32768), GIB)
    assert [(g.spec, g.blocks_per_request) for g in plan.groups] == [
        ("ChunkedLocalAttentionSpec", 1_536), ("ChunkedLocalAttentionSpec", 1_536),
        ("ChunkedLocalAttentionSpec", 1_536), ("FullAttentionSpec", 2_048),
    ]


def test_speculation_widens_gdn_conv_state() -> None:
    """vLLM's GDN conv state holds conv_kernel - 1 + num_spec rows (state-shape calculator),
    whatever the speculative method (ngram here: MTP needs the MTP layer kvledger does not
    derive for Qwen3-Next yet, and the layout refuses rather than plan without it)."""
    from kvledger.derive import derive_model
    from kvledger.plan.engines.vllm import plan_vllm
    from kvledger.plan.request import PlanRequest

    facts = derive_model("Qwen/Qwen3-Next-80B-A3B-Thinking")
    budget = 8 << 30
    plans = {
        k: plan_vllm(facts, PlanRequest(engine="vllm==0.33", kv_cache_memory_bytes=budget,
                                        max_model_len=32768, num_speculative_tokens=k,
                                        speculative_method="ngram" if k else None), budget)
        for k in (0, 2)
    }
    shapes = {k: next(s for s, _n in p.layer_specs if s["spec"] == "MambaSpec")["shapes"]
              for k, p in plans.items()}
    # Qwen3-Next: linear_conv_kernel_dim 4 → 3 rows; + 2 speculative tokens → 5 rows;
    # conv channels 2 × 16 key heads × 128 + 32 value heads × 128 = 8192
    assert shapes[0][0] == (3, 8192)
    assert shapes[2][0] == (5, 8192)


def test_mtp_without_mtp_layers_is_refused() -> None:
    # vLLM's MTP drafter adds KV layers of its own; facts without any must not be planned
    # as if it did not (Qwen3-Next once derived none: 12 layers where vLLM had 13).
    facts = _facts(_llama8b())
    with pytest.raises(VllmLayoutError, match="derived none"):
        plan_vllm(facts, _req(kv_cache_memory_bytes=GIB, num_speculative_tokens=1,
                              speculative_method="mtp"), GIB)


def test_model_vllm_lacks_is_refused_not_guessed() -> None:
    from kvledger.derive import derive_model
    from kvledger.plan.engines.vllm import plan_vllm
    from kvledger.plan.engines.vllm.resolve import VllmLayoutError
    from kvledger.plan.request import PlanRequest

    facts = derive_model("MiniMaxAI/MiniMax-M3")
    with pytest.raises(VllmLayoutError, match=r"no model for model_type .minimax_m3."):
        plan_vllm(facts, PlanRequest(engine="vllm==0.33", kv_cache_memory_bytes=1 << 34,
                                     block_size=None), 1 << 34)

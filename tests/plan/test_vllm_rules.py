"""vLLM 0.32 settings read from its source that no oracle case pins down, one test per rule.

Each expected value is worked from the cited vLLM function and the hand-built facts; the
vLLM CPU oracle cannot check these (it forces its own scheduling, lacks GPU-only kernels, or
has no pipeline-parallel option).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from kvledger.derive.layers import (
    MLA,
    FullAttention,
    LayerCache,
    ModelFacts,
    RecurrentState,
    SlidingAttention,
    StateTensor,
)
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.releases import vllm_release
from kvledger.plan.engines.vllm.resolve import concurrent_batches, kv_dtype_name
from kvledger.plan.request import PlanRequest
from kvledger.records import record

GIB = 1 << 30


def _facts(layers: Sequence[LayerCache], *, dtype: str = "bfloat16",
           model_type: str = "hand") -> ModelFacts:
    return ModelFacts(
        model="hand", model_type=model_type, architectures=("HandForCausalLM",),
        layers=tuple(layers), model_dtype=dtype, kv_dtype=dtype, kv_dtype_source="config",
        max_position_embeddings=32768,
    )


def _req(**kw: object) -> PlanRequest:
    return PlanRequest(engine="vllm==0.33", kv_cache_memory_bytes=GIB,
                       **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("engine", "pp", "method", "expected"),
    [
        # VllmConfig.max_concurrent_batches: async + Model Runner V2 → pp + 1.
        ("vllm==0.33", 1, None, (True, 2)),
        ("vllm==0.33", 4, None, (True, 5)),
        ("vllm==0.33", 2, "eagle3", (True, 3)),
        ("vllm==0.33", 2, "mtp", (True, 3)),
        # ngram: vLLM 0.32 turns async scheduling off (VllmConfig.__post_init__) → pp
        # batches; 0.33 only on the V1 runner, and ngram runs on Model Runner V2.
        ("vllm==0.32", 1, "ngram", (False, 1)),
        ("vllm==0.33", 1, "ngram", (True, 2)),
        # medusa: off, and the V1 runner (unsupported by V2) → pp (0.33 refuses the method
        # elsewhere; here only the batches).
        ("vllm==0.32", 2, "medusa", (False, 2)),
        ("vllm==0.33", 2, "medusa", (False, 2)),
    ],
)
def test_concurrent_batches(engine: str, pp: int, method: str | None,
                            expected: tuple[bool, int]) -> None:
    request = PlanRequest(engine=engine, kv_cache_memory_bytes=GIB, pipeline_parallel_size=pp,
                          speculative_method=method, num_speculative_tokens=1 if method else 0)
    release = vllm_release(request.engine_release)
    assert concurrent_batches(request, release) == expected


def test_sliding_window_reserve_follows_in_flight_tokens() -> None:
    # SlidingWindowSpec.max_admission_blocks_per_request: cdiv(min(w - 1 + in_flight, L),
    # block) + 1 pages. Window 4096, 8 KV heads x 128, block 16, L 32768:
    # default (async, 2 x 8192 in flight): cdiv(4095 + 16384, 16) + 1 = 1280 + 1 = 1281
    # ngram under vLLM 0.32 (no async, 1 x 8192): cdiv(4095 + 8192, 16) + 1 = 768 + 1 = 769
    layers = [SlidingAttention(index=0, k_heads=8, k_dim=128, v_heads=8, v_dim=128,
                               window=4096)]
    plain = plan_vllm(_facts(layers), _req(block_size=16, max_model_len=32768), GIB)
    ngram = plan_vllm(_facts(layers), PlanRequest(
        engine="vllm==0.32", kv_cache_memory_bytes=GIB, block_size=16, max_model_len=32768,
        speculative_method="ngram", num_speculative_tokens=3), GIB)
    assert plain.blocks_per_request == 1281
    assert ngram.blocks_per_request == 769


@record(frozen=True, kw_only=True)
class _Mamba2(RecurrentState):
    state_kind: ClassVar[str] = "mamba2"

    def tensors(self) -> Sequence[StateTensor]:
        return [StateTensor("conv", (3, 1024), "bfloat16"),
                StateTensor("temporal", (8, 64, 128), "bfloat16")]


def test_attention_free_model_has_prefix_caching_off() -> None:
    # ModelConfig.is_prefix_caching_supported: "attention_free" → False, so
    # MambaModelConfig keeps mamba_cache_mode "none" and mamba_block_size = max_model_len;
    # one state per request: MambaSpec.max_memory_usage_bytes = page x (1 + 0).
    plan = plan_vllm(_facts([_Mamba2(index=i) for i in range(4)]), _req(max_model_len=4096), GIB)
    assert plan.resolved.enable_prefix_caching is False
    assert plan.resolved.mamba_cache_mode == "none"
    assert plan.mamba_block_size == 4096
    assert plan.blocks_per_request == 1


@pytest.mark.parametrize(("model_type", "dtype", "expected"), [
    ("gemma3", "float16", "bfloat16"),  # _FLOAT16_NOT_SUPPORTED_MODELS → preferred bfloat16
    ("llama", "float16", "float16"),
    ("llama", "float32", "bfloat16"),   # float32 checkpoints downcast to bfloat16
])
def test_model_dtype_auto(model_type: str, dtype: str, expected: str) -> None:
    layers = [FullAttention(index=0, k_heads=8, k_dim=128, v_heads=8, v_dim=128)]
    plan = plan_vllm(_facts(layers, dtype=dtype, model_type=model_type), _req(), GIB)
    assert plan.resolved.model_dtype == expected
    assert plan.resolved.kv_cache_dtype == expected


def _dense_mla() -> list[LayerCache]:
    return [MLA(index=i, latent_dim=512, rope_dim=64) for i in range(4)]


def test_dense_mla_block_size_auto() -> None:
    # bf16: FLASH_ATTN_MLA, MultipleOf(16) → get_preferred_block_size(16) = 16.
    bf16 = plan_vllm(_facts(_dense_mla()), _req(block_size=None, max_model_len=4096), GIB)
    assert bf16.block_size == 16
    # fp8: FLASH_ATTN_MLA takes auto/float16/bfloat16 caches only → FLASHMLA, kernel [64]:
    # 16 is not a multiple of 64 → its smallest size, 64. Page 64 x 576 x 1 B = 36,864 B.
    fp8 = plan_vllm(_facts(_dense_mla()),
                    _req(block_size=None, max_model_len=4096, kv_cache_dtype="fp8"), GIB)
    assert fp8.block_size == 64
    assert fp8.bytes_per_block == 4 * 64 * 576
    # An explicit 16 keeps 16 (FLASHMLA refuses it; TRITON_MLA, MultipleOf(16), takes it).
    fixed = plan_vllm(_facts(_dense_mla()),
                      _req(block_size=16, max_model_len=4096, kv_cache_dtype="fp8"), GIB)
    assert fixed.block_size == 16


@pytest.mark.parametrize(("cache_dtype", "name"), [
    ("auto", "bfloat16"), ("fp8", "fp8_e4m3"), ("fp8_e4m3", "fp8_e4m3"),
    ("fp8_e5m2", "fp8_e5m2"), ("fp8_ds_mla", "fp8_e4m3"), ("nvfp4", "nvfp4"),
    ("float16", "float16"),
])
def test_kv_dtype_is_reported_by_name(cache_dtype: str, name: str) -> None:
    # STR_DTYPE_TO_TORCH_DTYPE stores every fp8 variant as uint8; the name says what the
    # bytes hold.
    assert kv_dtype_name(cache_dtype, "bfloat16") == name


# -- MiniMax-M3 sparse attention: 128-token kernel blocks -------------------------------------
# MiniMaxM3SparseBackend / MiniMaxM3IndexerBackend.get_supported_kernel_block_sizes → [128];
# FLASH_ATTN → [MultipleOf(16)]. The oracle cases in tests/oracles/vllm-0.32/vllm-0.32-more.jsonl
# pin
# auto (128), 256 and fp8; these pin the phase-1 arithmetic and what the oracle cannot show.


@pytest.mark.parametrize(
    ("backends", "expected"),
    [
        # One backend: get_preferred_block_size(16) → 16 if it takes 16, else its smallest.
        ([(("multiple", 16),)], 16),
        ([(128,)], 128),
        ([(("multiple", 64),)], 64),
        # Several: 16 if all take it; else the smallest lcm of one size each that all take.
        ([(("multiple", 16),), (("multiple", 16),)], 16),
        ([(("multiple", 16),), (128,), (128,)], 128),  # MiniMax-M3: lcm(16, 128, 128)
        ([(48,), (64,)], 192),  # lcm(48, 64)
        ([(), (128,), (("multiple", 16),)], 128),  # a backend declaring no sizes takes any
    ],
)
def test_preferred_block_size_for_backends(
    backends: list[tuple[int | tuple[str, int], ...]], expected: int
) -> None:
    from kvledger.plan.engines.vllm.hybrid import preferred_block_size

    assert preferred_block_size(backends) == expected


def _minimax_m3(**request: object) -> Any:
    from kvledger.derive.families.minimax import IndexCache

    # Two layers: 0 dense, 1 sparse (its full-attention cache + a 128-wide index key).
    layers: list[LayerCache] = [
        FullAttention(index=0, dtype="bfloat16", k_heads=4, k_dim=128, v_heads=4, v_dim=128),
        FullAttention(index=1, dtype="bfloat16", k_heads=4, k_dim=128, v_heads=4, v_dim=128),
        IndexCache(index=1, dtype="bfloat16", head_dim=128),
    ]
    return plan_vllm(_facts(layers, model_type="minimax_m3_text"), _req(max_model_len=32768,
                                                                        **request), GIB)


def test_minimax_m3_auto_block_is_128() -> None:
    plan = _minimax_m3()
    # page per layer at 128 tokens: 2 x 4 x 128 x 2 B x 128 = 262,144; index key 128 x 2 B x
    # 128 = 32,768; one block = 2 x 262,144 + 32,768 = 557,056 B; 1 GiB // that = 1,927.
    assert (plan.block_size, plan.bytes_per_block, plan.num_blocks) == (128, 557_056, 1_927)


def test_minimax_m3_block_not_a_multiple_of_128_stops_vllm() -> None:
    from kvledger.plan.engines.vllm.resolve import VllmLayoutError

    # prepare_kernel_block_sizes → select_common_block_size(64, [MINIMAX_M3_SPARSE, ...])
    # finds no kernel size dividing 64 and raises "No common block size for 64".
    with pytest.raises(VllmLayoutError, match="refuses to start: No common block size for 64"):
        _minimax_m3(block_size=64)
    assert _minimax_m3(block_size=384).block_size == 384  # 3 kernel blocks


def test_minimax_m3_nvfp4_is_not_modelled() -> None:
    from kvledger.plan.engines.vllm.resolve import VllmLayoutError

    with pytest.raises(VllmLayoutError, match="MiniMax-M3 nvfp4"):
        _minimax_m3(kv_cache_dtype="nvfp4")

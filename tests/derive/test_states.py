"""Recurrent state facts: per-rank shapes and dtypes against vLLM 0.32's own MambaSpecs (the
oracle), plus the split and dtype rules worked by hand.

The oracle ran vLLM with ``mamba_cache_dtype`` "auto" everywhere; its temporal dtype is
either "auto" (follows the conv dtype) or a value vLLM resolved *from the model* (Qwen3.5's
``mamba_ssm_dtype``, Nemotron-H's config key or float32 default, KDA's fixed float32). So the
facts with no engine override must equal the oracle's dtypes exactly.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.derive.families.kda import IndexerTail, PooledIndexer
from kvledger.derive.layers import MLA, Attention, RecurrentState, Role
from kvledger.derive.states import (
    GatedDeltaNetState,
    KDAState,
    Mamba1State,
    Mamba2State,
    RoleTensor,
    ShortConvState,
    StateRole,
)
from oracle_cases import CONFIGS, ORACLE_FILE, SHARED_MISSING, bundled_id

ORACLE = ORACLE_FILE

def _cases() -> list[dict[str, Any]]:
    if not ORACLE.is_file():
        return []
    out = []
    for line in ORACLE.read_text().splitlines():
        case = json.loads(line)
        if any(s["spec"] in ("MambaSpec", "CircularBufferSpec") for s in case["layer_specs"]):
            out.append(case)
    return out


CASES = _cases()
needs_oracle = pytest.mark.skipif(not CASES, reason=SHARED_MISSING)


def _model_id(config_file: str) -> str:
    return bundled_id(config_file) or str(CONFIGS / config_file)


def _case_id(case: dict[str, Any]) -> str:
    i = case["inputs"]
    return f"{case['config']}-tp{i['tensor_parallel_size']}-{i['kv_cache_dtype']}"


@needs_oracle
def test_oracle_has_recurrent_cases() -> None:
    # Qwen3-Next, Qwen3.5, Qwen3.6, Kimi-K3, GLM-5.3-Flash, two Nemotron-H configs.
    assert len({c["config"] for c in CASES}) == 7


@needs_oracle
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_state_tensors_match_vllm_mambaspec(case: dict[str, Any]) -> None:
    tp = case["inputs"]["tensor_parallel_size"]
    facts = derive_model(_model_id(case["config"]))
    states = [layer for layer in facts.layers
              if isinstance(layer, RecurrentState) and layer.role is Role.DECODER]
    (spec,) = [s for s in case["layer_specs"] if s["spec"] == "MambaSpec"]
    assert len(states) == spec["num_layers"]
    for layer in {type(s) for s in states}:
        assert layer in (GatedDeltaNetState, KDAState, Mamba2State)
    ranked = states[0].split(tp)
    tensors = ranked.tensors()
    assert [list(t.shape) for t in tensors] == spec["shapes"]
    assert [t.dtype for t in tensors] == spec["dtypes"]
    # vLLM's page without padding is the sum of the state tensors.
    assert ranked.bytes_per_request() == spec["real_page_size_bytes"]
    # Every state layer of a model is the same kind and geometry.
    assert len({(type(s), s.split(tp).tensors()) for s in states}) == 1


@needs_oracle
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_temporal_dtype_source_agrees_with_vllm_resolution(case: dict[str, Any]) -> None:
    facts = derive_model(_model_id(case["config"]))
    state = next(layer for layer in facts.layers if isinstance(layer, RecurrentState))
    resolved = case["vllm_resolved"]["mamba_ssm_cache_dtype"]
    assert isinstance(state, GatedDeltaNetState | KDAState | Mamba2State)
    if isinstance(state, KDAState):
        assert state.temporal_dtype_fixed and state.temporal_dtype == "float32"
    elif resolved == "auto":
        assert state.temporal_follows_conv
    else:
        assert not state.temporal_follows_conv and state.temporal_dtype == resolved


@needs_oracle
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_attention_layers_match_vllm_specs(case: dict[str, Any]) -> None:
    """Attention-side counts and geometry at the case's TP (dtype is planner policy for the
    FP8-KV checkpoint, so only the bf16 'auto' cases compare bytes)."""
    tp = case["inputs"]["tensor_parallel_size"]
    facts = derive_model(_model_id(case["config"]), kv_cache_dtype="bfloat16")
    decoder = [layer for layer in facts.layers if layer.role is Role.DECODER]
    for spec in case["layer_specs"]:
        name = spec["first_layer"]
        if spec["spec"] == "FullAttentionSpec":
            layers = [x.split(tp) for x in decoder if isinstance(x, Attention)]
            assert len(layers) == spec["num_layers"]
            assert {(x.k_heads, x.k_dim, x.v_dim) for x in layers} == {
                (spec["num_kv_heads"], spec["head_size"], spec["head_size_v"])}
        elif spec["spec"] == "MLAAttentionSpec" and name.endswith("indexer.k_cache"):
            idx = [x for x in decoder if isinstance(x, PooledIndexer)]
            assert len(idx) == spec["num_layers"]
            assert {(x.bytes_per_entry(), x.pool) for x in idx} == {
                (spec["head_size"], spec["tokens_per_state"])}
        elif spec["spec"] == "MLAAttentionSpec":
            mla = [x for x in decoder if isinstance(x, MLA)]
            assert len(mla) == spec["num_layers"]
            assert {x.latent_dim + x.rope_dim for x in mla} == {spec["head_size"]}
        elif spec["spec"] == "CircularBufferSpec":
            tails = [x for x in decoder if isinstance(x, IndexerTail)]
            assert len(tails) == spec["num_layers"]
            assert {(x.capacity, x.rows, x.head_dim, x.dtype, x.bytes_per_request())
                    for x in tails} == {(spec["block_size"], spec["num_kv_heads"],
                                         spec["head_size"], spec["dtype"],
                                         spec["page_size_bytes"])}


# ---- hand-worked split and dtype rules ------------------------------------------------------


def test_mamba2_extra_groups_when_groups_do_not_divide() -> None:
    # Zamba2-2.7B: I = 2 x 2560 = 5120, 1 group, 80 heads x 64, N = 64, kernel 4.
    s = Mamba2State(index=0, intermediate_size=5120, n_groups=1, num_heads=80, head_dim=64,
                    state_size=64, conv_kernel=4)
    # TP1: conv (3, 5120 + 2*1*64 = 5248); ssm (80, 64, 64).
    assert [t.shape for t in s.tensors()] == [(3, 5248), (80, 64, 64)]
    # TP2: 1 group % 2 != 0 -> groups become 1 + (2 - 1) = 2: (5120 + 2*2*64)/2 = 2688.
    assert [t.shape for t in s.split(2).tensors()] == [(3, 2688), (40, 64, 64)]
    # TP4: groups 1 + 3 = 4: (5120 + 2*4*64)/4 = 1408.
    assert [t.shape for t in s.split(4).tensors()] == [(3, 1408), (20, 64, 64)]


def test_split_that_vllm_rejects_raises() -> None:
    s = GatedDeltaNetState(index=0, num_k_heads=16, num_v_heads=32, head_k_dim=128,
                           head_v_dim=128, conv_kernel=4)
    with pytest.raises(ValueError, match="not divisible"):
        s.split(3).tensors()


def test_spec_tokens_widen_conv_rows() -> None:
    # vLLM: conv_kernel - 1 + num_spec rows for Mamba2 / GDN / KDA.
    s = KDAState(index=0, num_heads=96, head_dim=128, conv_kernel=4, spec_tokens=2)
    assert s.tensors()[0].shape == (5, 36864)


def test_mamba1_and_short_conv_shapes() -> None:
    # Mamba1: I = 4096, N = 16, kernel 4 -> conv (3, 4096/2), ssm (4096/2, 16) at TP2.
    m = Mamba1State(index=0, intermediate_size=4096, state_size=16, conv_kernel=4).split(2)
    assert [t.shape for t in m.tensors()] == [(3, 2048), (2048, 16)]
    # bf16: 3*2048*2 + 2048*16*2 = 12,288 + 65,536 = 77,824 B.
    assert m.bytes_per_request() == 77_824
    c = ShortConvState(index=0, intermediate_size=2048, conv_kernel=3)
    assert [t.shape for t in c.tensors()] == [(2, 2048)]
    assert c.bytes_per_request() == 2 * 2048 * 2


def test_kv_dtype_never_changes_state() -> None:
    s = GatedDeltaNetState(index=0, num_k_heads=16, num_v_heads=32, head_k_dim=128,
                           head_v_dim=128, conv_kernel=4, temporal_dtype="float32",
                           temporal_follows_conv=False)
    assert s.with_dtype("fp8") is s
    with pytest.raises(ValueError):
        s.with_dtype("not-a-dtype")


def test_with_state_dtypes_follows_roles() -> None:
    follows = GatedDeltaNetState(index=0, num_k_heads=16, num_v_heads=32, head_k_dim=128,
                                 head_v_dim=128, conv_kernel=4)
    # Temporal follows conv when the model states none (vLLM ssm "auto").
    out = follows.with_state_dtypes(conv="float32")
    assert [t.dtype for t in out.tensors()] == ["float32", "float32"]
    out = follows.with_state_dtypes(temporal="float16")
    assert [t.dtype for t in out.tensors()] == ["bfloat16", "float16"]
    # KDA's recurrent state is float32 whatever the engine asks.
    kda = KDAState(index=0, num_heads=4, head_dim=8, conv_kernel=4)
    assert [t.dtype for t in kda.with_state_dtypes(temporal="bfloat16").tensors()] == [
        "bfloat16", "float32"]
    roles = [t.role for t in kda.tensors() if isinstance(t, RoleTensor)]
    assert roles == [StateRole.CONV, StateRole.TEMPORAL]


def test_describe_names_roles() -> None:
    kda = KDAState(index=3, num_heads=4, head_dim=8, conv_kernel=4)
    d = kda.describe()
    assert d["state_kind"] == "kda"
    assert [t["role"] for t in d["tensors"]] == ["conv", "temporal"]
    # conv 3 x (3*4*8 = 96) x 2 B = 576; recurrent 4 x 8 x 8 x 4 B = 1024.
    assert d["bytes_per_request"] == 576 + 1024

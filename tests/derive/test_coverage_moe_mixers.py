"""The moe-hybrid-2 coverage group: MoE decoders with standard attention (OLMoE, Granite-3.x
MoE), sliding + full MoE (AFMoE / Arcee Trinity), attention and a Mamba2 mixer side by side in
every layer (Falcon-H1), pure Mamba1 (FalconMamba), and the group's remote-code-only types.

Each config (tests/oracles/configs/, origins in SOURCES-moe-hybrid2.md: two verbatim Granite
files; the others the models' sizes as public repositories keep them in Python, converted to
JSON) is derived and its bytes worked by hand from the config's own values in a comment; the
per-layer facts are then compared with vLLM 0.32's own ``layer_specs`` for every case of
tests/oracles/vllm-0.32/vllm-0.32-coverage-moe-hybrid2.jsonl (commands in README-moe-mixers.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from derive.coverage import check_inspect, fact_specs, oracle_specs, vllm_facts
from derive.coverage import derive_file as _facts
from derive.coverage import raw_config as _raw
from kvledger.derive import UnsupportedArchitecture, derive_model
from kvledger.derive.errors import UnknownCacheKey
from kvledger.derive.layers import Attention, Kind
from kvledger.derive.states import Mamba1State, Mamba2State
from oracle_cases import CONFIGS, needs_shared, shared_text

ORACLES = Path(__file__).parents[1] / "oracles"
CASES = [json.loads(line) for line in
         (ORACLES / "vllm-0.32" / "vllm-0.32-coverage-moe-hybrid2.jsonl").read_text().splitlines()
         if line.strip()]

OLMOE = "allenai--OLMoE-1B-7B.mbridge"
FALCON_H1 = "tiiuae--Falcon-H1-0.5B.mbridge.D_SSM.MODIFIED"
FALCON_H1_ABRIDGED = "tiiuae--Falcon-H1-0.5B.mbridge"
FALCON_MAMBA = "tiiuae--falcon-mamba-7b.mlstm"
GRANITE_31 = "ibm-granite--granite-3.1-1b-a400m-instruct"
GRANITE_30 = "ibm-granite--granite-3.0-1b-a400m-instruct"
TRINITY = "arcee-ai--Trinity-Nano-Preview.neuronx"


# -- per-layer facts against vLLM's layer_specs, for every case of the group ----------------
@pytest.mark.parametrize("case", CASES, ids=lambda c: c["command"].split(" ", 2)[1]
                         .removeprefix("configs/") + c["command"].split("unique", 1)[1])
def test_decoder_facts_match_vllm_layer_specs(case: dict[str, Any]) -> None:
    facts = derive_model(str(CONFIGS / case["config"]))
    assert fact_specs(facts, case["inputs"]["tensor_parallel_size"]) == oracle_specs(case)


def test_group_cases_cover_every_type() -> None:
    types = {_raw(c["config"].removesuffix(".json"))["model_type"] for c in CASES}
    assert types == {"olmoe", "falcon_h1", "falcon_mamba", "granitemoe", "afmoe"}


# -- OLMoE -----------------------------------------------------------------------------------
def test_olmoe_head_dim_is_hidden_over_heads() -> None:
    # 16 layers, 16 KV heads × hidden 2048 / 16 heads = 128, bf16:
    # 2 × 16 × 128 × 2 B = 8,192 B/token per layer × 16 = 131,072 B/token; no window.
    facts = _facts(OLMOE)
    assert facts.model_type == "olmoe"
    assert {(layer.kind, layer.bytes_per_token()) for layer in facts.layers} == {
        (Kind.FULL, 8_192)}
    assert len(facts.layers) == 16
    assert facts.bytes_per_token() == 131_072
    assert facts.max_position_embeddings == 4_096


def test_olmoe_ignores_a_stated_head_dim_as_vllm_does() -> None:
    # olmoe.py OlmoeAttention: head_dim = hidden_size // total_num_heads, whatever head_dim
    # says; a disagreeing head_dim is planned vLLM's way, with a warning.
    raw = _raw(OLMOE)
    raw["head_dim"] = 64
    facts = derive_model(raw)
    assert facts.bytes_per_token() == 131_072
    assert any("head_dim 64 disagrees" in w for w in facts.warnings)


def test_olmoe_kv_heads_default_to_query_heads_and_window_is_refused() -> None:
    # OlmoeConfig: num_key_value_heads None -> num_attention_heads (16), the same 131,072.
    raw = _raw(OLMOE)
    del raw["num_key_value_heads"]
    assert derive_model(raw).bytes_per_token() == 131_072
    # olmoe.py builds no windowed attention; a window key is not silently dropped.
    raw["sliding_window"] = 4096
    with pytest.raises(UnknownCacheKey, match="sliding_window"):
        derive_model(raw)


# -- Granite-3.x MoE ---------------------------------------------------------------------------
def test_granitemoe_head_dim_is_hidden_over_heads() -> None:
    # granite-3.1-1b-a400m (verbatim): 24 layers, 8 KV heads × hidden 1024 / 16 heads = 64,
    # bf16: 2 × 8 × 64 × 2 B = 2,048 B/token per layer × 24 = 49,152 B/token; no window;
    # the 32 experts hold no cache; max_position_embeddings 131072.
    facts = _facts(GRANITE_31)
    assert facts.model_type == "granitemoe"
    assert {(layer.kind, layer.bytes_per_token()) for layer in facts.layers} == {
        (Kind.FULL, 2_048)}
    assert facts.bytes_per_token() == 49_152
    assert facts.max_position_embeddings == 131_072
    # Granite-3.0: the same attention, 4096 positions.
    old = _facts(GRANITE_30)
    assert (old.bytes_per_token(), old.max_position_embeddings) == (49_152, 4_096)


def test_granitemoe_sliding_layers_are_not_guessed() -> None:
    # granite.py granite_layer_attn_params windows a layer (and adds sinks) only from
    # layer_types + sliding_window, which this row does not model: refused by name.
    raw = _raw(GRANITE_31)
    raw["layer_types"] = ["sliding_attention", "full_attention"] * 12
    raw["sliding_window"] = 4096
    with pytest.raises(UnknownCacheKey, match=r"layer_types|sliding_window"):
        derive_model(raw)


# -- AFMoE (Arcee Trinity): sliding layers rebuilt by the config class -----------------------
def test_afmoe_layer_types_rebuilt_from_global_attn_every_n_layers() -> None:
    # Trinity-Nano (layer_types left out of this copy): AfmoeConfig.__post_init__ makes layer i
    # full when (i + 1) % global_attn_every_n_layers (4) == 0: layers 3, 7, ..., 55 (14 full),
    # the other 42 slide with sliding_window 2048. Every layer: 2 KV heads × head_dim 128,
    # bf16: 2 × 2 × 128 × 2 B = 1,024 B/token; 56 × 1,024 = 57,344 B/token.
    facts = _facts(TRINITY)
    assert facts.model_type == "afmoe"
    full = [layer.index for layer in facts.layers if layer.kind is Kind.FULL]
    assert full == list(range(3, 56, 4))
    sliding = [layer for layer in facts.layers if layer.kind is Kind.SLIDING]
    assert len(sliding) == 42 and {getattr(layer, "window", None) for layer in sliding} == {2048}
    assert facts.bytes_per_token() == 57_344


def test_afmoe_stated_layer_types_win_and_bad_interval_is_refused() -> None:
    # A stated layer_types is what vLLM's afmoe.py reads (all full here: 56 × 1,024 B/token,
    # no window).
    raw = _raw(TRINITY)
    raw["layer_types"] = ["full_attention"] * 56
    facts = derive_model(raw)
    assert {layer.kind for layer in facts.layers} == {Kind.FULL}
    # Without layer_types, an interval of 0 leaves AfmoeConfig nothing to build them from.
    raw = _raw(TRINITY)
    raw["global_attn_every_n_layers"] = 0
    with pytest.raises(UnsupportedArchitecture, match="global_attn_every_n_layers=0"):
        derive_model(raw)


# -- Falcon-H1: attention and Mamba2 in every layer ------------------------------------------
def test_falcon_h1_attention_and_mamba2_in_every_layer() -> None:
    # 36 layers, each with attention (2 KV heads × head_dim 64, bf16:
    # 2 × 2 × 64 × 2 B = 512 B/token per layer × 36 = 18,432 B/token) and a Mamba2 mixer
    # (mamba_d_ssm 1536 = 24 heads × 64, 1 group, d_state 128, d_conv 4, bf16):
    #   conv  (4 - 1) × (1536 + 2 × 1 × 128) = 3 × 1792 = 5,376 values × 2 B = 10,752 B
    #   ssm   24 × 64 × 128 = 196,608 values × 2 B = 393,216 B
    #   403,968 B per request per layer × 36 = 14,542,848 B per request.
    facts = _facts(FALCON_H1)
    assert facts.model_type == "falcon_h1"
    assert len(facts.layers) == 72
    attn = [layer for layer in facts.layers if isinstance(layer, Attention)]
    states = [layer for layer in facts.layers if isinstance(layer, Mamba2State)]
    # vLLM registers the mixer of layer i as layer num_hidden_layers + i.
    assert [layer.index for layer in attn] == list(range(36))
    assert [layer.index for layer in states] == list(range(36, 72))
    assert {(layer.k_heads, layer.k_dim, layer.kind) for layer in attn} == {(2, 64, Kind.FULL)}
    assert facts.bytes_per_token() == 18_432
    assert {tuple(t.shape) for t in states[0].tensors()} == {(3, 1792), (24, 64, 128)}
    assert states[0].bytes_per_request() == 403_968
    assert facts.bytes_per_request() == 14_542_848


def test_falcon_h1_tp2_replicates_the_single_group() -> None:
    # TP 2: 24 Mamba heads → 12 per rank; 1 group < 2 ranks, so vLLM adds one group per rank
    # (extra_groups_for_head_shards): conv (1536 + 2 × 2 × 128) / 2 = 1,024 per rank;
    # 2 KV heads → 1 per rank.
    facts = _facts(FALCON_H1)
    state = next(layer for layer in facts.layers if isinstance(layer, Mamba2State)).split(2)
    assert {tuple(t.shape) for t in state.tensors()} == {(3, 1024), (12, 64, 128)}
    attn = next(layer for layer in facts.layers if isinstance(layer, Attention)).split(2)
    assert isinstance(attn, Attention) and attn.k_heads == 1


def test_falcon_h1_intermediate_from_expand_when_d_ssm_is_null() -> None:
    # mamba_d_ssm null: vLLM uses mamba_expand × hidden_size = 2 × 1024 = 2048, which 24
    # heads do not divide: FalconH1Config rejects the file ("mamba_n_heads must divide").
    raw = _raw(FALCON_H1)
    raw["mamba_d_ssm"] = None
    with pytest.raises(UnsupportedArchitecture, match="mamba_n_heads must divide"):
        derive_model(raw)
    # 16 heads divide 2048, but 16 × the stated mamba_d_head 64 = 1024 ≠ 2048: rejected too.
    raw["mamba_n_heads"] = 16
    with pytest.raises(UnsupportedArchitecture, match="do not match the model "
                                                      "intermediate_size"):
        derive_model(raw)
    # mamba_d_head omitted: FalconH1Config's "auto" → 2048 / 16 = 128: conv 3 × (2048 + 2 ×
    # 128) = 6,912 values × 2 B, ssm 16 × 128 × 128 = 262,144 values × 2 B.
    del raw["mamba_d_head"]
    state = next(layer for layer in derive_model(raw).layers if isinstance(layer, Mamba2State))
    assert state.bytes_per_request() == 6_912 * 2 + 262_144 * 2


def test_falcon_h1_abridged_copy_takes_the_class_default_d_ssm_and_is_refused() -> None:
    # Megatron-Bridge's dict omits mamba_d_ssm: FalconH1Config fills in 1024, which 24 heads
    # do not divide, so transformers' validate_architecture rejects it ("mamba_n_heads must
    # divide mamba_expand * hidden_size") and vLLM 0.32 cannot load it
    # (oracle: README-moe-mixers.md).
    with pytest.raises(UnsupportedArchitecture, match="mamba_n_heads 24 does not divide the "
                                                      "Mamba intermediate size 1024"):
        _facts(FALCON_H1_ABRIDGED)


def test_falcon_h1_head_dim_falls_back_to_hidden_over_heads() -> None:
    # head_dim null: vLLM FalconH1AttentionDecoderLayer uses hidden_size // heads = 1024 / 8
    # = 128: 2 × 2 × 128 × 2 B = 1,024 B/token per layer × 36.
    raw = _raw(FALCON_H1)
    raw["head_dim"] = None
    assert derive_model(raw).bytes_per_token() == 36 * 1_024


def test_falcon_h1_layer_types_are_not_guessed() -> None:
    # FalconH1Config derives its layer types (all "hybrid"); a file stating its own would be a
    # layout kvledger has not checked against vLLM: refused by name.
    raw = _raw(FALCON_H1)
    raw["layer_types"] = ["attention"] * 36
    with pytest.raises(UnknownCacheKey, match="layer_types"):
        derive_model(raw)


# -- FalconMamba: mamba.py's Mamba1 state ----------------------------------------------------
def test_falcon_mamba_state_uses_the_stated_intermediate_size() -> None:
    # falcon-mamba-7b states expand 16 and intermediate_size 8192 (hidden 4096). transformers'
    # FalconMambaConfig keeps the stated 8192 and vLLM's mamba.py sizes the state with it.
    # 64 layers, state_size 16, conv_kernel 4, bf16 (vLLM mamba1_state_shape):
    #   conv  8192 × (4 - 1) = 24,576 values × 2 B = 49,152 B
    #   ssm   8192 × 16 = 131,072 values × 2 B = 262,144 B
    #   311,296 B per request per layer × 64 = 19,922,944 B per request; no KV.
    facts = _facts(FALCON_MAMBA)
    assert facts.model_type == "falcon_mamba"
    assert len(facts.layers) == 64
    assert all(isinstance(layer, Mamba1State) for layer in facts.layers)
    assert {tuple(t.shape) for t in facts.layers[0].tensors()} == {(3, 8192), (8192, 16)}
    assert facts.bytes_per_token() == 0
    assert facts.bytes_per_request() == 19_922_944
    [warning] = facts.warnings
    assert "expand x hidden_size = 65536 disagrees with intermediate_size 8192" in warning


def test_falcon_mamba_without_intermediate_size_uses_expand_times_hidden() -> None:
    # No intermediate_size: FalconMambaConfig.__post_init__ sets expand × hidden_size; with
    # expand 2: 8192, the same 19,922,944 B per request, and nothing disagrees.
    raw = _raw(FALCON_MAMBA)
    del raw["intermediate_size"]
    raw["expand"] = 2
    facts = derive_model(raw)
    assert facts.bytes_per_request() == 19_922_944 and not facts.warnings


# -- kvledger inspect over every config of the group ---------------------------------------
GROUP_FILES = sorted(
    CONFIGS / line.split("`")[1]
    for line in shared_text("SOURCES-moe-hybrid2.md").splitlines()
    if line.startswith("| `")
)
REFUSED = {f"{FALCON_H1_ABRIDGED}.json": "mamba_n_heads must divide"}


@needs_shared
def test_group_files_are_listed() -> None:
    assert len(GROUP_FILES) == 7
    for path in GROUP_FILES:
        assert path.is_file(), path


@needs_shared
@pytest.mark.parametrize("path", GROUP_FILES, ids=[p.name.removesuffix(".json")
                                                   for p in GROUP_FILES])
def test_inspect_derives_or_refuses(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check_inspect(path, REFUSED.get(path.name), capsys)


# -- remote-code-only checkpoints of the group ------------------------------------------------
@pytest.mark.parametrize(("model_type", "architecture"), [
    ("bailing_moe_v3", "BailingMoeV3ForCausalLM"),
    ("bailing_hybrid", "BailingMoeV2_5ForCausalLM"),
])
def test_remote_code_only_types_are_refused_with_vllms_reason(model_type: str,
                                                              architecture: str) -> None:
    # No transformers 5.19 config class and none in vLLM 0.32's _CONFIG_REGISTRY: vLLM stops
    # at config loading without --trust-remote-code.
    with pytest.raises(UnsupportedArchitecture) as err:
        vllm_facts({"model_type": model_type, "architectures": [architecture]})
    assert f"model_type '{model_type}' has no transformers 5.19 or vLLM 0.32 config class" \
        in str(err.value)
    assert f"serves {architecture} only with --trust-remote-code" in str(err.value)

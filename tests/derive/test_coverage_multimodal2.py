"""Multimodal wrappers, coverage wave 2 (group "multimodal-2"): each real config derives only its
language model's KV cache (vision / audio encoders hold none in vLLM 0.32), with the bytes per
token worked by hand from the config's own values in a comment, and the per-layer facts against
vLLM 0.32's ``layer_specs`` (``tests/oracles/vllm-0.32/vllm-0.32-coverage-multimodal2.jsonl``, made
by
``tests/oracles/run_multimodal2_oracle.py``; the full plans are replayed by
``tests/plan/test_vllm_oracles.py``). Wrappers vLLM 0.32 cannot build without remote code are
refused with its reason.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from derive.coverage import WrapperRow, check_inspect, check_wrapper, find_case, vllm_facts
from derive.coverage import attention_groups as _attention
from derive.coverage import derive_file as _facts
from derive.coverage import oracle_attention as _oracle
from derive.coverage import raw_config as _raw
from derive.coverage import wrapper_note as _note
from kvledger import records
from kvledger.derive import UnknownCacheKey, UnsupportedArchitecture, derive_model
from kvledger.derive.layers import Role
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS, needs_shared

HERE = Path(__file__).resolve().parents[1] / "oracles"
CASES_FILE = HERE / "vllm-0.32" / "vllm-0.32-coverage-multimodal2.jsonl"
_case = partial(find_case, CASES_FILE)


GEMMA3N = "unsloth--gemma-3n-E2B-it"
GEMMA3N_TEXT = "unsloth--gemma-3n-E2B-it.TEXT.MODIFIED"
PALIGEMMA = "google--paligemma-3b-pt-224"

# -- the types, one real config each ------------------------------------------------------------
# (stem, model_type, where the language model sat, its row, KV dtype, max positions,
#  decoder bytes/token worked from the config)
TYPES = [
    # Gemma 3n E2B: text_config 30 layers, 2 KV heads × head_dim 256, bfloat16;
    # num_kv_shared_layers 10 → layers 20..29 read earlier caches, 20 layers allocate:
    # 20 × 2 (K, V) × 2 × 256 × 2 B = 40,960.
    (GEMMA3N, "gemma3n", "text_config", "gemma3n_text", "bfloat16", 32_768, 40_960),
    # PaliGemma-3B: sparse gemma text_config, 18 layers, 1 KV head; GemmaConfig fills
    # head_dim 256 and 8192 positions; float32 stated (derive keeps it; vLLM serves bfloat16):
    # 18 × 2 × 1 × 256 × 4 B = 36,864.
    (PALIGEMMA, "paligemma", "text_config", "gemma", "float32", 8192, 36_864),
]


@pytest.mark.parametrize("row", TYPES, ids=[t[0] for t in TYPES])
def test_wrapper_derives_its_language_model(row: WrapperRow) -> None:
    check_wrapper(*row)


# stem → (KV heads, head dim, window) → layers that allocate a cache, from the config's own
# values (vLLM's layer_specs list only those: a KV-shared layer has no spec of its own).
ATTENTION = {
    # layer_types: full every 5th layer (4, 9, ..., 29); layers 20..29 are KV-shared, which
    # leaves layers 0..19: 16 sliding (window 512), 4 full (4, 9, 14, 19).
    GEMMA3N: {(2, 256, 512): 16, (2, 256, None): 4},
    GEMMA3N_TEXT: {(2, 256, 512): 16, (2, 256, None): 4},
    PALIGEMMA: {(1, 256, None): 18},
}


def _owning(facts: Any) -> Counter[tuple[int, int, int | None]]:
    """``attention_groups`` over the layers that allocate (not KV-shared)."""
    kept = [x for x in facts.by_role(Role.DECODER) if x.shares_with is None]
    return _attention(records.replace(facts, layers=tuple(kept)))
# The oracle ran the text model alone (the wrapper's vision tower needs timm, absent from the
# oracle's venv): gemma3n_mm.py builds this same Gemma3nForCausalLM on text_config.
ORACLE_STEM = {GEMMA3N: GEMMA3N_TEXT}


@pytest.mark.parametrize("stem", sorted(ATTENTION))
def test_attention_layers_match_the_config_and_vllm(stem: str) -> None:
    facts = _facts(stem)
    assert _owning(facts) == Counter(ATTENTION[stem])
    assert _owning(facts) == _oracle(_case(ORACLE_STEM.get(stem, stem)))


def test_wrapper_and_text_model_derive_the_same_layers() -> None:
    assert _facts(GEMMA3N).by_role(Role.DECODER) == _facts(GEMMA3N_TEXT).by_role(Role.DECODER)


def test_wrapper_plans_as_vllm_planned_its_language_model() -> None:
    # The oracle could only build the text model; the wrapper's plan must be the same numbers.
    # Hand check, bfloat16: a block page per layer is 16 tokens × 2 (K, V) × 2 heads × 256 × 2 B
    # = 32,768; vLLM groups the 20 owning layers 4 to a group (16 sliding in 4, 4 full in 1),
    # so a block costs 4 × 32,768 = 131,072 B and 16 GiB holds 2**34 / 131,072 = 131,072.
    case = _case(GEMMA3N_TEXT)
    request = PlanRequest(engine="vllm==0.33", kv_cache_memory_bytes=16 << 30, max_model_len=32768,
                          block_size="auto")
    plan = plan_vllm(_facts(GEMMA3N), request, 16 << 30)
    assert case["expected"]["bytes_per_block"] == 4 * 16 * 2 * 2 * 256 * 2
    assert plan.num_blocks == case["expected"]["num_blocks"] == (16 << 30) // 131_072
    assert plan.kv_cache_tokens == case["expected"]["kv_cache_tokens"]


def test_paligemma_block_by_hand() -> None:
    # Served in bfloat16: 18 layers × 16 tokens × 2 × 1 head × 256 × 2 B = 294,912 B a block;
    # 2**34 // 294,912 = 58,254 blocks.
    case = _case(PALIGEMMA)
    assert case["expected"]["bytes_per_block"] == 18 * 16 * 2 * 1 * 256 * 2
    assert case["expected"]["num_blocks"] == (16 << 30) // 294_912 == 58_254


def test_gemma3n_kv_sharing_targets_match_vllm() -> None:
    # vLLM gemma3n.py Gemma3nAttention: first shared layer = 30 - 10 = 20; a sliding shared
    # layer reads layer 20 - 2 = 18 (sliding), a full one layer 20 - 1 = 19 (full).
    facts = _facts(GEMMA3N)
    shares = {layer.index: layer.shares_with for layer in facts.by_role(Role.DECODER)
              if layer.shares_with is not None}
    expected = {i: (19 if (i + 1) % 5 == 0 else 18) for i in range(20, 30)}
    assert shares == expected
    oracle = _case(GEMMA3N_TEXT)
    # kv_sharing_layers is not kept in the case; its groups hold only the 20 owning layers:
    # 4 sliding groups × 4 + 1 full group × 4.
    assert sum(g["num_layers"] for g in oracle["kv_cache_groups"]) == 20


def test_gemma3n_layer_types_default_and_offsets() -> None:
    # Gemma3nTextConfig without layer_types: full iff (i + 1) % 5 == 0 — the same list.
    raw = _raw(GEMMA3N)
    del raw["text_config"]["layer_types"]
    assert _owning(derive_model(raw)) == Counter(ATTENTION[GEMMA3N])
    # All 30 layers, shared ones included: 24 sliding, 6 full.
    assert _attention(derive_model(raw)) == Counter({(2, 256, 512): 24, (2, 256, None): 6})
    # No shared layers: all 30 allocate, 30 × 2 × 2 × 256 × 2 B = 61,440.
    raw["text_config"]["num_kv_shared_layers"] = 0
    assert derive_model(raw).bytes_per_token() == 61_440
    # Every layer shared but the first: the sliding offset (first - 2 = -1) names no target, so
    # vLLM leaves those layers their own cache; full layers read layer 0 — a sliding one.
    raw["text_config"]["num_kv_shared_layers"] = 29
    with pytest.raises(UnsupportedArchitecture, match="would read layer 0's cache"):
        derive_model(raw)


def test_gemma3n_text_keys_are_guarded() -> None:
    raw = _raw(GEMMA3N)
    raw["text_config"]["kv_sharing_layers"] = [1]
    with pytest.raises(UnknownCacheKey, match="kv_sharing_layers"):
        derive_model(raw)


def test_gemma3n_weights_estimate_reads_per_layer_mlp_widths() -> None:
    # Gemma3nTextConfig takes intermediate_size as one width per layer: 30 × 8192 here.
    from kvledger.plan.weights import parameter_counts

    text = _raw(GEMMA3N)["text_config"]
    counts = parameter_counts(text)
    # 3 matrices (gate, up, down) × hidden 2048 × (30 × 8192).
    assert counts["dense_mlp"] == 3 * 2048 * 30 * 8192
    text["intermediate_size"] = [8192] * 29 + ["8192"]
    with pytest.raises(ValueError, match=r"intermediate_size"):
        derive_model({**_raw(GEMMA3N), "text_config": text})


def test_paligemma2_holds_a_gemma2_language_model() -> None:
    # PaliGemma 2 (3B) is this wrapper around Gemma-2-2B; vLLM paligemma.py builds
    # Gemma2ForCausalLM for any text model_type but "gemma". No PaliGemma 2 config.json was
    # found, so the real Gemma-2-2B-it config stands in as its text_config: the wrapper derives
    # exactly the layers the text model derives alone — 26 layers alternating sliding (4096)
    # and full, 4 KV heads × 256 (gemma2 row, tests/derive/test_interleaved.py).
    gemma2 = _raw("google--gemma-2-2b-it")
    raw = _raw(PALIGEMMA)
    raw["text_config"] = gemma2
    raw["torch_dtype"] = "bfloat16"  # the root dtype wins over the text config's (vLLM)
    wrapped = derive_model(raw)
    assert wrapped.by_role(Role.DECODER) == derive_model(gemma2).by_role(Role.DECODER)
    assert _attention(wrapped) == Counter({(4, 256, 4096): 13, (4, 256, None): 13})
    assert _note(wrapped, "text_config", "gemma2")


def test_paligemma_text_config_may_state_bidirectional_attention() -> None:
    # A file saved by a newer transformers states what PaliGemmaConfig sets: the KV is the
    # same (vLLM's gemma.py never reads it). A plain gemma config with it is still refused.
    raw = _raw(PALIGEMMA)
    raw["text_config"]["use_bidirectional_attention"] = True
    assert derive_model(raw).bytes_per_token() == 36_864
    with pytest.raises(UnknownCacheKey, match="use_bidirectional_attention"):
        derive_model({**raw["text_config"], "architectures": ["GemmaForCausalLM"]})


def test_paligemma_refuses_an_inner_type_it_was_not_checked_against() -> None:
    raw = _raw(PALIGEMMA)
    raw["text_config"]["model_type"] = "llama"
    with pytest.raises(UnsupportedArchitecture, match="paligemma row accepts gemma, gemma2"):
        derive_model(raw)


def test_paligemma_dtype_follows_vllm_downcast() -> None:
    # float32 stated at the root: vLLM serves float32 checkpoints in bfloat16
    # (vllm/config/model.py); the oracle case records it.
    assert _case(PALIGEMMA)["vllm_resolved"]["model_dtype"] == "bfloat16"
    assert _facts(PALIGEMMA).kv_dtype == "float32"


# -- refusals: vLLM 0.32 cannot build these from a config.json ----------------------------------
REMOTE = "contains custom code which must be executed to correctly load the model"


@pytest.mark.parametrize(("model_type", "arch"), [
    ("interns1", "InternS1ForConditionalGeneration"),
])
def test_remote_code_wrappers_are_refused(model_type: str, arch: str) -> None:
    with pytest.raises(UnsupportedArchitecture) as err:
        vllm_facts({"model_type": model_type, "architectures": [arch]})
    message = str(err.value)
    assert f"model_type '{model_type}'" in message and REMOTE in message
    assert "--trust-remote-code" in message and arch in message


# -- kvledger inspect over every config of this group (sibling of test_inspect_every_config) --
FILES = sorted(p for p in CONFIGS.glob("*.json")
               if p.stem in {t[0] for t in TYPES} | set(ORACLE_STEM.values()))


@needs_shared
def test_every_config_of_the_group_is_classified() -> None:
    assert len(FILES) == len(TYPES) + len(ORACLE_STEM)


@needs_shared
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_inspect_derives(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check_inspect(path, None, capsys)

"""The dense-2 coverage group (issue #9 item 3, second wave): decoders of vLLM 0.32's registry
that kvledger newly derives, each on a real config (tests/oracles/configs/, origins in
SOURCES-dense2.md) with the bytes per token worked by hand from the config's own values, and the
per-layer facts against vLLM's ``layer_specs`` for every case of
tests/oracles/vllm-0.32/vllm-0.32-coverage-dense2.jsonl (commands in
tests/oracles/README-registry-decoders.md).
Types vLLM 0.32 serves only with remote code are refused with that reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from derive.coverage import (
    check_by_hand,
    check_inspect,
    fact_specs,
    oracle_specs,
    vllm_derive_file,
    vllm_facts,
)
from derive.coverage import raw_config as _raw
from kvledger.derive import UnsupportedArchitecture, derive_model
from kvledger.derive.layers import Attention, Role
from oracle_cases import CONFIGS, config_path, needs_shared, shared_text

ORACLES = Path(__file__).resolve().parents[1] / "oracles"
CASES = [json.loads(line) for line in
         (ORACLES / "vllm-0.32" / "vllm-0.32-coverage-dense2.jsonl").read_text().splitlines()
         if line.strip()]
MINITRON = "nvidia--Minitron-4B-Base.CONVERTED"
ERNIE = "baidu--ERNIE-4.5-0.3B-PT.HF-ARCH.MODIFIED"


# -- every type on its real config: bytes per token by hand --------------------------------
# (config stem, model_type, bytes/token, {(kv heads, head dim, window): layers})
# The arithmetic: layers × 2 (K and V) × KV heads × head dim × bytes per element.
DERIVED = [
    # Minitron-4B (nemotron): no head_dim key, so 3072 hidden / 24 heads = 128 (kv_channels
    # says 128 too); 8 KV heads; bfloat16: 32 × 2 × 8 × 128 × 2 = 131,072.
    (MINITRON, "nemotron", 131_072, {(8, 128, None): 32}),
    # ERNIE-4.5-0.3B (ernie4_5): 18 layers, 2 KV heads × head_dim 128 (stated; 1024 / 16 would
    # be 64); bfloat16: 18 × 2 × 2 × 128 × 2 = 18,432.
    (ERNIE, "ernie4_5", 18_432, {(2, 128, None): 18}),
]


@pytest.mark.parametrize(("stem", "model_type", "per_token", "groups"), DERIVED,
                         ids=[d[0] for d in DERIVED])
def test_derives_by_hand(stem: str, model_type: str, per_token: int,
                         groups: dict[tuple[int, int, int | None], int]) -> None:
    check_by_hand(stem, model_type, per_token, groups)


def test_every_derived_config_has_a_vllm_case() -> None:
    ran = {c["config"].removesuffix(".json") for c in CASES}
    assert {d[0] for d in DERIVED} <= ran


# -- per-layer facts against vLLM's layer_specs, at the case's tensor parallelism ----------
@pytest.mark.parametrize("case", CASES, ids=[f"{c['config']}-{i}" for i, c in enumerate(CASES)])
def test_layers_match_vllm_layer_specs(case: dict[str, Any]) -> None:
    facts = derive_model(str(config_path(case)))
    # This group is plain attention: every decoder layer is one (no recurrent state).
    assert all(isinstance(x, Attention) for x in facts.by_role(Role.DECODER))
    assert fact_specs(facts, case["inputs"]["tensor_parallel_size"]) == oracle_specs(case)


DEFAULT_LEN = [c for c in CASES if "--max-model-len" not in c["command"]]


@pytest.mark.parametrize("case", DEFAULT_LEN, ids=[c["config"] for c in DEFAULT_LEN])
def test_config_length_is_the_one_vllm_derives(case: dict[str, Any]) -> None:
    assert derive_model(str(config_path(case))).max_position_embeddings == \
        case["inputs"]["max_model_len"]


def test_dense2_cases_cover_tp_and_fp8() -> None:
    # Minitron at TP 2 holds 8 / 2 = 4 KV heads per rank; its fp8 run stores 1-byte elements;
    # ERNIE's 2 KV heads at TP 4 are replicated, 1 per rank.
    by_why = {c["why"]: c for c in CASES}
    tp2 = next(c for w, c in by_why.items() if "Nemotron at TP 2" in w)
    assert tp2["vllm_resolved"]["tp_kv_heads_per_rank"] == 4
    fp8 = next(c for w, c in by_why.items() if "fp8" in w)
    assert fp8["layer_specs"][0]["dtype"] == "uint8"
    tp4 = next(c for w, c in by_why.items() if "TP 4" in w)
    assert tp4["vllm_resolved"]["tp_kv_heads_per_rank"] == 1


# -- nemotron: the rules of vLLM's nemotron.py, variant by variant --------------------------
def test_nemotron_stated_head_dim_wins_over_hidden_over_heads() -> None:
    # NemotronAttention.__init__ takes config.head_dim when set (Minitron-8B states 128 beside
    # hidden 4096 / 48 heads): 32 × 2 × 8 × 64 × 2 = 65,536 with head_dim 64.
    raw = _raw(MINITRON)
    raw["head_dim"] = 64
    assert derive_model(raw).bytes_per_token() == 65_536


def test_nemotron_kv_channels_is_not_read() -> None:
    # nemotron.py never reads kv_channels: the head stays hidden_size // heads = 128.
    raw = _raw(MINITRON)
    raw["kv_channels"] = 64
    assert derive_model(raw).bytes_per_token() == 131_072


def test_nemotron_without_kv_heads_is_multi_head() -> None:
    # NemotronDecoderLayer: num_key_value_heads defaults to num_attention_heads (24):
    # 32 × 2 × 24 × 128 × 2 = 393,216.
    raw = _raw(MINITRON)
    del raw["num_key_value_heads"]
    assert derive_model(raw).bytes_per_token() == 393_216


def test_nemotron_length_defaults_to_the_class_value() -> None:
    # NemotronConfig's max_position_embeddings default is 4096.
    raw = _raw(MINITRON)
    del raw["max_position_embeddings"]
    assert derive_model(raw).max_position_embeddings == 4096


# -- ernie4_5: llama.py attention with Ernie4_5Config's defaults ------------------------------
def test_ernie_omitted_head_dim_is_the_class_default_not_hidden_over_heads() -> None:
    # Ernie4_5Config's head_dim default is 128 (not None), so a file without head_dim still
    # gets 128, not 1024 / 16 = 64: 18,432 B/token as stated.
    raw = _raw(ERNIE)
    del raw["head_dim"]
    assert derive_model(raw).bytes_per_token() == 18_432


def test_ernie_omitted_kv_heads_is_the_class_default() -> None:
    # Ernie4_5Config: num_key_value_heads defaults to 2 (not to the 16 query heads).
    raw = _raw(ERNIE)
    del raw["num_key_value_heads"]
    assert derive_model(raw).bytes_per_token() == 18_432
    raw["num_key_value_heads"] = 16  # multi-head: 18 × 2 × 16 × 128 × 2 = 147,456
    assert derive_model(raw).bytes_per_token() == 147_456


def test_ernie_remote_code_architecture_is_refused_with_vllms_words() -> None:
    # The verbatim remote-code file names Ernie4_5_ForCausalLM; the oracle
    # (README-registry-decoders.md) stops with "Model architectures ['Ernie4_5_ForCausalLM']
    # are not supported for now".
    with pytest.raises(UnsupportedArchitecture, match=re.escape(
            "'Model architectures ['Ernie4_5_ForCausalLM'] are not supported for now'")):
        vllm_derive_file("baidu--ERNIE-4.5-0.3B-PT")


# -- remote-code-only types: refused with vLLM's reason ---------------------------------------
# transformers 5.19's CONFIG_MAPPING and vLLM 0.32's _CONFIG_REGISTRY
# (vllm/transformers_utils/config.py) have no entry for these model types, though vLLM's model
# registry lists the architecture: vLLM loads such a checkpoint only with --trust-remote-code.
REMOTE_CODE = [
    ("solar", "SolarForCausalLM"),
    ("plamo3", "Plamo3ForCausalLM"),
    ("teleflm", "TeleFLMForCausalLM"),
]


@pytest.mark.parametrize(("model_type", "architecture"), REMOTE_CODE)
def test_remote_code_only_types_are_refused(model_type: str, architecture: str) -> None:
    with pytest.raises(UnsupportedArchitecture) as err:
        vllm_facts({"model_type": model_type, "architectures": [architecture]})
    text = str(err.value)
    assert text.startswith("unsupported: ")
    assert f"serves {architecture} only with --trust-remote-code" in text
    assert f"model type `{model_type}` but Transformers does not recognize" in text


# -- kvledger inspect over every config of the group ---------------------------------------
# The files SOURCES-dense2.md lists (first column of its table).
GROUP_FILES = sorted(
    CONFIGS / line.split("`")[1]
    for line in shared_text("SOURCES-dense2.md").splitlines()
    if line.startswith("| `")
)
REFUSED = {"baidu--ERNIE-4.5-0.3B-PT.json": "Ernie4_5_ForCausalLM'] are not supported"}


@needs_shared
def test_group_files_are_listed() -> None:
    assert len(GROUP_FILES) == len(DERIVED) + len(REFUSED)
    assert {p.name.removesuffix(".json") for p in GROUP_FILES} >= {d[0] for d in DERIVED}


@needs_shared
@pytest.mark.parametrize("path", GROUP_FILES, ids=[p.name.removesuffix(".json")
                                                   for p in GROUP_FILES])
def test_inspect_derives_or_refuses(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check_inspect(path, REFUSED.get(path.name), capsys)

"""Remote-code model types planned from what config.json states (derive/remote_code.py): what
vLLM builds given exactly those keys with --trust-remote-code
(tests/oracles/vllm-0.32/vllm-0.32-remote.jsonl, made by tests/oracles/run_remote_oracle.py, and
0.33's
runs of the same questions, vllm-0.33/vllm-0.33-remote.jsonl, ``--vllm 0.33``), replayed
through the library as each release. The rule reads the same in both: no transformers 5.19 /
5.20 or vLLM ``_CONFIG_REGISTRY`` class for these types, and their vLLM model files
(internlm2.py, minicpm.py, mimo.py, exaone.py, deepseek_v2.py, orion.py, bailing_moe.py) are
unchanged between the releases' wheels.

- A run vLLM served, for a type kvledger plans: the plan is vLLM's, exact (blocks, tokens,
  concurrency, groups, page sizes), and vLLM's model class is the native one.
- A run where vLLM stopped on an attribute the file does not state (Ling-lite's head_dim): kvledger
  refuses naming that key.
- A run vLLM served with a reading kvledger does not take (MiMo: the stated keys alone window
  every layer, the published remote class would not), or an architecture vLLM does not register
  (TeleChat2-115B's TelechatForCausalLM): kvledger refuses, and the refusal says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from derive.coverage import vllm_facts
from kvledger.derive import UnsupportedArchitecture, derive_model
from kvledger.derive.model_types import resolve
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS, SHARED_MISSING, assert_plan_is, real_config, request_of

if not CONFIGS.is_dir():  # the real configs of these types are in ../shared/configs
    pytest.skip(SHARED_MISSING, allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "tests" / "oracles" / "vllm-0.32" / "vllm-0.32-remote.jsonl"
# release -> (its file, the --engine that plans as it)
RELEASE_FILES = {
    "0.32": (FILE, "vllm==0.32"),
    "0.33": (ROOT / "tests" / "oracles" / "vllm-0.33" / "vllm-0.33-remote.jsonl", "vllm"),
}
RELEASE_CASES = [(release, json.loads(line)) for release, (path, _) in RELEASE_FILES.items()
                 if path.is_file() for line in path.read_text().splitlines() if line.strip()]
CASES = [case for release, case in RELEASE_CASES if release == "0.32"]


def _config(case: dict[str, Any]) -> dict[str, Any]:
    """The config.json the run read (the runner gave vLLM it less ``dropped_keys``)."""
    return real_config(case["config"])


def _request(case: dict[str, Any], release: str = "0.32") -> PlanRequest:
    request: PlanRequest = request_of(case["inputs"], engine=RELEASE_FILES[release][1])
    return request


def _planned(case: dict[str, Any]) -> bool:
    row = resolve(_config(case)["model_type"])
    return "expected" in case and row.derivable


SERVED = [c for c in CASES if _planned(c)]
STOPPED = [c for c in CASES if "vllm_refuses_to_start_with" in c]
SERVED_BY = [(r, c) for r, c in RELEASE_CASES if _planned(c)]
STOPPED_BY = [(r, c) for r, c in RELEASE_CASES if "vllm_refuses_to_start_with" in c]


def _id(case: dict[str, Any]) -> str:
    return case["command"].rsplit(" ", 1)[-1] + "-" + case["config"][:40]


def test_every_planned_remote_type_has_served_cases() -> None:
    # internlm2, minicpm, exaone, deepseek (v1), orion, bailing_moe: two runs or more each
    types = [_config(c)["model_type"] for c in SERVED]
    for model_type in ("internlm2", "minicpm", "exaone", "deepseek", "orion", "bailing_moe"):
        assert types.count(model_type) >= 2, model_type
        assert resolve(model_type).stated, model_type  # planned under the remote-code policy


def test_both_releases_have_served_and_stopped_runs() -> None:
    assert {r for r, _ in SERVED_BY} == {r for r, _ in STOPPED_BY} == set(RELEASE_FILES)


@pytest.mark.parametrize(("release", "case"), SERVED_BY,
                         ids=[f"{r}-{_id(c)}" for r, c in SERVED_BY])
def test_planned_as_vllm_serves_the_stated_keys(release: str, case: dict[str, Any]) -> None:
    raw = _config(case)
    # vLLM's own model class for the architecture, not a Transformers-backend stand-in
    assert case["vllm_resolved"]["model_class"] == raw["architectures"][0]
    request = _request(case, release)
    facts = derive_model(raw)
    plan = plan_vllm(facts, request, request.kv_cache_memory_bytes)
    assert_plan_is(plan, case)
    assert plan.max_model_len == case["vllm_resolved"]["max_model_len"]


def test_internlm2_by_hand() -> None:
    # internlm2-7b states 32 layers, 32 heads, 8 KV heads, hidden 4096 -> head dim 128 (vLLM's
    # internlm2.py: hidden_size // num_attention_heads). A bf16 block of 16 tokens per layer:
    # 2 (K, V) * 16 * 8 * 128 * 2 B = 65,536 B; 32 layers -> 2,097,152 B a block;
    # 16 GiB // 2,097,152 = 8,192 blocks = 131,072 tokens; at its 32,768 positions 4.00x.
    [case] = [c for c in SERVED if c["config"] == "internlm--internlm2-7b.json"
              and c["inputs"]["kv_cache_dtype"] == "auto"
              and c["inputs"]["tensor_parallel_size"] == 1]
    request = _request(case)
    plan = plan_vllm(derive_model(_config(case)), request, request.kv_cache_memory_bytes)
    assert plan.bytes_per_block == 2 * 16 * 8 * 128 * 2 * 32 == 2_097_152
    assert plan.num_blocks == 16 * 2**30 // 2_097_152 == 8192
    assert plan.kv_cache_tokens == 8192 * 16
    assert plan.max_concurrency == 8192 * 16 / 32768 == 4.0


def test_minicpm_over_tp4_replicates_its_two_kv_heads() -> None:
    # MiniCPM4-8B: 2 KV heads over TP 4 -> one head a rank (vLLM's MiniCPMAttention:
    # max(1, 2 // 4)); a rank's bf16 block: 2 * 16 * 1 * 128 * 2 B * 32 layers = 262,144 B;
    # 16 GiB // 262,144 = 65,536 blocks = 1,048,576 tokens, 128x at 8,192.
    [case] = [c for c in SERVED if c["inputs"]["tensor_parallel_size"] == 4]
    assert case["config"] == "openbmb--MiniCPM4-8B.json"
    request = _request(case)
    plan = plan_vllm(derive_model(_config(case)), request, request.kv_cache_memory_bytes)
    assert plan.bytes_per_block == 2 * 16 * 1 * 128 * 2 * 32 == 262_144
    assert plan.num_blocks == 16 * 2**30 // 262_144 == 65_536
    assert plan.max_concurrency == 65_536 * 16 / 8192 == 128.0


def test_exaone_layers_come_from_num_layers() -> None:
    # EXAONE-3.5-7.8B states num_layers 32 (no num_hidden_layers), 8 KV heads, head_dim 128
    raw = _config(next(c for c in SERVED if c["config"].startswith("LGAI-EXAONE")))
    facts = derive_model(raw)
    assert "num_hidden_layers" not in raw and len(facts.layers) == raw["num_layers"] == 32
    assert {(la.k_heads, la.k_dim) for la in facts.layers} == {(8, 128)}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("release", "case"), STOPPED_BY,
                         ids=[f"{r}-{_id(c)}" for r, c in STOPPED_BY])
def test_where_vllm_stops_kvledger_refuses(release: str, case: dict[str, Any]) -> None:
    raw = _config(case)
    said = case["vllm_refuses_to_start_with"]
    with pytest.raises(UnsupportedArchitecture) as err:
        vllm_facts(raw, engine=RELEASE_FILES[release][1])
    message = str(err.value)
    if said.startswith("AttributeError"):
        # vLLM's model read an attribute the file does not state: kvledger names that key
        key = said.rsplit("'", 2)[-2]
        assert f"does not state {key}" in message
    else:  # vLLM's registry message (pydantic prefixes "Value error, "), quoted
        assert said.split("Value error, ", 1)[-1].split(". ")[0] in message


def test_mimo_refusal_says_what_vllm_does_with_the_stated_keys() -> None:
    [case] = [c for c in CASES if c["config"] == "XiaomiMiMo--MiMo-7B-Base.json"
              and c["inputs"]["kv_cache_dtype"] == "auto"]
    raw = _config(case)
    [spec] = case["layer_specs"]
    assert spec["spec"] == "SlidingWindowSpec" and spec["sliding_window"] == raw["sliding_window"]
    assert spec["num_layers"] == raw["num_hidden_layers"] and raw["use_sliding_window"] is False
    with pytest.raises(UnsupportedArchitecture, match="vLLM windows every layer"):
        vllm_facts(raw)


@pytest.mark.parametrize(("model_type", "key"), [
    ("internlm2", "num_key_value_heads"), ("minicpm", "max_position_embeddings"),
    ("orion", "hidden_size"), ("deepseek", "num_hidden_layers"), ("exaone", "num_layers"),
    ("bailing_moe", "head_dim"),
])
def test_a_key_left_to_the_remote_class_is_refused_by_name(model_type: str, key: str) -> None:
    # a full set of sizes, less the one key: its value would be the remote class's default
    raw: dict[str, Any] = {"model_type": model_type, "num_hidden_layers": 2,
                           "num_attention_heads": 4, "num_key_value_heads": 2,
                           "hidden_size": 256, "head_dim": 64, "max_position_embeddings": 4096}
    if model_type == "exaone":
        raw["num_layers"] = raw.pop("num_hidden_layers")
    derive_model(raw)  # the full set plans
    del raw[key]
    with pytest.raises(UnsupportedArchitecture, match=f"does not state {key}; model_type "
                                                      f"'{model_type}' has no transformers"):
        derive_model(raw)


def test_every_stated_key_is_one_the_row_reads() -> None:
    # a key a remote-code row requires must be one its handler reads (or derive's length keys)
    from kvledger.derive.model_types import CORE_KEYS, MODEL_TYPES

    for name in MODEL_TYPES:
        row = resolve(name)
        assert row.stated <= row.keys | CORE_KEYS, name
        if row.stated:
            assert not row.defaults, f"{name}: a remote-code row has no class defaults"

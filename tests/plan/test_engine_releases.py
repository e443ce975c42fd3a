"""Engine releases as data: choosing one (``vllm``, ``vllm==0.32``), the unknown-release error,
the release the JSON names, and no release named in string literals outside ``plan/engines/``.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from kvledger.cli.main import main
from kvledger.plan.api import plan_model
from kvledger.plan.engines.vllm.releases import NEWEST, RELEASES
from kvledger.plan.request import PlanRequest

SRC = Path(__file__).resolve().parents[2] / "src" / "kvledger"
LLAMA = "meta-llama/Meta-Llama-3.1-8B"  # a catalog id: runs offline
BUDGET = ["--kv-cache-memory-bytes", "10737418240", "--max-model-len", "32768", "--json"]


def test_a_pin_names_a_release() -> None:
    assert PlanRequest(engine="vllm==0.32").engine_release == "0.32"
    assert PlanRequest(engine="vllm==0.32.0").engine == "vllm"
    assert PlanRequest(engine="vllm", engine_release="0.32").engine_release == "0.32"
    # Unnamed: None, the engine's newest at planning time (so a copy with another engine
    # carries no stale release).
    assert PlanRequest().engine_release is None
    with pytest.raises(ValueError, match="disagree"):
        PlanRequest(engine="vllm==0.32", engine_release="0.33")


@pytest.mark.parametrize(("spec", "planned", "why"), [
    # A patch release of a known one: that release.
    ("vllm==0.32.7", "0.32.0", "a patch release of it"),
    # Past every known release: the newest.
    ("vllm==0.99", NEWEST, "the newest release kvledger knows"),
    # Between two known minor releases (0.28 and 0.30; 0.29 was never profiled): the one
    # below, and the note names the next one too, not "the newest".
    ("vllm==0.29", "0.28.0",
     "the nearest known release before it (the next known is vLLM 0.30.0)"),
    # Before every known release: the oldest.
    ("vllm==0.9", min(RELEASES, key=lambda v: tuple(map(int, v.split(".")))),
     "the oldest release kvledger knows"),
    # A minor release named without its patch: the profiled patch of it.
    ("vllm==0.10", "0.10.2", "a patch release of it"),
    # Between 0.10.2 and 0.19.0, one minor release from 0.19: the nearer, after it.
    ("vllm==0.18", "0.19.0",
     "the nearest known release after it (the last known before it is vLLM 0.10.2)"),
    ("sglang==0.5.24", "0.5.23", "a patch release of it"),
])
def test_an_unknown_release_plans_as_the_nearest_and_says_so(spec: str, planned: str,
                                                             why: str) -> None:
    result = plan_model(LLAMA, PlanRequest(engine=spec, kv_cache_memory_bytes=1 << 30,
                                           max_model_len=4096))
    asked = spec.partition("==")[2]
    assert result.engine_release == planned
    assert asked in result.release_note and planned in result.release_note
    assert why in result.release_note
    assert result.release_note in result.warnings
    assert result.to_json()["release_note"] == result.release_note


@pytest.mark.parametrize("spec", ["vllm==banana", "vllm==0.3x", "sglang==latest"])
def test_a_malformed_release_lists_the_known_ones(spec: str) -> None:
    with pytest.raises(ValueError, match=r"is not a release version \(known: \w+=="):
        plan_model(LLAMA, PlanRequest(engine=spec, kv_cache_memory_bytes=1 << 30))


def test_a_known_release_carries_no_note() -> None:
    result = plan_model(LLAMA, PlanRequest(engine="vllm==0.32", kv_cache_memory_bytes=1 << 30,
                                           max_model_len=4096))
    assert result.engine_release == "0.32.0" and result.release_note == ""
    assert "release_note" not in result.to_json()


def test_native_has_no_releases() -> None:
    with pytest.raises(ValueError, match="has no releases"):
        plan_model(LLAMA, PlanRequest(engine="native==1.0", kv_cache_memory_bytes=1 << 30))


def test_malformed_release_on_the_cli_is_one_line_and_exit_2(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", LLAMA, "--engine", "vllm==banana", *BUDGET])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "vllm==0.32.0" in err and "banana" in err


def test_unknown_release_on_the_cli_plans_with_a_note(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", LLAMA, "--engine", "vllm==0.99", *BUDGET]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine_release"] == NEWEST and "vLLM 0.99" in out["release_note"]
    assert out["release_note"] in out["warnings"]


def test_the_json_names_the_release_planned(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", LLAMA, *BUDGET]) == 0
    default = json.loads(capsys.readouterr().out)
    assert default["engine"] == "vllm" and default["engine_release"] == NEWEST
    assert f"vLLM {NEWEST}" in default["engine_label"]
    assert main(["plan", LLAMA, "--engine", "vllm==0.32", *BUDGET]) == 0
    pinned = json.loads(capsys.readouterr().out)
    assert pinned["engine_release"] == "0.32.0"
    # Llama-3.1-8B, bf16, block 16: 2 × 16 × 8 × 128 × 2 B × 32 layers = 2 MiB a block;
    # 10 GiB / 2 MiB = 5,120 blocks, as vLLM 0.32 logs it.
    assert pinned["num_blocks"] == 10 * 2**30 // (2 * 16 * 8 * 128 * 2 * 32) == 5120
    assert main(["plan", LLAMA, "--engine", "native", *BUDGET]) == 0
    assert json.loads(capsys.readouterr().out)["engine_release"] is None


def test_a_serve_line_takes_the_pinned_release(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--engine", "vllm==0.32", "--kv-cache-memory-bytes", "10737418240",
                 "--json", "--", "vllm", "serve", LLAMA, "--max-model-len", "32768"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["engine_release"] == "0.32.0"


def test_each_release_profile_states_its_defaults() -> None:
    # vllm/config/cache.py 0.32.0: CacheConfig.gpu_memory_utilization = Field(default=0.92).
    release = RELEASES["0.32.0"]
    assert release.default_gpu_memory_utilization == 0.92
    assert release.short == "vLLM 0.32" and release.pin == "vllm==0.32.0"
    assert "mpt" in release.not_served and "falcon" in release.no_cache_config


# A release named in a literal a user can read (not a docstring: those cite the source a rule
# was read from): "vLLM 0.32", "SGLang 0.5.23", and a bare release taken as an owner, "0.32's
# rule". Only a release profile (plan/engines/<engine>/releases/, ATOM's releases.py) states
# one; every other text takes it from the profile the layout was bound to.
RELEASE_WORDS = re.compile(r"\b(vLLM|SGLang|vllm|sglang|ATOM)[ -]v?\d+\.\d+|\b0\.\d+(\.\d+)?'s\b")


def _in_a_profile(path: Path) -> bool:
    rel = path.relative_to(SRC).as_posix()
    return rel.startswith("plan/engines/") and ("/releases/" in rel or rel.endswith("/releases.py"))


def _literals_naming_a_release(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef
                          | ast.ClassDef)
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}
    return [f"{path.relative_to(SRC)}:{node.lineno}: {node.value[:80]!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs and RELEASE_WORDS.search(node.value)]


def test_no_literal_outside_a_release_profile_names_a_release() -> None:
    found = [hit for path in sorted(SRC.rglob("*.py")) if not _in_a_profile(path)
             for hit in _literals_naming_a_release(path)]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(("literal", "found"), [
    ('X = "vLLM 0.32 refuses"', True),
    ('X = "as 0.32\'s rule says"', True),
    ('X = "SGLang 0.5.23 sizes"', True),
    ('X = "utilization 0.92 of the GPU"', False),
    ('"""Read in vLLM 0.32.0."""', False),  # a docstring cites the source
])
def test_the_scan_finds_a_release_literal(tmp_path: Path, literal: str, found: bool) -> None:
    # The scan itself can fail: a literal naming a release is found, a docstring is not.
    sample = SRC / "_release_scan_sample.py"
    try:
        sample.write_text(literal + "\n")
        hits = _literals_naming_a_release(sample)
    finally:
        sample.unlink()
    assert bool(hits) is found


def _fake_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    # A distribution as pip installs it: its metadata folder on sys.path (nothing imported).
    dist = tmp_path / f"vllm-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_an_installed_vllm_is_the_default_release(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _fake_install(tmp_path, monkeypatch, "0.32.0")
    assert main(["plan", LLAMA, *BUDGET]) == 0
    assert json.loads(capsys.readouterr().out)["engine_release"] == "0.32.0"
    # A pin still wins.
    assert main(["plan", LLAMA, "--engine", "vllm==0.33", *BUDGET]) == 0
    assert json.loads(capsys.readouterr().out)["engine_release"] == "0.33.0"


def test_an_unknown_installed_vllm_is_named_with_the_release_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _fake_install(tmp_path, monkeypatch, "0.40.1")
    assert main(["plan", LLAMA, *BUDGET]) == 0
    out, _ = capsys.readouterr()
    planned = json.loads(out)
    assert planned["engine_release"] == NEWEST
    assert "vLLM 0.40.1 is not a release kvledger knows" in planned["release_note"]
    assert f"vLLM {NEWEST}" in planned["release_note"]


def _gdn_hybrid(key_head_dim: int) -> dict[str, object]:
    # A Qwen3-Next-shaped hybrid, stated here: 4 layers, one full-attention layer in four
    # (2 KV heads × 256), GDN layers of 16 key heads × key_head_dim, 32 value heads × 128,
    # conv kernel 4.
    return {"model_type": "qwen3_next", "architectures": ["Qwen3NextForCausalLM"],
            "hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 16,
            "num_key_value_heads": 2, "head_dim": 256, "full_attention_interval": 4,
            "linear_num_key_heads": 16, "linear_num_value_heads": 32,
            "linear_key_head_dim": key_head_dim, "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4, "max_position_embeddings": 32768,
            "torch_dtype": "bfloat16", "vocab_size": 1000, "intermediate_size": 4096,
            "num_experts": 0}


@pytest.mark.parametrize(("engine", "gpu", "block"), [
    ("vllm==0.33", None, 320), ("vllm==0.33", "H100-80GB", 320), ("vllm==0.33", "B200", 288),
    ("vllm==0.32", None, 288), ("vllm==0.32", "B200", 288),
])
def test_the_gpu_decides_the_gdn_prefill_and_the_hybrid_block(engine: str, gpu: str | None,
                                                              block: int) -> None:
    # GDN state per layer (bf16): conv rows (kernel 4 − 1 = 3) × (2·16·64 + 32·128 = 6,144)
    # × 2 B = 36,864 B, plus temporal 32 × 128 × 64 × 2 B = 524,288 B: 561,152 B. Attention
    # page a token: 2 (K, V) × 2 heads × 256 × 2 B = 2,048 B.
    # vLLM 0.33 with FlashInfer's GDN prefill (SM90 always; SM100 only with
    # linear_key_head_dim 128 — here 64, so Triton): align = lcm(16, 64) = 64, block
    # 64 × cdiv(561,152, 64 × 2,048) = 64 × 5 = 320. Without it (0.32, or SM100):
    # 16 × cdiv(561,152, 16 × 2,048) = 16 × 18 = 288.
    plan = plan_model(_gdn_hybrid(64), PlanRequest(
        engine=engine, gpu=gpu, kv_cache_memory_bytes=1 << 30, max_model_len=32768,
        enable_prefix_caching=True))
    assert plan.block_size == block
    if gpu is None and engine == "vllm":
        assert any("SM90" in w for w in plan.warnings)  # assumed, and said


@pytest.mark.parametrize(("engine", "gpu", "asked", "stored"), [
    # vLLM 0.33 Glm5NextModelConfig.verify_and_update_config: auto → fp8 on SM10x when the
    # text config has index_topk (GLM-5.3-Flash: 2048); SM90, vLLM 0.32 and an explicit
    # dtype keep the model's bfloat16.
    ("vllm", "B200", "auto", "fp8_e4m3"),
    ("vllm", "B300", "auto", "fp8_e4m3"),
    ("vllm", "H100-80GB", "auto", "bfloat16"),
    ("vllm==0.32", "B200", "auto", "bfloat16"),
    ("vllm", "B200", "bfloat16", "bfloat16"),
])
def test_glm5_next_takes_fp8_under_auto_on_sm100(engine: str, gpu: str, asked: str,
                                                 stored: str) -> None:
    from oracle_cases import CONFIGS, SHARED_MISSING

    config = CONFIGS / "zai-org--GLM-5.3-Flash.json"
    if not config.is_file():
        pytest.skip(SHARED_MISSING)
    plan = plan_model(str(config), PlanRequest(engine=engine, gpu=gpu, kv_cache_dtype=asked,
                                               kv_cache_memory_bytes=8 << 30,
                                               max_model_len=32768))
    assert plan.kv_cache_dtype == stored


def _sliding_window_model() -> dict[str, object]:
    # Mistral-7B-v0.1's cache-shaping values: 32 layers, 8 KV heads of 128, window 4,096.
    return {"architectures": ["MistralForCausalLM"], "model_type": "mistral",
            "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
            "num_key_value_heads": 8, "head_dim": 128, "sliding_window": 4096,
            "max_position_embeddings": 32768, "torch_dtype": "bfloat16", "vocab_size": 32000,
            "intermediate_size": 14336, "rope_theta": 10000.0}


@pytest.mark.parametrize(("engine", "per_request", "tokens"), [
    # vLLM 0.32: ngram turns async scheduling off: in flight 1 × 8,192 batched tokens; a
    # sliding-window request holds cdiv(4,095 + 8,192, 16) + 1 = 769 blocks (the 0.32 and
    # the 0.33 oracle: 349,070 tokens = 8,192 blocks × 32,768 / 769).
    ("vllm==0.32", 769, 349_070),
    # vLLM 0.33 on a GPU (Model Runner V2): async stays on, 2 × 8,192 = 16,384 in flight:
    # cdiv(4,095 + 16,384, 16) + 1 = 1,281 blocks; 8,192 × 32,768 / 1,281 = 209,551 tokens.
    ("vllm==0.33", 1281, 209_551),
])
def test_ngram_keeps_async_scheduling_under_model_runner_v2(
        engine: str, per_request: int, tokens: int) -> None:
    # 16 GiB = 8,192 blocks of 16 tokens × 32 layers × 2 × 8 × 128 × 2 B (2 MiB).
    plan = plan_model(_sliding_window_model(), PlanRequest(
        engine=engine, kv_cache_memory_bytes=16 << 30, max_model_len=32768,
        max_num_seqs=256, max_num_batched_tokens=8192, num_speculative_tokens=3,
        speculative_method="ngram"))
    assert plan.num_blocks == 8192
    assert plan.kv_cache_tokens == tokens
    assert round(8192 / plan.max_concurrency) == per_request


def test_a_config_stating_no_length_gets_vllms_2048() -> None:
    # vllm/config/model.py _get_and_verify_max_len: none of the length keys → 2,048 assumed
    # (with a warning), then the RoPE step (none here). The oracle agrees:
    # tests/oracles/vllm-0.33/vllm-0.33-coverage-moe-hybrid2.jsonl (falcon-mamba-7b.mlstm,
    # asked without --max-model-len: vllm_resolved.max_model_len 2048).
    mamba = {"architectures": ["FalconMambaForCausalLM"], "model_type": "falcon_mamba",
             "hidden_size": 1024, "num_hidden_layers": 4, "intermediate_size": 2048,
             "state_size": 16, "conv_kernel": 4, "expand": 2, "time_step_rank": 64,
             "torch_dtype": "bfloat16", "vocab_size": 1000, "use_conv_bias": True,
             "use_bias": False}
    plan = plan_model(mamba, PlanRequest(engine="vllm", kv_cache_memory_bytes=1 << 30))
    assert plan.max_model_len == 2048
    assert any("states no maximum length" in w and "2,048" in w for w in plan.warnings)

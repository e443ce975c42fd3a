"""Fixtures: a loopback Hub with real configs and safetensors checkpoints written by the
safetensors library, and an environment pointing huggingface_hub (and kvledger) at it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from oracle_cases import CONFIGS, SHARED_MISSING, bundled_id, real_config

from .hub_server import FakeHub, Repo, serve

BUDGET = ["--kv-cache-memory-bytes", "10737418240"]
TOKEN = "hf_loopbacktesttoken"


def plan_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    """``kvledger plan ARGV --json`` in-process: the JSON object (the run must succeed)."""
    from kvledger.cli.main import main

    code = main(["plan", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


MAIN = sha("qwen3-0.6b main")
OLD = sha("qwen3-0.6b v0")
MOE = sha("qwen3-30b-a3b main")
FP8 = sha("llama-3.1-70b-fp8 main")
GATED = sha("llama-3.1-405b main")
BAD = sha("broken header main")
CUT = sha("truncated upload main")
EMBED = sha("qwen3 embedding main")
DRAFT = sha("qwen3 dflash draft main")
# A DFlash draft for Qwen3-8B, written for these tests (the shape of
# tests/serve/test_serve_parallel_draft.py's, whose plan is worked by hand there).
DFLASH_DRAFT = {
    "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 1024,
    "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 2048, "vocab_size": 151936, "max_position_embeddings": 40960,
    "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 17]},
}
# A sentence-transformers config of our own making beside Qwen3-0.6B's real config: vLLM 0.32
# starts at its max_seq_length (tests/oracles/vllm-0.32/vllm-0.32-tokenizer-len.jsonl).
SENTENCE = b'{"max_seq_length": 8192, "do_lower_case": false}'


def config_bytes(name: str) -> bytes:
    """``../shared/configs/<name>.json``'s bytes; without ../shared, a catalog model's values
    of it as JSON (the catalog reproduces its facts), so the catalog models still serve."""
    path = CONFIGS / f"{name}.json"
    if path.is_file():
        return path.read_bytes()
    if bundled_id(f"{name}.json") is None:
        pytest.skip(SHARED_MISSING, allow_module_level=True)
    return json.dumps(real_config(f"{name}.json")).encode()


def save(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A safetensors file written by the safetensors library (zeros of each dtype)."""
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    dtypes = {"BF16": torch.bfloat16, "F32": torch.float32, "F8_E4M3": torch.float8_e4m3fn,
              "I32": torch.int32, "F16": torch.float16}
    data: bytes = st.save({name: torch.zeros(shape, dtype=dtypes[dtype])
                           for name, (dtype, shape) in tensors.items()})
    return data


# Qwen/Qwen3-0.6B, one model.safetensors. By hand:
#   embed  BF16 [64, 32] = 2,048 elements × 2 B = 4,096 B
#   lm_head F32 [16, 8]  =   128 elements × 4 B =   512 B
#   gate F8_E4M3 [32, 16] =  512 elements × 1 B =   512 B
#   scale F32 [1]         =    1 element  × 4 B =     4 B
#   total 4,096 + 512 + 512 + 4 = 5,124 B (BF16 4,096; F32 516; F8_E4M3 512)
SINGLE = {
    "model.embed_tokens.weight": ("BF16", [64, 32]),
    "lm_head.weight": ("F32", [16, 8]),
    "model.layers.0.mlp.gate_proj.weight": ("F8_E4M3", [32, 16]),
    "model.layers.0.mlp.gate_proj.weight_scale": ("F32", [1]),
}
SINGLE_BYTES = 5_124
# On the GPU (Qwen3-0.6B's config says bfloat16, so it is served in bfloat16): the F32 lm_head
# is cast, 128 × 2 B = 256 B; the checkpoint is quantized (F8_E4M3), so the F32 scale of its
# fp8 weight stays F32 (vLLM: a float32 scale parameter): 4,096 + 256 + 512 + 4 = 4,868 B.
SINGLE_SERVED = 4_868
# Qwen/Qwen3-30B-A3B, two shards and an index. By hand:
#   shard 1: BF16 [128, 64] = 8,192 × 2 = 16,384 B; BF16 [64] = 64 × 2 = 128 B
#   shard 2: F32 [10, 10] = 100 × 4 = 400 B; I32 [3] = 3 × 4 = 12 B
#   total 16,384 + 128 + 400 + 12 = 16,924 B
SHARD_1 = {"model.embed_tokens.weight": ("BF16", [128, 64]), "model.norm.weight": ("BF16", [64])}
SHARD_2 = {"lm_head.weight": ("F32", [10, 10]), "model.layers.0.mlp.gate.e_bias": ("I32", [3])}
SHARDED_BYTES = 16_924
# Served in bfloat16 (Qwen3-30B-A3B's config): the F32 lm_head is cast, 100 × 2 = 200 B; I32 is
# kept as stored: 16,384 + 128 + 200 + 12 = 16,724 B.
SHARDED_SERVED = 16_724


def _sharded_files() -> dict[str, bytes]:
    names = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    weight_map = {t: names[0] for t in SHARD_1} | {t: names[1] for t in SHARD_2}
    index = {"metadata": {"total_size": SHARDED_BYTES}, "weight_map": weight_map}
    return {"config.json": config_bytes("Qwen--Qwen3-30B-A3B"), names[0]: save(SHARD_1),
            names[1]: save(SHARD_2),
            "model.safetensors.index.json": json.dumps(index).encode()}


def _bad_header() -> bytes:
    """A file whose header names dtype "Q7" (the safetensors library refuses it)."""
    header = json.dumps({"w": {"dtype": "Q7", "shape": [4], "data_offsets": [0, 4]}}).encode()
    return len(header).to_bytes(8, "little") + header + b"\0" * 4


def _truncated() -> bytes:
    """A well-formed header (BF16 [1024, 1024] = 2 MiB of data) on a file cut after 4 kB."""
    return save({"w": ("BF16", [1024, 1024])})[:4096]


REBUILT_ROW = sha("minimax-m3 main")


def _minimax_m3() -> dict[str, Repo]:
    """MiniMaxAI/MiniMax-M3 as the Hub serves it here: the checkpoint-shaped minimax_m3_vl
    config of nvidia/MiniMax-M3-NVFP4 (../shared) without its quantization block — the shape
    the bundled text-only rebuild is not. Absent without ../shared."""
    path = CONFIGS / "nvidia--MiniMax-M3-NVFP4.json"
    if not path.is_file():
        return {}
    config = json.loads(path.read_text())
    config.pop("quantization_config", None)
    return {"MiniMaxAI/MiniMax-M3": Repo(
        commits={REBUILT_ROW: {"config.json": json.dumps(config).encode()}},
        refs={"main": REBUILT_ROW})}


def build_hub() -> FakeHub:
    qwen_small = config_bytes("Qwen--Qwen3-0.6B")
    return FakeHub({
        **_minimax_m3(),
        "Qwen/Qwen3-0.6B": Repo(
            commits={MAIN: {"config.json": qwen_small, "model.safetensors": save(SINGLE)},
                     # An older commit of our own making: another real config, no weights.
                     OLD: {"config.json": config_bytes("Qwen--Qwen3-1.7B")}},
            refs={"main": MAIN, "v0": OLD}),
        "Qwen/Qwen3-30B-A3B": Repo(commits={MOE: _sharded_files()}, refs={"main": MOE}),
        "nvidia/Llama-3.1-70B-Instruct-FP8": Repo(
            commits={FP8: {
                "config.json": config_bytes("nvidia--Llama-3.1-70B-Instruct-FP8"),
                "hf_quant_config.json": config_bytes(
                    "nvidia--Llama-3.1-70B-Instruct-FP8.hf_quant_config")}},
            refs={"main": FP8}),
        "meta-llama/Meta-Llama-3.1-405B": Repo(
            commits={GATED: {"config.json": config_bytes("meta-llama--Meta-Llama-3.1-405B")}},
            refs={"main": GATED}, gated=True, tokens=frozenset({TOKEN})),
        "broken/header": Repo(
            commits={BAD: {"config.json": qwen_small, "model.safetensors": _bad_header()}},
            refs={"main": BAD}),
        "test/qwen3-embedding": Repo(
            commits={EMBED: {"config.json": qwen_small, "sentence_bert_config.json": SENTENCE,
                             "tokenizer_config.json": b'{"model_max_length": 1024}'}},
            refs={"main": EMBED}),
        "test/qwen3-8b-dflash": Repo(
            commits={DRAFT: {"config.json": json.dumps(DFLASH_DRAFT).encode()}},
            refs={"main": DRAFT}),
        "broken/truncated": Repo(
            commits={CUT: {"config.json": qwen_small, "model.safetensors": _truncated()}},
            refs={"main": CUT}),
    })


@dataclass
class Online:
    hub: FakeHub
    endpoint: str
    cache: Path  # HF_HUB_CACHE


@pytest.fixture
def online(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Online]:
    """The loopback Hub, running, with HF_ENDPOINT pointing at it and the network allowed."""
    hub = build_hub()
    # Imported before the environment changes: a first import under the test's environment
    # would record online constants, and monkeypatch would restore those, not the suite's.
    constants = pytest.importorskip("huggingface_hub.constants")
    with serve(hub) as endpoint:
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
        monkeypatch.setenv("KVLEDGER_CACHE", str(tmp_path / "kvledger"))
        # huggingface_hub reads these once, at import (above, under the suite-wide
        # HF_HUB_OFFLINE=1): set for this test, restored after it.
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf" / "token"))
        monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "hf" / "tokens"))
        yield Online(hub, endpoint, tmp_path / "hf" / "hub")

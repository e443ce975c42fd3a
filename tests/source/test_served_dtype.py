"""The weights line counts the bytes on the GPU: floating tensors at the dtype vLLM serves in
(``--dtype auto``: the config's, float32 downcast to bfloat16 — vLLM 0.32.0
``config/model.py`` ``_resolve_auto_dtype``), quantized tensors and their scales as stored.

Checkpoints are written here with the safetensors library; every expected number is the shapes
worked by hand. The same three checkpoints are read from a local model directory and from the
loopback Hub (tests/source/hub_server.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.plan.weights import model_weights, served_bytes
from kvledger.source.headers import SafetensorsTotals, local_totals

from .conftest import Online, config_bytes, save, sha
from .hub_server import Repo

GPU = ["--gpu", "H100-80GB", "--max-model-len", "4096"]

# Llama-3.1-8B's real config.json with "torch_dtype" set to "float32": what a fine-tune saved
# in float32 states (the only change; test data, not a bundled config).
LLAMA = json.loads(config_bytes("meta-llama--Meta-Llama-3.1-8B"))
LLAMA_F32 = {**LLAMA, "torch_dtype": "float32"}

# Float32 checkpoint:
#   embed F32 [64, 32] = 2,048 × 4 B = 8,192 B stored → × 2 B = 4,096 B served (bfloat16)
#   norm  F32 [32]     =    32 × 4 B =   128 B stored →            64 B served
#   total 8,320 B stored, 4,160 B served: half.
F32_TENSORS = {"model.embed_tokens.weight": ("F32", [64, 32]), "model.norm.weight": ("F32", [32])}
F32_STORED, F32_SERVED = 8_320, 4_160
# The same shapes in bfloat16: 4,096 + 64 = 4,160 B stored and served.
BF16_TENSORS = {"model.embed_tokens.weight": ("BF16", [64, 32]),
                "model.norm.weight": ("BF16", [32])}
BF16_BYTES = 4_160
# Mixed fp8 + bf16 (Qwen/Qwen3-32B-FP8's real config: quant_method fp8, 128 × 128 blocks):
#   q_proj.weight          F8_E4M3 [256, 128] = 32,768 × 1 B = 32,768 B  quantized: as stored
#   q_proj.weight_scale_inv F32 [2, 1]        =      2 × 4 B =      8 B  fp8 scale: as stored
#                                              (vLLM: a float32 parameter, fp8_utils.py)
#   embed_tokens.weight    BF16 [64, 32]      =  2,048 × 2 B =  4,096 B  bfloat16 already
#   norm.weight            F32 [32]           =     32 × 4 B =    128 B  not a scale: cast, 64 B
#   total stored 32,768 + 8 + 4,096 + 128 = 37,000 B; served 32,768 + 8 + 4,096 + 64 = 36,936 B
FP8_TENSORS = {
    "model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", [256, 128]),
    "model.layers.0.self_attn.q_proj.weight_scale_inv": ("F32", [2, 1]),
    "model.embed_tokens.weight": ("BF16", [64, 32]),
    "model.norm.weight": ("F32", [32]),
}
FP8_STORED, FP8_SERVED = 37_000, 36_936


def _model_dir(root: Path, config: dict[str, Any] | bytes, tensors: dict[str, Any]) -> Path:
    root.mkdir(parents=True)
    raw = config if isinstance(config, bytes) else json.dumps(config).encode()
    (root / "config.json").write_bytes(raw)
    (root / "model.safetensors").write_bytes(save(tensors))
    return root


def _weights_line(capsys: pytest.CaptureFixture[str], model: str, *extra: str
                  ) -> dict[str, Any]:
    code = main(["plan", model, *GPU, *extra, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (line,) = [ln for ln in json.loads(out)["budget"] if ln["key"] == "weights"]
    assert line["basis"] == "exact"
    return dict(line)


# -- the rule, on headers read from files ------------------------------------------------------


def test_float32_checkpoint_is_half_its_stored_bytes(tmp_path: Path) -> None:
    model = _model_dir(tmp_path / "f32", LLAMA_F32, F32_TENSORS)
    totals = local_totals(str(model))
    assert totals is not None and totals.total_bytes == F32_STORED
    weights = model_weights(LLAMA_F32, model_dtype="float32", exact=totals)
    assert (weights.total_bytes, weights.stored_bytes) == (F32_SERVED, F32_STORED)
    assert "stored 8,320 B, served at bfloat16 4,160 B" in weights.detail


def test_float16_config_serves_float32_tensors_in_float16(tmp_path: Path) -> None:
    # A config stating float16 is served in float16 (vLLM keeps it): 2,080 × 2 B = 4,160 B.
    model = _model_dir(tmp_path / "f16", {**LLAMA, "torch_dtype": "float16"}, F32_TENSORS)
    totals = local_totals(str(model))
    assert totals is not None
    assert served_bytes(totals, "float16") == F32_SERVED
    weights = model_weights(LLAMA, model_dtype="float16", exact=totals)
    assert "served at float16 4,160 B" in weights.detail


def test_bfloat16_checkpoint_is_unchanged(tmp_path: Path) -> None:
    model = _model_dir(tmp_path / "bf16", LLAMA, BF16_TENSORS)
    totals = local_totals(str(model))
    assert totals is not None
    weights = model_weights(LLAMA, model_dtype="bfloat16", exact=totals)
    assert (weights.total_bytes, weights.stored_bytes) == (BF16_BYTES, BF16_BYTES)
    assert "stored 4,160 B = served at bfloat16" in weights.detail


def test_fp8_checkpoint_keeps_quantized_weights_and_scales(tmp_path: Path) -> None:
    model = _model_dir(tmp_path / "fp8", config_bytes("Qwen--Qwen3-32B-FP8"), FP8_TENSORS)
    totals = local_totals(str(model))
    assert totals is not None and totals.total_bytes == FP8_STORED
    assert totals.quantized and totals.aux_by_dtype == {"F32": 8}
    assert served_bytes(totals, "bfloat16") == FP8_SERVED


def test_scale_names_are_cast_in_an_unquantized_checkpoint() -> None:
    # No quantized tensor: a float tensor named like a scale (a norm's "…_scale") is an
    # ordinary weight and is cast: F32 40 B (10 elements) → 20 B; BF16 64 B stays.
    totals = SafetensorsTotals(104, {"F32": 40, "BF16": 64}, 1, "test", {"F32": 40})
    assert not totals.quantized
    assert served_bytes(totals, "bfloat16") == 20 + 64


# -- local model directories through the CLI ---------------------------------------------------


def test_cli_float32_and_bfloat16_directories_leave_the_same_kv_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f32 = _model_dir(tmp_path / "f32", LLAMA_F32, F32_TENSORS)
    bf16 = _model_dir(tmp_path / "bf16", LLAMA, BF16_TENSORS)
    a = _weights_line(capsys, str(f32))
    b = _weights_line(capsys, str(bf16))
    # Both hold 2,080 elements served in bfloat16: 4,160 B on the GPU.
    assert a["bytes"] == b["bytes"] == 4_160
    assert "stored 8,320 B, served at bfloat16 4,160 B" in a["label"]
    assert "F32 8,320 B" in a["label"]
    assert "stored 4,160 B = served at bfloat16" in b["label"]


def test_cli_fp8_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model_dir(tmp_path / "fp8", config_bytes("Qwen--Qwen3-32B-FP8"), FP8_TENSORS)
    line = _weights_line(capsys, str(model))
    assert line["bytes"] == FP8_SERVED
    assert "stored 37,000 B, served at bfloat16 36,936 B" in line["label"]


# -- the loopback Hub --------------------------------------------------------------------------


def _publish(online: Online, repo_id: str, config: dict[str, Any] | bytes,
             tensors: dict[str, Any]) -> str:
    commit = sha(repo_id)
    raw = config if isinstance(config, bytes) else json.dumps(config).encode()
    online.hub.repos[repo_id] = Repo(
        commits={commit: {"config.json": raw, "model.safetensors": save(tensors)}},
        refs={"main": commit})
    return commit


@pytest.mark.parametrize(
    ("repo_id", "config", "tensors", "served", "says"),
    [
        ("test/llama-f32", LLAMA_F32, F32_TENSORS, F32_SERVED,
         "stored 8,320 B, served at bfloat16 4,160 B"),
        ("test/llama-bf16", LLAMA, BF16_TENSORS, BF16_BYTES,
         "stored 4,160 B = served at bfloat16"),
        ("test/qwen3-fp8", None, FP8_TENSORS, FP8_SERVED,
         "stored 37,000 B, served at bfloat16 36,936 B"),
    ],
)
def test_hub_checkpoints_at_the_serving_dtype(
    online: Online, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    repo_id: str, config: dict[str, Any] | None, tensors: dict[str, Any], served: int,
    says: str,
) -> None:
    _publish(online, repo_id, config or config_bytes("Qwen--Qwen3-32B-FP8"), tensors)
    first = _weights_line(capsys, repo_id)
    assert first["bytes"] == served and says in first["label"]
    # Offline, from kvledger's header cache: the scales were kept apart there too.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    again = _weights_line(capsys, repo_id)
    assert again["bytes"] == served


def test_old_header_cache_of_a_quantized_checkpoint_is_read_again(
    online: Online, capsys: pytest.CaptureFixture[str]
) -> None:
    """A format-1 cache entry (written before scales were told apart) of a quantized
    checkpoint cannot say which F32 bytes are scales: the headers are read again."""
    from kvledger.source import weights as source_weights

    commit = _publish(online, "test/qwen3-fp8-old", config_bytes("Qwen--Qwen3-32B-FP8"),
                      FP8_TENSORS)
    path = Path(source_weights._cache_path("test/qwen3-fp8-old", commit))
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": 1, "files": 1, "how": "old",
                                "by_dtype": {"F8_E4M3": 32_768, "F32": 136, "BF16": 4_096}}))
    line = _weights_line(capsys, "test/qwen3-fp8-old")
    assert line["bytes"] == FP8_SERVED
    assert json.loads(path.read_text())["format"] == 2

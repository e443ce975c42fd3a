"""``kvledger fit`` takes the model-local flags of ``kvledger plan`` (one builder,
``cli.model_local``), and a large FIXED declaration makes it choose more GPUs.

Every budget here is worked by hand: the weights are exact (a safetensors header written in
the test: one BF16 tensor of 16,000,000,000 B, its data a sparse hole), the reserves are given
as 0 and the utilization as 0.5, so the KV budget per GPU is int(total × 0.5) − weights / TP −
declarations.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from oracle_cases import real_config
from release_pin import as_release

H100_TOTAL = 81_559 * 1_048_576  # 85,520,809,984 B (the preset's nvidia-smi figure)
USABLE = 42_760_404_992  # int(85,520,809,984 × 0.5)
WEIGHTS = 16_000_000_000  # BF16 [8,000,000,000]: stored = served (the config says bfloat16)
# The talker: 2 (K, V) × 24 layers × 2 heads × 64 × 2 B = 12,288 B per position × 1,024,000
# positions, FIXED 1 row.
TALKER = 12_288 * 1_024_000
LOAD = ["--gpu", "H100-80GB", "--concurrency", "4", "--context", "32768",
        "--gpu-memory-utilization", "0.5", "--activation-peak-bytes", "0",
        "--cuda-graph-bytes", "0", "--non-torch-bytes", "0"]


def _checkpoint(root: Path) -> Path:
    """Llama-3.1-8B's real config.json beside a safetensors file whose header says one BF16
    tensor of 8,000,000,000 elements (the data is a hole: the file is sparse)."""
    root.mkdir()
    config = real_config("meta-llama--Meta-Llama-3.1-8B.json")  # the catalog's values of it
    (root / "config.json").write_text(json.dumps(config))
    header = json.dumps({"model.embed_tokens.weight": {
        "dtype": "BF16", "shape": [8_000_000_000], "data_offsets": [0, WEIGHTS]}}).encode()
    with open(root / "model.safetensors", "wb") as fh:
        fh.write(struct.pack("<Q", len(header)) + header)
        fh.truncate(8 + len(header) + WEIGHTS)
    return root


def _declaration(tmp_path: Path, positions: int = 1_024_000) -> Path:
    path = tmp_path / "talker.json"
    path.write_text(json.dumps([{
        "name": "talker", "layers": 24, "kv_heads": 2, "head_dim": 64, "dtype": "bfloat16",
        "physical_capacity_positions": positions, "capacity_source": "test", "scope": "model",
        "rows": "fixed", "rows_fixed": 1, "rows_reason": "calls are serialized"}]))
    return path


def _fit(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(as_release(["fit", *argv, "--json"]))
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_a_large_fixed_declaration_needs_two_gpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert int(H100_TOTAL * 0.5) == USABLE and TALKER == 12_582_912_000
    model = str(_checkpoint(tmp_path / "llama"))
    # Without it, TP 1: 42,760,404,992 − 16,000,000,000 = 26,760,404,992 B of KV; a block is
    # 16 tokens × 131,072 B = 2,097,152 B → 12,760 blocks; a 32,768-token request takes 2,048
    # → 12,760 / 2,048 = 6.23 requests ≥ 4: one GPU holds the load.
    plain = _fit(capsys, model, *LOAD)
    assert {k: plain["chosen"][k] for k in ("tensor_parallel_size", "pipeline_parallel_size",
                                            "gpus")} == {"tensor_parallel_size": 1,
                                                         "pipeline_parallel_size": 1, "gpus": 1}
    assert plain["attempts"][0]["max_concurrency"] == 12_760 / 2_048
    # With the talker, TP 1: 26,760,404,992 − 12,582,912,000 = 14,177,492,992 B → 6,760 blocks
    # → 6,760 / 2,048 = 3.30 requests < 4. TP 2 (tried before PP 2): each GPU holds
    # 16,000,000,000 / 2 = 8,000,000,000 B of weights and the whole talker:
    # 42,760,404,992 − 8,000,000,000 − 12,582,912,000 = 22,177,492,992 B; a block of 8 KV
    # heads / 2 is 1,048,576 B → 21,150 blocks / 2,048 = 10.33 requests ≥ 4.
    talker = _fit(capsys, model, *LOAD, "--model-local-kv", str(_declaration(tmp_path)))
    assert {k: talker["chosen"][k] for k in ("tensor_parallel_size", "pipeline_parallel_size",
                                             "gpus")} == {"tensor_parallel_size": 2,
                                                          "pipeline_parallel_size": 1, "gpus": 2}
    first, second = talker["attempts"][:2]
    assert (first["tensor_parallel_size"], first["fits"]) == (1, False)
    assert first["max_concurrency"] == 6_760 / 2_048
    assert (second["tensor_parallel_size"], second["fits"]) == (2, True)
    assert second["max_concurrency"] == 21_150 / 2_048
    plan = talker["plan"]
    assert plan["available_bytes"] == 22_177_492_992
    (row,) = plan["model_local_kv"]
    assert (row["name"], row["peak_bytes"], row["status"]) == ("talker", TALKER, "subtracted")


def test_charged_declarations_change_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = str(_checkpoint(tmp_path / "llama"))
    charged = _fit(capsys, model, *LOAD, "--model-local-kv", str(_declaration(tmp_path)),
                   "--model-local-kv-charged", "talker")
    assert charged["chosen"]["gpus"] == 1
    assert charged["plan"]["model_local_kv"][0]["status"] == "charged"


def test_stage_flag_is_checked_against_fit_pipeline_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = str(_checkpoint(tmp_path / "llama"))
    decl = str(_declaration(tmp_path))
    # Stage 1 exists only with PP ≥ 2; on the one-stage candidates it sits on the last (0).
    staged = _fit(capsys, model, *LOAD, "--model-local-kv", decl,
                  "--model-local-kv-stage", "talker=1")
    assert staged["chosen"]["gpus"] == 2
    code = main(["fit", model, *LOAD, "--model-local-kv", decl,
                 "--model-local-kv-stage", "talker"])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("kvledger fit: error: --model-local-kv-stage expects NAME=STAGE")


def test_fit_refuses_a_bad_declaration_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"name": "x", "layers": 1, "kv_heads": 1, "head_dim": 1,
                                "dtype": "bfloat16", "physical_capacity_positions": 1,
                                "capacity_source": "", "scope": "model", "rows": "fixed"}]))
    code = main(["fit", "meta-llama/Meta-Llama-3.1-8B", *LOAD, "--model-local-kv", str(bad)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "rows=FIXED needs a non-blank rows_reason" in err

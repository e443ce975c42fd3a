"""`kvledger inspect` and `kvledger models`: per-layer facts, run-length grouped, for people
and machines. Expected numbers are worked by hand from the bundled configs' own values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvledger.cli.main import main

TABLE = Path(__file__).parents[2] / "src" / "kvledger" / "source" / "catalog.json"
# Every id of every row of the catalog's table, read here from the file itself.
TABLE_IDS = sorted(i for row in json.loads(TABLE.read_text())["models"] for i in row["ids"])


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _inspect_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code, out, err = _run(capsys, "inspect", *argv, "--json")
    if code == 2 and err.startswith("unsupported:"):
        pytest.skip(f"family not implemented yet: {err.strip()}")
    assert code == 0, err
    return json.loads(out)


def _catalog_section(out: str) -> list[str]:
    lines = out.splitlines()
    assert lines[0].startswith("catalog (")
    end = lines.index("")
    return [line.strip() for line in lines[1:end]]


def test_models_lists_every_bundled_config(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "models")
    assert code == 0 and err == ""
    ids = _catalog_section(out)
    assert ids == TABLE_IDS
    assert "meta-llama/Meta-Llama-3.1-8B" in ids


def test_models_lists_model_types_by_handler(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "models")
    assert code == 0
    section = out[out.index("model types ("):]
    standard = next(line for line in section.splitlines() if line.strip().startswith("standard"))
    # Llama-like decoders are rows routed to the standard handler; a wrapper is marked with
    # the type of the language model it holds.
    assert " llama," in standard and "qwen3_vl* → qwen3_vl_text" in standard
    assert "recognized, not derived (with the default engine's reason):" in out and "mimo:" in out


def test_models_json_and_catalog_alias(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "models", "--json")
    assert code == 0
    listed = json.loads(out)
    code, out, _ = _run(capsys, "catalog")
    assert code == 0
    assert listed["catalog"] == _catalog_section(out)
    rows = {row["model_type"]: row for row in listed["model_types"]}
    assert rows["qwen3_vl"]["wrapper"] and rows["qwen3_vl"]["inner"] == ["qwen3_vl_text"]
    assert rows["qwen3_vl"]["handler"] == rows["qwen3_vl_text"]["handler"] == "standard:derive"
    assert rows["mistral"]["like"] == "llama"
    assert "mimo" not in rows and any(r["what"] == "mimo" for r in listed["refused"])


def test_inspect_llama_8b_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = _inspect_json(capsys, "meta-llama/Meta-Llama-3.1-8B")
    # Llama-3.1-8B: 32 layers, 8 KV heads, head_dim 4096 / 32 = 128, bfloat16.
    # per layer: 2 (K,V) × 8 × 128 × 2 B = 4,096 B/token; model: 32 × 4,096 = 131,072 B/token.
    assert data["model"] == "meta-llama/Meta-Llama-3.1-8B"
    assert data["kv_dtype"] == "bfloat16"
    assert data["num_layers"] == 32
    assert data["bytes_per_token"] == 131_072
    assert data["bytes_per_request"] == 0
    assert len(data["layers"]) == 32
    assert [layer["index"] for layer in data["layers"]] == list(range(32))
    # Identical layers collapse into one run.
    assert len(data["groups"]) == 1
    group = data["groups"][0]
    assert (group["first"], group["last"], group["count"]) == (0, 31, 32)
    assert group["facts"]["kind"] == "full"
    assert group["facts"]["bytes_per_token"] == 4_096


def test_inspect_kv_cache_dtype_option(capsys: pytest.CaptureFixture[str]) -> None:
    data = _inspect_json(capsys, "meta-llama/Meta-Llama-3.1-8B", "--kv-cache-dtype", "fp8")
    # fp8: 1 B per element → 2 × 8 × 128 × 1 B × 32 layers = 65,536 B/token.
    assert data["kv_dtype"] == "fp8_e4m3"
    assert data["kv_dtype_source"] == "option"
    assert data["bytes_per_token"] == 65_536


def test_inspect_mistral_uniform_window(capsys: pytest.CaptureFixture[str]) -> None:
    data = _inspect_json(capsys, "mistralai/Mistral-7B-v0.1")
    # Mistral-7B: every one of 32 layers slides over 4,096 positions; 8 KV heads × 128.
    # 2 × 8 × 128 × 2 B = 4,096 B/token per layer, 131,072 B/token for the model.
    assert len(data["groups"]) == 1
    facts = data["groups"][0]["facts"]
    assert facts["kind"] == "sliding"
    assert facts["window"] == 4096
    assert data["bytes_per_token"] == 131_072


def test_inspect_groups_keep_interleaving_order(capsys: pytest.CaptureFixture[str]) -> None:
    data = _inspect_json(capsys, "Qwen/Qwen3-Next-80B-A3B-Thinking")
    # Qwen3-Next: 48 layers, full_attention_interval 4 → layers 3, 7, …, 47 are full attention
    # (12 of them), the other 36 are Gated DeltaNet states, in runs of 3: 24 runs in all.
    kinds = [(g["first"], g["last"], g["facts"]["kind"]) for g in data["groups"]]
    decoder = [k for k in kinds if k[0] < 48]
    assert len(decoder) == 24
    for i in range(12):
        assert decoder[2 * i] == (4 * i, 4 * i + 2, "state")
        assert decoder[2 * i + 1] == (4 * i + 3, 4 * i + 3, "full")
    # full layers: 2 (K,V) × 2 KV heads × 256 head_dim × 2 B = 2,048 B/token each.
    full = [g for g in data["groups"] if g["facts"]["kind"] == "full"]
    assert all(g["facts"]["bytes_per_token"] == 2_048 for g in full)


def test_inspect_table_for_people(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "inspect", "meta-llama/Meta-Llama-3.1-8B")
    assert code == 0, err
    assert "KV 8×128" in out
    assert "0-31" in out
    assert "131,072" in out  # the B/token total
    assert "32×4,096" in out


@pytest.mark.parametrize(
    "model_id",
    TABLE_IDS,
)
def test_inspect_every_catalog_id(capsys: pytest.CaptureFixture[str], model_id: str) -> None:
    """Every catalog id either inspects cleanly or says `unsupported:` — nothing else."""
    code, out, err = _run(capsys, "inspect", model_id, "--json")
    if code == 2:
        assert err.startswith("unsupported:"), err
        assert "\n" not in err.rstrip("\n")
        return
    assert code == 0, err
    data = json.loads(out)
    assert data["layers"], "a supported model has at least one layer"
    # The groups partition the layers in order, and the totals are their sums.
    covered = [i for g in data["groups"] for i in range(g["first"], g["last"] + 1)]
    assert covered == [layer["index"] for layer in data["layers"]]
    # MTP layers are counted apart from the served totals (cached only when speculating).
    served = [layer for layer in data["layers"] if layer["role"] != "mtp"]
    mtp = [layer for layer in data["layers"] if layer["role"] == "mtp"]
    assert data["bytes_per_request"] == sum(layer["bytes_per_request"] for layer in served)
    assert data["mtp_bytes_per_request"] == sum(layer["bytes_per_request"] for layer in mtp)
    # The people's table renders too (every kind has a geometry cell).
    code, out, err = _run(capsys, "inspect", model_id)
    assert code == 0, err
    assert model_id in out


def test_inspect_whisper_cross_attention(capsys: pytest.CaptureFixture[str]) -> None:
    data = _inspect_json(capsys, "openai/whisper-tiny")
    # whisper-tiny: d_model 384, 6 decoder heads → head_dim 64, 4 decoder layers. The config
    # states float32, which vLLM (--dtype auto) serves in bfloat16, so the cache is 2 B a value.
    # self-attention: 2 (K,V) × 6 × 64 × 2 B = 1,536 B/token per layer → 4 × 1,536 = 6,144.
    # cross-attention over 1,500 encoder frames: 1,536 × 1,500 = 2,304,000 B per request per
    # layer → 4 × 2,304,000 = 9,216,000 B per request; it adds nothing per decoded token.
    assert data["model_dtype"] == "float32" and data["kv_dtype"] == "bfloat16"
    assert data["bytes_per_token"] == 6_144
    assert data["bytes_per_request"] == 9_216_000
    cross = [g for g in data["groups"] if g["facts"]["kind"] == "cross"]
    assert len(cross) == 1 and cross[0]["count"] == 4
    assert cross[0]["facts"]["encoder_len"] == 1500
    code, out, err = _run(capsys, "inspect", "openai/whisper-tiny")
    assert code == 0, err
    assert "encoder 1,500" in out
    assert "4×2,304,000" in out
    assert "9,216,000" in out
    # The element type transformers would load is still one flag away.
    data = _inspect_json(capsys, "openai/whisper-tiny", "--kv-cache-dtype", "float32")
    assert data["kv_dtype"] == "float32" and data["bytes_per_token"] == 12_288

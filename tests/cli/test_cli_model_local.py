"""Issue 15 through the CLI: ``--model-local-kv FILE.json`` and ``--model-local-kv-from
MODULE:FUNCTION`` planned inside the engine's budget, shown in JSON and in the table, refused
with numbers when they leave no room, and the omni-style worked example where ``kvledger
audit`` confirms declared == measured == subtracted.

Bytes are the seed's formula worked by hand (2 × layers × heads × head_dim × positions ×
element size × rows).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from release_pin import as_release

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
HERE = Path(__file__).parent
EXAMPLE = HERE.parents[1] / "examples" / "omni-talker-kv.json"
# The example is the seed's Ming talker: 24 × 2 × 64 × 2,048 × 2 (K, V) × 2 B (bf16), 1 row.
TALKER = 24 * 2 * 64 * 2048 * 2 * 2
H100 = ["--gpu", "H100-80GB", "--max-model-len", "32768"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(as_release(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = _run(capsys, "plan", *argv, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def _declaration(tmp_path: Path, **overrides: Any) -> Path:
    item = json.loads(EXAMPLE.read_text())[0]
    item.update(overrides)
    item = {k: v for k, v in item.items() if v is not ...}
    path = tmp_path / "decl.json"
    path.write_text(json.dumps([item]))
    return path


def test_example_file_is_the_seed_talker() -> None:
    from kvledger.declare.from_json import load_specs

    (spec,) = load_specs(EXAMPLE)
    assert TALKER == 25_165_824
    assert (spec.name, str(spec.rows), spec.rows_fixed, spec.peak_bytes(256)) == (
        "talker", "fixed", 1, 25_165_824)


def test_acceptance_vllm_plan_drops_exactly_the_talker(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    plain = _plan(capsys, LLAMA, *H100)
    talker = _plan(capsys, LLAMA, *H100, "--model-local-kv", str(EXAMPLE))
    assert talker["engine"] == "vllm"
    assert plain["available_bytes"] - talker["available_bytes"] == 25_165_824
    # vLLM: num_blocks = available // bytes per block (16 × 131,072 B = 2,097,152 B).
    assert talker["num_blocks"] == talker["available_bytes"] // 2_097_152
    assert plain["num_blocks"] == plain["available_bytes"] // 2_097_152
    line = next(ln for ln in talker["budget"] if ln["key"] == "model_local_kv")
    assert (line["bytes"], line["basis"]) == (25_165_824, "declared")
    (row,) = talker["model_local_kv"]
    assert {k: row[k] for k in ("name", "rows", "row_count", "bytes_per_row", "peak_bytes",
                                "status", "stage")} == {
        "name": "talker", "rows": "fixed", "row_count": 1, "bytes_per_row": 25_165_824,
        "peak_bytes": 25_165_824, "status": "subtracted", "stage": 0}


def test_acceptance_max_num_seqs_rows_times_eight(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    decl = _declaration(tmp_path, rows="max_num_seqs", rows_reason="", rows_fixed=1)
    plain = _plan(capsys, LLAMA, *H100, "--max-num-seqs", "8")
    eight = _plan(capsys, LLAMA, *H100, "--max-num-seqs", "8", "--model-local-kv", str(decl))
    assert plain["available_bytes"] - eight["available_bytes"] == 8 * 25_165_824
    assert eight["num_blocks"] == eight["available_bytes"] // 2_097_152
    assert eight["model_local_kv"][0]["row_count"] == 8


def test_table_shows_each_declaration(capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # wide: every column shown, each sentence one line
    code, out, err = _run(capsys, "plan", LLAMA, *H100, "--model-local-kv", str(EXAMPLE))
    assert code == 0, err
    assert "model-local KV caches" in out and "talker" in out and "subtracted" in out
    assert "model_local_kv" in out and "25,165,824" in out


def test_charged_and_stage_flags(capsys: pytest.CaptureFixture[str]) -> None:
    plain = _plan(capsys, LLAMA, *H100)
    charged = _plan(capsys, LLAMA, *H100, "--model-local-kv", str(EXAMPLE),
                    "--model-local-kv-charged", "talker")
    assert charged["available_bytes"] == plain["available_bytes"]
    assert charged["model_local_kv"][0]["status"] == "charged"
    staged = _plan(capsys, LLAMA, *H100, "-pp", "2", "--model-local-kv", str(EXAMPLE),
                   "--model-local-kv-stage", "talker=1")
    first, second = staged["ranks"]
    assert first["available_bytes"] - second["available_bytes"] == 25_165_824


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"rows_reason": ""}, "rows=FIXED needs a non-blank rows_reason"),
        ({"rows_reason": ...}, "rows=FIXED needs a non-blank rows_reason"),
        ({"rows": ...}, "missing required field(s) rows"),
        ({"rowz": "fixed"}, "unknown field(s) 'rowz'"),
        ({"layers": 24.0}, "layers must be an int"),
        ({"dtype": 2}, "dtype must be a dtype name"),
        ({"dtype": "bf17"}, "bf17"),
        ({"scope": "forever"}, "scope must be one of"),
    ],
)
def test_declaration_file_is_validated_as_the_seed_validates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, overrides: dict[str, Any], needle: str
) -> None:
    decl = _declaration(tmp_path, **overrides)
    code, out, err = _run(capsys, "plan", LLAMA, *H100, "--model-local-kv", str(decl))
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert needle in err and "declaration 0 ('talker')" in err


@pytest.mark.parametrize(
    ("text", "needle"),
    [("{", "not valid JSON"), ('{"name": "talker"}', "expected a JSON list"),
     ("[" * 100_000 + "]" * 100_000, "nested too deeply")],
)
def test_bad_declaration_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, needle: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    code, _, err = _run(capsys, "plan", LLAMA, *H100, "--model-local-kv", str(path))
    assert code == 2 and len(err.splitlines()) == 1 and needle in err


def test_missing_declaration_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, "plan", LLAMA, *H100, "--model-local-kv",
                        str(tmp_path / "nope.json"))
    assert code == 2 and "cannot read model-local declarations" in err


def test_no_room_for_one_request_is_exit_two_with_the_fix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # 1,750 fixed rows × 25,165,824 B = 44,040,192,000 B leave less than one 131,072-token
    # request (131,072 × 131,072 B + a 2 MiB null block = 17,181,966,336 B).
    decl = _declaration(tmp_path, rows_fixed=1750)
    code, out, err = _run(capsys, "plan", LLAMA, "--gpu", "H100-80GB", "--model-local-kv",
                          str(decl))
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "44,040,192,000 B" in err and "17,181,966,336 B" in err
    assert "hint: fewer rows" in err and "physical_capacity_positions" in err
    assert "--gpu-memory-utilization >=" in err


@pytest.mark.parametrize(
    ("target", "needle"),
    [("nocolon", "expects MODULE:FUNCTION"), ("no_such_module_xyz:f", "cannot import"),
     ("json:nothing_here", "no callable")],
)
def test_model_local_kv_from_bad_targets(
    capsys: pytest.CaptureFixture[str], target: str, needle: str
) -> None:
    code, _, err = _run(capsys, "plan", LLAMA, *H100, "--model-local-kv-from", target)
    assert code == 2 and len(err.splitlines()) == 1 and needle in err


# -- the worked omni-style example (torch extra) ------------------------------------------------


def test_omni_talker_declared_equals_measured_equals_subtracted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))  # examples/omni_tiny.py
    import omni_tiny

    # The engine serves the thinker: its config is the MODEL planned.
    thinker = tmp_path / "thinker"
    omni_tiny.thinker_config().save_pretrained(thinker)
    # The talker's StaticCache, fp32: 2 (K, V) × 3 layers × 2 KV heads × 16 head_dim × 32
    # positions × 4 B = 24,576 B, one row (calls are serialized).
    declared = 2 * 3 * 2 * 16 * 32 * 4
    assert declared == 24_576

    plain = _plan(capsys, str(thinker), "--gpu", "H100-80GB")
    planned = _plan(capsys, str(thinker), "--gpu", "H100-80GB",
                    "--model-local-kv-from", "omni_tiny:build")
    subtracted = plain["available_bytes"] - planned["available_bytes"]
    (row,) = planned["model_local_kv"]
    assert (row["owner"], row["status"], row["peak_bytes"]) == ("talker", "subtracted", declared)

    code, out, err = _run(capsys, "audit", "omni_tiny:build", "--json")
    assert code == 0, err
    (audited,) = json.loads(out)["declarations"]
    assert audited["verdict"] == "ok" and audited["holdings"] == ["talker.cache"]
    measured = audited["logical_bytes"]
    assert audited["declared_bytes"] == measured == subtracted == declared

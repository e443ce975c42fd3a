"""Safetensors headers: exact bytes per dtype, and every malformed header refused.

Each malformed file is also handed to the safetensors library itself (``safe_open``), which
must refuse it too: the rules are the library's, not ours (issue #10: a header with dtype
"Q7" or a negative shape was summed and labelled "exact").
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.plan.weights import model_weights
from kvledger.source.errors import SafetensorsError
from kvledger.source.headers import local_totals, read_file_header
from kvledger.source.resolve import load_source

LLAMA = json.dumps(load_source("meta-llama/Meta-Llama-3.1-8B").config)  # the catalog's values


def _raw(path: Path, header: Any, data_len: int, *, length: int | None = None) -> Path:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    size = len(text) if length is None else length
    path.write_bytes(struct.pack("<Q", size) + text + b"\0" * data_len)
    return path


def _library_refuses(path: Path) -> bool:
    safetensors = pytest.importorskip("safetensors")
    try:
        with safetensors.safe_open(str(path), "np") as handle:
            list(handle.keys())
    except Exception:
        return True
    return False


def _t(dtype: str, shape: Any, begin: int, end: int) -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


MALFORMED: dict[str, tuple[Any, int, str]] = {
    # name: (header, bytes of data after it, what the message says)
    "unknown dtype": ({"w": _t("Q7", [4], 0, 4)}, 4, "unknown dtype 'Q7'"),
    "negative shape": ({"w": _t("U8", [-8], 0, 8)}, 8, "shape [-8]"),
    "float shape": ({"w": _t("U8", [8.0], 0, 8)}, 8, "shape [8.0]"),
    "bool shape": ({"w": _t("U8", [True, 8], 0, 8)}, 8, "shape [True, 8]"),
    "string shape": ({"w": _t("U8", "8", 0, 8)}, 8, "shape '8'"),
    "offsets too short": ({"w": _t("U8", [8], 0, 7)}, 7, "needs 8"),
    "offsets too long": ({"w": _t("F32", [2], 0, 16)}, 16, "needs 8"),
    "gap": ({"w": _t("U8", [8], 1, 9)}, 9, "starts at byte 1"),
    "overlap": ({"a": _t("U8", [8], 0, 8), "b": _t("U8", [8], 0, 8)}, 8, "starts at byte 0"),
    "negative offset": ({"w": _t("U8", [0], -1, -1)}, 0, "data_offsets"),
    "truncated data": ({"w": _t("BF16", [8], 0, 16)}, 10, "truncated or padded"),
    "padded data": ({"w": _t("U8", [8], 0, 8)}, 9, "truncated or padded"),
    "overflow": ({"w": _t("U8", [2**40, 2**40], 0, 8)}, 8, "overflows"),
    "F4 off a byte": ({"w": _t("F4", [3], 0, 2)}, 2, "byte boundary"),
    "missing offsets": ({"w": {"dtype": "U8", "shape": [8]}}, 8, "lacks data_offsets"),
    "not an object": ([1, 2], 0, "expected a JSON object"),
    "non-string metadata": ({"__metadata__": {"format": 1}}, 0, "__metadata__"),
    "not JSON": (b"{not json", 0, "not JSON"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_header_is_refused_like_the_library(tmp_path: Path, case: str) -> None:
    header, data_len, says = MALFORMED[case]
    path = _raw(tmp_path / "model.safetensors", header, data_len)
    assert _library_refuses(path), f"safetensors accepts {case!r}: our rule is wrong"
    with pytest.raises(SafetensorsError) as info:
        read_file_header(str(path))
    assert str(path) in str(info.value) and says in str(info.value)


@pytest.mark.parametrize(("length", "says"), [(200_000_000, "exceeds"), (4096, "truncated")])
def test_header_length_is_checked(tmp_path: Path, length: int, says: str) -> None:
    path = _raw(tmp_path / "model.safetensors", {"w": _t("U8", [8], 0, 8)}, 8, length=length)
    assert _library_refuses(path)
    with pytest.raises(SafetensorsError, match=says):
        read_file_header(str(path))


def test_shorter_than_eight_bytes(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"\x01\x02")
    with pytest.raises(SafetensorsError, match="shorter than 8 bytes"):
        read_file_header(str(path))


def test_well_formed_headers_the_library_accepts(tmp_path: Path) -> None:
    """Sub-byte, scalar and empty tensors, in any key order, by hand:
    F4 [4] = 4 × 4 bits = 2 B; F6_E2M3 [4] = 4 × 6 bits = 3 B; F32 [] (a scalar) = 4 B;
    BF16 [0, 5] = 0 B; C64 [1] = 8 B → 17 B."""
    header = {"z": _t("C64", [1], 9, 17), "a": _t("F4", [4], 0, 2),
              "b": _t("F6_E2M3", [4], 2, 5), "s": _t("F32", [], 5, 9),
              "e": _t("BF16", [0, 5], 9, 9), "__metadata__": {"format": "pt"}}
    path = _raw(tmp_path / "model.safetensors", header, 17)
    assert not _library_refuses(path)
    assert read_file_header(str(path)) == {"C64": 8, "F4": 2, "F6_E2M3": 3, "F32": 4, "BF16": 0}


def _model_dir(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(LLAMA)
    return model


def test_cli_refuses_a_malformed_checkpoint_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model_dir(tmp_path)
    _raw(model / "model.safetensors", {"w": _t("Q7", [4], 0, 4)}, 4)
    code = main(["plan", str(model), "--gpu", "H100-80GB", "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert str(model / "model.safetensors") in err and "'Q7'" in err
    assert "exact" not in err


def test_shards_of_the_index_only(tmp_path: Path) -> None:
    """Mistral repositories hold consolidated.safetensors beside the shards the index names:
    only the index's files count. By hand: BF16 [4, 4] = 32 B + F32 [2] = 8 B → 40 B."""
    model = _model_dir(tmp_path)
    _raw(model / "a.safetensors", {"x": _t("BF16", [4, 4], 0, 32)}, 32)
    _raw(model / "b.safetensors", {"y": _t("F32", [2], 0, 8)}, 8)
    _raw(model / "consolidated.safetensors", {"x": _t("BF16", [4, 4], 0, 32)}, 32)
    (model / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 40}, "weight_map": {"x": "a.safetensors",
                                                         "y": "b.safetensors"}}))
    found = local_totals(str(model))
    assert found is not None
    assert (found.total_bytes, found.by_dtype, found.files) == (40, {"BF16": 32, "F32": 8}, 2)


@pytest.mark.parametrize("total", [-5, 0, True, "16060522496", 1.5e10])
def test_implausible_index_total_is_not_exact(tmp_path: Path, total: Any) -> None:
    model = _model_dir(tmp_path)
    (model / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": total}, "weight_map": {"x": "missing.safetensors"}}))
    cfg = json.loads(LLAMA)
    weights = model_weights(cfg, model_dtype="bfloat16", directory=model)
    assert weights.basis == "estimated"

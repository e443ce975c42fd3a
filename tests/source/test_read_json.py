"""A malformed config file is one line naming the file and what is wrong (issue 10), and
``kvledger plan`` turns it into exit 2 — never a RecursionError or a decode traceback."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from kvledger.cli.main import main
from kvledger.derive import ConfigError
from kvledger.source.config_file import MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH, read_json

CASES = {
    "deep.json": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "deep-object.json": (b'{"a": ' * 100 + b"1" + b"}" * 100, "nested 65 levels deep"),
    "latin1.json": (b'{"model_type": "llama", "x": "\xe9"}', "not UTF-8 text (byte 0xe9"),
    "list.json": (b"[1, 2]", "expected a JSON object, got list"),
    "number.json": (b"7", "expected a JSON object, got int"),
    "empty.json": (b"", "malformed JSON"),
    "truncated.json": (b'{"model_type": "lla', "malformed JSON"),
    "dup.json": (b'{"num_hidden_layers": 32, "num_hidden_layers": 64}',
                 "states 'num_hidden_layers' twice with different values (32, then 64)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_file_is_one_line(name: str, tmp_path: Path) -> None:
    data, match = CASES[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ConfigError, match=re.escape(match)) as caught:
        read_json(path)
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(path))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["plan", str(path), "--kv-cache-memory-bytes", "1GiB"])
    assert code == 2 and len(err.getvalue().strip().splitlines()) == 1
    assert "unexpected" not in err.getvalue() and "Traceback" not in err.getvalue()


def test_huge_file_refused_without_reading_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    with open(path, "wb") as f:
        f.write(b'{"a": "')
        f.seek(MAX_CONFIG_BYTES + 10)
        f.write(b'"}')
    with pytest.raises(ConfigError, match="larger than 16 MiB"):
        read_json(path)


def test_what_real_files_do_is_kept(tmp_path: Path) -> None:
    # A key stated twice with the same value, NaN (Python's json and transformers read it),
    # and nesting at the limit are all fine.
    path = tmp_path / "config.json"
    path.write_bytes(b'{"a": 1, "a": 1, "rope_theta": NaN, "n": ' + b'{"k": ' *
                     (MAX_CONFIG_DEPTH - 1) + b"1" + b"}" * (MAX_CONFIG_DEPTH - 1) + b"}")
    data = read_json(path)
    assert data["a"] == 1 and data["rope_theta"] != data["rope_theta"]

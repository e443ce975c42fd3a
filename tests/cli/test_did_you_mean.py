"""Did-you-mean a newcomer can use: a model's siblings of the same family and size first (no
suggestion of another size), the TP/PP/DP/EP abbreviations for flags — in kvledger's own
parser and inside a pasted serve line — and a Hub address or a trailing slash read as the id,
with a note. Help for records lists their fields; ``audit`` outside the repository says where
MODULE is looked for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvledger.cli.main import main
from kvledger.source.catalog import suggestions


def test_sibling_of_the_same_size_first() -> None:
    assert suggestions("Qwen/Qwen3-Next-80B-A3B-Instruct") == ["Qwen/Qwen3-Next-80B-A3B-Thinking"]
    # The catalog holds no Mistral-Small: a 7B is another model, not a typo of a 24B.
    assert suggestions("mistralai/Mistral-Small-24B") == []
    assert suggestions("qwen/qwen3-8b") == ["Qwen/Qwen3-8B"]
    assert suggestions("Qwen/Qwen3-32") == ["Qwen/Qwen3-32B"]


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    return err


def test_tp_size_means_tensor_parallel_size(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--tp-size", "2")
    assert "did you mean --tensor-parallel-size (-tp)?" in err
    assert "--page-size" not in err
    err = _error(capsys, "plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--max-modle-len", "4k")
    assert "did you mean --max-model-len?" in err


def test_inside_a_pasted_serve_line(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "plan", "--gpu", "H100", "--", "vllm", "serve", "Qwen/Qwen3-8B",
                 "--tp-size", "2")
    assert "--tp-size is not a vllm" in err
    assert "did you mean --tensor-parallel-size (-tp)?" in err


@pytest.mark.parametrize("given", ["https://huggingface.co/Qwen/Qwen3-8B",
                                   "https://huggingface.co/Qwen/Qwen3-8B/tree/main",
                                   "Qwen/Qwen3-8B/"])
def test_hub_address_and_trailing_slash(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", given, "--kv-cache-memory-bytes", "16GiB", "-q"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Qwen/Qwen3-8B on vllm")
    assert err.startswith("note: read ") and "Qwen/Qwen3-8B" in err


def test_help_of_a_record_lists_its_fields() -> None:
    import pydoc

    from kvledger.declare.model_local import ModelLocalKVSpec

    text = pydoc.render_doc(ModelLocalKVSpec, renderer=pydoc.plaintext)
    head = text.split("One model-local cache")[0]
    for name in ("name: 'str'", "layers: 'int'", "kv_heads", "head_dim", "dtype", "rows",
                 "rows_fixed: 'int' = 1"):
        assert name in head, name
    assert "*args" not in head


def test_audit_outside_the_repository_says_where_module_is_read(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from kvledger.cli.main import main; "
         "sys.exit(main(sys.argv[1:]))", "audit", "examples.omni_tiny:build"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1
    assert "run from the folder that holds examples/" in done.stderr or \
        "torch is not installed" in done.stderr

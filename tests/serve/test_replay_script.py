"""``scripts/replay_launch_lines.py``: a corpus of pasted lines replayed through ``kvledger
plan`` and counted (planned / refused by cause / internal error), each line on the GPU its
``# gpu:`` line names. The corpus here is written for the test; the real one is kept outside
the repository (docs/serve-lines.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "replay_launch_lines.py"
CORPUS = """\
# source: written for this test
vllm serve meta-llama/Meta-Llama-3.1-8B \\
  --tensor-parallel-size 2   # continuation kept

# source: a block size vLLM refuses
vllm serve meta-llama/Meta-Llama-3.1-8B --block-size 24

# source: a recipe for Blackwell
# gpu: B200
docker run --gpus all vllm/vllm-openai:latest meta-llama/Meta-Llama-3.1-8B --port $PORT
"""


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("replay_launch_lines", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_blocks_carry_their_source_and_gpu() -> None:
    rows = _script().blocks(CORPUS)
    assert [(source, gpu) for source, gpu, _ in rows] == [
        ("written for this test", ""), ("a block size vLLM refuses", ""),
        ("a recipe for Blackwell", "B200")]
    assert rows[0][2].endswith("--tensor-parallel-size 2   # continuation kept")


def test_the_table_counts_each_line_on_its_gpu(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS)
    assert _script().main([str(corpus), "--gpu", "H100-80GB", "-v"]) == 0
    out = capsys.readouterr().out
    assert "3 lines, on H100-80GB 2, B200 1" in out
    assert "[planned] (B200) docker run" in out
    lines = out.splitlines()
    assert "   2  planned" in lines and "   1  refused" in lines
    assert "   0  internal error" in lines
    # --one-gpu: every line on --gpu.
    assert _script().main([str(corpus), "--gpu", "H100-80GB", "--one-gpu"]) == 0
    assert "3 lines, on H100-80GB 3" in capsys.readouterr().out

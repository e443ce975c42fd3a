"""kvledger's serve-line scanner against the engines' own parsers.

``*-parse-cases.jsonl`` hold what vLLM 0.32's ``vllm serve`` parser (``vllm-parse-cases``),
vLLM 0.33's (``vllm-0.33-parse-cases``, its CUDA wheel run with ``VLLM_TARGET_DEVICE=cpu``)
and SGLang 0.5.23's ``ServerArgs`` parser made of each line
(``scripts/serve_parse_cases.py``, run with the engines' interpreters): the parsed value of
each memory-relevant dest, or the refusal. The scanner must accept exactly the lines the
engine accepts and read the same values.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.removed import removed_flags
from kvledger.cli.serve.scan import Scanned, scan, vllm_preprocess
from kvledger.cli.serve.table import load

HERE = Path(__file__).parent


# (engine, release whose parser made the file, file stem)
PARSERS = [("vllm", "0.32", "vllm-parse-cases"), ("vllm", "0.33", "vllm-0.33-parse-cases"),
           ("sglang", None, "sglang-parse-cases")]


def _cases(engine: str, stem: str | None = None) -> list[dict[str, Any]]:
    lines = (HERE / f"{stem or engine + '-parse-cases'}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _scan(engine: str, argv: list[str], version: str | None = None) -> Scanned:
    table = load(engine, version)
    if engine == "vllm":
        return scan(vllm_preprocess(list(argv), "vllm serve"), table, "vllm serve")
    return scan(list(argv), table, "python -m sglang.launch_server")


def _same(mine: Any, theirs: Any) -> bool:
    if isinstance(mine, float) and isinstance(theirs, float) and math.isnan(mine):
        return math.isnan(theirs)
    return bool(mine == theirs)


@pytest.mark.parametrize(("engine", "version", "stem"), PARSERS)
def test_scanner_reads_what_the_engine_reads(engine: str, version: str | None,
                                             stem: str) -> None:
    table = load(engine, version)
    checked = 0
    for case in _cases(engine, stem):
        argv = case["argv"]
        if "error" in case and set(argv) & set(removed_flags(engine)):
            # A flag an older release had, that changes no memory: the engine stops, kvledger
            # plans the line with a warning (test_removed_flags.py).
            assert any("removed it" in w for w in _scan(engine, argv, version).warnings)
            continue
        if "error" in case:
            with pytest.raises(ServeLineError):
                _scan(engine, argv, version)
            continue
        scanned = _scan(engine, argv, version)
        for dest, theirs in case["parsed"].items():
            if isinstance(theirs, dict) and "repr" in theirs:
                continue  # not JSON (e.g. NaN): checked below by hand
            if dest == "model_tag":
                mine = scanned.positionals[0] if scanned.positionals else None
            else:
                given = scanned.last(dest)
                mine = given.value if given is not None else table.by_dest[dest].default
            assert _same(mine, theirs), (argv, dest, mine, theirs)
            checked += 1
    assert checked > 100


def test_nan_utilization_is_read_as_vllm_reads_it() -> None:
    """vLLM's parser takes float('nan'); kvledger's own option check refuses it later."""
    value = _scan("vllm", ["M", "--gpu-memory-utilization", "nan"]).last(
        "gpu_memory_utilization")
    assert value is not None and math.isnan(value.value)


def test_every_recorded_vllm_refusal_has_a_case() -> None:
    errors = [c for c in _cases("vllm") if "error" in c]
    sglang_errors = [c for c in _cases("sglang") if "error" in c]
    assert len(errors) >= 10 and len(sglang_errors) >= 5

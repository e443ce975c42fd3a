"""What the coverage tests (test_coverage_*.py, test_newly_supported.py) share: reading a real
config by its file stem, grouping derived attention layers and vLLM's own layer specs the same
way, and the `kvledger inspect` check each group runs over its files.

One copy, so that a fix to how the groups compare (a new spec class, a stricter K = V check)
reaches every group at once.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.derive import derive_model
from kvledger.derive.layers import Attention, ModelFacts, Role

# The coverage groups' own real configs (origins in SOURCES-*.md beside them).
LOCAL_CONFIGS = Path(__file__).resolve().parents[1] / "oracles" / "configs"
AttentionGroups = Counter[tuple[int, int, int | None]]


def raw_config(stem: str, folder: Path = LOCAL_CONFIGS) -> dict[str, Any]:
    """``folder/stem.json`` as a fresh dict (safe to edit)."""
    loaded: dict[str, Any] = json.loads((folder / f"{stem}.json").read_text())
    return loaded


def derive_file(stem: str, folder: Path = LOCAL_CONFIGS, **kw: Any) -> ModelFacts:
    """Derive ``folder/stem.json`` as the CLI would (the path form: companions are read)."""
    return derive_model(str(folder / f"{stem}.json"), **kw)


def attention_groups(facts: ModelFacts) -> AttentionGroups:
    """(KV heads, head dim, window or None) → layers, over the decoder's attention layers (K
    and V of one geometry, as every group checked here has)."""
    out: AttentionGroups = Counter()
    for layer in facts.by_role(Role.DECODER):
        if isinstance(layer, Attention):
            assert (layer.k_heads, layer.k_dim) == (layer.v_heads, layer.v_dim), layer
            out[(layer.k_heads, layer.k_dim, getattr(layer, "window", None))] += 1
    return out


def oracle_attention(case: dict[str, Any]) -> AttentionGroups:
    """The same grouping of an oracle case's full and sliding layer specs (vLLM's own
    ``layer_specs``, which hold the layers per rank)."""
    out: AttentionGroups = Counter()
    for spec in case["layer_specs"]:
        if spec["spec"] in ("FullAttentionSpec", "SlidingWindowSpec"):
            assert spec["head_size"] == spec["head_size_v"], spec
            out[(spec["num_kv_heads"], spec["head_size"], spec["sliding_window"])] += \
                spec["num_layers"]
    return out


def check_inspect(path: Path, refusal: str | None, capsys: pytest.CaptureFixture[str],
                  *, starts: str = "unsupported:") -> None:
    """`kvledger inspect PATH --json` derives (exit 0, some layer holding bytes) when
    ``refusal`` is None, else refuses: exit 2, nothing on stdout, one line that begins with
    ``starts`` and contains ``refusal``."""
    code = main(["inspect", str(path), "--json"])
    out, err = capsys.readouterr()
    if refusal is None:
        assert code == 0, err
        data = json.loads(out)
        assert data["num_layers"] > 0 and data["bytes_per_token"] + data["bytes_per_request"] > 0
        return
    assert code == 2 and out == ""
    line = err.strip()
    assert line.startswith(starts) and "\n" not in line and refusal in line, line

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
from kvledger.derive.layers import Attention, Kind, ModelFacts, RecurrentState, Role
from oracle_cases import CONFIGS

AttentionGroups = Counter[tuple[int, int, int | None]]
SpecGroups = Counter[tuple[Any, ...]]
# A multimodal wrapper's row: (stem, model_type, where the language model sits, its type, KV
# dtype, max positions, decoder bytes/token) — check_wrapper's arguments.
WrapperRow = tuple[str, str, str, str, str, int, int]


def raw_config(stem: str, folder: Path = CONFIGS) -> dict[str, Any]:
    """``folder/stem.json`` as a fresh dict (safe to edit)."""
    loaded: dict[str, Any] = json.loads((folder / f"{stem}.json").read_text())
    return loaded


def derive_file(stem: str, folder: Path = CONFIGS, **kw: Any) -> ModelFacts:
    """Derive ``folder/stem.json`` as the CLI would (the path form: companions are read)."""
    return derive_model(str(folder / f"{stem}.json"), **kw)


def vllm_facts(model: Any, engine: str = "vllm==0.32", **kw: Any) -> ModelFacts:
    """``model``'s facts as the vLLM layout of ``engine`` (0.32's unless told) derives them:
    derive is engine-neutral, and the vLLM layout refuses a model type that release does not
    serve in vLLM's own words."""
    from kvledger.plan.api import load_facts
    from kvledger.plan.request import PlanRequest

    return load_facts(model, PlanRequest(engine=engine, **kw))[0]


def vllm_derive_file(stem: str, folder: Path = CONFIGS) -> ModelFacts:
    """``vllm_facts`` of ``folder/stem.json`` (the path form: companions are read)."""
    return vllm_facts(str(folder / f"{stem}.json"))


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


def fact_specs(facts: ModelFacts, tp: int) -> SpecGroups:
    """The decoder's cache-holding layers at tensor parallelism ``tp``, grouped as vLLM's
    ``layer_specs`` name them: ("MambaSpec", state shapes) for a recurrent state, else (spec,
    KV heads, K dim, V dim, window or None). Layers that hold nothing are left out, as vLLM
    gives them no spec."""
    out: SpecGroups = Counter()
    for layer in facts.by_role(Role.DECODER):
        if not layer.owns_memory or layer.kind is Kind.NONE:
            continue
        split = layer.split(tp)
        if isinstance(split, RecurrentState):
            out[("MambaSpec", tuple(tuple(t.shape) for t in split.tensors()))] += 1
        else:
            assert isinstance(split, Attention)
            spec = "SlidingWindowSpec" if split.kind is Kind.SLIDING else "FullAttentionSpec"
            out[(spec, split.k_heads, split.k_dim, split.v_dim,
                 getattr(split, "window", None))] += 1
    return out


def oracle_specs(case: dict[str, Any]) -> SpecGroups:
    """The same grouping of an oracle case's ``layer_specs`` (layers per rank)."""
    out: SpecGroups = Counter()
    for spec in case["layer_specs"]:
        if spec["spec"] == "MambaSpec":
            key: tuple[Any, ...] = ("MambaSpec", tuple(tuple(s) for s in spec["shapes"]))
        else:
            key = (spec["spec"], spec["num_kv_heads"], spec["head_size"], spec["head_size_v"],
                   spec.get("sliding_window"))
        out[key] += spec["num_layers"]
    return out


def find_case(cases_file: Path, stem: str, tp: int = 1, kv: str = "auto") -> dict[str, Any]:
    """The oracle case of ``cases_file`` (JSON lines) for config ``stem`` at ``tp`` and KV
    dtype ``kv``; a missing one fails the test naming what was looked for."""
    for line in cases_file.read_text().splitlines():
        case: dict[str, Any] = json.loads(line)
        inputs = case["inputs"]
        if (case["config"] == f"{stem}.json" and inputs["tensor_parallel_size"] == tp
                and inputs["kv_cache_dtype"] == kv):
            return case
    raise AssertionError(f"no oracle case for {stem} (tp {tp}, kv {kv})")


def check_by_hand(stem: str, model_type: str, per_token: int,
                  groups: dict[tuple[int, int, int | None], int]) -> None:
    """A plain-attention config derives to its type, the bytes per token worked by hand, no
    per-request bytes, and the attention groups worked from its values."""
    facts = derive_file(stem)
    assert facts.model_type == model_type
    assert facts.bytes_per_token() == per_token
    assert facts.bytes_per_request() == 0
    assert attention_groups(facts) == Counter(groups)


def wrapper_note(facts: ModelFacts, where: str, inner: str) -> bool:
    """Whether derive noted that it took the language model from the config's ``where`` level
    (model type ``inner``) and that the encoders hold no KV cache."""
    return any(f"from its {where} ({inner})" in n and "encoders hold no KV cache" in n
               for n in facts.notes)


def check_wrapper(stem: str, mtype: str, where: str, inner: str, dtype: str, max_pos: int,
                  per_token: int) -> None:
    """A multimodal wrapper derives its language model only (the config's ``where`` level,
    model type ``inner``), says so in a note, keeps the KV dtype and positions of that level,
    and holds the decoder bytes per token worked by hand; no warnings."""
    facts = derive_file(stem)
    assert facts.model_type == mtype
    assert facts.kv_dtype == dtype
    assert facts.max_position_embeddings == max_pos
    assert facts.bytes_per_token(Role.DECODER) == per_token
    assert wrapper_note(facts, where, inner), facts.notes
    assert not facts.warnings


def check_inspect(path: Path, refusal: str | None, capsys: pytest.CaptureFixture[str],
                  *, starts: str = "unsupported:") -> None:
    """`kvledger inspect PATH --json` derives (exit 0, some layer holding bytes) when
    ``refusal`` is None, else refuses: exit 2, nothing on stdout, one JSON object on stderr
    (--json) whose error begins with ``starts`` and contains ``refusal``."""
    code = main(["inspect", str(path), "--json"])
    out, err = capsys.readouterr()
    if refusal is None:
        assert code == 0, err
        data = json.loads(out)
        assert data["num_layers"] > 0 and data["bytes_per_token"] + data["bytes_per_request"] > 0
        return
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    line = json.loads(err)["error"]
    assert line.startswith(starts) and "\n" not in line and refusal in line, line

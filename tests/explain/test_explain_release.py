"""``explain`` replays a log with the vLLM release it names, and says which release it used.

The version comes from the log's own lines (``Initializing a V1 LLM engine (v0.24.0)``, the
``vLLM Version`` line of collect_env); a release kvledger does not reproduce is replayed as
the nearest one it does, with a note naming both.
"""

from __future__ import annotations

from explain.real_logs import read
from kvledger.cli.explain import render_text
from kvledger.plan.engines.vllm.releases import RELEASES
from kvledger.report.explain import explain_log

ISSUE19996 = "vllm-0.9.1-issue19996-llama31-8b-eagle.log"
LLAMA = "meta-llama/Meta-Llama-3.1-8B"


def _as(version: str) -> str:
    return read(ISSUE19996).replace("0.9.1.dev705+g01220ce89", version)


def test_a_known_release_is_replayed_as_itself() -> None:
    for version in ("0.32.0", "0.33.0"):
        e = explain_log(_as(version), model=LLAMA)
        assert e.engine_version == version
        assert e.engine_release == f"vLLM {version}"
        assert e.to_json()["engine_release"] == f"vLLM {version}"
        assert not any("is not a release kvledger reproduces" in n for n in e.notes)


def test_an_unknown_release_is_replayed_as_the_nearest_with_a_note() -> None:
    # 0.33.5 is no release kvledger has; 0.33.0 is the nearest of those it has.
    e = explain_log(_as("0.33.5"), model=LLAMA)
    assert e.engine_release == "vLLM 0.33.0"
    assert any("0.33.5 is not a release kvledger reproduces" in n and "vLLM 0.33.0" in n
               for n in e.notes)


def test_the_text_says_which_release_was_replayed() -> None:
    e = explain_log(_as("0.32.0"), model=LLAMA)
    text = render_text(e.to_json())
    assert text.splitlines()[1] == "replayed as vLLM 0.32.0"


def test_a_log_without_a_version_is_replayed_as_the_newest() -> None:
    lines = [ln for ln in read(ISSUE19996).splitlines() if "vLLM Version" not in ln]
    e = explain_log("\n".join(lines) + "\n", model=LLAMA)
    newest = max(RELEASES, key=lambda v: tuple(int(p) for p in v.split(".")))
    assert e.engine_release == f"vLLM {newest}"


def test_a_release_between_known_ones_is_replayed_as_the_nearer() -> None:
    # 0.29.1 lies between 0.28 (not reproduced) and 0.30: 0.30.0 is the nearest kvledger has.
    e = explain_log(_as("0.29.1"), model=LLAMA)
    assert e.engine_release == "vLLM 0.30.0"
    assert any("0.29.1 is not a release kvledger reproduces" in n and "vLLM 0.30.0" in n
               for n in e.notes)


def test_a_031_log_is_replayed_with_031s_rules() -> None:
    e = explain_log(_as("0.31.0"), model=LLAMA)
    assert e.engine_release == "vLLM 0.31.0"

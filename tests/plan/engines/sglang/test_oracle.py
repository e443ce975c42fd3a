"""Every SGLang 0.5.23 oracle case, planned by kvledger's SGLang layout, must match exactly.

The expected numbers are SGLang's own (``tests/oracles/sglang-0.5.23/cases.jsonl``, made by
``scripts/oracles/sglang_cases.py`` running SGLang's pool sizing code); nothing here is
computed by the code under test. A case the layout does not reproduce must be *refused* by
name (``REFUSED``), never answered with another number.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.sglang import SglangLayoutError, plan_sglang
from oracle_cases import skip_without_shared
from sglang_cases import UNSCORED, load, model_of, request_of

CASES = load()
pytestmark = pytest.mark.skipif(not CASES, reason="no SGLang oracle cases")

# Case id → a phrase of the refusal. Each is a rule kvledger does not reproduce yet (SGLang
# sized the pool, or the oracle could not run SGLang's code on it: glm5-next needs a GPU).
REFUSED: dict[str, str] = {
    "cov-glm5-next": "recurrent state kind kda is not reproduced",
    "cov-minimax-m3-vl": "indexer caches outside SGLang's DSA architectures",
}
# Cases whose model SGLang's loader refuses (get_model_architecture raised, or the config
# itself cannot load): kvledger must refuse them too, whatever the pool would have been. A
# case marked cpu_import_only is not one: its class is registered on a GPU, only the CPU
# oracle could not import it (sglang_cases.py), and its pool is scored.
NOT_LOADED = [c for c in CASES if c["expected"].get("model_class_error")
              and c["id"] not in REFUSED and c["expected"].get("model_class") is None
              and not c.get("remote_plain") and not c.get("cpu_import_only")]


def _ids(case: dict[str, Any]) -> str:
    return str(case["id"])


def _plan(case: dict[str, Any]) -> Any:
    found = model_of(case)
    if found is None:
        skip_without_shared()
    assert found is not None, case["config"]
    model, quant = found
    facts = derive_model(model, hf_quant_config=quant)
    request, options, platform = request_of(case)
    return plan_sglang(facts, request, case["kv_pool_bytes"], options=options,
                       platform=platform)


ANSWERED = [c for c in CASES if c["id"] not in REFUSED and "error" not in c["expected"]
            and c not in NOT_LOADED and c["expected"].get("max_total_num_tokens") is not None]
# Cases SGLang's loader resolved a class for but whose start-up SGLang itself refused (its
# server-argument checks raised: the oracle's ``error``): kvledger must refuse them too, in
# SGLang's words.
STARTUP_REFUSED = [c for c in CASES if c["expected"].get("error")
                   and c["expected"].get("model_class") is not None
                   and c["id"] not in REFUSED and c["id"] not in UNSCORED]


@pytest.mark.parametrize("case", ANSWERED, ids=_ids)
def test_tokens_requests_and_cell_match_sglang(case: dict[str, Any]) -> None:
    plan = _plan(case)
    want = case["expected"]
    got = {
        "max_total_num_tokens": plan.kv_cache_tokens,
        "swa_max_total_num_tokens": plan.swa_tokens,
        "max_running_requests": plan.max_running_requests,
        "page_size": plan.page_size,
    }
    expected = {
        "max_total_num_tokens": want["max_total_num_tokens"],
        "swa_max_total_num_tokens": want.get("swa_max_total_num_tokens"),
        "max_running_requests": want["max_running_requests"],
        "page_size": want["page_size"],
    }
    assert got == expected
    # SGLang's DeepSeek-V4 configurator has no _cell_size (the case holds none).
    if case.get("pp", 1) == 1 and "cell_size_bytes_per_token" in want:
        assert plan.cell_bytes_per_token == pytest.approx(want["cell_size_bytes_per_token"],
                                                          abs=0)


@pytest.mark.parametrize("case", [c for c in ANSWERED if c["expected"]["log"]], ids=_ids)
def test_log_lines_match_sglang(case: dict[str, Any]) -> None:
    """SGLang's allocation lines, character for character (rank 0's)."""
    plan = _plan(case)
    theirs = [ln for ln in case["expected"]["log"] if "is allocated" in ln or "SWAKVPool" in ln]
    assert [ln for ln in plan.sglang_log_lines if ln in theirs] == theirs
    assert plan.sglang_log_line in theirs


@pytest.mark.parametrize("case", [c for c in ANSWERED if c.get("stages")], ids=_ids)
def test_each_pipeline_stage_matches_sglang(case: dict[str, Any]) -> None:
    plan = _plan(case)
    assert [s.own_tokens for s in plan.stages] == \
        [s["max_total_num_tokens"] for s in case["stages"]]


@pytest.mark.parametrize("case", [c for c in CASES if c["id"] in REFUSED], ids=_ids)
def test_unreproduced_cases_are_refused_by_name(case: dict[str, Any]) -> None:
    with pytest.raises(SglangLayoutError, match=REFUSED[case["id"]]):
        _plan(case)


@pytest.mark.parametrize("case", NOT_LOADED, ids=_ids)
def test_models_sglang_cannot_load_are_refused_with_its_reason(case: dict[str, Any]) -> None:
    with pytest.raises(ValueError) as refused:
        _plan(case)
    if isinstance(refused.value, SglangLayoutError):
        assert "SGLang 0.5.23 cannot load this model" in str(refused.value)
    else:
        # kvledger's derive refused the config itself (before any layout): only when SGLang's
        # own config load failed, and for the reason SGLang's error's last line gives.
        error = case["expected"].get("error")
        assert error, "derive refused a config SGLang's config load accepted"
        assert error.strip().splitlines()[-1].split(": ", 1)[-1] in str(refused.value)


@pytest.mark.parametrize("case", STARTUP_REFUSED, ids=_ids)
def test_start_up_refusals_are_refused_in_sglangs_words(case: dict[str, Any]) -> None:
    words = case["expected"]["error"].strip().splitlines()[-1].split(": ", 1)[-1]
    with pytest.raises(SglangLayoutError) as refused:
        _plan(case)
    assert "SGLang 0.5.23 refuses to start" in str(refused.value)
    assert words in str(refused.value)


def test_every_case_config_is_found() -> None:
    """A case whose config went missing would skip silently: each must be found (bundled, or
    in ../shared/configs when that checkout is beside the repo)."""
    missing = [c["config"] for c in CASES if model_of(c) is None]
    if missing:
        skip_without_shared()
    assert not missing


def test_every_case_is_scored_or_refused() -> None:
    """No oracle case may fall through the filters above unchecked."""
    scored = {c["id"] for c in ANSWERED} | set(REFUSED) | {c["id"] for c in NOT_LOADED} | \
        {c["id"] for c in STARTUP_REFUSED} | UNSCORED
    assert {c["id"] for c in CASES} == scored
    assert set(REFUSED) <= {c["id"] for c in CASES}

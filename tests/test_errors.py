"""One error tree (``kvledger.errors``): every family under ``KvledgerError``, the old import
paths handing on the same classes, and the CLI choosing its words by an error's type.

The CLI used to recognise an engine's start-up refusal by the text "vLLM 0.32 refuses to
start"; now by ``EngineStartupRefusal``: a refusal's message keeps the engine's own option
names (``max_num_seqs``), any other library message has them turned into flags.
"""

from __future__ import annotations

import io

import pytest

from kvledger import errors
from kvledger.cli.errors import describe, report
from kvledger.declare.pools import InsufficientPoolBudget
from kvledger.derive import errors as derive_errors
from kvledger.plan.budget import BudgetTooSmall
from kvledger.plan.engines.vllm.errors import VllmLayoutError, VllmRefusesToStart
from kvledger.plan.engines.vllm.startup import VllmStartupError, check_scheduler
from kvledger.plan.request import PlanRequest
from kvledger.source import errors as source_errors


def test_every_family_is_a_kvledger_error_and_still_a_value_error() -> None:
    for cls in (errors.ConfigError, errors.UnsupportedArchitecture, errors.UnknownCacheKey,
                errors.SourceError, errors.SafetensorsError, errors.PlanError,
                errors.EngineStartupRefusal, BudgetTooSmall, VllmLayoutError,
                VllmRefusesToStart, VllmStartupError):
        assert issubclass(cls, errors.KvledgerError), cls
        assert issubclass(cls, ValueError), cls  # callers that caught ValueError still do
    assert issubclass(InsufficientPoolBudget, errors.KvledgerError)
    assert issubclass(InsufficientPoolBudget, RuntimeError)  # as the seed protocol names it
    assert issubclass(VllmStartupError, errors.EngineStartupRefusal)
    assert not issubclass(VllmLayoutError, errors.EngineStartupRefusal)


def test_old_import_paths_hand_on_the_same_classes() -> None:
    assert derive_errors.ConfigError is errors.ConfigError
    assert derive_errors.DeriveError is errors.DeriveError
    assert derive_errors.UnsupportedArchitecture is errors.UnsupportedArchitecture
    assert derive_errors.UnknownCacheKey is errors.UnknownCacheKey
    assert source_errors.SourceError is errors.SourceError
    assert source_errors.SafetensorsError is errors.SafetensorsError


def test_the_error_tree_imports_nothing_of_kvledger() -> None:
    import ast
    from pathlib import Path

    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    imported = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [getattr(n, "module", None) for n in imported] == ["__future__"]


def test_a_start_up_refusal_is_quoted_in_the_engines_words() -> None:
    # vLLM's SchedulerConfig.verify_max_model_len: 64 tokens a step cannot admit 100 sequences.
    with pytest.raises(errors.EngineStartupRefusal) as refused:
        check_scheduler(PlanRequest(max_num_seqs=100, max_num_batched_tokens=64))
    message, _ = describe(refused.value)
    assert "max_num_batched_tokens (64)" in message and "max_num_seqs (100)" in message
    assert "--max-num-seqs" not in message.split(";")[0]


def test_the_same_words_outside_a_refusal_become_flags() -> None:
    message, _ = describe(errors.PlanError("max_num_seqs must be >= 1"))
    assert message == "error: --max-num-seqs must be >= 1"
    # A refusal is told by its type, not its text: no release named, the words kept.
    message, hint = describe(errors.EngineStartupRefusal("max_num_seqs too large"))
    assert message == "error: max_num_seqs too large" and hint == ""


def test_a_hint_travels_with_any_kvledger_error() -> None:
    exc = errors.PlanError("no room")
    exc.hint = "lower max_num_seqs"
    stream = io.StringIO()
    assert report(exc, stream) == 2
    assert stream.getvalue() == "error: no room (hint: lower --max-num-seqs)\n"

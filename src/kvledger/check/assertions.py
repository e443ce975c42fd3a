"""One line for model authors: ``assert_declared(model, run=..., max_num_seqs=...)``.

Put it in the model's own test suite; it fails the test with the full audit report the day a
cache outgrows its declaration, stops being filled, or appears without one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvledger.check.audit import DEFAULT_TOLERANCE, audit
from kvledger.check.result import AuditResult, Basis


def assert_declared(
    model: Any,
    *,
    run: Callable[[], Any],
    max_num_seqs: int,
    tolerance: float = DEFAULT_TOLERANCE,
    basis: Basis | str = Basis.LOGICAL,
) -> AuditResult:
    """Audit ``model`` around ``run``; raise ``AssertionError`` carrying the report unless every
    verdict is ``ok``. Returns the result so a test can assert more."""
    if not callable(run):
        raise TypeError("run must be a callable that exercises the model's caches")
    result = audit(model, max_num_seqs=max_num_seqs, run=run, tolerance=tolerance, basis=basis)
    if not result.ok:
        raise AssertionError("model-local KV declarations do not match:\n" + result.report())
    return result

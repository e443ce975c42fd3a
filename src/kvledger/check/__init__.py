"""check/: the part of kvledger that touches real tensors.

torch (and, for the caches it measures, transformers) are optional extras; nothing outside this
package imports them, and this package imports them lazily: ``import kvledger.check`` is free,
the first call that measures pays for torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "audit_model": "kvledger.check.audit",
    "assert_declared": "kvledger.check.assertions",
    "AuditResult": "kvledger.check.result",
    "DeclarationAudit": "kvledger.check.result",
    "UndeclaredCache": "kvledger.check.result",
    "Verdict": "kvledger.check.result",
    "Basis": "kvledger.check.result",
    "measure": "kvledger.check.measure",
    "find_holdings": "kvledger.check.measure",
    "is_cache_object": "kvledger.check.measure",
    "materialize": "kvledger.check.arena",
    "Arena": "kvledger.check.arena",
    "reconcile": "kvledger.check.distributed",
    "ReconcileTimeout": "kvledger.check.distributed",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kvledger.check' has no attribute {name!r}")
    return getattr(import_module(module), name)


# ``audit`` is also the submodule ``kvledger.check.audit``: importing it rebinds the package
# attribute to the module, so the function is exported as ``audit_model`` (and stays
# ``kvledger.check.audit.audit``).

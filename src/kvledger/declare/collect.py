"""Find every model-local declaration in a model tree.

Works on anything with ``named_modules()`` — a torch ``nn.Module`` or a plain object — and never
imports torch. Declarations made with another copy of the protocol (vLLM-Omni's own
``ModelLocalKVSpec``, same field names) are adopted (``kvledger.declare.foreign``).
Reporting memory must never break model load: a declarer that raises (or returns
something that is not a list of specs) is logged through ``logging`` and skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kvledger.declare.foreign import adopt_spec
from kvledger.declare.model_local import ModelLocalKVSpec

LOGGER_NAME = "kvledger.declare"


def unwrap_model(model: Any) -> Any:
    """Follow a callable ``unwrap()`` (runner wrappers) until it returns None, itself, an object
    already seen (a cycle), or raises; return the innermost model."""
    seen = {id(model)}
    current = model
    while True:
        unwrap = getattr(current, "unwrap", None)
        if not callable(unwrap):
            return current
        try:
            inner = unwrap()
        except Exception:  # a wrapper whose unwrap fails is the model we have
            return current
        if inner is None or inner is current or id(inner) in seen:
            return current
        seen.add(id(inner))
        current = inner


def _candidates(root: Any) -> Iterator[tuple[str, Any]]:
    yield "", root
    named_modules = getattr(root, "named_modules", None)
    if callable(named_modules):
        yield from named_modules()


def _owner_of(obj: Any) -> Any | None:
    """The object whose method answers ``model_local_kv_specs`` (None if it does not declare).

    A wrapper that forwards attribute access hands out the inner object's bound method, whose
    ``__self__`` is the real owner: de-duplicating by that identity counts the owner once.
    """
    try:
        method = getattr(obj, "model_local_kv_specs", None)
    except Exception:
        return None
    if not callable(method):
        return None
    return getattr(method, "__self__", obj)


def collect_model_local_kv_specs(model: Any) -> list[tuple[str, ModelLocalKVSpec]]:
    """``[(dotted path, spec), ...]`` for every declaring owner in ``model``'s tree.

    Unwraps runner wrappers first, includes the root if it declares, then walks
    ``named_modules()``; each owner counts once however many paths reach it (the first path
    wins). The root's path is ``""``.
    """
    root = unwrap_model(model)
    seen: set[int] = set()
    found: list[tuple[str, ModelLocalKVSpec]] = []
    for path, obj in _candidates(root):
        owner = _owner_of(obj)
        if owner is None or id(owner) in seen:
            continue
        seen.add(id(owner))
        try:
            # Another copy of the protocol (vLLM-Omni's own classes) declares by the same
            # fields: adopted (declare/foreign.py); anything else raises here.
            specs = [adopt_spec(s) for s in owner.model_local_kv_specs()]
        except Exception:
            import logging  # only on the failure path: keeps import kvledger light

            logging.getLogger(LOGGER_NAME).warning(
                "model-local KV declarer at %r (%s) raised; its caches are not reported",
                path,
                type(owner).__name__,
                exc_info=True,
            )
            continue
        found.extend((path, spec) for spec in specs)
    return found

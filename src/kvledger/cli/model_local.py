"""The CLI's model-local declarations: ``--model-local-kv FILE.json`` and
``--model-local-kv-from MODULE:FUNCTION``, turned into ``PlanRequest`` fields.

``MODULE:FUNCTION`` is the same kind of target ``kvledger audit`` takes: a function with no
arguments returning the model, or ``(model, run)`` (``run`` is not called here: a declaration
describes, so planning needs none of the caches filled). The model's declarations are then
collected exactly as the seed says (``collect_model_local_kv_specs``: unwrap runner wrappers,
the root, then ``named_modules()``, each owner once). Building a model usually needs the torch
extra; nothing here imports torch itself. The current directory is importable, as with
``python -m``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from kvledger.cli.errors import UsageError


def request_fields(ns: argparse.Namespace) -> dict[str, Any]:
    """``model_local_kv``, ``model_local_already_charged`` and ``model_local_stages``.

    The same for ``plan``, ``fit`` and ``report`` (each sets ``ns.command_name`` for its
    messages)."""
    command = f"kvledger {getattr(ns, 'command_name', 'plan')}"
    specs: list[Any] = []
    if ns.model_local_kv is not None:
        from kvledger.declare.from_json import load_specs

        specs.extend(load_specs(ns.model_local_kv))
    if ns.model_local_kv_from is not None:
        specs.extend(_collect(ns.model_local_kv_from, command))
    if ns.model_local_kv_from is not None and not specs:
        raise UsageError(
            f"{command}: error: {ns.model_local_kv_from} declares no model-local KV cache",
            hint="its modules' model_local_kv_specs() returned nothing (or raised: see the "
            "log); drop the flag, or check the model's declarations with 'kvledger audit'")
    return {
        "model_local_kv": tuple(specs),
        "model_local_already_charged": tuple(ns.model_local_kv_charged),
        "model_local_stages": tuple(parse_stage(text, command)
                                    for text in ns.model_local_kv_stage),
    }


def parse_stage(text: str, command: str) -> tuple[str, int]:
    """``NAME=STAGE`` → ``(NAME, STAGE)`` (a ``UsageError`` for anything else)."""
    name, sep, stage = text.rpartition("=")
    if not sep or not name or not stage.strip().isdigit():
        raise UsageError(f"{command}: error: --model-local-kv-stage expects NAME=STAGE "
                         f"(STAGE a number from 0), got {text!r}")
    return name, int(stage)


def _collect(target: str, command: str) -> list[tuple[str, Any]]:
    module_name, sep, func_name = target.partition(":")
    flag = "--model-local-kv-from"
    if not sep or not module_name or not func_name:
        raise UsageError(f"{command}: error: {flag} expects MODULE:FUNCTION, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name in ("torch", "transformers"):
            raise UsageError(f"{command}: error: {flag} {target}: {exc.name} is not "
                             "installed", hint="pip install 'kvledger[torch,hf]'") from None
        raise UsageError(f"{command}: error: {flag}: cannot import {module_name!r}: "
                         f"{exc}") from None
    except Exception as exc:
        raise UsageError(f"{command}: error: {flag}: cannot import {module_name!r}: "
                         f"{exc!r}") from None
    func = getattr(module, func_name, None)
    if not callable(func):
        raise UsageError(f"{command}: error: {flag}: {module_name} has no callable "
                         f"{func_name!r}")
    try:
        made = func()
    except Exception as exc:
        raise UsageError(f"{command}: error: {flag}: {target}() raised {exc!r}") from None
    model = made[0] if isinstance(made, tuple) and len(made) == 2 and callable(made[1]) \
        else made
    from kvledger.declare.collect import collect_model_local_kv_specs

    return collect_model_local_kv_specs(model)

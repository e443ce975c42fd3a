"""``kvledger audit MODULE:FUNCTION``: run a model's own cache-filling callable and audit it.

``FUNCTION`` takes no arguments and returns ``(model, run)``; ``run()`` exercises the caches
(e.g. a short ``generate``). The report goes to stdout. Exit codes: 0 when every verdict is
``ok``; 1 when any is not (under-/over-declared, dead, undeclared), or when there is nothing to
check (no declaration, no cache held: one line on stderr says so); 2 with one line on stderr
for bad input (malformed target, import failure, a function that does not return a pair, a
``run`` that raises). The current directory is importable, as with ``python -m``, so
``kvledger audit mypkg.talker:audit_case`` works from a checkout.

torch is imported only after the command line parses, so ``--help`` and usage errors are free.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


class _BadInput(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _BadInput(f"{self.prog}: error: {message}")


def _parser() -> _Parser:
    p = _Parser(prog="kvledger audit", description=__doc__.split("\n\n")[0].replace("``", ""))
    p.add_argument("target", metavar="MODULE:FUNCTION",
                   help="a function returning (model, run_callable)")
    p.add_argument("--max-num-seqs", type=int, default=1,
                   help="rows a MAX_NUM_SEQS declaration is checked at (default 1)")
    p.add_argument("--tolerance", type=float, default=0.10,
                   help="over-declared when declared exceeds measured by more than this "
                   "fraction of declared (default 0.10)")
    p.add_argument("--basis", choices=("logical", "pinned"), default="logical",
                   help="compare declarations with logical (default) or pinned bytes")
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    return p


def _load(target: str) -> tuple[Any, Any]:
    module_name, sep, func_name = target.partition(":")
    if not sep or not module_name or not func_name:
        raise _BadInput(f"kvledger audit: error: expected MODULE:FUNCTION, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        where = ""
        if exc.name is not None and (module_name == exc.name or
                                     module_name.startswith(exc.name + ".")):
            # The module itself (not one it imports) is missing: say where it is looked for.
            top = module_name.split(".")[0]
            where = (f" (MODULE is imported from the current folder {os.getcwd()} and "
                     f"PYTHONPATH: run from the folder that holds {top}/ or {top}.py, or "
                     f"set PYTHONPATH to it)")
        raise _BadInput(f"kvledger audit: error: cannot import {module_name!r}: {exc}{where}"
                        ) from exc
    except Exception as exc:
        raise _BadInput(f"kvledger audit: error: cannot import {module_name!r}: {exc}") from exc
    func = getattr(module, func_name, None)
    if not callable(func):
        raise _BadInput(f"kvledger audit: error: {module_name} has no callable {func_name!r}")
    try:
        made = func()
    except Exception as exc:
        raise _BadInput(f"kvledger audit: error: {target}() raised {exc!r}") from exc
    if not (isinstance(made, tuple) and len(made) == 2 and callable(made[1])):
        raise _BadInput(
            f"kvledger audit: error: {target}() must return (model, run_callable), "
            f"got {type(made).__name__}"
        )
    return made[0], made[1]


def _as_json(result: Any) -> str:
    return json.dumps({
        "ok": result.ok,
        "max_num_seqs": result.max_num_seqs,
        "basis": str(result.basis),
        "tolerance": result.tolerance,
        "declarations": [
            {"owner": d.owner_path, "name": d.spec.name, "verdict": str(d.verdict),
             "declared_bytes": d.declared_bytes, "logical_bytes": d.logical_bytes,
             "pinned_bytes": d.pinned_bytes, "group": list(d.group),
             "holdings": list(d.holdings)}
            for d in result.declarations
        ],
        "undeclared": [
            {"path": u.path, "kind": u.kind, "verdict": str(u.verdict),
             "logical_bytes": u.logical_bytes, "pinned_bytes": u.pinned_bytes,
             "reason": u.reason}
            for u in result.undeclared
        ],
    }, indent=2)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        ns = _parser().parse_args(args)
        if ns.max_num_seqs < 1:
            raise _BadInput(f"kvledger audit: error: --max-num-seqs must be >= 1, "
                            f"got {ns.max_num_seqs}")
        if not 0 <= ns.tolerance < 1:
            raise _BadInput(f"kvledger audit: error: --tolerance must be in [0, 1), "
                            f"got {ns.tolerance}")
        model, run = _load(ns.target)
        from kvledger.check.audit import audit

        try:
            result = audit(model, max_num_seqs=ns.max_num_seqs, run=run,
                           tolerance=ns.tolerance, basis=ns.basis)
        except Exception as exc:
            raise _BadInput(f"kvledger audit: error: audit of {ns.target} failed: {exc!r}"
                            ) from exc
    except _BadInput as exc:
        from kvledger.cli.errors import UsageError, report, wants_json

        return report(UsageError(str(exc)), as_json=wants_json(args))
    sys.stdout.write((_as_json(result) if ns.json else result.report()) + "\n")
    if result.checked_nothing:
        sys.stderr.write(f"kvledger audit: nothing to check: {ns.target} declares no "
                         "model-local KV cache and its run left no cache tensor\n")
        return EXIT_PROBLEMS
    return EXIT_OK if result.ok else EXIT_PROBLEMS

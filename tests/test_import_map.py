"""The import map runs one way: no module of ``src/kvledger`` reaches itself, and no lower layer
imports a higher one.

The layers, top to bottom (docs/architecture.md): cli → report → plan.api → plan.engines →
plan core → derive → source → declare → errors/records. Every import counts, wherever it is
written: at module level, inside a function (a lazy import still ties the two modules: one
cannot be understood, moved or tested without the other), under ``if TYPE_CHECKING:``. An
edge runs from the importing module to the module imported; ``from pkg import name`` runs to
``pkg.name`` where that is a module of the tree, else to ``pkg`` (its ``__init__``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "kvledger"

# Circles left in folders this suite's owner does not hold (none today). A circle is named
# by its sorted members.
KNOWN_CIRCLES: set[tuple[str, ...]] = set()

# plan's engine-neutral core: below every engine (it may name the engines' leaf registry).
PLAN_CORE = ("request", "budget", "gpus", "weights", "parallel", "speculative", "model_local",
             "answers", "result", "fit_result", "batch_defaults")
# (importer prefix, imported prefix, why that arrow would run back up).
FORBIDDEN = (
    *((f"kvledger.plan.{core}", f"kvledger.plan.engines.{engine}", "the core knows no engine")
      for core in PLAN_CORE for engine in ("base", "vllm", "sglang", "native", "atom")),
    ("kvledger.derive", "kvledger.plan", "derive knows no engine"),
    ("kvledger.derive", "kvledger.cli", "derive knows no command line"),
    ("kvledger.derive", "kvledger.report", "derive knows no report"),
    ("kvledger.derive", "kvledger.check", "derive knows no live cache"),
    ("kvledger.source", "kvledger.derive", "finding a model comes before deriving it"),
    ("kvledger.source", "kvledger.plan", "finding a model comes before planning it"),
    ("kvledger.declare", "kvledger.derive", "declare is below derive"),
    ("kvledger.declare", "kvledger.plan", "declare is below plan"),
    ("kvledger.declare", "kvledger.source", "declare is below source"),
    ("kvledger.plan", "kvledger.cli", "the library knows no command line"),
    ("kvledger.plan", "kvledger.report", "planning comes before reporting"),
    ("kvledger.report", "kvledger.cli", "the library knows no command line"),
    ("kvledger.check", "kvledger.cli", "the library knows no command line"),
    ("kvledger.records", "kvledger.", "records is a leaf"),
    ("kvledger.errors", "kvledger.", "errors is a leaf"),
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def _imported(node: ast.AST, module: str, is_package: bool) -> Iterator[tuple[str, list[str]]]:
    """(module named, names taken from it) for one import statement."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, []
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".")
            if not is_package:
                base.pop()
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        yield target, [alias.name for alias in node.names]


def _edges() -> dict[str, set[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            for target, names in _imported(node, name, is_package):
                if not target.startswith(PACKAGE):
                    continue
                subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
                if subs:
                    edges[name].update(subs)
                if len(subs) < len(names) or not names:
                    if target in modules:
                        edges[name].add(target)
                    else:
                        raise AssertionError(f"{name} imports {target}, not a module of the tree")
        edges[name].discard(name)
    return edges


def _circles(edges: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[tuple[str, ...]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.append(member)
                        if member == node:
                            break
                    if len(members) > 1:
                        found.append(tuple(sorted(members)))
    return sorted(found)


def _under(module: str, prefix: str) -> bool:
    if prefix.endswith("."):
        return module.startswith(prefix)
    return module == prefix or module.startswith(prefix + ".")


def test_the_map_reads_every_module() -> None:
    edges = _edges()
    assert "kvledger.plan.api" in edges and "kvledger.derive.config" in edges
    assert "kvledger.derive" in edges["kvledger.plan.api"] or any(
        _under(m, "kvledger.derive") for m in edges["kvledger.plan.api"]
    )


def test_no_module_reaches_itself() -> None:
    circles = set(_circles(_edges()))
    new = sorted(circles - KNOWN_CIRCLES)
    assert not new, "import circles:\n" + "\n".join(" ↔ ".join(c) for c in new)
    gone = sorted(KNOWN_CIRCLES - circles)
    assert not gone, f"known circles now closed — strike them from KNOWN_CIRCLES: {gone}"


def test_no_arrow_runs_back_up() -> None:
    wrong = [
        f"{importer} → {imported}: {why}"
        for importer, targets in sorted(_edges().items())
        for imported in sorted(targets)
        for low, high, why in FORBIDDEN
        if _under(importer, low) and _under(imported, high)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_a_circle_and_a_lazy_import() -> None:
    # The analysis itself can fail: a toy map with a circle of three and a self-loop.
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(edges) == [("a", "b", "c")]
    tree = ast.parse("def f():\n    from kvledger.plan import api\n")
    found = [t for node in ast.walk(tree) for t in _imported(node, "kvledger.x", False)]
    assert found == [("kvledger.plan", ["api"])]

"""The engine-neutral core asks a layout, never an engine's name: ``plan/api.py`` and
``plan/engines/base.py`` compare no engine name to a literal (``layout.name == "vllm"`` was
how a vLLM-only budget note reached every plan; ``Layout.budget_notes`` replaced it)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kvledger.plan.engines.registry import LAYOUTS

PLAN = Path(__file__).resolve().parents[2] / "src" / "kvledger" / "plan"
CORE = (PLAN / "api.py", PLAN / "engines" / "base.py")


def _literals(node: ast.expr) -> list[str]:
    """The string constants ``node`` is or holds (a tuple, list or set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for elt in node.elts for s in _literals(elt)]
    return []


def engine_name_comparisons(source: str) -> list[str]:
    """Each ``==`` / ``!=`` / ``in`` / ``not in`` / match case that tests a value against an
    engine's name written as a literal, as ``line: text``."""
    found: list[str] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        literals: list[str] = []
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                literals.extend(_literals(operand))
        elif isinstance(node, ast.MatchValue):
            literals.extend(_literals(node.value))
        named = [s for s in literals if s in LAYOUTS]
        if named:
            found.append(f"{node.lineno}: {ast.get_source_segment(source, node)}")
    return found


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.name)
def test_core_compares_no_engine_name_to_a_literal(path: Path) -> None:
    assert engine_name_comparisons(path.read_text()) == []


def test_the_checker_sees_a_name_compared_to_an_engine() -> None:
    source = ('a = layout.name == "vllm"\n'
              'b = request.engine in ("sglang", "atom")\n'
              'c = "native" != kind\n'
              'match engine:\n    case "vllm":\n        pass\n'
              'd = layout.name == "toy"\n')  # not an engine's name
    assert [line.split(":")[0] for line in engine_name_comparisons(source)] == \
        ["1", "2", "3", "5"]

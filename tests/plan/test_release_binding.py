"""A release is bound once (``get_layout(engine, release)``) and handed to every rule: no
context variable, and no lookup of "the release being planned" anywhere under ``plan/``
but the binding itself. A rule that looked a release up on its own could plan one release's
numbers with another's rules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kvledger.plan.engines.base import get_layout
from kvledger.plan.engines.vllm.engine import VllmEngine

PLAN = Path(__file__).resolve().parents[2] / "src" / "kvledger" / "plan"
# The calls that turn a release's name into its profile, and the files allowed to make them:
# the binding (engines/base.py get_layout, Layout.find_release) and the releases' own
# lookup functions (engines/<engine>/releases/__init__.py).
LOOKUPS = frozenset({"vllm_release", "sglang_release", "pick", "nearest"})
BINDING = ("engines/base.py", "engines/release.py")


def _allowed(path: Path) -> bool:
    rel = path.relative_to(PLAN).as_posix()
    return rel in BINDING or rel.endswith("/releases/__init__.py")


def _lookups(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(
                fn, ast.Attribute) else ""
            # ATOM's specs.py has a local helper named pick over config keys: a call of
            # the release lookup takes a releases mapping first.
            if name in LOOKUPS and not (name == "pick" and node.args and isinstance(
                    node.args[0], ast.Constant)):
                found.append((node.lineno, name))
        if isinstance(node, ast.Name) and node.id == "ContextVar":
            found.append((node.lineno, "ContextVar"))
        if isinstance(node, ast.ImportFrom) and node.module == "contextvars":
            found.append((node.lineno, "contextvars"))
    return found


def test_no_rule_under_plan_looks_a_release_up() -> None:
    wrong = [f"{path.relative_to(PLAN)}:{line}: {what}"
             for path in sorted(PLAN.rglob("*.py")) if not _allowed(path)
             for line, what in _lookups(ast.parse(path.read_text()))]
    assert wrong == [], "\n".join(wrong)


@pytest.mark.parametrize("source", [
    "from contextvars import ContextVar\nX = ContextVar('x')\n",
    "def f(request):\n    return vllm_release(request.engine_release).short\n",
])
def test_the_scan_finds_a_lookup(source: str) -> None:
    # The scan itself can fail.
    assert _lookups(ast.parse(source))


def test_a_layout_holds_the_profile_it_was_bound_to() -> None:
    # vLLM 0.32 and 0.33 are two layouts, each holding its own profile: the 0.33 rules that
    # moved (releases/v0_33.py) are read from the layout's profile, not from a global.
    old, new = get_layout("vllm", "0.32"), get_layout("vllm", "0.33")
    assert isinstance(old, VllmEngine) and isinstance(new, VllmEngine)
    assert old.profile.version == "0.32.0" and new.profile.version == "0.33.0"
    assert not old.profile.gdn_checkpoint_alignment and new.profile.gdn_checkpoint_alignment == 64
    assert get_layout("vllm", "0.32") is old  # bound once, kept


SRC = PLAN.parent


def _unbound_layouts(tree: ast.AST) -> list[int]:
    """Lines that bind a layout for a request without its release: ``get_layout(x.engine)``
    plans the engine's newest release whatever ``x.engine_release`` says."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "get_layout" and len(node.args) == 1
            and isinstance(node.args[0], ast.Attribute) and node.args[0].attr == "engine"]


def test_a_request_binds_its_own_release() -> None:
    wrong = [f"{path.relative_to(SRC)}:{line}" for path in sorted(SRC.rglob("*.py"))
             for line in _unbound_layouts(ast.parse(path.read_text()))]
    assert wrong == [], "\n".join(wrong)


def test_the_unbound_scan_can_fail() -> None:
    assert _unbound_layouts(ast.parse("get_layout(request.engine)\n")) == [1]
    assert _unbound_layouts(ast.parse("get_layout(request.engine, request.engine_release)\n")) \
        == []

"""User-facing text carries no internal tags: no test-case ids (``[cov-jamba]``) and no issue
references (``(modal-client#2797)``, ``#1234``). Where a rule comes from belongs in a code
comment beside it; a message says what is wrong and what to do. Docstrings are not scanned
(they are for readers of the code)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "kvledger"
TAGS = re.compile(r"\[cov-[\w.-]+\]|\b[\w.-]+#\d+\b|(?<![\w&/])#\d{3,5}\b")
# Tags allowed by file and tag (none: the SGLang refusals' case ids are comments now).
KNOWN: set[tuple[str, str]] = set()


def _docstrings(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _literals() -> Iterator[tuple[str, int, str]]:
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in skip:
                yield str(path.relative_to(SRC)), node.lineno, node.value


def test_the_scan_sees_tags() -> None:
    for text in ("[cov-jamba] refused", "budget (modal-client#2797)", "see #1234"):
        assert TAGS.search(text), text
    for text in ("#tokens: 415624", "H100-80GB", "vllm==0.32", "&#8203;", "#555555"):
        assert not TAGS.search(text), text


def test_no_string_literal_carries_an_internal_tag() -> None:
    found = [f"{path}:{line}: {tag}" for path, line, text in _literals()
             for tag in TAGS.findall(text) if (path, tag) not in KNOWN]
    assert not found, "internal tags in user-facing text:\n" + "\n".join(found)

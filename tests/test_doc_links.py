"""Every relative link in README.md and docs/*.md resolves: the file it names exists in the
repository, and an ``#anchor`` names a heading of that file (GitHub's slug: lower case,
punctuation but ``-`` and ``_`` dropped, spaces to ``-``). Web links are not followed (no
network in tests)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# [text](target) and ![alt](target); the target ends at a space (a title) or ")".
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _slug(heading: str) -> str:
    text = re.sub(r"[`*_]{1,2}(?=\S)|(?<=\S)[`*_]{1,2}", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)}


def _links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for target in _links(doc):
        name, _, anchor = target.partition("#")
        where = (doc.parent / name).resolve() if name else doc
        if not where.exists() or ROOT not in (where, *where.parents):
            broken.append(f"{target}: no {where}")
        elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
            broken.append(f"{target}: no heading #{anchor} in {where.name}")
    assert not broken, "\n".join(broken)


def test_the_checker_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A Title\n[ok](#a-title) [gone](missing.md) [web](https://x.org)\n"
                    "```\n[in code](nowhere.md)\n```\n", encoding="utf-8")
    assert _links(page) == ["#a-title", "missing.md"]
    assert _anchors(page) == {"a-title"}
    assert _slug("Caches the engine cannot see (model-local KV)") == \
        "caches-the-engine-cannot-see-model-local-kv"

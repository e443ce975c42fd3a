"""The docs site (mkdocs.yml, docs/) builds with ``mkdocs build --strict``: a link to a page or
a heading that does not exist, or a page left out of the navigation, fails the build. CI runs
the same build (.ci/run); this keeps ``python -m pytest`` honest about it too."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("mkdocs", reason="mkdocs is in the test extra: pip install -e '.[test]'")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict",
         "--config-file", str(config), "--site-dir", str(site)],
        capture_output=True, text=True, timeout=120, check=False)


def test_the_site_builds_strict(tmp_path: Path) -> None:
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "operators.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy2(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    page = copy / "docs" / "decisions.md"
    page.write_text(page.read_text(encoding="utf-8")
                    + "\nSee [the budget](operators.md#no-such-heading).\n", encoding="utf-8")
    done = _build(copy / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-heading" in done.stdout + done.stderr

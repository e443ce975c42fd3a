"""The report in a real browser: headless Chromium (Debian's ``chromium``) driven by
playwright with the system executable — never a browser playwright downloads.

What a person opening the file offline must get: no console error, every chart (every
``<svg>`` and ``<figure>``) drawn with a non-zero size, and no request leaving the page (every
request is intercepted; anything but ``file:`` or ``data:`` is aborted and fails the test).
A full-page screenshot is kept under ``tests/artifacts/`` (path printed) for a person to look
at. The checker is itself tested on a tampered page, so it is known to be able to fail.

Without Chromium or playwright the tests skip with the reason — unless
``KVLEDGER_REQUIRE_CHROMIUM=1`` (set by ``.ci/run``), where absence is a failure: CI must run
them.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main

CHROMIUM = os.environ.get("KVLEDGER_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).parents[1] / "artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _need(reason: str) -> None:
    if os.environ.get("KVLEDGER_REQUIRE_CHROMIUM") == "1":
        pytest.fail(f"KVLEDGER_REQUIRE_CHROMIUM=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser_ready() -> None:
    try:
        import matplotlib  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        _need(f"{exc.name} is not installed (pip install -e '.[test]')")
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        _need(f"no Chromium at {CHROMIUM} (apt-get install chromium)")


@dataclass
class Visit:
    console_errors: list[str] = field(default_factory=list)
    outgoing: list[str] = field(default_factory=list)  # requests that would leave the page
    sizes: list[dict[str, Any]] = field(default_factory=list)  # every svg / figure's box


def visit(page_path: Path, profile: Path, screenshot: Path | None = None) -> Visit:
    """Open ``page_path`` in a fresh headless Chromium profile and record what happened."""
    from playwright.sync_api import Route, sync_playwright

    seen = Visit()

    def route(r: Route) -> None:
        if r.request.url.startswith(("file:", "data:")):
            r.continue_()
        else:
            seen.outgoing.append(r.request.url)
            r.abort()

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 900}, offline=True)
        try:
            context.route("**/*", route)
            page = context.new_page()
            page.on("console", lambda m: seen.console_errors.append(m.text)
                    if m.type == "error" else None)
            page.on("pageerror", lambda e: seen.console_errors.append(str(e)))
            page.on("request", lambda r: None if r.url.startswith(("file:", "data:"))
                    else seen.outgoing.append(r.url))
            page.goto(page_path.resolve().as_uri(), wait_until="load")
            seen.sizes = page.eval_on_selector_all(
                "svg, figure",
                "els => els.map(e => { const r = e.getBoundingClientRect();"
                " return {tag: e.tagName.toLowerCase(), id: e.id || e.getAttribute('aria-label'),"
                " width: r.width, height: r.height}; })")
            if screenshot is not None:
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            context.close()
    return seen


REPORTS = {
    # The README's report: a dense model on one H100.
    "llama-3.1-8b-h100": ["meta-llama/Meta-Llama-3.1-8B", "--engine", "vllm", "--gpu",
                          "H100-80GB", "--max-model-len", "32768"],
    # A hybrid (recurrent state: the per-request panel), two pipeline stages, a given budget.
    "qwen3-next-pp2": ["Qwen/Qwen3-Next-80B-A3B-Thinking", "--engine", "vllm",
                       "--kv-cache-memory-bytes", str(20 << 30), "--max-model-len", "65536",
                       "--pipeline-parallel-size", "2"],
}


@pytest.fixture(scope="module")
def pages(browser_ready: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each report written once by the CLI, shared by the tests below."""
    folder = tmp_path_factory.mktemp("pages")
    out = {}
    for name, argv in REPORTS.items():
        out[name] = folder / f"{name}.html"
        assert main(["report", *argv, "-o", str(out[name])]) == 0
    return out


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_report_renders_offline_with_every_chart(
        name: str, pages: dict[str, Path], tmp_path: Path) -> None:
    page_path = pages[name]
    shot = ARTIFACTS / f"report-{name}.png"
    seen = visit(page_path, tmp_path / "profile", shot)
    print(f"screenshot: {shot}")
    assert seen.console_errors == []
    assert seen.outgoing == []
    svgs = [s for s in seen.sizes if s["tag"] == "svg"]
    figures = [s for s in seen.sizes if s["tag"] == "figure"]
    assert len(svgs) == len(figures) == 5  # memory, layouts, grid heat map, grid curves, kinds
    for box in seen.sizes:
        assert box["width"] > 100 and box["height"] > 50, box
    assert shot.stat().st_size > 50_000  # a drawn page, not a blank one


def test_the_checker_catches_a_page_that_loads_or_hides_something(
        pages: dict[str, Path], tmp_path: Path) -> None:
    text = pages["llama-3.1-8b-h100"].read_text(encoding="utf-8")
    # Drop the page's own guard (its CSP), then add what a careless template would: a remote
    # image (to a port nothing listens on; the route aborts it before it is sent) and a
    # chart hidden by CSS.
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    text = text.replace("<main>", '<main><img src="http://127.0.0.1:9/logo.png" alt="">', 1)
    text = text.replace('<figure id="kinds-fig">', '<figure id="kinds-fig" hidden>', 1)
    bad = tmp_path / "bad.html"
    bad.write_text(text, encoding="utf-8")
    seen = visit(bad, tmp_path / "profile")
    assert any("127.0.0.1:9" in url for url in seen.outgoing)
    assert seen.console_errors  # the aborted image load is reported
    hidden = [b for b in seen.sizes if b["id"] == "kinds-fig"]
    assert hidden and hidden[0]["width"] == 0


# -- issue 25: no table clipped at common widths --------------------------------------------------

# Every table, with every <details> opened: where its box is, and whether an element between
# it and its section scrolls sideways (the table is then cut off until a person scrolls).
_FIT = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const width = document.documentElement.clientWidth;
  return Array.from(document.querySelectorAll('table')).map(t => {
    const r = t.getBoundingClientRect();
    let scrolls = null;
    for (let e = t.parentElement; e && e.tagName !== 'SECTION'; e = e.parentElement) {
      if (e.scrollWidth > e.clientWidth + 1) { scrolls = e.className || e.tagName; break; }
    }
    const section = t.closest('section').getBoundingClientRect();
    return {caption: (t.querySelector('caption') || {}).textContent || '', left: r.left,
            right: r.right, width, section_right: section.right, scrolls};
  });
}"""


def clipped_tables(page_path: Path, profile: Path, width: int) -> list[dict[str, Any]]:
    """The tables that do not fit at a viewport ``width`` px wide (none on a good page)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": width, "height": 900}, offline=True)
        try:
            page = context.new_page()
            page.goto(page_path.resolve().as_uri(), wait_until="load")
            boxes: list[dict[str, Any]] = page.evaluate(_FIT)
        finally:
            context.close()
    return [b for b in boxes if b["scrolls"] or b["left"] < 0 or b["right"] > b["width"]
            or b["right"] > b["section_right"] + 0.5]


@pytest.mark.parametrize("width", [1280, 1400, 1920])
@pytest.mark.parametrize("name", sorted(REPORTS))
def test_every_table_fits_the_viewport(name: str, width: int, pages: dict[str, Path],
                                       tmp_path: Path) -> None:
    # Before: the GPU grid's side table (TP 8 column) scrolled inside its column at 1400 and
    # 1920 px, "every point" (a column per context length) at every width.
    assert clipped_tables(pages[name], tmp_path / "profile", width) == []


def test_the_fit_checker_catches_a_clipped_table(pages: dict[str, Path], tmp_path: Path) -> None:
    text = pages["llama-3.1-8b-h100"].read_text(encoding="utf-8")
    wide = "<table><caption>too wide</caption><tr>" + "<td>123,456,789</td>" * 40 + \
        "</tr></table>"
    text = text.replace('<div class="side">', f'<div class="side" style="min-width: 0">{wide}',
                        1)
    bad = tmp_path / "wide.html"
    bad.write_text(text, encoding="utf-8")
    assert "too wide" in [b["caption"] for b in clipped_tables(bad, tmp_path / "profile", 1280)]

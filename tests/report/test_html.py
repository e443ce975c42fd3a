"""``kvledger report``: the page is self-contained, carries ``kvledger plan``'s numbers, labels
every chart, and the command fails in one line when the plotting extra is missing.

The browser half (does Chromium render it, offline, with every chart visible) is
``test_browser.py``.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from release_pin import as_release

pytest.importorskip("matplotlib", reason="the report needs the plotting extra: "
                    "pip install 'kvledger[report]'")

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
TEN_GIB = str(10 * 2**30)
ARGS = [LLAMA, "--engine", "vllm", "--kv-cache-memory-bytes", TEN_GIB, "--max-model-len", "32768"]
CHARTS = ("memory", "layouts", "grid", "gridcurves", "kinds")


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("report") / "llama.html"
    assert main(as_release(["report", *ARGS, "-o", str(out)])) == 0
    return out.read_text(encoding="utf-8")


def _plan_json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(as_release(["plan", *ARGS, "--json"])) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_the_page_embeds_exactly_what_kvledger_plan_prints(
        page: str, capsys: pytest.CaptureFixture[str]) -> None:
    found = re.search(r'<pre id="plan-json">(.*?)</pre>', page, re.S)
    assert found is not None
    assert json.loads(html.unescape(found.group(1))) == _plan_json(capsys)


def test_the_plan_table_shows_the_hand_worked_numbers(page: str) -> None:
    # 131,072 B/token × 16 = 2 MiB blocks; 10 GiB / 2 MiB = 5,120 blocks = 81,920 tokens;
    # 81,920 / 32,768 = 2.50 requests.
    for row in ("<td>KV blocks</td><td class=n>5,120</td>",
                "<td>KV cache tokens</td><td class=n>81,920</td>",
                "<td>max concurrency at max_model_len</td><td class=n>2.50</td>"):
        assert row in page
    # The layouts table: 81,920 / 8,192 = 10 requests at 8k.
    assert "<td>8k</td><td class=n>10.00</td>" in page


def test_every_chart_is_an_inline_labelled_svg_with_a_table_beside_it(page: str) -> None:
    svgs = re.findall(r"<svg [^>]*>", page)
    assert len(svgs) == len(CHARTS)
    for tag in svgs:
        assert 'role="img"' in tag
        label = re.search(r'aria-label="([^"]+)"', tag)
        assert label is not None and len(label.group(1)) > 10
    for name in CHARTS:
        pair = re.search(rf'<figure id="{name}-fig">(.*?)</figure><div class="side">(.*?)</div>',
                         page, re.S)
        assert pair is not None, name
        assert "<figcaption>" in pair.group(1)
        assert "<table>" in pair.group(2) or "<details>" in pair.group(2)
    # Titles and axis words are drawn as paths; the labels still read in the aria-labels and
    # the captions: units are named.
    assert "GiB" in page and "tokens" in page and "bytes per token" in page


def test_nothing_on_the_page_can_reach_the_network(page: str) -> None:
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    for tag in ("<script", "<link", "<img", "<iframe", "<object", "@import", "@font-face"):
        assert tag not in page, tag
    # Attributes that would load something: fragment links inside the SVGs, and the heat map's
    # raster cells, which matplotlib inlines as data: PNGs.
    targets = re.findall(r'(?:src|href|xlink:href)="([^"]*)"', page)
    assert targets and all(t.startswith(("#", "data:image/png;base64,")) for t in targets)
    assert not re.search(r"url\((?!#)", page)


def test_ids_are_unique_across_figures(page: str) -> None:
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    # and every fragment reference points at an id on the page
    refs = set(re.findall(r'(?:href="#|url\(#)([^")]+)', page))
    assert refs <= set(ids)


def test_the_page_names_the_command_that_made_it(page: str) -> None:
    assert (f"kvledger report {LLAMA} --engine vllm==0.33 --kv-cache-memory-bytes {TEN_GIB} "
            "--max-model-len 32768 --output ") in html.unescape(page)


def test_the_command_line_spells_switches_and_booleans_as_flags() -> None:
    from kvledger.cli.main import command_parser
    from kvledger.cli.report import command_line

    ns = command_parser("report").parse_args(
        [LLAMA, "--gpu", "H100-80GB", "--offline", "--no-enable-prefix-caching", "-tp", "2",
         "--block-size", "auto", "-o", "r.html"])
    # Parser order: the model's own flags first; 'auto' is the block size's default.
    assert command_line(ns) == (f"kvledger report {LLAMA} --offline --engine vllm --gpu "
                                "H100-80GB --tensor-parallel-size 2 --no-enable-prefix-caching "
                                "--output r.html")


def test_the_same_inputs_give_the_same_bytes(page: str, tmp_path: Path) -> None:
    again = tmp_path / "again.html"
    assert main(as_release(["report", *ARGS, "-o", str(again)])) == 0
    def without_output(text: str) -> str:  # the page names its own path; nothing else varies
        return re.sub(r"--output [^<]*</code>", "--output X</code>", text, count=1)

    assert without_output(again.read_text(encoding="utf-8")) == without_output(page)


def test_missing_matplotlib_is_one_line_and_exit_2(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    out = tmp_path / "never.html"
    assert main(["report", *ARGS, "-o", str(out)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "matplotlib is not installed" in lines[0]
    assert "pip install 'kvledger[report]'" in lines[0]
    assert not out.exists() and captured.out == ""


def test_report_needs_a_budget_and_an_output(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    assert main(["report", LLAMA, "-o", str(tmp_path / "x.html")]) == 2
    assert "no memory budget" in capsys.readouterr().err
    assert main(["report", LLAMA, "--gpu", "H100-80GB"]) == 2
    assert "--output" in capsys.readouterr().err
    assert main(["report", LLAMA, "--gpu", "H100-80GB", "-o", str(tmp_path / "no" / "x.html")]) == 2
    assert "no directory" in capsys.readouterr().err


def test_other_commands_never_import_matplotlib() -> None:
    code = (
        "import sys\n"
        "from kvledger.cli.main import main\n"
        f"assert main(['plan', {LLAMA!r}, '--kv-cache-memory-bytes', {TEN_GIB!r}, '--json']) == 0\n"
        "assert main(['report', '--help']) == 0\n"
        "import kvledger.report.html, kvledger.report.series\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'numpy'))\n"
        "assert not bad, bad\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr


# -- issue 25: every layout's curve visible, a grid chart a person can read ---------------------


def test_every_layout_curve_has_its_own_marker_and_the_reports_is_on_top() -> None:
    from kvledger.report.charts import curve_styles

    # Before: one solid style each, drawn in registry order, so SGLang's curve (equal to
    # vLLM's at most lengths) covered vLLM's, the default engine's.
    labels = ["vllm", "sglang", "native", "atom"]
    styles = curve_styles(labels, default="vllm")
    assert [labels[i] for i, _ in styles][-1] == "vllm"  # drawn last
    by_label = {labels[i]: style for i, style in styles}
    assert len({s["marker"] for s in by_label.values()}) == len(labels)
    assert len({s["color"] for s in by_label.values()}) == len(labels)
    top = by_label.pop("vllm")
    assert all(top["zorder"] > s["zorder"] for s in by_label.values())
    # The others are hollow and larger, so they show round a curve drawn over them.
    assert all(s["markerfacecolor"] == "none" and s["markersize"] > top["markersize"]
               for s in by_label.values())
    assert len({s["linestyle"] for s in by_label.values()} | {top["linestyle"]}) == len(labels)
    # The report's own engine is the one on top, whichever it is.
    assert [labels[i] for i, _ in curve_styles(labels, default="sglang")][-1] == "sglang"


def test_the_grid_curves_are_one_gpu_per_tp_size(page: str) -> None:
    # Before: four panels, each with a line for all 34 presets. Now one preset's TP sizes
    # (the report's GPU, else the first that holds one request at every TP size), and every
    # preset's numbers in the table below the charts.
    assert "every point of every curve" in page
    fig = re.search(r'<figure id="gridcurves-fig">.*?</figure>', page, re.S)
    assert fig is not None and "per TP size" in html.unescape(fig.group(0))


def test_the_grid_curve_preset_rule() -> None:
    from kvledger.report.charts import curves_gpu
    from kvledger.report.series import FITS, SHORT, Curve, GridCell

    def cell(gpu: str, tp: int, status: str) -> GridCell:
        return GridCell(gpu, tp, status, 1.0 if status == FITS else 0.5, None, Curve(gpu, ()))

    cells = [cell("A", 1, SHORT), cell("A", 2, FITS), cell("B", 1, FITS), cell("B", 2, FITS)]
    assert curves_gpu(cells, "A") == "A"  # the report's GPU
    assert curves_gpu(cells, None) == "B"  # the first holding one request at every TP
    assert curves_gpu(cells[:2], None) == "A"  # else the first holding one at any
    assert curves_gpu([cell("A", 1, SHORT)], None) is None

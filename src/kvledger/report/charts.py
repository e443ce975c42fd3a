"""The report's plots, drawn by matplotlib and kept as inline SVG text.

Why matplotlib rendering SVG: a well-kept library draws the axes, ticks, legends and scales
(no hand-written chart code to get wrong), and SVG inlines into one HTML file that needs no
network and stays sharp at any zoom. Text is drawn as glyph paths (``svg.fonttype = path``) so
the page looks the same on a machine without matplotlib's fonts; the words of every chart are
also in the table beside it and in the SVG's ``aria-label``.

matplotlib is an optional extra (``kvledger[report]``) and is imported only inside these
functions: nothing else in kvledger pays for it. ``require_matplotlib`` is the one place that
says how to install it.

Each SVG is made embeddable: the XML prolog, DOCTYPE and RDF metadata go, and every ``id`` is
prefixed per figure so several figures on one page never share an id (matplotlib names glyph
definitions and clip paths the same way in every file).
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvledger.report.series import FITS, SHORT, Curve, GridCell, KindBytes, MemoryBar

if TYPE_CHECKING:
    from matplotlib.figure import Figure

GIB = 1 << 30
INSTALL_HINT = "pip install 'kvledger[report]'"

# Tableau-10 colours: distinguishable for the common colour-vision deficiencies, and the
# memory segments keep one colour each across every report.
SEGMENT_COLOURS = {"weights": "#4e79a7", "reserves": "#f28e2b", "KV cache": "#59a14f",
                   "free": "#bab0ac"}
_RC: dict[Any, Any] = {
    "svg.fonttype": "path",
    "svg.hashsalt": "kvledger",  # stable ids: the same inputs give the same file
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


class MatplotlibMissing(ImportError):
    """The report's plotting extra is not installed."""


def require_matplotlib() -> None:
    """Import matplotlib or raise ``MatplotlibMissing`` saying how to install it."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise MatplotlibMissing(
            f"matplotlib is not installed (the report's plots need it): {INSTALL_HINT}"
        ) from None


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    # No layout engine: matplotlib's constrained layout measures every text of a figure
    # before it draws it, which was about 40 % of the report's drawing time (issue 35: the
    # report renders in under 3 s). Each chart sets its margins instead (``_margins``).
    return Figure(figsize=(width, height))


# The width of one character of a tick label at ``font.size`` 9, in inches (DejaVu Sans's
# average advance is about 0.6 em; 9 pt × 0.6 / 72 ≈ 0.075 in, rounded up).
_CHAR_IN = 0.08


def _label_inches(labels: Sequence[str]) -> float:
    """The width a column of tick labels takes, in inches."""
    return max((len(label) for label in labels), default=0) * _CHAR_IN


def _title(fig: Figure, title: str) -> None:
    """The chart's title at the figure's top left (not the axes': a wide column of tick
    labels would push a long title off the right edge)."""
    width, height = fig.get_size_inches()
    fig.suptitle(title, x=0.1 / width, y=1 - 0.08 / height, ha="left", va="top",
                 fontsize="large")


def _margins(fig: Figure, *, left: float, bottom: float, top: float = 0.35,
             right: float = 0.2, hspace: float | None = None) -> None:
    """Place the axes ``left`` / ``bottom`` / ``top`` / ``right`` inches from the figure's
    edges (room for the tick labels, axis labels, title and any legend outside the axes)."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height,
                        top=1 - top / height, hspace=hspace)


_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^")]+)')


def embeddable_svg(svg: str, prefix: str, label: str) -> str:
    """matplotlib's SVG file → an inline ``<svg>`` element with unique ids and a label."""
    from html import escape

    svg = _METADATA.sub("", _PROLOG.sub("", svg, count=1), count=1)
    svg = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    svg = _REF.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)
    return svg.replace(
        "<svg ", f'<svg role="img" aria-label="{escape(label)}" class="chart" ', 1).strip()


def to_svg(fig: Figure, prefix: str, label: str) -> str:
    import matplotlib

    out = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "kvledger"}):
        fig.savefig(out, format="svg", metadata={"Date": None})
    return embeddable_svg(out.getvalue(), prefix, label)


def tokens_label(value: float, _pos: Any = None) -> str:
    """Context lengths as people say them: 4096 → 4k, 131072 → 128k, 1048576 → 1M."""
    v = int(value)
    if v >= 1 << 20 and v % (1 << 20) == 0:
        return f"{v >> 20}M"
    if v >= 1024 and v % 1024 == 0:
        return f"{v >> 10}k"
    return f"{v:,}"


# -- the charts --------------------------------------------------------------------------------


def memory_chart(bars: Sequence[MemoryBar], title: str) -> str:
    """GPU memory per rank as stacked horizontal bars: weights, reserves, KV, free (GiB)."""
    import matplotlib

    with matplotlib.rc_context(_RC):
        fig = _figure(7.5, 1.6 + 0.45 * len(bars))
        ax = fig.add_subplot()
        names = [bar.label for bar in bars]
        left = [0.0] * len(bars)
        segments = (("weights", "weights"), ("reserves", "reserves"), ("kv", "KV cache"),
                    ("free", "free"))
        for attr, name in segments:
            widths = [getattr(bar, attr) / GIB for bar in bars]
            if not any(widths):
                continue
            ax.barh(names, widths, left=left, color=SEGMENT_COLOURS[name], label=name,
                    edgecolor="white", linewidth=0.6)
            left = [a + b for a, b in zip(left, widths, strict=True)]
        ax.invert_yaxis()
        given = all(bar.given for bar in bars)
        ax.set_xlabel("GiB of the given KV budget" if given else "GiB per GPU")
        _title(fig, title)
        # The legend sits 0.55 in below the axes (under the ticks and the x label).
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), frameon=False, ncols=4,
                  bbox_transform=_below(fig, ax, 0.55))
        _margins(fig, left=_label_inches(names) + 0.2, bottom=0.85)
        return to_svg(fig, "memory", title)


def _below(fig: Figure, ax: Any, inches: float) -> Any:
    """A transform whose (x, 0) is ``inches`` below the axes' bottom edge (x in axes
    fractions): a legend under the axes at a fixed distance, whatever the figure's height."""
    from matplotlib.transforms import ScaledTranslation

    return ax.transAxes + ScaledTranslation(0, -inches, fig.dpi_scale_trans)


# Layouts other than the report's own: hollow markers of distinct shapes and broken lines, so
# that where two layouts give the same numbers (vLLM and SGLang often do) both stay visible.
_OTHER_MARKERS = ("s", "^", "D", "v", "P", "X")
_OTHER_LINES = ("--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1)))


def curve_styles(labels: Sequence[str], default: str) -> list[tuple[int, dict[str, Any]]]:
    """(index, matplotlib line style) for each layout's curve, in drawing order: ``default``
    (the report's own layout) last, solid, filled and on top; every other one a hollow marker
    of its own shape and a broken line, its marker larger than the default's, so a curve that
    another one covers (vLLM's and SGLang's often agree) still shows round it. Colour follows
    the layout's position, so a layout keeps it across reports."""
    order = sorted(range(len(labels)), key=lambda i: labels[i] == default)
    styles: list[tuple[int, dict[str, Any]]] = []
    others = 0
    for i in order:
        if labels[i] == default:
            style: dict[str, Any] = {"marker": "o", "markersize": 5, "linewidth": 2.4,
                                     "linestyle": "-", "label": f"{labels[i]} (this report)",
                                     "zorder": 5}
        else:
            style = {"marker": _OTHER_MARKERS[others % len(_OTHER_MARKERS)], "markersize": 8,
                     "markerfacecolor": "none", "markeredgewidth": 1.3, "linewidth": 1.3,
                     "linestyle": _OTHER_LINES[others % len(_OTHER_LINES)], "label": labels[i],
                     "zorder": 3}
            others += 1
        styles.append((i, {**style, "color": f"C{i % 10}"}))
    return styles


def layouts_chart(curves: Sequence[Curve], max_model_len: int, title: str,
                  default: str = "") -> str:
    """Max concurrency against context length, one line per layout (``curve_styles``),
    log-log; the legend lists ``default`` first."""
    import matplotlib
    from matplotlib.ticker import FuncFormatter

    with matplotlib.rc_context(_RC):
        fig = _figure(7.5, 4.2)
        ax = fig.add_subplot()
        for i, style in curve_styles([c.label for c in curves], default):
            xs = [c for c, v in curves[i].points if v is not None and v > 0]
            ys = [v for _, v in curves[i].points if v is not None and v > 0]
            if xs:
                ax.plot(xs, ys, **style)
        _context_axes(ax, curves, max_model_len, FuncFormatter(tokens_label))
        ax.set_xlabel(X_CONTEXT)
        ax.set_ylabel(Y_CONCURRENCY)
        _title(fig, title)
        handles, labels = ax.get_legend_handles_labels()
        first = sorted(range(len(labels)), key=lambda n: not labels[n].endswith("(this report)"))
        ax.legend([handles[n] for n in first], [labels[n] for n in first], frameon=False)
        _margins(fig, left=0.75, bottom=0.55)
        return to_svg(fig, "layouts", title)


def _context_axes(ax: Any, curves: Sequence[Curve], max_model_len: int, fmt: Any) -> None:
    """Shared by every concurrency curve: log2 context, log concurrency, two guide lines."""
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    contexts = sorted({c for curve in curves for c, _ in curve.points})
    if contexts:
        ax.set_xticks(contexts)
    ax.xaxis.set_major_formatter(fmt)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.axhline(1, color="#555555", linestyle=":", linewidth=1)
    ax.axvline(max_model_len, color="#999999", linestyle="--", linewidth=1)
    ax.grid(True, which="major", color="#e5e5e5", linewidth=0.6)


X_CONTEXT = "context length per request (tokens; dashed: max_model_len)"
Y_CONCURRENCY = "max concurrent requests (dotted: one)"


def grid_heatmap(cells: Sequence[GridCell], gpus: Sequence[str], tp_sizes: Sequence[int],
                 title: str, pipeline_parallel_size: int = 1) -> str:
    """GPU presets × TP sizes at max_model_len: the colour is the concurrency (log), a grey
    cell does not hold one request, and each cell says its number or why not."""
    import matplotlib
    import numpy as np
    from matplotlib.colors import LogNorm

    by_key = {(c.gpu, c.tp): c for c in cells}
    values = np.full((len(gpus), len(tp_sizes)), np.nan)
    for i, gpu in enumerate(gpus):
        for j, tp in enumerate(tp_sizes):
            cell = by_key.get((gpu, tp))
            if cell is not None and cell.status == FITS and cell.concurrency:
                values[i, j] = cell.concurrency
    with matplotlib.rc_context(_RC):
        fig = _figure(6.5, 1.4 + 0.3 * len(gpus))
        ax = fig.add_subplot()
        cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#e8e8e8")
        finite = values[np.isfinite(values)]
        norm = LogNorm(vmin=max(1.0, float(finite.min())), vmax=max(2.0, float(finite.max()))) \
            if finite.size else None
        image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto")
        for i, gpu in enumerate(gpus):
            for j, tp in enumerate(tp_sizes):
                cell = by_key.get((gpu, tp))
                text, dark = _cell_text(cell), False
                if cell is not None and cell.status == FITS and norm is not None:
                    dark = float(norm(cell.concurrency or 1.0)) < 0.6
                # Inside its cell, so inside the axes: the layout need not measure it.
                ax.text(j, i, text, ha="center", va="center", fontsize=7.5,
                        color="white" if dark else "#222222", in_layout=False)
        ax.set_xticks(range(len(tp_sizes)), [f"TP {tp}" for tp in tp_sizes])
        ax.set_yticks(range(len(gpus)), list(gpus))
        ax.tick_params(length=0)
        ax.spines[:].set_visible(False)
        pp = pipeline_parallel_size
        ax.set_xlabel("tensor-parallel size (GPUs per replica)" if pp == 1 else
                      f"tensor-parallel size (× PP {pp} = GPUs per replica)")
        _title(fig, title)
        _margins(fig, left=_label_inches(gpus) + 0.2, bottom=0.55,
                 right=0.2 if norm is None else 0.1)
        if norm is not None:
            bar = fig.colorbar(image, ax=ax, shrink=0.6)
            bar.set_label("max concurrent requests (log scale)")
        return to_svg(fig, "grid", title)


def _cell_text(cell: GridCell | None) -> str:
    if cell is None:
        return ""
    if cell.status == FITS and cell.concurrency is not None:
        return f"{cell.concurrency:,.1f}" if cell.concurrency < 1000 else f"{cell.concurrency:,.0f}"
    if cell.status == SHORT:
        return f"< 1 ({cell.concurrency:.2f})" if cell.concurrency is not None else "< 1"
    if cell.status == "weights":
        return "no room"
    return "n/a"


def curves_gpu(cells: Sequence[GridCell], gpu: str | None) -> str | None:
    """The preset whose TP sizes ``tp_chart`` draws: the report's GPU when the grid has it,
    else the first preset (in the grid's order) that holds one request at every TP size,
    else the first that holds one at any; None when none does."""
    gpus = list(dict.fromkeys(c.gpu for c in cells))
    if gpu in gpus:
        return gpu
    holds = {g: [c.status == FITS for c in cells if c.gpu == g] for g in gpus}
    return next((g for g in gpus if holds[g] and all(holds[g])),
                next((g for g in gpus if any(holds[g])), None))


def tp_chart(cells: Sequence[GridCell], gpu: str, tp_sizes: Sequence[int], max_model_len: int,
             title: str) -> str:
    """One GPU preset's concurrency curve at every TP size (log-log), one line each with its
    own marker, labelled at its end: a handful of lines a person can follow, where one panel
    per TP with a line for every preset was not. Every preset's numbers are in the table."""
    import matplotlib
    from matplotlib.ticker import FuncFormatter

    markers = ("o", "s", "^", "D", "v", "P", "X")
    mine = {c.tp: c for c in cells if c.gpu == gpu}
    with matplotlib.rc_context(_RC):
        fig = _figure(7.5, 4.2)
        ax = fig.add_subplot()
        drawn = []
        for k, tp in enumerate(tp_sizes):
            cell = mine.get(tp)
            if cell is None:
                continue
            xs = [x for x, v in cell.curve.points if v is not None and v > 0]
            ys = [v for _, v in cell.curve.points if v is not None and v > 0]
            if not xs:
                continue
            ax.plot(xs, ys, marker=markers[k % len(markers)], markersize=5, linewidth=1.6,
                    color=f"C{k % 10}", label=f"TP {tp}")
            ax.annotate(f"TP {tp}", (xs[-1], ys[-1]), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=8,
                        color=f"C{k % 10}")
            drawn.append(cell.curve)
        _context_axes(ax, drawn or [c.curve for c in mine.values()], max_model_len,
                      FuncFormatter(tokens_label))
        ax.set_xlabel(X_CONTEXT)
        ax.set_ylabel(Y_CONCURRENCY)
        _title(fig, title)
        if drawn:
            ax.legend(frameon=False, title=gpu)
        # Right: room for the "TP n" labels at the lines' ends.
        _margins(fig, left=0.75, bottom=0.55, right=0.5)
        return to_svg(fig, "gridcurves", title)


def kinds_chart(kinds: Sequence[KindBytes], title: str) -> str:
    """Bytes per token (and, where a kind has them, bytes per request) per layer kind."""
    import matplotlib
    from matplotlib.ticker import FuncFormatter

    per_request = any(k.bytes_per_request for k in kinds)
    with matplotlib.rc_context(_RC):
        fig = _figure(7.5, 1.4 + 0.45 * len(kinds) * (2 if per_request else 1))
        axes = fig.subplots(2 if per_request else 1, 1, squeeze=False).ravel()
        names = [k.label for k in kinds]
        ax = axes[0]
        bars = ax.barh(names, [k.bytes_per_token for k in kinds], color="#59a14f")
        ax.bar_label(bars, [f"{k.layers} layers · {k.bytes_per_token:,} B" for k in kinds],
                     padding=3, fontsize=8)
        ax.invert_yaxis()
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}"))
        ax.set_xlabel("bytes per token per GPU (all layers of the kind)")
        ax.margins(x=0.35)
        _title(fig, title)
        if per_request:
            ax = axes[1]
            mib = [k.bytes_per_request / (1 << 20) for k in kinds]
            bars = ax.barh(names, mib, color="#76b7b2")
            ax.bar_label(bars, [f"{k.bytes_per_request:,} B" for k in kinds], padding=3,
                         fontsize=8)
            ax.invert_yaxis()
            ax.set_xlabel("MiB per request per GPU (state, cross-attention: not per token)")
            ax.margins(x=0.35)
        _margins(fig, left=_label_inches(names) + 0.2, bottom=0.55, hspace=0.9)
        return to_svg(fig, "kinds", title)

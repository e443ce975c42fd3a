"""The layer tables of ``plan`` and ``inspect`` for people (``rich``; imported by ``render``).

Two tables, both read from the JSON: "layer kinds" — each distinct layer once, with its own
bytes and where it occurs — and "layers in order", the runs with repeating patterns folded
into one row (``layer_runs``), each row's bytes the total of its layers. A table of 118 rows
for Nemotron-H becomes a few lines, and the bytes of one layer are still one table away.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich import box
from rich.table import Table

from kvledger.cli.layer_runs import folded_rows, run_label

Facts = Mapping[str, Any]
_RUN_KEYS = ("first", "last", "count")


def _num(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "-"


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


def _ranges(indices: list[int]) -> str:
    parts: list[tuple[int, int]] = []
    for i in sorted(indices):
        if parts and parts[-1][1] == i - 1:
            parts[-1] = (parts[-1][0], i)
        else:
            parts.append((i, i))
    return ",".join(_span(a, b) for a, b in parts)


def _where(indices: list[int], width: int = 44) -> str:
    """Where a kind occurs, cut to ``width`` characters (the order table has the rest)."""
    text = _ranges(indices)
    if len(text) <= width:
        return text
    return text[:text.rfind(",", 0, width - 2)] + ",…"


def per_token(facts: Facts) -> int:
    """A layer's bytes per decoded token (cross-attention caches its encoder once: 0)."""
    return 0 if facts.get("kind") == "cross" else int(facts.get("bytes_per_token") or 0)


def per_request(facts: Facts) -> int:
    return int(facts.get("bytes_per_request") or 0)


def _times(n: int, each: int) -> str:
    if not each:
        return "-"
    return _num(each) if n == 1 else f"{n}×{each:,}"


def short_detail(facts: Facts) -> str:
    """What sets a run apart inside a pattern: its window, chunk or state kind."""
    for key in ("window", "chunk"):
        if isinstance(facts.get(key), int):
            return f"{facts[key]:,}"
    if facts.get("state_kind"):
        return str(facts["state_kind"])
    if facts.get("not_cached"):
        return "(not cached)"
    return ""


def pattern_label(run: Facts, facts: Callable[[Facts], Facts]) -> str:
    """A run's words inside a folded pattern: "sliding 128", "state mamba2 ×3", "mtp mla"."""
    f = facts(run)
    kind = str(f.get("kind", "?"))
    if f.get("role") not in (None, "decoder"):
        kind = f"{f['role']} {kind}"
    return run_label(kind, short_detail(f), int(run["count"]))


def kinds_table(
    runs: Sequence[Facts], facts: Callable[[Facts], Facts],
    describe: Callable[[Facts], str], title: str = "layer kinds", shape: str = "geometry",
    narrow: bool = False,
) -> Table:
    """Each distinct layer once: how many, its shape (``describe``), its own bytes, where
    (``narrow``: where, cut shorter; the order table has every layer)."""
    kinds: list[tuple[dict[str, Any], list[int]]] = []
    for run in runs:
        f = {k: v for k, v in facts(run).items() if k not in _RUN_KEYS}
        indices = list(range(int(run["first"]), int(run["last"]) + 1))
        same = next((k for k in kinds if k[0] == f), None)
        if same is None:
            kinds.append((f, indices))
        else:
            same[1].extend(indices)
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for col in ("n", "role", "kind", shape, "dtype", "B/token\neach", "B/request\neach",
                "layers"):
        if col == "n" or col.startswith("B/"):
            _number_column(table, col)
        else:
            # One-word cells stay whole; the shape and the layer list wrap.
            table.add_column(col, no_wrap=col in ("role", "kind", "dtype"), overflow="fold",
                             ratio=1 if col == shape else None,
                             min_width=12 if col == shape else 8 if col == "layers" else None)
    for f, indices in kinds:
        table.add_row(str(len(indices)), str(f.get("role", "")), str(f.get("kind", "")),
                      describe(f), str(f.get("dtype", "")), _num(per_token(f)) if
                      per_token(f) else "-", _num(per_request(f)) if per_request(f) else "-",
                      _where(indices, 8 if narrow else 44))
    return table


def order_table(
    runs: Sequence[Facts], facts: Callable[[Facts], Facts],
    describe: Callable[[Facts], str], totals: tuple[str, int, Any, Any],
    title: str = "layers in order", shape: str = "geometry", narrow: bool = False,
) -> Table:
    """The runs in model order, repeating patterns folded (``layer_runs.folded_rows``); the
    footer holds ``totals``: its label, layer count, bytes per token and per request.
    ``narrow``: the role column is left out when every layer is a decoder layer."""
    rows = folded_rows(runs, lambda run: pattern_label(run, facts), facts)
    classes = any(facts(run).get("class") for run in runs)
    body: list[list[str]] = []
    for row in rows:
        span = _span(int(row["first"]), int(row["last"]))
        if row["pattern"] is None:
            f, n = facts(row), int(row["count"])
            cells = [span, str(n), str(f.get("role", "")), str(f.get("kind", "")), describe(f)]
            if classes:
                cells.append(str(f.get("class") or ""))
            cells += [str(f.get("dtype", "")), _times(n, per_token(f)),
                      _times(n, per_request(f))]
        else:
            block = [facts(r) for r in row["runs"]]
            repeats = int(row["repeats"])
            cells = [span, str(row["count"]), _joined(f.get("role") for f in block),
                     str(row["pattern"]), "see layer kinds"]
            if classes:
                cells.append(_joined(f.get("class") for f in block))
            token = sum(per_token(f) * int(r["count"]) for f, r in zip(block, row["runs"],
                                                                      strict=True)) * repeats
            request = sum(per_request(f) * int(r["count"]) for f, r in
                          zip(block, row["runs"], strict=True)) * repeats
            cells += [_joined(f.get("dtype") for f in block), _num(token) if token else "-",
                      _num(request) if request else "-"]
        body.append(cells)
    show_role = not narrow or any(cells[2] != "decoder" for cells in body)
    table = Table(title=title, box=box.SIMPLE_HEAD, show_footer=True, title_justify="left")
    table.add_column("layers", footer=totals[0], min_width=7)
    _number_column(table, "n", footer=str(totals[1]))
    if show_role:
        table.add_column("role", no_wrap=True)
    table.add_column("kind", overflow="fold", min_width=10, ratio=2)
    table.add_column(shape, overflow="fold", min_width=9, ratio=1)
    if classes:
        table.add_column("class", overflow="fold")
    # A pattern's dtypes are joined with "/": they may wrap there, never inside a name.
    table.add_column("dtype", overflow="fold", min_width=8)
    _number_column(table, "B/token", footer=_num(totals[2]))
    _number_column(table, "B/request", footer=_num(totals[3]))
    for cells in body:
        table.add_row(*(cells if show_role else cells[:2] + cells[3:]))
    return table


def _number_column(table: Table, head: str, footer: str = "") -> None:
    """A right-aligned column of figures that never wraps (a number is never split over two
    lines) and is never narrower than its heading."""
    table.add_column(head, justify="right", footer=footer, no_wrap=True,
                     min_width=max(len(head.split()[0]), len(footer)))


def _joined(values: Any) -> str:
    return "/".join(dict.fromkeys(str(v) for v in values if v))

"""Layer tables for people: runs of identical layers, and repeating patterns of runs, as one row.

A model's layers arrive as run-length rows (consecutive identical layers, ``first``/``last``/
``count``). A hybrid alternates them — gpt-oss sliding, full, sliding, full … (36 rows), a
Nemotron-H Mamba, MLP, Mamba, MLP … attention (118 rows) — so the rows are folded once more:
a block of rows that repeats back to back becomes one row, "(sliding, full) ×18", with the
block's own repeats folded inside it ("full, none, (state, none) ×4, state"). Folding never
reorders: the rows still read in model order, and every layer is in exactly one row.

Rendering only: the JSON (``plan --json``, ``inspect --json``) keeps every run.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

MAX_PERIOD = 16  # the longest block of runs looked for (Nemotron-H's is 11)


def fold(keys: Sequence[Hashable], max_period: int = MAX_PERIOD) -> list[tuple[int, int, int]]:
    """``keys`` as (start, period, repeats) pieces, left to right: at each position the block of
    ``period`` keys that repeats back to back over the most keys (at least twice), else one key
    (period 1, repeats 1). ``[a, b, a, b, c]`` → ``[(0, 2, 2), (4, 1, 1)]``."""
    pieces: list[tuple[int, int, int]] = []
    i, n = 0, len(keys)
    while i < n:
        best_period, best_repeats = 1, 1
        for period in range(1, min(max_period, (n - i) // 2) + 1):
            block = list(keys[i:i + period])
            repeats = 1
            while list(keys[i + repeats * period:i + (repeats + 1) * period]) == block:
                repeats += 1
            if repeats >= 2 and period * repeats > best_period * best_repeats:
                best_period, best_repeats = period, repeats
        pieces.append((i, best_period, best_repeats))
        i += best_period * best_repeats
    return pieces


def spell(labels: Sequence[str]) -> str:
    """A block of run labels in words, its own repeats folded: ``"full, (state, none) ×4"``."""
    parts: list[str] = []
    for start, period, repeats in fold(labels):
        body = list(labels[start:start + period])
        if repeats == 1:
            parts.extend(body)
        elif period == 1:
            parts.append(f"{body[0]} ×{repeats}")
        else:
            parts.append(f"({spell(body)}) ×{repeats}")
    return ", ".join(parts)


def _key(row: Mapping[str, Any], skip: tuple[str, ...]) -> Hashable:
    return tuple(sorted((k, repr(v)) for k, v in row.items() if k not in skip))


def folded_rows(
    rows: Sequence[Mapping[str, Any]],
    label: Callable[[Mapping[str, Any]], str],
    facts: Callable[[Mapping[str, Any]], Mapping[str, Any]] = lambda row: row,
) -> list[dict[str, Any]]:
    """Run rows (``first``, ``last``, ``count`` and the run's facts, which ``facts(row)`` gives)
    folded into pattern rows: a piece that is one run stays that row (``pattern`` None);
    a repeating block becomes ``{"first", "last", "count", "pattern", "runs"}``, ``pattern``
    spelled with ``label(run)`` and ``runs`` the block's rows once (for its totals)."""
    keys = [_key(facts(row), ("first", "last", "index")) for row in rows]
    out: list[dict[str, Any]] = []
    for start, period, repeats in fold(keys):
        block = rows[start:start + period]
        if repeats == 1 and period == 1:
            out.append({**block[0], "pattern": None})
            continue
        labels = [label(run) for run in block]
        if repeats == 1:
            pattern = spell(labels)
        else:
            body = spell(labels)
            pattern = f"{body} ×{repeats}" if period == 1 else f"({body}) ×{repeats}"
        last = rows[start + period * repeats - 1]
        out.append({
            "first": block[0]["first"], "last": last["last"],
            "count": sum(int(r["count"]) for r in block) * repeats,
            "pattern": pattern, "runs": list(block), "repeats": repeats,
        })
    return out


def run_label(kind: str, detail: str, count: int) -> str:
    """One run in a pattern: its kind, what sets it apart (a window), ×count when > 1."""
    text = f"{kind} {detail}".strip()
    return f"{text} ×{count}" if count > 1 else text

"""Tables for people. Imported only when a person (not ``--json``) asked, because ``rich`` is
the heaviest import the CLI has.

Every function renders the same JSON object that ``--json`` prints. Why render from the JSON
and not from the library's result objects: the JSON is the stable machine interface, so what a
person reads and what a script reads can never disagree, and this module does not break when a
result class gains or renames an attribute. Keys it does not know are still shown (in a
"details" table) rather than silently dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

# Keys of one layer's facts that the geometry column spells out; the rest go verbatim.
_SHOWN = {
    "kind", "role", "dtype", "bytes_per_token", "bytes_per_request", "k_heads", "k_dim",
    "v_heads", "v_dim", "window", "chunk", "encoder_len", "latent_dim", "rope_dim",
    "head_dim", "quant_block", "scale_bytes", "tensors", "state_kind", "tp", "note",
    "shares_with", "sinks",
}


def _console() -> Console:
    return Console(highlight=False, soft_wrap=False)


def _num(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "-" if value is None else ("yes" if value else "no")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


def _gib(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,} B ({value / 2**30:,.2f} GiB)"
    return _num(value)


def _times(n: int, each: Any) -> str:
    """``32×4,096`` for a group, ``-`` when the layers hold nothing of this kind."""
    if not each:
        return "-"
    return _num(each) if n == 1 else f"{n}×{each:,}"


def _layer_range(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


def geometry(facts: Mapping[str, Any]) -> str:
    """One readable cell for a layer's shape: heads × dims, latent, window, state tensors."""
    parts: list[str] = []
    k = (facts.get("k_heads"), facts.get("k_dim"))
    v = (facts.get("v_heads"), facts.get("v_dim"))
    if k[0] is not None:
        if k == v:
            parts.append(f"KV {k[0]}×{k[1]}")
        else:
            parts.append(f"K {k[0]}×{k[1]}, V {v[0]}×{v[1]}")
    if "latent_dim" in facts:
        parts.append(f"latent {facts['latent_dim']} + rope {facts.get('rope_dim', 0)}")
    if "head_dim" in facts:
        text = f"key {facts['head_dim']}"
        if facts.get("quant_block"):
            text += f" + {facts.get('scale_bytes')} B scale/{facts['quant_block']}"
        parts.append(text)
    for key, label in (("window", "window"), ("chunk", "chunk"), ("encoder_len", "encoder")):
        if key in facts:
            parts.append(f"{label} {facts[key]:,}")
    for tensor in facts.get("tensors") or ():
        shape = "×".join(str(d) for d in tensor.get("shape", ()))
        parts.append(f"{tensor.get('name')} [{shape}] {tensor.get('dtype')}")
    if facts.get("sinks"):
        parts.append("sinks")
    if facts.get("shares_with") is not None:
        parts.append(f"reuses layer {facts['shares_with']}")
    for key, value in facts.items():
        if key not in _SHOWN:
            parts.append(f"{key}={value}")
    return "; ".join(parts) or "-"


def _kind(facts: Mapping[str, Any]) -> str:
    kind = str(facts.get("kind", "?"))
    state = facts.get("state_kind")
    return f"{kind} ({state})" if state else kind


def render_inspect(data: Mapping[str, Any], console: Console | None = None) -> None:
    con = console or _console()
    con.print(
        f"[bold]{data.get('model')}[/bold]  model_type {data.get('model_type')}  "
        f"{', '.join(data.get('architectures') or [])}"
    )
    con.print(
        f"model dtype {data.get('model_dtype')}  ·  KV dtype {data.get('kv_dtype')} "
        f"(from {data.get('kv_dtype_source')})  ·  max positions "
        f"{_num(data.get('max_position_embeddings'))}  ·  {data.get('num_layers')} cache layers"
    )
    table = Table(box=box.SIMPLE_HEAD, show_footer=True)
    table.add_column("layers", footer="total")
    table.add_column("n", justify="right", footer=str(data.get("num_layers", "")))
    table.add_column("role")
    table.add_column("kind")
    table.add_column("geometry", overflow="fold")
    table.add_column("dtype")
    table.add_column("B/token", justify="right", footer=_num(data.get("bytes_per_token")))
    table.add_column("B/request", justify="right", footer=_num(data.get("bytes_per_request")))
    for group in data.get("groups") or ():
        facts = group["facts"]
        n = group["count"]
        per_token = facts.get("bytes_per_token", 0)
        per_req = facts.get("bytes_per_request", 0)
        table.add_row(
            _layer_range(group["first"], group["last"]),
            str(n),
            str(facts.get("role", "")),
            _kind(facts),
            geometry(facts),
            str(facts.get("dtype", "")),
            _times(n, per_token),
            _times(n, per_req),
        )
    con.print(table)
    for note in data.get("notes") or ():
        con.print(f"note: {note}")


def _kv_table(title: str, rows: Iterable[tuple[str, Any]]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, show_header=False, title_justify="left")
    table.add_column("what")
    table.add_column("value", justify="right")
    for key, value in rows:
        table.add_row(key, value if isinstance(value, str) else _num(value))
    return table


def _layers_table(layers: Any) -> Table | None:
    """The plan's per-layer kind summary: a list of dicts, or a mapping kind → count/facts."""
    if not layers:
        return None
    table = Table(title="layers by kind", box=box.SIMPLE_HEAD, title_justify="left")
    if isinstance(layers, Mapping):
        table.add_column("kind")
        table.add_column("summary")
        for key, value in layers.items():
            table.add_row(str(key), _summary(value))
        return table
    rows = [row for row in layers if isinstance(row, Mapping)]
    columns = _columns(rows)
    for col in columns:
        table.add_column(col, justify="right" if _numeric(rows, col) else "left")
    for row in rows:
        table.add_row(*(_cell(row.get(col)) for col in columns))
    return table


def _columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    cols: list[str] = []
    for row in rows:
        for key in row:
            if key not in cols:
                cols.append(key)
    return cols


def _numeric(rows: Sequence[Mapping[str, Any]], col: str) -> bool:
    values = [row.get(col) for row in rows if row.get(col) is not None]
    return bool(values) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in values
    )


def _cell(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, Mapping):
        return _summary(value)
    return _num(value)


def _summary(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {_cell(v)}" for k, v in value.items())
    return _cell(value)


def _rows_table(title: str, rows: Any) -> Table | None:
    if not isinstance(rows, list) or not rows or not isinstance(rows[0], Mapping):
        return None
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    columns = _columns(rows)
    for col in columns:
        table.add_column(col, justify="right" if _numeric(rows, col) else "left")
    for row in rows:
        table.add_row(*(_cell(row.get(col)) for col in columns))
    return table


_HEADLINE = (
    "model", "engine", "block_size", "num_blocks", "kv_cache_tokens", "max_model_len",
    "max_concurrency", "available_bytes", "reserved_bytes", "vllm_refuses_to_start",
)
_STRUCTURED = ("layers", "pools", "ranks", "warnings", "budget", "answers")


def render_plan(data: Mapping[str, Any], console: Console | None = None) -> None:
    con = console or _console()
    headline = [
        (key, _gib(data[key]) if key.endswith("_bytes") else data[key])
        for key in _HEADLINE
        if key in data
    ]
    con.print(_kv_table("plan", headline))
    layers = _layers_table(data.get("layers"))
    if layers is not None:
        con.print(layers)
    pools = _rows_table("pools", data.get("pools"))
    if pools is not None:
        con.print(pools)
    budget = data.get("budget")
    if isinstance(budget, Mapping):
        con.print(_kv_table("budget", [
            (k, _gib(v) if isinstance(v, int) and not isinstance(v, bool) else _cell(v))
            for k, v in budget.items()
        ]))
    elif isinstance(budget, list):
        table = _rows_table("budget", budget)
        if table is not None:
            con.print(table)
    answers = data.get("answers")
    if isinstance(answers, Mapping):
        con.print(_kv_table("answers", [(k, _cell(v)) for k, v in answers.items()]))
    ranks = _rows_table("pipeline stages (ranks)", _flat_ranks(data.get("ranks")))
    if ranks is not None:
        con.print(ranks)
    details = [
        (k, _cell(v)) for k, v in data.items() if k not in _HEADLINE and k not in _STRUCTURED
    ]
    if details:
        con.print(_kv_table("details", details))
    if data.get("vllm_refuses_to_start"):
        con.print("[bold red]vLLM would refuse to start:[/] one max_model_len request does not "
                  "fit in this KV budget (figures are what its planner computed)")
    for warning in data.get("warnings") or ():
        con.print(f"[yellow]warning:[/] {warning}")


def _flat_ranks(ranks: Any) -> Any:
    """Per-stage objects may nest pools; show their scalar fields (pools go in the JSON)."""
    if not isinstance(ranks, list):
        return None
    out = []
    for rank in ranks:
        if isinstance(rank, Mapping):
            out.append({k: v for k, v in rank.items()
                        if not isinstance(v, list | dict) or k == "layers_range"})
    return out


def render_fit(data: Mapping[str, Any], console: Console | None = None) -> None:
    con = console or _console()
    plan = data.get("plan")
    scalars = [(k, _cell(v)) for k, v in data.items() if k != "plan"]
    con.print(_kv_table("fit", scalars))
    if isinstance(plan, Mapping):
        render_plan(plan, con)

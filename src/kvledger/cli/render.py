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

from kvledger.cli.render_layers import kinds_table, order_table

# Keys of one layer's facts that the geometry column spells out; the rest go verbatim.
_SHOWN = {
    "kind", "role", "dtype", "bytes_per_token", "bytes_per_request", "k_heads", "k_dim",
    "v_heads", "v_dim", "window", "chunk", "encoder_len", "latent_dim", "rope_dim",
    "head_dim", "quant_block", "scale_bytes", "tensors", "state_kind", "tp", "note",
    "shares_with", "sinks",
}


def _console() -> Console:
    """A console on stdout, as wide as ``cli.terminal.output_width`` says (the terminal,
    ``COLUMNS``, or 100 columns for a pipe): sentences wrap at spaces, tables fit it."""
    import sys

    from kvledger.cli.terminal import output_width

    return Console(highlight=False, soft_wrap=False, width=output_width(sys.stdout))


def _narrow(con: Console) -> bool:
    from kvledger.cli.terminal import NARROW

    return con.width < NARROW


def say(con: Console, text: str, style: str = "") -> None:
    """One sentence for a person, wrapped at spaces to the console's width (never markup:
    a label such as ``[2×3]`` prints as written)."""
    from rich.text import Text

    con.print(Text(text, style=style), soft_wrap=False, overflow="fold")


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


def _short_gib(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value / 2**30:,.2f} GiB"
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
        label = "key" if facts.get("kind") == "indexer" else "head"
        text = f"{label} {facts['head_dim']}"
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


def weights_line(weights: Mapping[str, Any]) -> str:
    """``inspect``'s one line on the checkpoint's weights (``plan/weights.py``
    ``plan/checkpoint_weights.py``)."""
    if weights.get("basis") == "unavailable":
        return f"weights: not sized ({weights.get('why')})"
    params = weights.get("parameters")
    count = f"{params / 1e9:.2f}B parameters" if isinstance(params, int) else "parameters ?"
    stored, served = weights.get("stored_bytes"), weights.get("served_bytes")
    line = (f"weights: {count}  ·  stored {_num(stored)} B  ·  served (vLLM, --dtype auto) "
            f"{_num(served)} B  ({weights.get('basis')})")
    n = len(weights.get("warnings") or ())
    return line + (f"  ·  {n} weight warning{'s' if n > 1 else ''} in --json" if n else "")


def _group_facts(group: Mapping[str, Any]) -> Mapping[str, Any]:
    facts: Mapping[str, Any] = group["facts"]
    return facts


def render_inspect(data: Mapping[str, Any], console: Console | None = None) -> None:
    con = console or _console()
    say(con,
        f"{data.get('model')}  model_type {data.get('model_type')}  "
        f"{', '.join(data.get('architectures') or [])}"
    )
    say(con,
        f"model dtype {data.get('model_dtype')}  ·  KV dtype {data.get('kv_dtype')} "
        f"(from {data.get('kv_dtype_source')})  ·  max positions "
        f"{_num(data.get('max_position_embeddings'))}  ·  {data.get('num_layers')} layer entries"
    )
    weights = data.get("weights")
    if isinstance(weights, Mapping):
        say(con, weights_line(weights))
    groups = list(data.get("groups") or ())
    # MTP layers are counted apart (below the tables): the footer is what is served.
    mtp_layers = sum(g["count"] for g in groups if g["facts"].get("role") == "mtp")
    if len(data.get("kinds") or ()) < len(groups):
        con.print(kinds_table(groups, _group_facts, geometry, narrow=_narrow(con)))
    con.print(order_table(
        groups, _group_facts, geometry,
        ("served" if mtp_layers else "total", int(data.get("num_layers") or 0) - mtp_layers,
         data.get("bytes_per_token"), data.get("bytes_per_request")),
        title="layers in order (runs; repeating patterns as one row)", narrow=_narrow(con)))
    mtp_token, mtp_request = data.get("mtp_bytes_per_token"), data.get("mtp_bytes_per_request")
    if mtp_token or mtp_request:
        mtp = [g for g in data.get("groups") or () if g["facts"].get("role") == "mtp"]
        where = ",".join(_layer_range(g["first"], g["last"]) for g in mtp)
        with_mtp = (data.get("bytes_per_token") or 0) + (mtp_token or 0)
        extra = f"+{_num(mtp_token)} B/token" + (
            f", +{_num(mtp_request)} B/request" if mtp_request else "")
        say(con, f"MTP layers ({where}) are not in the total: {extra}, cached only when "
                  f"speculative decoding drafts with them ({_num(with_mtp)} B/token then)")
    for warning in data.get("warnings") or ():
        say(con, f"warning: {warning}")
    for note in data.get("notes") or ():
        say(con, f"note: {note}")


def _kv_table(title: str, rows: Iterable[tuple[str, Any]]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, show_header=False, title_justify="left")
    # The name stays on one line; a long value wraps at its spaces (numbers stay whole: a
    # figure such as "59,839,810,273 B (55.73 GiB)" breaks only between its words).
    table.add_column("what", no_wrap=True)
    table.add_column("value", justify="right", overflow="fold")
    for key, value in rows:
        table.add_row(key, value if isinstance(value, str) else _num(value))
    return table


def _column_spec(
    rows: Sequence[Mapping[str, Any]], spec: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The named columns that occur, then any column the spec does not know (never dropped)."""
    present = _columns(rows)
    known = [(key, head) for key, head in spec if key in present]
    named = {key for key, _ in spec}
    return known + [(key, key) for key in present if key not in named]


def _table(
    title: str,
    rows: Any,
    spec: Sequence[tuple[str, str]],
    *,
    gib_cols: Sequence[str] = (),
    only_spec: bool = False,
    drop: Sequence[str] = (),
) -> Table | None:
    """A table of ``rows`` with the columns of ``spec`` (and any others, unless
    ``only_spec``), less those in ``drop`` (what a narrow terminal does without). A numeric
    column never wraps: a number is never split over two lines."""
    if not isinstance(rows, list) or not rows or not all(isinstance(r, Mapping) for r in rows):
        return None
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    columns = _column_spec(rows, spec)
    if only_spec:
        named = {key for key, _ in spec}
        columns = [(key, head) for key, head in columns if key in named]
    columns = [(key, head) for key, head in columns if key not in drop]
    for key, head in columns:
        numeric = _numeric(rows, key)
        table.add_column(head, justify="right" if numeric else "left", no_wrap=numeric,
                         overflow="fold")
    for row in rows:
        table.add_row(*(
            _short_gib(row.get(key)) if key in gib_cols else _cell(row.get(key))
            for key, _ in columns
        ))
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
        return ", ".join(f"{k} {_cell(v)}" for k, v in value.items())
    return _num(value)


def _source(value: Any) -> str:
    """``hub @ 0123456789ab: https://huggingface.co/org/name``, or the location alone when it
    already names its kind (``kvledger catalog (meta-llama/…)``), from the JSON ``source``."""
    if not isinstance(value, Mapping):
        return _cell(value)
    revision = value.get("revision")
    at = f" @ {str(revision)[:12]}" if revision else ""
    kind, location = str(value.get("kind")), str(value.get("location"))
    if kind in location:
        return f"{location}{at}"
    return f"{kind}{at}: {location}"


_HEADLINE = (
    "model", "source", "engine", "engine_label", "kv_cache_dtype", "block_size", "num_blocks",
    "kv_cache_tokens", "max_model_len", "max_concurrency", "max_num_seqs", "tensor_parallel_size",
    "pipeline_parallel_size", "data_parallel_size", "enable_expert_parallel", "available_bytes",
    "reserved_bytes", "vllm_refuses_to_start", "engine_release",
)
# Shown only when set: a switch that is off says nothing a reader needs.
_WHEN_SET = ("enable_expert_parallel",)
_STRUCTURED = ("layers", "pools", "ranks", "warnings", "budget", "answers", "totals",
               "model_local_kv", "vllm_refusal_reason", "bytes_per_token", "bytes_per_request",
               "kv_cache_tokens_note", "batch_defaults", "kv_cache_groups", "headroom")

_POOL_COLS = (
    ("name", "class"), ("pool", "pool"), ("entries", "entries"), ("entry_bytes", "B/entry"),
    ("entries_per_req", "per req"), ("reserved_bytes", "reserved"), ("source", "source"),
)
_LOCAL_COLS = (
    ("name", "declaration"), ("owner", "owner"), ("rows", "rows"), ("row_count", "n rows"),
    ("bytes_per_row", "B/row"), ("peak_bytes", "peak B"), ("status", "charged / subtracted"),
    ("stage", "stage"),
)
_GROUP_COLS = (("spec", "spec"), ("num_layers", "layers"), ("block_size", "block"),
               ("page_size_bytes", "page B"), ("blocks_per_request", "blocks/req"),
               ("caches", "caches (vLLM's names)"))
_BUDGET_COLS = (("key", "key"), ("label", "line"), ("bytes", "bytes"), ("gib", "GiB"),
                ("basis", "basis"))
_RANK_COLS = (
    ("stage", "stage"), ("layers", "layers"), ("num_cached_layers", "cached"),
    ("block_size", "block"), ("num_blocks", "blocks"), ("kv_cache_tokens", "tokens"),
    ("max_concurrency", "concurrency"), ("available_bytes", "available"),
    ("reserved_bytes", "reserved"), ("pool_summary", "pools (entries × B)"),
)


def _rank_rows(ranks: Any) -> Any:
    """Stages with their layer range as ``[start, end)`` and pools folded into one cell."""
    if not isinstance(ranks, list):
        return None
    out = []
    for rank in ranks:
        if not isinstance(rank, Mapping):
            return None
        row = dict(rank)
        span = row.get("layers_range")
        if isinstance(span, list) and len(span) == 2:
            row["layers"] = f"[{span[0]}, {span[1]})"
        pools = row.get("pools")
        if isinstance(pools, list):
            row["pool_summary"] = "; ".join(
                f"{p.get('name')} {p.get('entries', 0):,} × {p.get('entry_bytes', 0):,}"
                for p in pools if isinstance(p, Mapping)
            )
        out.append(row)
    return out


def _with_headroom(data: Mapping[str, Any]) -> Any:
    """The budget rows, and the ``headroom`` line after them when the plan has one."""
    lines, headroom = data.get("budget"), data.get("headroom")
    return [*lines, headroom] if isinstance(lines, list) and headroom else lines


def _budget_rows(lines: Any) -> Any:
    if not isinstance(lines, list):
        return None
    # A line's "parts" (the engine's terms, JSON only) would make the table unreadable.
    return [
        {**{k: v for k, v in line.items() if k != "parts"}, "gib": _short_gib(line.get("bytes"))}
        if isinstance(line, Mapping) else line
        for line in lines
    ]


def _same(row: Mapping[str, Any]) -> Mapping[str, Any]:
    return row


def _key(row: Mapping[str, Any]) -> str:
    return repr(sorted((k, repr(v)) for k, v in row.items() if k not in ("first", "last",
                                                                        "count")))


def _plan_detail(row: Mapping[str, Any]) -> str:
    """A plan row's window / chunk / encoder / state, the layer it reuses, why it is not
    cached."""
    detail = []
    for key, label in (("window", "window"), ("chunk", "chunk"), ("encoder_len", "encoder"),
                       ("state_kind", "")):
        value = row.get(key)
        if value is not None:
            detail.append(f"{label} {value:,}" if label and isinstance(value, int)
                          else str(value))
    if row.get("shares_with") is not None:
        detail.append(f"reuses layer {row['shares_with']}")
    if row.get("not_cached"):
        detail.append(f"not cached: {row['not_cached']}")
    return "; ".join(detail)


def _batch_default_cell(data: Mapping[str, Any], key: str) -> str | None:
    """``1,024 (vllm serve on H100-80GB (≥ 70 GiB, not an A100): …)`` — a batch limit the
    launch did not set says which tier of the engine's defaults gave it; None otherwise."""
    defaults = data.get("batch_defaults")
    if key not in ("max_num_seqs", "max_num_batched_tokens") or not isinstance(
            defaults, Mapping) or key not in (defaults.get("applied") or ()):
        return None
    return f"{_cell(data[key])} (default: {defaults.get('basis')})"


def render_plan(
    data: Mapping[str, Any], console: Console | None = None, *, quiet: bool = False
) -> None:
    """The summary (``plan_summary``), then — unless ``quiet`` — the detail tables."""
    from kvledger.cli.plan_summary import summary_lines

    con = console or _console()
    for line in summary_lines(data):
        say(con, line)
    if quiet:
        return
    con.print()
    narrow = _narrow(con)
    headline = [
        (key, _gib(data[key]) if key.endswith("_bytes") else
         _source(data[key]) if key == "source" else
         _batch_default_cell(data, key) or _cell(data[key]))
        for key in _HEADLINE
        if key in data and (key not in _WHEN_SET or data[key])
    ]
    con.print(_kv_table("plan", headline))
    rows = [r for r in data.get("layers") or () if isinstance(r, Mapping)]
    if rows:
        if len({_key(r) for r in rows}) < len(rows):
            con.print(kinds_table(rows, _same, _plan_detail, shape="window / state",
                                  narrow=narrow))
        con.print(order_table(
            rows, _same, _plan_detail,
            ("total per GPU" if data.get("pipeline_parallel_size", 1) == 1 else
             "total, all stages", sum(int(r.get("count") or 1) for r in rows),
             data.get("bytes_per_token"), data.get("bytes_per_request")),
            title="layers in order (one TP rank; repeating patterns as one row)",
            shape="window / state", narrow=narrow))
    for table in (
        _table("vLLM KV cache groups (one block table each; one shared pool)",
               data.get("kv_cache_groups"), _GROUP_COLS),
        _table("pools (per GPU of the binding stage)", data.get("pools"), _POOL_COLS,
               gib_cols=("reserved_bytes",), drop=("source",) if narrow else ()),
        # Narrow: the line's words say what its machine key says (the key is in --json).
        _table("budget per GPU", _budget_rows(_with_headroom(data)), _BUDGET_COLS,
               drop=("key",) if narrow else ()),
        _table("model-local KV caches (seed A; per GPU of their stage)",
               data.get("model_local_kv"), _LOCAL_COLS, only_spec=True),
        _table("pipeline stages (one GPU each)", _rank_rows(data.get("ranks")), _RANK_COLS,
               gib_cols=("reserved_bytes", "available_bytes"), only_spec=True,
               drop=("available_bytes", "pool_summary") if narrow else ()),
    ):
        if table is not None:
            con.print(table)
    for key in ("answers", "totals"):
        value = data.get(key)
        if not isinstance(value, Mapping):
            continue
        # The concurrency at max_model_len is the headline's own figure: not said twice.
        value = {k: v for k, v in value.items() if not (
            k == "max_concurrency_at_max_model_len" and v == data.get("max_concurrency"))}
        if value:
            con.print(_kv_table(key, [(k, _cell(v)) for k, v in value.items()]))
    details = [(k, _cell(v)) for k, v in data.items()
               if k not in _HEADLINE and k not in _STRUCTURED]
    if details:
        con.print(_kv_table("details", details))
    if data.get("vllm_refuses_to_start"):
        say(con, "vLLM would refuse to start: one max_model_len request does not fit in this "
            "KV budget (the figures are what its planner computed)", "bold red")
        if data.get("vllm_refusal_reason"):
            say(con, f"  vLLM: {data['vllm_refusal_reason']}")
    for warning in data.get("warnings") or ():
        say(con, f"warning: {warning}", "yellow")


_ATTEMPT_COLS = (
    ("tensor_parallel_size", "TP"), ("pipeline_parallel_size", "PP"),
    ("data_parallel_size", "DP"), ("enable_expert_parallel", "EP"), ("gpus", "GPUs"),
    ("nodes", "nodes"), ("fits", "fits"), ("max_concurrency", "concurrency"), ("reason", "why"),
)


def _layout_words(chosen: Mapping[str, Any]) -> str:
    parts = [f"TP {chosen['tensor_parallel_size']}"]
    if chosen.get("pipeline_parallel_size", 1) > 1:
        parts.append(f"PP {chosen['pipeline_parallel_size']}")
    if chosen.get("data_parallel_size", 1) > 1:
        parts.append(f"DP {chosen['data_parallel_size']}")
    words = " × ".join(parts) + (" with EP" if chosen.get("enable_expert_parallel") else "")
    nodes = chosen.get("nodes", 1)
    gpus = f"{chosen['gpus']} GPU{'s' if chosen['gpus'] != 1 else ''}"
    if nodes is None:
        return f"{words}: {gpus}"
    return f"{words}: {gpus}, {nodes} node{'s' if nodes != 1 else ''}"


def fit_answer(data: Mapping[str, Any]) -> str:
    """``64 requests × 16,000 tokens on H100-80GB: fits on TP 8: 8 GPUs, 1 node (131.90 at
    once)``, or why nothing fits: fit's first line."""
    question = (f"{_cell(data.get('concurrency'))} requests × {_cell(data.get('context'))} "
                f"tokens on {data.get('gpu')}")
    chosen = data.get("chosen")
    if isinstance(chosen, Mapping):
        return (f"{question}: fits on {_layout_words(chosen)} "
                f"({_cell(chosen.get('max_concurrency'))} requests at once)")
    return f"{question}: nothing fits ({data.get('reason') or 'no layout holds it'})"


def _alternative_line(alt: Mapping[str, Any]) -> str:
    layout = _layout_words({**alt, "nodes": None})
    dtype = f", KV {alt.get('kv_cache_dtype')}" if alt.get("label") == "fp8 KV cache" else ""
    return (f"or, {alt.get('label')}: {layout.split(':')[0]}{dtype} — {alt.get('gpus')} GPUs, "
            f"{_cell(alt.get('max_concurrency'))} requests at once; trades "
            f"{alt.get('trades')}")


def _wrapped_command(argv: Sequence[str], width: int) -> list[str]:
    """``cli.terminal.wrapped_command`` (kept here for the fit table's callers)."""
    from kvledger.cli.terminal import wrapped_command

    return wrapped_command(argv, width)


def render_fit(data: Mapping[str, Any], console: Console | None = None) -> None:
    """The answer (a layout, or why nothing fits), the proposals that trade something for
    fewer GPUs or more replicas, the chosen layout's headline numbers, every layout tried,
    the caveats, and the serve line to paste (cut at flags with ``\\``, so it copies whole)."""
    con = console or _console()
    say(con, fit_answer(data))
    for alt in data.get("alternatives") or ():
        if isinstance(alt, Mapping):
            say(con, _alternative_line(alt))
    con.print()
    rows: list[tuple[str, Any]] = [(k, _cell(data.get(k))) for k in
                                   ("model", "gpu", "engine", "concurrency", "context")]
    chosen = data.get("chosen")
    plan = data.get("plan")
    if isinstance(chosen, Mapping):
        rows.append(("layout", _layout_words(chosen)))
        rows.append(("max concurrency (whole layout)", _cell(chosen.get("max_concurrency"))))
    if isinstance(plan, Mapping):
        rows += [("KV tokens per GPU", _cell(plan.get("kv_cache_tokens"))),
                 ("KV budget per GPU", _cell(plan.get("available_bytes")))]
    if data.get("reason"):
        rows.append(("why nothing fits", str(data["reason"])))
    con.print(_kv_table("fit", rows))
    attempt_rows = data.get("attempts")
    drop: tuple[str, ...] = ()
    if _narrow(con) and isinstance(attempt_rows, list):
        # Narrow: a column that is the same on every row says nothing a reader needs.
        drop = tuple(key for key in ("pipeline_parallel_size", "data_parallel_size",
                                     "enable_expert_parallel", "nodes")
                     if len({repr(r.get(key)) for r in attempt_rows
                             if isinstance(r, Mapping)}) <= 1)
    attempts = _table("layouts tried", attempt_rows, _ATTEMPT_COLS, drop=drop)
    if attempts is not None:
        con.print(attempts)
    for caveat in data.get("caveats") or ():
        say(con, f"caveat: {caveat}")
    line = data.get("serve_line")
    argv = data.get("serve_line_argv")
    if line:
        con.file.write(f"\nserve line ({data.get('engine')}):\n")
        if isinstance(argv, list) and argv:
            for text in _wrapped_command(argv, con.width - 2):
                con.file.write(f"  {text}\n")
        else:
            con.file.write(f"  {line}\n")
        extra = data.get("serve_line_kvledger_options") or ()
        if extra:
            say(con, "  (to plan it again: kvledger plan " + " ".join(extra) +
                " -- <the line>)")
    for note in data.get("serve_line_notes") or ():
        say(con, f"  note: {note}")

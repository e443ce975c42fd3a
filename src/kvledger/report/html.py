"""``kvledger report``: one self-contained HTML page with the plan, its budget and its plots.

Self-contained means a person can open the file offline, mail it, or attach it to an issue:
CSS is inline, every chart is an inline ``<svg>`` (see ``charts``), and nothing is linked —
no script, no font, no image, no CDN. The page's Content-Security-Policy (``default-src
'none'``) makes that a rule the browser enforces, not only a habit of this module: anything
that tried to load would be blocked and reported in the console, which the browser test reads.

Every chart has a title, labelled axes with units, an ``aria-label``, and a text table beside
it with the same numbers, so the page reads without the pictures too. The plan's numbers are
``PlanResult.to_json()`` — the object ``kvledger plan --json`` prints, also embedded verbatim
at the end of the page — so the report and the CLI cannot disagree.

The output is deterministic (no timestamp; matplotlib's ids are salted with a constant), so
two runs with the same inputs give the same bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvledger.report.series import FITS, NO_WEIGHTS, SHORT, GridCell, ReportData

if TYPE_CHECKING:
    from kvledger.plan.request import PlanRequest

GIB = 1 << 30

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_CSS = """
:root { color-scheme: light; --ink: #1d1d1f; --muted: #5f6368; --rule: #d9d9de; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--ink); margin: 0; background: #fafafa; }
main { max-width: 78rem; margin: 0 auto; padding: 1.5rem 1.5rem 3rem; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; } h2 { font-size: 1.2rem; margin: 2rem 0 .6rem; }
p.meta, .note, caption, figcaption { color: var(--muted); }
code { font: .9em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
section { background: #fff; border: 1px solid var(--rule); border-radius: 8px;
          padding: .2rem 1.2rem 1.2rem; margin-top: 1.2rem; }
.cols { display: flex; flex-wrap: wrap; gap: 0 2.5rem; align-items: flex-start; }
.cols > div { flex: 0 1 auto; min-width: 0; max-width: 100%; }
.cols > div + div { flex: 1 1 28rem; min-width: min-content; }
.pair { display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; }
.pair figure { flex: 3 1 30rem; margin: 0; min-width: 0; }
.pair .side { flex: 1 1 24rem; min-width: min-content; max-width: 100%; overflow-x: auto; }
.side .note { max-width: 24rem; }
details.wide { overflow-x: auto; }
svg.chart { width: 100%; height: auto; display: block; }
table { border-collapse: collapse; font-size: .88rem; margin: .4rem 0; }
caption { text-align: left; font-size: .85rem; padding-bottom: .25rem; }
th, td { padding: .18rem .5rem; border-bottom: 1px solid #ececf0; text-align: left;
         vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.no td { color: var(--muted); }
.warn { color: #8a4b00; } .bad { color: #a00000; font-weight: 600; }
details { margin-top: .6rem; } pre { font-size: .78rem; overflow-x: auto; }
"""

_HEADLINE = (
    ("model", "model"), ("engine", "layout (engine)"), ("kv_cache_dtype", "KV dtype"),
    ("block_size", "block size (tokens)"), ("num_blocks", "KV blocks"),
    ("kv_cache_tokens", "KV cache tokens"), ("max_model_len", "max_model_len (tokens)"),
    ("max_concurrency", "max concurrency at max_model_len"), ("max_num_seqs", "max_num_seqs"),
    ("tensor_parallel_size", "tensor parallel"), ("pipeline_parallel_size", "pipeline parallel"),
    ("data_parallel_size", "data parallel"), ("available_bytes", "KV budget per GPU"),
    ("reserved_bytes", "KV allocated per GPU"),
    ("vllm_refuses_to_start", "vLLM refuses to start"),
)


# -- small formatting helpers ------------------------------------------------------------------


def _num(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}" if math.isfinite(value) else str(value)
    return str(value)


def _gib(value: int) -> str:
    return f"{value / GIB:,.2f}"


def _bytes(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,} B ({value / GIB:,.2f} GiB)"
    return _num(value)


def _table(caption: str, head: Sequence[str], rows: Iterable[Sequence[Any]],
           numeric: Sequence[bool] | None = None, row_class: Sequence[str] | None = None) -> str:
    """An HTML table; ``numeric`` right-aligns columns, cells are escaped text."""
    numeric = numeric or [False] * len(head)
    out = [f"<table><caption>{escape(caption)}</caption><thead><tr>"]
    out += [f'<th scope="col"{" class=n" if n else ""}>{escape(h)}</th>'
            for h, n in zip(head, numeric, strict=True)]
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(rows):
        cls = f' class="{row_class[i]}"' if row_class and row_class[i] else ""
        cells = [f'<td{" class=n" if n else ""}>{escape(str(c))}</td>'
                 for c, n in zip(row, numeric, strict=True)]
        out.append(f"<tr{cls}>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _section(ident: str, title: str, body: str) -> str:
    return (f'<section id="{ident}" aria-labelledby="{ident}-h"><h2 id="{ident}-h">'
            f"{escape(title)}</h2>{body}</section>")


def _chart(ident: str, svg: str, caption: str, side: str) -> str:
    return (f'<div class="pair"><figure id="{ident}-fig">{svg}<figcaption>{escape(caption)}'
            f'</figcaption></figure><div class="side">{side}</div></div>')


# -- sections ----------------------------------------------------------------------------------


def _plan_section(data: ReportData) -> str:
    """The plan's numbers beside the budget they came from; pools, answers, warnings below."""
    plan = data.plan_json
    rows = [(label, _bytes(plan[key]) if key.endswith("_bytes") else _num(plan[key]))
            for key, label in _HEADLINE if key in plan]
    # Keys only this engine has (SGLang's max_running_requests, …), as its layout names them.
    shown = {key for key, _ in _HEADLINE}
    # A sentence (kv_cache_tokens_note) reads below the tables, not in a number column.
    sentences = [(key, value) for key, value in data.plan.engine_fields.items()
                 if key not in shown and isinstance(value, str) and len(value) > 60]
    rows += [(key, _num(value)) for key, value in data.plan.engine_fields.items()
             if key not in shown and not isinstance(value, dict | list)
             and (key, value) not in sentences]
    left = _table("the plan (per GPU; the numbers of kvledger plan)", ("what", "value"), rows,
                  (False, True))
    right = [_table("budget per GPU: each line given, exact, or estimated",
                    ("line", "bytes", "GiB", "basis"),
                    [(ln["label"], _num(ln["bytes"]), _gib(ln["bytes"]), ln["basis"])
                     for ln in plan.get("budget") or []], (False, True, True, False))]
    pools = plan.get("pools") or []
    if pools:
        right.append(_table(
            "pools of the binding stage", ("class", "pool", "entries", "bytes/entry",
                                           "per request", "reserved"),
            [(p["name"], p["pool"], _num(p["entries"]), _num(p["entry_bytes"]),
              _num(p["entries_per_req"]), _bytes(p["reserved_bytes"])) for p in pools],
            (False, False, True, True, True, True)))
    answers = plan.get("answers") or {}
    if answers:
        right.append(_table("answers", ("question", "answer"),
                            [(k, _num(v)) for k, v in answers.items()], (False, True)))
    below = []
    if data.plan.refuses_to_start:
        below.append(f'<p class="bad">{escape(data.engine)} would refuse to start: one '
                     "max_model_len request does not fit in this KV budget.</p>")
    below += [f'<p class="note">{escape(key)}: {escape(value)}</p>' for key, value in sentences]
    below += [f'<p class="warn">warning: {escape(w)}</p>' for w in plan.get("warnings") or ()]
    return _section("plan", "Plan and budget",
                    f'<div class="cols"><div>{left}</div><div>{"".join(right)}</div></div>'
                    + "".join(below))


def _memory_section(data: ReportData) -> str:
    from kvledger.report.charts import memory_chart

    where = data.gpu or "the given KV budget"
    title = f"GPU memory per rank: {data.model} on {where}"
    svg = memory_chart(data.memory, title)
    side = _table("GiB per GPU", ("rank", "weights", "reserves", "KV", "free", "total"),
                  [(b.label, "–" if b.given else _gib(b.weights),
                    "–" if b.given else _gib(b.reserves), _gib(b.kv), _gib(b.free),
                    _gib(b.total)) for b in data.memory],
                  (False, True, True, True, True, True))
    caption = ("Reserves are the activation peak, CUDA graphs and non-torch memory; free is "
               "what the utilization limit keeps back plus the KV budget left unallocated.")
    if any(b.given for b in data.memory):
        caption = ("The KV budget was given directly (no GPU): the bar is that budget, split "
                   "into what the layout allocates and what it leaves.")
    return _section("memory", "GPU memory per rank", _chart("memory", svg, caption, side))


def _layouts_section(data: ReportData) -> str:
    from kvledger.report.charts import layouts_chart, tokens_label

    budget = data.plan.available_bytes
    title = (f"Max concurrency by context length, per layout ({_gib(budget)} GiB KV per GPU"
             f"{', ' + data.gpu if data.gpu else ''})")
    svg = layouts_chart(data.layouts, data.plan.max_model_len, title, default=data.engine)
    names = [c.label for c in data.layouts]
    rows = [(tokens_label(ctx), *(_num(c.at(ctx)) for c in data.layouts))
            for ctx in data.contexts]
    side = _table("max concurrent requests", ("context", *names), rows,
                  (False, *([True] * len(names))))
    side += "".join(f'<p class="note">{escape(c.label)}: {escape(c.note)}</p>'
                    for c in data.layouts if c.note)
    native = next((c for c in data.layouts if c.label == "native"), None)
    # The cap is the native curve's own max_num_seqs: the number its column stops at.
    cap = native.max_num_seqs if native is not None and native.max_num_seqs else \
        data.plan.max_num_seqs
    caption = (f"Every layout planned on the same KV budget ({data.engine}, this report's, "
               "drawn solid on top; the others hollow and broken, so equal curves both show), "
               "each counting as its engine does: "
               "vllm gives vLLM's unrounded \"Maximum concurrency\"; native never counts more "
               f"than max_num_seqs requests ({cap:,} here). – : the layout "
               "planned nothing there.")
    return _section("layouts", "Concurrency by layout", _chart("layouts", svg, caption, side))


def _grid_status(cell: GridCell) -> str:
    if cell.status == FITS:
        return _num(cell.concurrency)
    if cell.status == SHORT:
        return f"< 1 ({_num(cell.concurrency)})"
    if cell.status == NO_WEIGHTS:
        return "no room for KV"
    return "not plannable"


def _grid_section(data: ReportData) -> str:
    from kvledger.report.charts import curves_gpu, grid_heatmap, tokens_label, tp_chart

    gpus = list(dict.fromkeys(c.gpu for c in data.grid))
    by_key = {(c.gpu, c.tp): c for c in data.grid}
    length = tokens_label(data.plan.max_model_len)
    title = (f"{data.engine} layout on every GPU preset: max concurrency at {length} tokens")
    heat = grid_heatmap(data.grid, gpus, data.tp_sizes, title,
                        data.plan.pipeline_parallel_size)
    rows, classes = [], []
    for gpu in gpus:
        cells = [by_key[(gpu, tp)] for tp in data.tp_sizes]
        rows.append((gpu, *(_grid_status(c) for c in cells)))
        classes.append("" if any(c.status == FITS for c in cells) else "no")
    side = _table(f"max concurrency at {length} tokens", ("GPU", *(f"TP {t}" for t in
                  data.tp_sizes)), rows, (False, *([True] * len(data.tp_sizes))), classes)
    caption = ("Each preset's own budget (utilization × memory − weights per GPU − reserves), "
               "the same options otherwise. Grey: not even one request fits; 'no room': "
               "weights and reserves leave no KV memory.")
    reasons = [(f"{c.gpu} TP {c.tp}", c.reason) for c in data.grid if c.reason]
    every = _table("every point (max concurrent requests)", ("GPU", "TP", *(
        tokens_label(x) for x in data.contexts)), [
        (c.gpu, str(c.tp), *(_num(c.curve.at(x)) for x in data.contexts)) for c in data.grid],
        (False, True, *([True] * len(data.contexts))))
    body = _chart("grid", heat, caption, side)
    shown = curves_gpu(data.grid, data.gpu)
    if shown is not None:
        curves_title = (f"{data.engine} layout on {shown}: max concurrency by context length, "
                        "per TP size")
        curves = tp_chart(data.grid, shown, data.tp_sizes, data.plan.max_model_len,
                          curves_title)
        why = ("the report's GPU" if shown == data.gpu else
               "the first preset that holds one request at every TP size")
        side2 = (f'<p class="note">{escape(shown)} ({why}); every preset\'s curve is in the '
                 "table below.</p>")
        if reasons:
            side2 += (f"<details><summary>why a cell does not hold</summary>"
                      f"{_table('reasons', ('cell', 'why'), reasons)}</details>")
        body += _chart("gridcurves", curves, "Lines end where the preset plans nothing at that "
                       "length.", side2)
    # Wide (a column per context length): below the charts at the section's full width.
    body += f'<details class="wide"><summary>every point of every curve</summary>{every}</details>'
    return _section("gpus", "Across GPU presets and TP sizes", body)


def _kinds_section(data: ReportData) -> str:
    from kvledger.report.charts import kinds_chart

    tp = data.plan.tensor_parallel_size
    title = (f"Cache bytes per layer kind ({data.plan.kv_cache_dtype}"
             f"{f', per GPU at TP {tp}' if tp > 1 else ''})")
    svg = kinds_chart(data.kinds, title)
    side = _table("per kind (per GPU)", ("kind", "layers", "B/token", "B/request"),
                  [(k.label, _num(k.layers), _num(k.bytes_per_token), _num(k.bytes_per_request))
                   for k in data.kinds], (False, True, True, True))
    caption = ("The model's own cache facts (before any engine's paging): bytes each token "
               "adds across all layers of a kind, and fixed bytes per request (recurrent "
               "state, cross-attention).")
    return _section("kinds", "Bytes per layer kind", _chart("kinds", svg, caption, side))


def _finite(value: Any) -> Any:
    """As ``kvledger plan --json``: JSON has no inf/NaN, so a non-finite float is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _json_section(plan: Mapping[str, Any]) -> str:
    text = json.dumps(_finite(plan), indent=2, default=str, allow_nan=False)
    return _section("json", "Plan as JSON",
                    "<details><summary>the object <code>kvledger plan --json</code> prints"
                    f'</summary><pre id="plan-json">{escape(text)}</pre></details>')


# -- the page ----------------------------------------------------------------------------------


def _omni_section(omni: Mapping[str, Any]) -> str:
    """A vLLM-Omni deployment (``kvledger report --omni-deploy``): each stage's plan, each
    device's admission, the split — the numbers of ``kvledger plan --omni-deploy --json``."""
    stages = []
    for s in omni["stages"]:
        plan = s["plan"]
        stages.append((
            s["stage_id"], s["role"], s["model_part"] or "whole config",
            ",".join(map(str, s["devices"])) or "0", _num(s["gpu_memory_utilization"]),
            _num(s["max_num_seqs"]),
            _bytes(plan["available_bytes"]) if plan else "–",
            _num(plan["num_blocks"]) if plan else "–",
            _num(plan["kv_cache_tokens"]) if plan else "–",
            _num(plan["max_concurrency"]) if plan else (s.get("reason") or "–")))
    body = [f'<p class="meta">{escape(omni["omni_deploy"])} · pipeline '
            f'{escape(omni["pipeline"])} · platform {escape(omni["platform"])} · '
            f'{escape(omni["gpu"])} {escape(_bytes(omni["capacity_bytes"]))} a device · '
            f'stages planned as vLLM {escape(str(omni["engine_release"]))}</p>',
            _table("each stage as its own vLLM engine",
                   ("stage", "role", "model part", "devices", "utilization", "max_num_seqs",
                    "KV budget", "blocks", "KV tokens", "max concurrency / why no plan"),
                   stages, (True, False, False, False, True, True, True, True, True, False)),
            _table("admission per device (vLLM-Omni's stage_admission.py)",
                   ("device", "stages", "Σ capacity × utilization", "graph reserve",
                    "external", "margin", "required", "capacity", "ok"),
                   [(a["device"], ", ".join(map(str, a["stages"])), _num(a["kv_budget_bytes"]),
                     _num(a["graph_reserve_bytes"]), _num(a["external_reserve_bytes"]),
                     _num(a["safety_margin_bytes"]), _num(a["required_bytes"]),
                     _num(a["capacity_bytes"]), _num(a["ok"])) for a in omni["admission"]],
                   (True, False, True, True, True, True, True, True, False),
                   ["" if a["ok"] else "bad" for a in omni["admission"]])]
    if omni.get("split"):
        body.append(_table(
            f"split for {omni['split'][0]['concurrency']} concurrent requests",
            ("device", "fractions", "required", "capacity", "fits / why not"),
            [(sp["device"], ", ".join(f"stage {k}: {v:g}" for k, v in sp["fractions"].items()),
              _num(sp["required_bytes"]), _num(sp["capacity_bytes"]),
              f"fits ({sp['spare_fraction']:g} of the device spare)" if sp["ok"]
              else "; ".join(sp["reasons"])) for sp in omni["split"]],
            (True, False, True, True, False)))
    body += [f'<p class="warn">warning: {escape(w)}</p>' for w in omni.get("warnings") or ()]
    return _section("omni", "vLLM-Omni deployment", "".join(body))


def render_report(data: ReportData, *, command: str = "",
                  omni: Mapping[str, Any] | None = None) -> str:
    """The whole page as one string (needs the plotting extra)."""
    from kvledger.version import __version__

    plan = data.plan_json
    facts = [f"layout {plan['engine']}", f"KV dtype {plan['kv_cache_dtype']}",
             f"max_model_len {plan['max_model_len']:,}"]
    if data.gpu:
        facts.insert(1, f"GPU {data.gpu}")
    if plan["tensor_parallel_size"] > 1 or plan["pipeline_parallel_size"] > 1:
        facts.append(f"TP {plan['tensor_parallel_size']} × PP {plan['pipeline_parallel_size']}")
    made = f"kvledger {__version__}" + (f": <code>{escape(command)}</code>" if command else "")
    head = (f"<header><h1>KV cache report: {escape(data.model)}</h1>"
            f'<p class="meta">{escape(" · ".join(facts))}</p>'
            f'<p class="meta">made with {made}</p>'
            + "".join(f'<p class="note">{escape(n)}</p>' for n in data.notes) + "</header>")
    sections = (_plan_section(data), *([_omni_section(omni)] if omni else []),
                _memory_section(data),
                _layouts_section(data), _grid_section(data), _kinds_section(data),
                _json_section(plan))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>kvledger report: {escape(data.model)}</title><style>{_CSS}</style></head>"
        f"<body><main>{head}{''.join(sections)}</main></body></html>\n"
    )


def write_report(
    model: Any,
    request: PlanRequest,
    path: str | Path,
    *,
    command: str = "",
    omni: Mapping[str, Any] | None = None,
) -> ReportData:
    """Plan ``model`` with ``request`` (budget, GPU and all: the CLI's one request type), draw
    the report, write it to ``path``; returns what it drew. ``omni``: a vLLM-Omni
    deployment's plan (``OmniPlan.to_json``), shown in its own section."""
    from kvledger.report.charts import require_matplotlib
    from kvledger.report.series import build_report_data

    require_matplotlib()
    data = build_report_data(model, request)
    page = render_report(data, command=command, omni=omni)
    Path(path).write_text(page, encoding="utf-8")
    return data

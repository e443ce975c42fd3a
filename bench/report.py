"""Markdown for the accuracy results: summary, per model, per case, refusals.

Everything here reads the results dict ``accuracy.py`` builds; no number is computed that the
scoring (``score.py``) did not produce.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from score import METRICS, OUTCOMES, case_outcome, judge, worst

LABEL = {"bytes_per_token": "KV bytes/token", "kv_cache_tokens": "tokens at budget",
         "max_concurrency": "max concurrency"}
UNIT = {"bytes_per_token": "B/token", "kv_cache_tokens": "tokens", "max_concurrency": "×"}


def fmt_error(err: float | None) -> str:
    if err is None:
        return "—"
    if math.isinf(err):
        return "∞"
    if err == 0:
        return "0"
    pct = err * 100
    return f"{pct:+.2f} %" if abs(pct) >= 0.01 else f"{pct:+.4f} %"


def fmt_value(value: Any) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.4f}"
    if isinstance(value, int | float):
        return f"{int(value):,}"
    return str(value)


def _share(count: int, total: int) -> str:
    return f"{count}/{total} ({100 * count / total:.0f} %)" if total else "—"


def judgements(results: dict[str, Any]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """tool → question id → judged metrics (only oracle questions)."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(dict)
    for tool in results["tools"]:
        for q in results["questions"]:
            if q["truth"] is None:
                continue
            ans = results["answers"][tool][q["id"]]
            judged = []
            for metric in METRICS:
                j = judge(ans, q["truth"], metric, results["metrics"][tool])
                if j is not None:
                    judged.append({"metric": metric, **j})
            out[tool][q["id"]] = judged
    return out


def summary(results: dict[str, Any], judged: dict[str, Any]) -> list[str]:
    oracle_ids = [q["id"] for q in results["questions"] if q["truth"] is not None]
    n = len(oracle_ids)
    sglang = results.get("sglang")
    extra = " SGLang 0.5.23 cases within 0.1 % |" if sglang else ""
    lines = [
        "| tool | version | cases within 0.1 % | wrong | refused | no answer (n/a) |" + extra,
        "|---|---|---|---|---|---|" + ("---|" if sglang else ""),
    ]
    for tool in results["tools"]:
        kinds = Counter(case_outcome(judged[tool][qid]) for qid in oracle_ids)
        lines.append(
            f"| {tool} | {results['versions'].get(tool) or '—'} | "
            + " | ".join(_share(kinds[k], n) for k in OUTCOMES) + " |"
            + (f" {sglang['columns'][tool]} |" if sglang else "")
        )
    return lines


def per_metric(results: dict[str, Any], judged: dict[str, Any]) -> list[str]:
    lines = [
        "| tool | metric | scored cases | within 0.1 % | wrong | refused | n/a | worst error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for tool in results["tools"]:
        for metric in METRICS:
            rows = [j for js in judged[tool].values() for j in js if j["metric"] == metric]
            kinds = Counter(j["outcome"] for j in rows)
            top = worst(rows)
            lines.append(
                f"| {tool} | {LABEL[metric]} | {len(rows)} | "
                + " | ".join(_share(kinds[k], len(rows)) for k in OUTCOMES)
                + f" | {fmt_error(top['error'])} |"
            )
    return lines


def _cell(judged_cases: list[list[dict[str, Any]]]) -> str:
    flat = [j for js in judged_cases for j in js]
    top = worst(flat)
    if top["answered"] == 0:
        if top["refused"]:
            return "refused"
        return "n/a"
    text = fmt_error(top["error"])
    return text + (f" ({top['refused']} refused)" if top["refused"] else "")


def per_model(results: dict[str, Any], judged: dict[str, Any]) -> list[str]:
    by_model: dict[str, list[str]] = defaultdict(list)
    for q in results["questions"]:
        if q["truth"] is not None:
            by_model[q["model"]].append(q["id"])
    tools = results["tools"]
    lines = ["| model | cases | " + " | ".join(tools) + " |",
             "|---|---|" + "---|" * len(tools)]
    for model in sorted(by_model, key=str.lower):
        ids = by_model[model]
        cells = [_cell([judged[t][qid] for qid in ids]) for t in tools]
        lines.append(f"| {model} | {len(ids)} | " + " | ".join(cells) + " |")
    return lines


def per_case(results: dict[str, Any], judged: dict[str, Any]) -> list[str]:
    tools = results["tools"]
    lines = ["| case | model | L | budget GiB | KV dtype | TP | metric | vLLM | "
             + " | ".join(tools) + " |",
             "|---|---|---|---|---|---|---|---|" + "---|" * len(tools)]
    for q in results["questions"]:
        if q["truth"] is None:
            continue
        for metric in METRICS:
            if q["truth"].get(metric) is None:
                continue
            cells = []
            for tool in tools:
                j = next((j for j in judged[tool][q["id"]] if j["metric"] == metric), None)
                if j is None or j["outcome"] == "n/a":
                    cells.append("n/a")
                elif j["outcome"] == "refused":
                    cells.append("refused")
                else:
                    cells.append(f"{fmt_value(j['value'])} ({fmt_error(j['error'])})")
            lines.append(
                f"| {q['id']} | {q['model']} | {q['max_model_len']} | "
                f"{q['kv_cache_memory_bytes'] / 2**30:g} | {q['kv_cache_dtype']} | "
                f"{q['tensor_parallel_size']} | {LABEL[metric]} | "
                f"{fmt_value(q['truth'][metric])} | " + " | ".join(cells) + " |"
            )
    return lines


def catalog_only(results: dict[str, Any]) -> list[str]:
    tools = results["tools"]
    lines = ["Each tool's own figures, 8 GiB KV budget, TP 1, block size auto, "
             "max_model_len = min(the config's, 32768). Bytes per token is each tool's own "
             "notion (for kvledger, one block of its paged class over the block size: on a "
             "hybrid model that is not the whole model's per-token cost), so these are not "
             "comparable across tools; the table shows who answers and who refuses.", "",
             "| model (no oracle case) | " + " | ".join(tools) + " |",
             "|---|" + "---|" * len(tools)]
    for q in results["questions"]:
        if q["truth"] is not None:
            continue
        cells = []
        for tool in tools:
            ans = results["answers"][tool][q["id"]]
            if ans["status"] != "ok":
                cells.append(ans["status"])
            elif ans["values"]:
                cells.append(" · ".join(f"{fmt_value(v)} {UNIT[m]}"
                                        for m, v in ans["values"].items()))
            else:
                cells.append("refused" if ans.get("refused") else "n/a")
        lines.append(f"| {q['model']} | " + " | ".join(cells) + " |")
    return lines


def refusal_reasons(results: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for tool in results["tools"]:
        reasons: Counter[str] = Counter()
        for q in results["questions"]:
            ans = results["answers"][tool][q["id"]]
            if ans["status"] in ("refused", "unavailable"):
                reasons[f"{q['model']}: {ans['reason']}"] += 1
            for metric, why in ans.get("refused", {}).items():
                reasons[f"{q['model']} ({LABEL[metric]}): {why}"] += 1
        lines.append(f"**{tool}** — {sum(reasons.values())} refusal(s)")
        lines.append("")
        lines.extend(f"- {why}" + (f" (×{n})" if n > 1 else "")
                     for why, n in sorted(reasons.items()))
        lines.append("")
    return lines


def start_verdicts(results: dict[str, Any]) -> str:
    """kvledger alone says whether vLLM would refuse to start; how often it agrees."""
    agree = total = 0
    for q in results["questions"]:
        if q["truth"] is None:
            continue
        ans = results["answers"].get("kvledger", {}).get(q["id"])
        if not ans or ans["status"] != "ok" or ans.get("vllm_refuses_to_start") is None:
            continue
        total += 1
        agree += ans["vllm_refuses_to_start"] == q["truth"]["vllm_refuses_to_start"]
    return f"{agree}/{total}"

"""Markdown for the accuracy results: summary, per model, per case, refusals.

Everything here reads the results dict ``accuracy.py`` builds; no number is computed that the
scoring (``score.py``) did not produce.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from cases import APART, SETS
from score import METRICS, OUTCOMES, REFUSAL_OUTCOMES, case_outcome, judge, judge_refusal, worst

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


def scored_ids(results: dict[str, Any], kind: str | None = None) -> list[str]:
    """Questions with a numeric truth, of one set or of all (``kind`` None: every set but the
    ones scored apart, ``APART``: the held-out checkpoints)."""
    return [q["id"] for q in results["questions"]
            if q["truth"] is not None
            and (q["set"] == kind if kind else q["set"] not in APART)]


def set_sizes(results: dict[str, Any]) -> dict[str, int]:
    return {kind: len(scored_ids(results, kind)) for kind in SETS
            if scored_ids(results, kind)}


def refusal_questions(results: dict[str, Any], heldout: bool = False) -> list[dict[str, Any]]:
    """Runs where vLLM refused to start: the known ones, or (``heldout``) the held-out ones."""
    return [q for q in results["questions"]
            if q["set"] == "refusal" and q.get("heldout", False) == heldout]


def _within(judged_tool: dict[str, Any], ids: list[str]) -> str:
    kinds = Counter(case_outcome(judged_tool[qid]) for qid in ids)
    return _share(kinds["within"], len(ids))


def by_set(results: dict[str, Any], judged: dict[str, Any]) -> list[str]:
    """The headline: cases within 0.1 % per set of cases, the engine refusals each tool
    matched, and the SGLang cases."""
    sizes = set_sizes(results)
    refusals = refusal_questions(results)
    sglang = results.get("sglang")
    together = {kind: n for kind, n in sizes.items() if kind not in APART}
    apart = {kind: n for kind, n in sizes.items() if kind in APART}
    heads = [f"vLLM: {n} {SETS[kind][0]}" if i == 0 else f"{n} {SETS[kind][0]}"
             for i, (kind, n) in enumerate(together.items())]
    heads.append(f"all {sum(together.values())} vLLM cases")
    n_held = apart.get("heldout", 0) + len(refusal_questions(results, heldout=True))
    if n_held:
        first = results.get("heldout_first")
        heads.append(f"held out: {n_held} cases nobody checked"
                     + (f" (before fixes: {first})" if first else ""))
    if refusals:
        heads.append(f"vLLM refuses to start ({len(refusals)}): same refusal")
    if sglang:
        heads.append(f"SGLang 0.5.23: {sglang['n']} cases")
        if sglang.get("refusals"):
            heads.append(f"SGLang refuses ({len(sglang['refusals'])})")
    lines = ["| tool | version | " + " | ".join(heads) + " |",
             "|---|---|" + "---|" * len(heads)]
    for tool in results["tools"]:
        cells = [_within(judged[tool], scored_ids(results, kind)) for kind in together]
        cells.append(_within(judged[tool], scored_ids(results)))
        if n_held:
            cells.append(_share(heldout_counts(results, judged, tool)["within"], n_held))
        if refusals:
            same = sum(refusal_outcome(results, tool, q) == "same refusal" for q in refusals)
            cells.append(_share(same, len(refusals)))
        if sglang:
            cells.append(sglang["columns"][tool])
            if sglang.get("refusals"):
                cells.append(sglang["refusal_columns"][tool])
        lines.append(f"| {tool} | {results['versions'].get(tool) or '—'} | "
                     + " | ".join(cells) + " |")
    return lines


def heldout_counts(results: dict[str, Any], judged: dict[str, Any],
                   tool: str) -> Counter[str]:
    """One tool on every held-out case: within / wrong / refused / n/a over the answered
    cases, plus the runs vLLM refused: the same refusal counts as within, numbers as wrong,
    a refusal for another reason as refused."""
    kinds = Counter(case_outcome(judged[tool][qid]) for qid in scored_ids(results, "heldout"))
    for q in refusal_questions(results, heldout=True):
        kinds[{"same refusal": "within", "refused, other reason": "refused",
               "answered": "wrong", "n/a": "n/a"}[refusal_outcome(results, tool, q)]] += 1
    return kinds


def heldout_summary(results: dict[str, Any], judged: dict[str, Any]) -> list[str]:
    """Within / wrong / refused per tool over every held-out case, refused runs included."""
    n = len(scored_ids(results, "heldout")) + len(refusal_questions(results, heldout=True))
    lines = [
        "| tool | version | held-out cases exact (within 0.1 %) | wrong | refused | n/a |",
        "|---|---|---|---|---|---|",
    ]
    for tool in results["tools"]:
        kinds = heldout_counts(results, judged, tool)
        lines.append(f"| {tool} | {results['versions'].get(tool) or '—'} | "
                     + " | ".join(_share(kinds[k], n) for k in OUTCOMES) + " |")
    return lines


def summary(results: dict[str, Any], judged: dict[str, Any],
            kind: str | None = None) -> list[str]:
    """Within / wrong / refused / n/a per tool, over one set of cases or all of them."""
    ids = scored_ids(results, kind)
    n = len(ids)
    lines = [
        "| tool | version | cases within 0.1 % | wrong | refused | no answer (n/a) |",
        "|---|---|---|---|---|---|",
    ]
    for tool in results["tools"]:
        kinds = Counter(case_outcome(judged[tool][qid]) for qid in ids)
        lines.append(
            f"| {tool} | {results['versions'].get(tool) or '—'} | "
            + " | ".join(_share(kinds[k], n) for k in OUTCOMES) + " |"
        )
    return lines


def per_set(results: dict[str, Any], judged: dict[str, Any]) -> list[str]:
    """Every tool's outcomes in every set, one row each."""
    lines = ["| set | tool | cases within 0.1 % | wrong | refused | n/a | worst error |",
             "|---|---|---|---|---|---|---|"]
    for kind, n in set_sizes(results).items():
        ids = scored_ids(results, kind)
        for tool in results["tools"]:
            kinds = Counter(case_outcome(judged[tool][qid]) for qid in ids)
            top = worst([j for qid in ids for j in judged[tool][qid]])
            lines.append(f"| {n} {SETS[kind][0]} | {tool} | "
                         + " | ".join(_share(kinds[k], n) for k in OUTCOMES)
                         + f" | {fmt_error(top['error'])} |")
    return lines


def refusal_outcome(results: dict[str, Any], tool: str, q: dict[str, Any]) -> str:
    return judge_refusal(results["answers"][tool][q["id"]], q["vllm_reason"])


def refusals(results: dict[str, Any], heldout: bool = False) -> list[str]:
    """Where vLLM refused to start: its reason, and each tool's outcome."""
    questions = refusal_questions(results, heldout)
    if not questions:
        return ["(no case where vLLM refused to start)"]
    tools = results["tools"]
    lines = ["| case | config | options | vLLM's reason | " + " | ".join(tools) + " |",
             "|---|---|---|---|" + "---|" * len(tools)]
    for q in questions:
        opts = f"{q['kv_cache_dtype']} KV, block {q['block_size']}, L {q['max_model_len']}"
        lines.append(f"| {q['id']} | {q['config_file'].removesuffix('.json')} | {opts} | "
                     f"{q['vllm_reason']} | "
                     + " | ".join(refusal_outcome(results, t, q) for t in tools) + " |")
    lines += ["", "Counts: " + "; ".join(
        f"{t}: " + ", ".join(f"{sum(refusal_outcome(results, t, q) == o for q in questions)} "
                             f"{o}" for o in REFUSAL_OUTCOMES) for t in tools) + "."]
    lines += ["", "What each tool said:", ""]
    for q in questions:
        for tool in tools:
            ans = results["answers"][tool][q["id"]]
            said = ans.get("reason") or " · ".join(
                f"{fmt_value(v)} {UNIT[m]}" for m, v in ans.get("values", {}).items()) or "—"
            lines.append(f"- {q['id']} {tool}: {said}")
    return lines


def per_metric(results: dict[str, Any], judged: dict[str, Any]) -> list[str]:
    lines = [
        "| tool | metric | scored cases | within 0.1 % | wrong | refused | n/a | worst error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ids = scored_ids(results)
    for tool in results["tools"]:
        for metric in METRICS:
            rows = [j for qid in ids for j in judged[tool][qid] if j["metric"] == metric]
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
    sets: dict[str, set[str]] = defaultdict(set)
    for q in results["questions"]:
        if q["truth"] is not None:
            by_model[q["model"]].append(q["id"])
            sets[q["model"]].add(q["set"])
    tools = results["tools"]
    lines = ["| model | set | cases | " + " | ".join(tools) + " |",
             "|---|---|---|" + "---|" * len(tools)]
    for model in sorted(by_model, key=str.lower):
        ids = by_model[model]
        cells = [_cell([judged[t][qid] for qid in ids]) for t in tools]
        where = ", ".join(kind for kind in SETS if kind in sets[model])
        lines.append(f"| {model} | {where} | {len(ids)} | " + " | ".join(cells) + " |")
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
        if q["set"] != "catalog":
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
            if q["set"] == "refusal":  # there a refusal is the right answer: see its section
                continue
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

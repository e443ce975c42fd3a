"""kvledger ``--engine sglang`` against SGLang 0.5.23's own pool sizing.

Truth: ``tests/oracles/sglang-0.5.23/cases.jsonl`` (made by ``scripts/oracles/
sglang_cases.py``, which runs SGLang's own sizing code on CPU). Each case is asked through the
public API — ``plan_model(config, PlanRequest(engine="sglang", kv_cache_memory_bytes=...))``
with the case's page size, TP/PP, KV dtype and SGLang options; the GPU named only tells
SGLang's platform checks which generation it is (Hopper, or Blackwell for the DSA cases run
with compute capability 10.0).

Metrics: ``kv_cache_tokens`` (SGLang's ``max_total_num_tokens``, the "#tokens" it logs),
``max_running_requests``, and bytes per token (SGLang's ``_cell_size``; single-stage cases).
The peers (hf-mem, kvfit, vllm-wizard) have no SGLang mode: n/a.

A case where SGLang itself refused (its ``expected`` holds the ``error``, or a
``model_class_error`` without a ``model_class``: its loader would not build the model) is
scored as ``score.judge_refusal`` scores vLLM's refusals: kvledger matches when it refuses with
SGLang's reason. Such a case may depend on an option kvledger takes no input for (an explicit
``attention_backend``); the report names it.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CASES = ROOT / "tests" / "oracles" / "sglang-0.5.23" / "cases.jsonl"
TOLERANCE = 0.001
OPTION_KEYS = ("max_running_requests", "max_total_tokens", "swa_full_tokens_ratio",
               "mamba_full_memory_ratio", "disable_radix_cache", "disable_overlap_schedule",
               "chunked_prefill_size")


# Errors of the CPU oracle's environment, not answers of SGLang's (cov-glm5-next: its KDA
# kernels need a GPU): such a case is not scored.
ORACLE_LIMITS = ("Found no NVIDIA driver",)


def sglang_refusal(case: dict[str, Any]) -> str | None:
    """SGLang's error for a case it refused: the oracle's ``error``, or — where SGLang's
    configurator sized a pool but its loader would not build the model — the loader's
    ``model_class_error`` (``get_model_architecture``)."""
    want = case["expected"]
    if want.get("error") and not any(limit in want["error"] for limit in ORACLE_LIMITS):
        return str(want["error"])
    if want.get("model_class_error") and want.get("model_class") is None \
            and not case.get("cpu_import_only"):
        return str(want["model_class_error"])
    return None


def load() -> list[dict[str, Any]]:
    """Every case: answered (``max_total_num_tokens``) or refused by SGLang."""
    if not CASES.is_file():
        return []
    cases = [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]
    return [c for c in cases if c["expected"].get("max_total_num_tokens") is not None
            or sglang_refusal(c)]


def not_asked(case: dict[str, Any]) -> str:
    """Options SGLang was run with that kvledger's request has no field for."""
    return f"attention_backend={case['attention_backend']}" if case.get("attention_backend") \
        else ""


def _config(name: str) -> tuple[Path, Path | None] | None:
    for folder in (ROOT.parent / "shared" / "configs",):
        path = folder / name
        if path.is_file():
            quant = path.with_name(name.removesuffix(".json") + ".hf_quant_config.json")
            return path, quant if quant.is_file() else None
    return None


def ask(case: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """kvledger's answer for one case, or its refusal."""
    from kvledger.plan.api import plan_model
    from kvledger.plan.engines.sglang import SglangOptions
    from kvledger.plan.request import PlanRequest

    found = _config(case["config"])
    if found is None:
        return {"status": "unavailable", "reason": f"{case['config']} not found"}
    config, quant = found
    model_dir = workdir / case["id"]
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text(config.read_text())
    if quant is not None:
        (model_dir / "hf_quant_config.json").write_text(quant.read_text())
    server = case.get("server_args", {})
    spec = server.get("speculative_algorithm")
    try:
        request = PlanRequest(
            engine="sglang", kv_cache_memory_bytes=case["kv_pool_bytes"],
            block_size=case.get("page_size") or 1, max_model_len=server.get("context_length"),
            kv_cache_dtype=case.get("kv_cache_dtype", "auto"),
            tensor_parallel_size=case.get("tp", 1), pipeline_parallel_size=case.get("pp", 1),
            num_speculative_tokens=server.get("speculative_num_steps", 0) if spec else 0,
            speculative_method="mtp" if spec else None,
            sglang=SglangOptions(**{k: server[k] for k in OPTION_KEYS if k in server}))
        gpu = "B200" if (case.get("cuda_capability") or "9.0").startswith("10") else "H100-80GB"
        data = plan_model(str(model_dir), request, gpu=gpu).to_json()
    except Exception as exc:  # a refusal is an answer: record the message
        return {"status": "refused", "reason": f"{type(exc).__name__}: {exc}"}
    values = {"kv_cache_tokens": data["kv_cache_tokens"],
              "max_running_requests": data["max_running_requests"]}
    if case.get("pp", 1) == 1:
        values["bytes_per_token"] = data["cell_bytes_per_token"]
    return {"status": "ok", "values": values}


def truth(case: dict[str, Any]) -> dict[str, Any]:
    want = case["expected"]
    out = {"kv_cache_tokens": want["max_total_num_tokens"],
           "max_running_requests": want["max_running_requests"]}
    if case.get("pp", 1) == 1 and want.get("cell_size_bytes_per_token") is not None:
        out["bytes_per_token"] = want["cell_size_bytes_per_token"]
    return out


def outcome(answer: dict[str, Any], true: dict[str, Any]) -> str:
    if answer["status"] == "refused":
        return "refused"
    if answer["status"] != "ok":
        return "n/a"
    for metric, value in true.items():
        got = answer["values"].get(metric)
        if got is None or abs(got - value) > TOLERANCE * abs(value):
            return "wrong"
    return "within"


def score() -> dict[str, Any]:
    """Per-case outcomes for kvledger; the peers answer nothing about SGLang."""
    import tempfile

    from score import judge_refusal, reason_of

    if str(ROOT / "src") not in sys.path:
        sys.path.append(str(ROOT / "src"))
    rows, refusals = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for case in load():
            answer = ask(case, Path(tmp))
            if tmp in answer.get("reason", ""):
                answer["reason"] = answer["reason"].replace(tmp, "<model dir>")
            error = sglang_refusal(case)
            if error:
                reason = reason_of(error)
                refusals.append({"id": case["id"], "config": case["config"],
                                 "sglang_error": error, "reason": reason,
                                 "not_asked": not_asked(case), "answer": answer,
                                 "outcome": judge_refusal(answer, reason)})
                continue
            rows.append({"id": case["id"], "config": case["config"],
                         "outcome": outcome(answer, truth(case)), "answer": answer,
                         "truth": truth(case)})
    return {"n": len(rows), "rows": rows,
            "counts": dict(Counter(r["outcome"] for r in rows)),
            "refusals": refusals,
            "refusal_counts": dict(Counter(r["outcome"] for r in refusals))}


def column(result: dict[str, Any], tool: str) -> str:
    """The README's SGLang column for one tool."""
    n = result["n"]
    if not n:
        return "—"
    if tool != "kvledger":
        return "n/a (no SGLang mode)"
    within = result["counts"].get("within", 0)
    return f"{within}/{n} ({100 * within / n:.0f} %)"


def refusal_column(result: dict[str, Any], tool: str) -> str:
    """The README's cell for the cases SGLang refused to start on."""
    n = len(result["refusals"])
    if not n:
        return "—"
    if tool != "kvledger":
        return "n/a"
    same = result["refusal_counts"].get("same refusal", 0)
    return f"{same}/{n} same refusal"


def refusal_lines(result: dict[str, Any]) -> list[str]:
    """The cases SGLang refused: its reason, and what kvledger said."""
    if not result["refusals"]:
        return []
    out = ["SGLang refused to start on these; kvledger matches when it refuses with SGLang's "
           "reason.", "",
           "| case | config | SGLang's reason | SGLang options kvledger takes no input for | "
           "kvledger | outcome |", "|---|---|---|---|---|---|"]
    for row in result["refusals"]:
        answer = row["answer"]
        said = (answer.get("reason", "") if answer["status"] != "ok" else
                "answered: " + ", ".join(f"{k} {v:,}" for k, v in answer["values"].items()))
        out.append(f"| {row['id']} | {row['config'].removesuffix('.json')} | {row['reason']} | "
                   f"{row['not_asked'] or '—'} | {said} | {row['outcome']} |")
    return out


def lines(result: dict[str, Any]) -> list[str]:
    """Every SGLang case: kvledger's numbers beside SGLang's."""
    out = ["| case | config | SGLang #tokens | kvledger | SGLang max_running_requests | "
           "kvledger | outcome |", "|---|---|---|---|---|---|---|"]
    for row in result["rows"]:
        got = row["answer"].get("values", {})
        out.append(
            f"| {row['id']} | {row['config'].removesuffix('.json')} | "
            f"{row['truth']['kv_cache_tokens']} | {got.get('kv_cache_tokens', '—')} | "
            f"{row['truth']['max_running_requests']} | "
            f"{got.get('max_running_requests', '—')} | {row['outcome']} |")
    return out

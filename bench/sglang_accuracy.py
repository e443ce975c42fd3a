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


def load() -> list[dict[str, Any]]:
    if not CASES.is_file():
        return []
    return [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()
            and json.loads(line)["expected"].get("max_total_num_tokens") is not None]


def _config(name: str) -> tuple[Path, Path | None] | None:
    for folder in (ROOT / "src" / "kvledger" / "derive" / "catalog",
                   ROOT.parent / "shared" / "configs"):
        path = folder / name
        if path.is_file():
            quant = path.with_name(name.removesuffix(".json") + ".hf_quant_config.json")
            return path, quant if quant.is_file() else None
    return None


def ask(case: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """kvledger's answer for one case, or its refusal."""
    from kvledger.plan.api import plan_model
    from kvledger.plan.request import PlanRequest
    from kvledger.plan.sglang import SglangOptions

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
    if case.get("pp", 1) == 1:
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

    if str(ROOT / "src") not in sys.path:
        sys.path.append(str(ROOT / "src"))
    cases = load()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            answer = ask(case, Path(tmp))
            rows.append({"id": case["id"], "config": case["config"],
                         "outcome": outcome(answer, truth(case)), "answer": answer,
                         "truth": truth(case)})
    return {"n": len(cases), "rows": rows,
            "counts": dict(Counter(r["outcome"] for r in rows))}


def column(result: dict[str, Any], tool: str) -> str:
    """The README's SGLang column for one tool."""
    n = result["n"]
    if not n:
        return "—"
    if tool != "kvledger":
        return "n/a (no SGLang mode)"
    within = result["counts"].get("within", 0)
    return f"{within}/{n} ({100 * within / n:.0f} %)"


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

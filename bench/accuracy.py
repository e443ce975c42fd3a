"""kvledger vs hf-mem, kvfit and vllm-wizard, against what vLLM 0.32 itself allocates.

    python bench/accuracy.py            # from the repo root; any Python >= 3.11

First run creates bench/.peers/venv and installs the pinned peers there from PyPI (the only
network use); everything else is offline. kvledger is imported from the installed package, or
from ``src/`` when it is not installed. Writes bench/results/{accuracy.md, accuracy.json,
README-section.md} and prints the summary.

Questions and truths: see cases.py. Peers: see peers/*_peer.py (each calls the peer's library
functions on the same config dict; their CLIs fetch from the hub). Scoring: see score.py.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(BENCH), str(BENCH / "peers")]

import peer_env  # noqa: E402

import cases  # noqa: E402
import report  # noqa: E402
import sglang_accuracy  # noqa: E402

RESULTS = BENCH / "results"
COMMAND = "python bench/accuracy.py"
PEERS = ("hf-mem", "kvfit", "vllm-wizard")


def _kvledger_importable() -> None:
    try:
        import kvledger  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT / "src"))


def ask_peers(questions: list[dict[str, Any]], only: list[str]) -> dict[str, Any]:
    python = peer_env.ensure()
    payload = json.dumps({"questions": [
        {k: v for k, v in q.items() if k != "truth"} for q in questions
    ]})
    done = subprocess.run(
        [str(python), str(BENCH / "peers" / "runner.py"), *only],
        input=payload, capture_output=True, text=True, check=False,
        cwd=BENCH / "peers",
    )
    if done.returncode != 0:
        raise SystemExit(f"peer runner failed:\n{done.stderr}")
    tools: dict[str, Any] = json.loads(done.stdout)["tools"]
    return tools


def ask_kvledger(questions: list[dict[str, Any]]) -> dict[str, Any]:
    _kvledger_importable()
    import kvledger_peer

    return {"version": kvledger_peer.version(), "metrics": list(kvledger_peer.METRICS),
            "answers": kvledger_peer.ask_all(questions)}


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def meta() -> dict[str, Any]:
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--", "src"):
        commit += " + uncommitted changes under src/"
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "python": platform.python_version(),
        "oracle": "vLLM 0.32.0 (../shared/oracles/vllm-0.32/cases.jsonl)",
        "command": COMMAND,
    }


def write(results: dict[str, Any]) -> dict[str, list[str]]:
    judged = report.judgements(results)
    m = results["meta"]
    n_cases = sum(q["truth"] is not None for q in results["questions"])
    n_models = len({q["model"] for q in results["questions"] if q["truth"] is not None})
    versions = ", ".join(f"{t} {results['versions'].get(t) or '—'}" for t in results["tools"])
    header = [
        f"Run {m['date']} on kvledger commit {m['commit']}, Python {m['python']}.",
        f"Versions: {versions}. Truth: {m['oracle']}, {n_cases} cases over {n_models} models.",
        f"Reproduce from a clean checkout: `{m['command']}`.",
    ]
    sections = {
        "summary": report.summary(results, judged),
        "per_metric": report.per_metric(results, judged),
        "per_model": report.per_model(results, judged),
    }
    doc = ["# Accuracy: KV cache sizing against vLLM 0.32's own planner", "", *header, "",
           "A case is *within* when every number the tool gave for it is within 0.1 % of "
           "vLLM's; *wrong* when any is not; *refused* when the tool raised or declined "
           "(failing closed); *n/a* when the tool has no such question (no budget input, no "
           "TP option). Concurrency from tools that answer whole sequences is judged against "
           "vLLM's rounded down. Method: bench/README.md.", "",
           "## Per tool (all oracle cases)", "", *sections["summary"], "",
           "## Per tool and metric", "", *sections["per_metric"], "",
           f"kvledger's \"vLLM would refuse to start\" verdict agrees with vLLM in "
           f"{report.start_verdicts(results)} answered cases.", "",
           "## Per model: worst relative error over its cases and metrics", "",
           *sections["per_model"], "",
           "## Catalog models vLLM could not build (no truth: who answers, who refuses)", "",
           *report.catalog_only(results), "",
           "## Refusals, with the tool's own message", "", *report.refusal_reasons(results),
           *sglang_section(results),
           "## Every case", "", *report.per_case(results, judged), ""]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "accuracy.md").write_text("\n".join(doc))
    slim = dict(results)
    slim["questions"] = [{k: v for k, v in q.items() if k not in ("config", "hf_quant_config")}
                         for q in results["questions"]]
    (RESULTS / "accuracy.json").write_text(json.dumps(slim, indent=1, sort_keys=True) + "\n")
    (RESULTS / "README-section.md").write_text(readme_section(results, header, sections))
    return sections


def sglang_section(results: dict[str, Any]) -> list[str]:
    sglang = results.get("sglang")
    if not sglang:
        return []
    return ["## Against SGLang 0.5.23 (kvledger --engine sglang)", "",
            "Truth: tests/oracles/sglang-0.5.23/cases.jsonl (SGLang's own pool sizing, "
            "scripts/oracles/sglang_cases.py). A case is within when max_total_num_tokens, "
            "max_running_requests and bytes per token are all within 0.1 %. The peers have no "
            "SGLang mode.", "", *sglang["lines"], ""]


def readme_section(results: dict[str, Any], header: list[str],
                   sections: dict[str, list[str]]) -> str:
    n_cases = sum(q["truth"] is not None for q in results["questions"])
    n_uniform = sum(q["truth"] is not None and q["truth"]["bytes_per_token"] is not None
                    for q in results["questions"])
    lines = [
        "## How accurate is it?", "",
        f"We asked kvledger (`--engine vllm`) and the calculators people use today the same "
        f"questions vLLM 0.32 answered for {n_cases} real configurations (KV bytes per token, "
        "tokens that fit a KV budget, max concurrency at `max_model_len`; budgets, context "
        "lengths, TP, FP8 KV), and compared with what vLLM's own planner computed. Each peer is "
        "called through its library on the same config dict, offline. A case is *within* when "
        "every number the tool gave is within 0.1 % of vLLM's; *refused* (failing closed) is "
        "counted apart from *wrong*; *n/a* means the tool has no such input.", "",
        *sections["summary"], "",
        *sections["per_metric"], "",
        "Read with care:",
        "- kvledger's vLLM layout was written against these oracle cases (they are also in its "
        "tests), so this shows it reproduces vLLM 0.32 on them, not how it does on a model "
        "nobody checked. For configs vLLM could not build, accuracy.md lists who answers and "
        "who refuses, without a score.",
        "- Bytes per token is scored only where vLLM made one KV cache group (uniform layers, "
        f"{n_uniform} cases); hf-mem answers nothing else (no budget input, no TP option), "
        "hence its n/a.",
        "- kvfit and vllm-wizard answer concurrency in whole sequences; giving vLLM's figure "
        "rounded down counts as within. vllm-wizard is asked with its defaults, including a "
        "15 % KV fragmentation margin.",
        *sglang_note(results), "",
        "<details><summary>Per model: worst relative error</summary>", "",
        *sections["per_model"], "", "</details>", "",
        *header, "Full tables, every case and every refusal message: "
        "[bench/results/accuracy.md](bench/results/accuracy.md).", "",
    ]
    return "\n".join(lines)


def sglang_note(results: dict[str, Any]) -> list[str]:
    sglang = results.get("sglang")
    if not sglang:
        return []
    return [f"- The SGLang column asks kvledger `--engine sglang` the {sglang['n']} questions "
            "SGLang 0.5.23's own pool sizing answered (tests/oracles/sglang-0.5.23/cases.jsonl:"
            " dense GQA, MLA, DSA, hybrid sliding-window, Gated DeltaNet and Mamba2 hybrids, "
            "fp8 KV, TP, PP, page sizes, SGLang's options); within = #tokens, "
            "max_running_requests and bytes per token all within 0.1 %. The peers have no "
            "SGLang mode (n/a). Those cases are also kvledger's tests."]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracle", type=Path, default=cases.ORACLE)
    parser.add_argument("--tools", nargs="*", default=["kvledger", *PEERS],
                        help="subset of: kvledger hf-mem kvfit vllm-wizard")
    ns = parser.parse_args(argv)
    questions = cases.all_questions(ns.oracle)
    tools = [t for t in ["kvledger", *PEERS] if t in ns.tools]
    got: dict[str, Any] = {}
    if "kvledger" in tools:
        got["kvledger"] = ask_kvledger(questions)
    peers = [t for t in tools if t in PEERS]
    if peers:
        got.update(ask_peers(questions, peers))
    results = {"meta": meta(), "tools": tools,
               "versions": {t: got[t]["version"] for t in tools},
               "metrics": {t: got[t]["metrics"] for t in tools},
               "questions": questions,
               "answers": {t: got[t]["answers"] for t in tools}}
    if "kvledger" in tools:
        _kvledger_importable()
        scored = sglang_accuracy.score()
        if scored["n"]:
            results["sglang"] = {
                "n": scored["n"], "counts": scored["counts"],
                "columns": {t: sglang_accuracy.column(scored, t) for t in tools},
                "lines": sglang_accuracy.lines(scored)}
    sections = write(results)
    print("\n".join(sections["summary"]))
    print()
    print("\n".join(sections["per_metric"]))
    print(f"\nwrote {RESULTS.relative_to(ROOT)}/accuracy.md, accuracy.json, README-section.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

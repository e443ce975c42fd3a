"""The short answer ``kvledger plan`` opens with (and all ``--quiet`` prints), from its JSON.

The first line answers the question asked: with ``--concurrency N``, the longest context N
requests at once can hold; else whether one ``max_model_len`` request fits and how many run at
once. Then the KV tokens; the KV budget and what it is left from; the bytes a token and a
request take; then, where they apply, why the tokens are not blocks × block size, the engine's
refusal, and what all GPUs hold together — never a total that contradicts a refusal (a rank
that cannot hold one request is not multiplied by the ranks). The tables below it are the
detail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GIB = 1 << 30


def _gib(value: Any) -> str:
    return f"{value / GIB:,.2f} GiB" if isinstance(value, int | float) else "?"


def _int(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "?"


def _verdict(data: Mapping[str, Any]) -> str:
    length = _int(data.get("max_model_len"))
    concurrency = data.get("max_concurrency")
    x = f"{concurrency:,.2f}" if isinstance(concurrency, int | float) else "?"
    if data.get("vllm_refuses_to_start"):
        return (f"does not fit: one {length}-token request needs more than the KV budget, so "
                f"vLLM refuses to start ({_int(data.get('kv_cache_tokens'))} KV tokens, {x} "
                "such requests)")
    if isinstance(concurrency, int | float) and concurrency < 1:
        return (f"does not fit one {length}-token request: {_int(data.get('kv_cache_tokens'))} "
                f"KV tokens, {x} requests of max_model_len at once")
    return (f"fits: {_int(data.get('kv_cache_tokens'))} KV tokens, {x} requests of "
            f"max_model_len {length} at once")


# Reserves a person chose (a model's own declarations, the LoRA slots a launch asks for) are
# named in the summary, not folded into "other reserves" with the engine's own estimates.
_NAMED = {"model_local_kv": "model-local KV (declared)", "lora": "LoRA slots"}


def _between(label: str, start: str) -> str:
    text = label.removeprefix(start).strip()
    return text.split(" (", 1)[0]


def budget_line(budget: Any) -> str:
    """The KV budget per GPU and where it comes from, from the budget lines."""
    if not isinstance(budget, list) or not budget:
        return "KV budget: ?"
    lines = [b for b in budget if isinstance(b, Mapping)]
    kv = next((b for b in lines if b.get("key") == "kv_budget"), lines[-1])
    head = f"KV budget {_gib(kv.get('bytes'))} per GPU ({kv.get('basis')})"
    rest = [b for b in lines if b is not kv]
    if not rest:
        return head
    parts: list[str] = []
    others = 0
    for b in rest:
        key, label = b.get("key"), str(b.get("label", ""))
        if key == "gpu_total":
            parts.append(f"GPU {_gib(b.get('bytes'))}")
        elif label.startswith("×"):
            parts.append(f"{_gib(b.get('bytes'))} usable ({_between(label, '×')})")
        elif key == "weights":
            parts.append(f"weights {_gib(b.get('bytes'))}")
        elif key not in _NAMED and label.startswith("−") and isinstance(b.get("bytes"), int):
            others += int(b["bytes"])
        elif key in _NAMED and isinstance(b.get("bytes"), int):
            parts.append(f"{_NAMED[key]} {_gib(b.get('bytes'))}")
    if others:
        parts.append(f"other reserves {_gib(others)}")
    return f"{head}: {', '.join(parts)}"


def bytes_line(data: Mapping[str, Any]) -> str:
    per_token, per_request = data.get("bytes_per_token"), data.get("bytes_per_request")
    pp = data.get("pipeline_parallel_size", 1)
    # The rows are the whole model on one tensor-parallel rank: with PP, every stage's layers.
    where = "per GPU" if pp == 1 else f"per TP rank, the {pp} stages together"
    line = f"{where}: {_int(per_token)} B of KV per token"
    if per_request:
        line += f", {_int(per_request)} B of state per request"
    blocks, size = data.get("num_blocks"), data.get("block_size")
    if isinstance(size, int) and size > 1:
        line += f"; {_int(blocks)} blocks of {_int(size)} tokens"
    return line + f"; KV dtype {data.get('kv_cache_dtype')}"


def answer_line(data: Mapping[str, Any]) -> str | None:
    """``64 requests at once: max context 7,120 tokens each`` — the answer to ``plan
    --concurrency N`` (None when it was not asked)."""
    answers = data.get("answers")
    if not isinstance(answers, Mapping) or answers.get("concurrency") is None:
        return None
    n = answers["concurrency"]
    best = answers.get("max_context_at_concurrency")
    replicas = data.get("totals", {}).get("replicas", 1) if isinstance(
        data.get("totals"), Mapping) else 1
    each = " per replica" if isinstance(replicas, int) and replicas > 1 else ""
    head = f"{_int(n)} request{'s' if n != 1 else ''} at once{each}: "
    if not isinstance(best, int):
        return head + "they do not fit, even at one token each"
    tail = ""
    note = str(answers.get("max_context_note") or "")
    if note.startswith("capped"):
        tail = " (or more: the longest context considered)"
    return head + f"max context {_int(best)} tokens each{tail}"


def _totals_line(data: Mapping[str, Any], totals: Mapping[str, Any]) -> str:
    replicas = totals.get("replicas")
    head = (f"all {totals['gpus']} GPUs ({_int(replicas)} "
            f"replica{'s' if replicas != 1 else ''})")
    per = data.get("max_concurrency")
    if data.get("vllm_refuses_to_start") or (isinstance(per, int | float) and per < 1):
        # A request never spans replicas: ranks that cannot each hold one hold none together.
        return (f"{head}: each replica holds {per:,.2f} of one {_int(data.get('max_model_len'))}"
                "-token request, so none runs; more replicas do not change that"
                if isinstance(per, int | float) else f"{head}: none runs")
    concurrency = totals.get("max_concurrency")
    x = f"{concurrency:,.2f}" if isinstance(concurrency, int | float) else "?"
    return f"{head}: {_int(totals.get('kv_cache_tokens'))} KV tokens, {x} requests at once"


def summary_lines(data: Mapping[str, Any]) -> list[str]:
    """The summary, one string a line (plain text: no markup); the answer first."""
    engine = str(data.get("engine", "?"))
    release = data.get("engine_release")
    layout = [f"TP {data.get('tensor_parallel_size', 1)}"]
    if data.get("decode_context_parallel_size", 1) != 1:  # vLLM's -dcp: within the TP ranks
        layout[0] += f", DCP {data['decode_context_parallel_size']}"
    for key, name in (("pipeline_parallel_size", "PP"), ("data_parallel_size", "DP")):
        if data.get(key, 1) != 1:
            layout.append(f"{name} {data[key]}")
    answer = answer_line(data)
    lines = [answer] if answer is not None else []
    lines += [
        f"{data.get('model')} on {engine}{' ' + release if release else ''} "
        f"({' × '.join(layout)}): {_verdict(data)}",
        budget_line(data.get("budget")),
        bytes_line(data),
    ]
    if data.get("kv_cache_tokens_note"):
        lines.append(f"why: {data['kv_cache_tokens_note']}")
    if data.get("vllm_refusal_reason"):
        lines.append(f"vLLM: {data['vllm_refusal_reason']}")
    totals = data.get("totals")
    if isinstance(totals, Mapping) and totals.get("gpus", 1) > 1:
        lines.append(_totals_line(data, totals))
    return lines

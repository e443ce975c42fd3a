"""The short answer ``kvledger plan`` opens with (and all ``--quiet`` prints), from its JSON.

Four to six lines: whether one ``max_model_len`` request fits and how many run at once, the KV
tokens; the KV budget and what it is left from; the bytes a token and a request take; then,
where they apply, why the tokens are not blocks × block size, the engine's refusal, and what
all GPUs hold together. The tables below it are the detail.
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
        elif label.startswith("−") and isinstance(b.get("bytes"), int):
            others += int(b["bytes"])
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


def summary_lines(data: Mapping[str, Any]) -> list[str]:
    """The summary, one string a line (plain text: no markup)."""
    engine = str(data.get("engine", "?"))
    release = data.get("engine_release")
    layout = [f"TP {data.get('tensor_parallel_size', 1)}"]
    for key, name in (("pipeline_parallel_size", "PP"), ("data_parallel_size", "DP")):
        if data.get(key, 1) != 1:
            layout.append(f"{name} {data[key]}")
    lines = [
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
        concurrency = totals.get("max_concurrency")
        x = f"{concurrency:,.2f}" if isinstance(concurrency, int | float) else "?"
        lines.append(f"all {totals['gpus']} GPUs ({_int(totals.get('replicas'))} "
                     f"replica{'s' if totals.get('replicas') != 1 else ''}): "
                     f"{_int(totals.get('kv_cache_tokens'))} KV tokens, {x} requests at once")
    return lines

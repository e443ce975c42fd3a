"""The question every tool is asked and the shape of its answer (stdlib only: runs in both venvs).

A question (a JSON object) carries exactly what vLLM was given for one oracle case:
``config`` (the config.json dict), ``hf_quant_config`` (dict or None), ``max_model_len``,
``kv_cache_memory_bytes`` (KV budget per worker), ``kv_cache_dtype`` (vLLM's name),
``tensor_parallel_size`` and ``block_size`` (int or "auto").

An answer says, per metric, a number, or that the tool refused (it raised: failing closed), or
that the tool has no way to answer that question ("n/a": e.g. no notion of a memory budget).
"""

from __future__ import annotations

import traceback
import warnings
from collections.abc import Callable
from typing import Any

METRICS = ("bytes_per_token", "kv_cache_tokens", "max_concurrency")

Answer = dict[str, Any]


def answer(**values: Any) -> Answer:
    """An answer: per metric a number (``bytes_per_token=...``), a refusal of that one metric
    (``bytes_per_token_refused="why"``), or why the tool has no such question
    (``bytes_per_token_na="why"``; the default when a metric is not mentioned).
    Any other keyword is kept as a detail (e.g. the KV dtype the tool chose).
    """
    out: Answer = {"status": "ok", "values": {}, "refused": {}, "na": {}, "notes": []}
    for metric in METRICS:
        value = values.pop(metric, None)
        why_refused = values.pop(f"{metric}_refused", None)
        why_na = values.pop(f"{metric}_na", "the tool does not answer this")
        if value is not None:
            out["values"][metric] = value
        elif why_refused is not None:
            out["refused"][metric] = why_refused
        else:
            out["na"][metric] = why_na
    out.update(values)
    return out


def refused(reason: str) -> Answer:
    """The tool gave no number for this model at all (it raised, or declines the config)."""
    return {"status": "refused", "reason": reason, "values": {}, "refused": {}, "na": {},
            "notes": []}


def unavailable(reason: str) -> Answer:
    """The tool could not be asked at all (not installed, import failed): not a verdict."""
    return {"status": "unavailable", "reason": reason, "values": {}, "refused": {}, "na": {},
            "notes": []}


def guarded(fn: Callable[[dict[str, Any]], Answer], question: dict[str, Any]) -> Answer:
    """Run one adapter call; an exception from the peer is its refusal, with its message.

    Warnings the peer emits are kept as notes: a tool that answers but warns is still answering.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(question)
        except Exception as exc:  # the peer's own failure mode is what we measure
            where = traceback.extract_tb(exc.__traceback__)[-1]
            short = where.filename.rsplit("site-packages/", 1)[-1].rsplit("/src/", 1)[-1]
            origin = f"{short}:{where.lineno}"
            result = refused(f"{type(exc).__name__}: {_one_line(str(exc))} [{origin}]")
    result.setdefault("notes", [])
    result["notes"].extend(_one_line(str(w.message))[:200] for w in caught)
    return result


def _one_line(text: str) -> str:
    return " ".join(text.split())[:400]

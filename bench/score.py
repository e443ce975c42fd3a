"""Judging an answer against the oracle: one outcome per (tool, question, metric).

Outcomes: ``within`` (|relative error| <= 0.1 %), ``wrong``, ``refused`` (the tool raised or
declined: failing closed, counted apart from wrong), ``n/a`` (the tool has no such question,
e.g. no memory-budget input). Only metrics with a truth are judged.

Tools that answer concurrency in whole sequences (kvfit, vllm-wizard) are within when they give
the oracle's concurrency rounded down, so that rounding is never counted as their error;
otherwise their error is taken against the unrounded figure.

A whole-case refusal counts only against the metrics the tool has inputs for: hf-mem refusing a
config is a refusal of its bytes per token, not of a budget question it never takes.

Where the engine itself refused to start, there is no number to be near: the truth is the
refusal. A tool **matches** when it refuses too and its message contains the engine's reason
(``reason_of``: the first sentence of the engine's error); a refusal for another reason is
counted apart (failing closed, but not saying why the engine would stop), and a tool that gives
numbers has *answered* a question the engine would not start on. These cases are never part of
"within".
"""

from __future__ import annotations

import math
import re
from typing import Any

TOLERANCE = 0.001
METRICS = ("bytes_per_token", "kv_cache_tokens", "max_concurrency")
OUTCOMES = ("within", "wrong", "refused", "n/a")
REFUSAL_OUTCOMES = ("same refusal", "refused, other reason", "answered", "n/a")


def relative_error(value: float, truth: float) -> float:
    if truth == 0:
        return 0.0 if value == 0 else math.inf
    return (value - truth) / truth


def judge(answer: dict[str, Any], truth: dict[str, Any], metric: str,
          answerable: list[str]) -> dict[str, Any] | None:
    """The outcome for one metric, or None when the oracle has no truth for it."""
    true_value = truth.get(metric)
    if true_value is None:
        return None
    if metric not in answerable and answer["status"] != "unavailable":
        why = answer.get("na", {}).get(metric) or "the tool has no input for this question"
        return {"outcome": "n/a", "truth": true_value, "why": why}
    if answer["status"] != "ok":
        kind = "refused" if answer["status"] == "refused" else "n/a"
        return {"outcome": kind, "truth": true_value, "why": answer.get("reason", "")}
    if metric in answer["values"]:
        value = answer["values"][metric]
        err = relative_error(value, true_value)
        if metric == "max_concurrency" and answer.get("concurrency_is_integer"):
            err = 0.0 if value == math.floor(true_value) else err
        outcome = "within" if abs(err) <= TOLERANCE else "wrong"
        return {"outcome": outcome, "truth": true_value, "value": value, "error": err}
    if metric in answer.get("refused", {}):
        return {"outcome": "refused", "truth": true_value, "why": answer["refused"][metric]}
    return {"outcome": "n/a", "truth": true_value, "why": answer.get("na", {}).get(metric, "")}


def case_outcome(judged: list[dict[str, Any]]) -> str:
    """One outcome for a whole case: wrong if any answered metric is wrong; within if every
    answered metric is within; refused if it answered none and refused some; else n/a."""
    kinds = [j["outcome"] for j in judged]
    if "wrong" in kinds:
        return "wrong"
    if "within" in kinds:
        return "within"
    if "refused" in kinds:
        return "refused"
    return "n/a"


def worst(judged: list[dict[str, Any]]) -> dict[str, Any]:
    """The answered judgement with the largest |error| (refusals counted beside it)."""
    answered = [j for j in judged if "error" in j]
    refusals = sum(j["outcome"] == "refused" for j in judged)
    if not answered:
        return {"error": None, "refused": refusals, "answered": 0}
    top = max(answered, key=lambda j: abs(j["error"]))
    return {"error": top["error"], "refused": refusals, "answered": len(answered)}


def reason_of(error: str) -> str:
    """The first sentence of an engine's error, without the exception type, pydantic's frame or
    vLLM's attention selector dumping its whole config: what a matching refusal must say."""
    # A failed bare ``assert`` in a worker (vLLM's model code) has no message: its reason is
    # the assertion the traceback ends on.
    failed = re.search(r"(assert [^\^]+?)\s*\^+\s*AssertionError\s*$", error)
    if failed:
        return failed.group(1).strip()
    text = error.split("Value error, ", 1)[-1]
    # transformers' strict config dataclasses (huggingface_hub StrictDataclassClassValidationError)
    # name the validator on the first line and put the validator's own error on the next.
    nested = re.match(r"^StrictDataclassClassValidationError: Class validation error for "
                      r"validator '[^']*':\s*\n\s*(.+)", text)
    if nested:
        text = nested.group(1)
    text = re.sub(r"^[A-Za-z]+Error: ", "", text)
    # vLLM sometimes raises with logger-style arguments, ValueError("... %s ...", value), which
    # prints as the tuple ('... %s ...', 'value'): its reason is the message with the value in.
    logged = re.match(r"^\('((?:[^'\\]|\\.)*)', '([^']*)'\)", text)
    if logged:
        text = logged.group(1).replace("%s", logged.group(2), 1)
    text = re.split(r"\. | \[type=|\n", text, maxsplit=1)[0]
    return text.split(" with AttentionSelectorConfig", 1)[0].strip().removesuffix(".")


def judge_refusal(answer: dict[str, Any], reason: str) -> str:
    """One outcome of ``REFUSAL_OUTCOMES`` for a question the engine refused to start on."""
    if answer["status"] == "refused":
        return "same refusal" if reason in answer.get("reason", "") else "refused, other reason"
    if answer["status"] != "ok":
        return "n/a"
    if answer.get("values"):
        return "answered"
    if answer.get("refused"):
        why = " ".join(answer["refused"].values())
        return "same refusal" if reason in why else "refused, other reason"
    return "n/a"

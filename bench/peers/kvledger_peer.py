"""kvledger's side of the benchmark: ``plan_model(..., PlanRequest(engine="vllm", ...))``.

Runs in the project's interpreter (the caller puts ``src/`` on the path if kvledger is not
installed). Each question's model is a directory holding exactly what vLLM was given for the
case: ``config.json`` and, where the oracle had one, ``hf_quant_config.json``. Anything the
library raises, including "not implemented yet" while the planner is being built, is recorded as
a refusal with its message, the same rule the peers get.

bytes per token is the answer in kvledger's own vocabulary: the entry bytes of its paged class
"kv" (one block, per rank) divided by the final block size.
"""

from __future__ import annotations

import importlib
import json
import tempfile
from pathlib import Path
from typing import Any

from common import Answer, answer, refused

NAME = "kvledger"
METRICS = ("bytes_per_token", "kv_cache_tokens", "max_concurrency")

# PlanRequest fields taken from the oracle's ``inputs`` when the case gives them.
_FIELDS = (
    "kv_cache_memory_bytes", "max_model_len", "kv_cache_dtype", "tensor_parallel_size",
    "max_num_seqs", "max_num_batched_tokens", "enable_prefix_caching",
    "num_speculative_tokens", "speculative_method",
)


def version() -> str:
    try:
        from importlib import metadata

        return metadata.version("kvledger")
    except Exception:
        return "source tree"


def _model_dir(question: dict[str, Any], root: Path) -> Path:
    where: Path = root / str(question["id"]).replace("/", "--").replace(":", "_")
    where.mkdir(parents=True)
    (where / "config.json").write_text(json.dumps(question["config"]))
    if question.get("hf_quant_config") is not None:
        (where / "hf_quant_config.json").write_text(json.dumps(question["hf_quant_config"]))
    return where


def _as_dict(payload: Any) -> dict[str, Any]:
    payload = payload.to_json() if hasattr(payload, "to_json") else payload
    if isinstance(payload, str):
        payload = json.loads(payload)
    if not isinstance(payload, dict):
        raise TypeError(f"plan_model gave {type(payload).__name__}, not a JSON object")
    return payload


def ask_all(questions: list[dict[str, Any]]) -> dict[str, Answer]:
    from common import guarded

    with tempfile.TemporaryDirectory(prefix="kvledger-bench-") as tmp:
        root = Path(tmp)
        answers = {q["id"]: guarded(lambda q: _ask(q, root), q) for q in questions}
    for got in answers.values():  # the temporary directory means nothing once it is gone
        if "reason" in got:
            got["reason"] = got["reason"].replace(str(root), "<model dir>")
    return answers


def _ask(question: dict[str, Any], root: Path) -> Answer:
    try:  # imported per call: the planner lands module by module while this is being written
        plan_model = importlib.import_module("kvledger.plan.api").plan_model
        PlanRequest = importlib.import_module("kvledger.plan.request").PlanRequest
    except (ImportError, AttributeError) as exc:
        return refused(f"not implemented yet: {type(exc).__name__}: {exc}")
    inputs = question["inputs"]
    fields = {k: inputs[k] for k in _FIELDS if k in inputs}
    block = inputs.get("block_size", 16)
    fields["block_size"] = None if str(block) == "auto" else int(block)
    request = PlanRequest(engine="vllm", **fields)
    data = _as_dict(plan_model(str(_model_dir(question, root)), request))
    kv = [p for p in data.get("pools", []) if p.get("name") == "kv"]
    per_token: dict[str, Any] = {}
    if len(kv) == 1 and data.get("block_size"):
        per_token["bytes_per_token"] = kv[0]["entry_bytes"] / data["block_size"]
    else:
        per_token["bytes_per_token_na"] = "no single paged class 'kv' in the plan"
    return answer(
        kv_cache_tokens=data.get("kv_cache_tokens"),
        max_concurrency=data.get("max_concurrency"),
        vllm_refuses_to_start=data.get("vllm_refuses_to_start"),
        block_size=data.get("block_size"),
        warnings=data.get("warnings", []),
        **per_token,
    )

"""A disaggregated deployment planned as one: a prefill instance and a decode instance of the
same model, each planned by its engine's layout, with the KV transfer and the host tiers
beside each pool.

Input: each role's plan (``PlanResult.to_json()``) and what the role adds beside its pool
(vLLM: the ``kv_transfer`` its plan carries, ``engines/vllm/connectors.py``; SGLang: the
role's ``engines/sglang/disaggregation.py`` memory). Output: per role its per-GPU budget and
pool, the bytes beyond the pool on the GPU and the host, and the host tiers; for the decode
role the requests its pool holds at the asked context; and, given N requests of L tokens, how
many decode instances hold them (``decode_instances``).

Why the decode side's pool decides: KV moves from the prefill to the decode instance and
stays there for the whole generation, so N concurrent requests of L tokens need N × L tokens
of decode pools; the prefill instance only needs one request's blocks in flight (vLLM refuses
to start when one request of ``max_model_len`` does not fit, which its plan already checks).
Capacity is stated in whole requests of the pool, never as throughput.
"""

from __future__ import annotations

import math
from typing import Any

from kvledger.errors import PlanError


class DisaggError(PlanError):
    """A prefill/decode pair kvledger cannot plan as given; says which line and why."""


def _first(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    return int(value) if value is not None else 1


def instance_gpus(plan: dict[str, Any]) -> int:
    totals = plan.get("totals") or {}
    if totals.get("gpus"):
        return int(totals["gpus"])
    return (_first(plan, "tensor_parallel_size") * _first(plan, "pipeline_parallel_size")
            * _first(plan, "data_parallel_size"))


def tokens_per_request(context: int, block_size: int) -> int:
    """A request of ``context`` tokens holds whole blocks (pages)."""
    return math.ceil(context / block_size) * block_size


# Blocks an engine's pool holds back from requests: vLLM's BlockPool keeps block 0 as the null
# block (v1/core/block_pool.py); SGLang's kv_cache_tokens (max_total_num_tokens) are all usable.
HELD_BACK_BLOCKS = {"vllm": 1}


def requests_at(plan: dict[str, Any], context: int) -> dict[str, Any]:
    """Whole requests of ``context`` tokens the instance's pool holds, and its batch cap."""
    if len(plan.get("pools") or []) != 1 or plan.get("swa_tokens"):
        raise DisaggError("the decode model has several KV pools; kvledger answers the decode "
                          "side's concurrency for one-pool models only")
    if context > int(plan["max_model_len"]):
        raise DisaggError(f"--context {context} is longer than the decode line's max_model_len "
                          f"({plan['max_model_len']}): raise it on the line")
    block = int(plan["block_size"])
    per_request = tokens_per_request(context, block)
    replicas = int((plan.get("totals") or {}).get("replicas") or 1)
    held_back = HELD_BACK_BLOCKS.get(str(plan.get("engine")), 0) * block
    per_replica = (int(plan["kv_cache_tokens"]) - held_back) // per_request
    cap = int(plan.get("max_running_requests") or plan.get("max_num_seqs") or per_replica)
    held = min(per_replica, cap) * replicas
    return {"context": context, "tokens_per_request": per_request,
            "requests_by_pool": per_replica * replicas, "batch_cap": cap * replicas,
            "requests": held}


def _budget(plan: dict[str, Any]) -> dict[str, int]:
    return {line["key"]: int(line["bytes"]) for line in plan.get("budget") or []}


def role_summary(role: str, plan: dict[str, Any], transfer: dict[str, Any] | None,
                 serve_line: str) -> dict[str, Any]:
    """One role: its pool, the budget per GPU, and the bytes beyond the pool."""
    budget = _budget(plan)
    gpu_extra = int((transfer or {}).get("gpu_bytes_per_gpu") or 0)
    host_per_gpu = (transfer or {}).get("host_bytes_per_gpu")
    gpus = instance_gpus(plan)
    if host_per_gpu is None:  # a vLLM connector states the instance's bytes
        host = int((transfer or {}).get("host_bytes") or 0)
    else:
        host = int(host_per_gpu) * gpus
    warnings = list(plan.get("warnings") or [])
    total, share = budget.get("gpu_total"), budget.get("utilization")
    # vLLM 0.34's extensible KV cache builds the connector after sizing the cache
    # (v1/worker/gpu_worker.py initialize_from_config → extend_kv_cache), out of the margin it
    # left free (extensible_budget.py kv_margin) beside what utilization 1.0 leaves.
    left = (total - share + budget.get("kv_margin", 0)) if total and share is not None else 0
    if gpu_extra and total and share is not None and gpu_extra > left:
        warnings.append(f"{role}: {gpu_extra:,} B per GPU beyond the KV pool do not fit the "
                        f"{left:,} B left above the memory fraction: lower it")
    return {
        "role": role, "serve_line": serve_line, "engine": plan["engine"],
        "engine_release": plan.get("engine_release"), "gpus": gpus,
        "tensor_parallel_size": plan.get("tensor_parallel_size"),
        "budget": plan.get("budget"), "kv_budget_per_gpu": budget.get("kv_budget"),
        "block_size": plan["block_size"], "num_blocks": plan["num_blocks"],
        "kv_cache_tokens": plan["kv_cache_tokens"], "bytes_per_token": plan["bytes_per_token"],
        "max_model_len": plan["max_model_len"], "max_concurrency": plan["max_concurrency"],
        "transfer": transfer, "gpu_bytes_beyond_pool_per_gpu": gpu_extra,
        "host_bytes": host, "warnings": warnings, "_plan": plan,
    }


def pair(prefill: dict[str, Any], decode: dict[str, Any], *, context: int | None,
         requests: int | None = None) -> dict[str, Any]:
    """The deployment: both roles (``role_summary``), the decode concurrency at ``context``
    (default: the decode line's ``max_model_len``) and, with ``requests``, the decode
    instances and GPUs that hold them."""
    if prefill["engine"] != decode["engine"]:
        raise DisaggError(f"the prefill line runs {prefill['engine']} and the decode line "
                          f"{decode['engine']}: KV moves between instances of one engine")
    _same_transfer(prefill, decode)
    length = context or int(decode["max_model_len"])
    at = requests_at(decode["_plan"], length)
    if length > int(prefill["max_model_len"]):
        raise DisaggError(f"--context {length} is longer than the prefill line's "
                          f"max_model_len ({prefill['max_model_len']}): raise it on the line")
    for role in (prefill, decode):
        _prefixes(role, length)
    out: dict[str, Any] = {
        "engine": decode["engine"], "engine_release": decode.get("engine_release"),
        "model": decode["_plan"]["model"],
        "roles": [{k: v for k, v in r.items() if k != "_plan"} for r in (prefill, decode)],
        "decode_requests_at_context": at,
        "host_bytes": prefill["host_bytes"] + decode["host_bytes"],
    }
    if requests is not None:
        per = at["requests"]
        if per == 0:
            raise DisaggError(f"one decode instance holds no request of {length} tokens: "
                              "give the decode line more GPUs or a shorter context")
        instances = math.ceil(requests / per)
        out["fit"] = {
            "requests": requests, "context": length, "requests_per_decode_instance": per,
            "decode_instances": instances, "decode_gpus": instances * decode["gpus"],
            "prefill_instances": 1, "prefill_gpus": prefill["gpus"],
            "gpus": instances * decode["gpus"] + prefill["gpus"],
            "host_bytes": prefill["host_bytes"] + instances * decode["host_bytes"],
            "serve_lines": {"prefill": prefill["serve_line"],
                            "decode": decode["serve_line"]},
        }
    return out


# What moves KV from one instance to another: vLLM's P/D connectors (an offloading or LMCache
# connector keeps a copy, it does not send one: LMCache's own P/D mode is not modelled), or
# SGLang's transfer backend.
TRANSFER_CONNECTORS = ("NixlConnector", "MooncakeConnector")


def _transfers(transfer: dict[str, Any]) -> set[str]:
    if transfer.get("transfer_backend"):
        return {str(transfer["transfer_backend"])}
    names = {transfer.get("connector")} | {c.get("connector")
                                           for c in transfer.get("children") or []}
    return {str(n) for n in names if n in TRANSFER_CONNECTORS}


def _same_transfer(prefill: dict[str, Any], decode: dict[str, Any]) -> None:
    sent = _transfers(prefill.get("transfer") or {})
    received = _transfers(decode.get("transfer") or {})
    for role, names in (("prefill", sent), ("decode", received)):
        if not names:
            raise DisaggError(f"the {role} line moves no KV between instances: give it "
                              f"{' or '.join(TRANSFER_CONNECTORS)} (alone or in a "
                              "MultiConnector)")
    if not sent & received:
        raise DisaggError(f"the prefill line sends KV with {', '.join(sorted(sent))} and the "
                          f"decode line receives with {', '.join(sorted(received))}: give both "
                          "the same")


def _prefixes(role: dict[str, Any], context: int) -> None:
    """Each host tier's capacity in whole prefixes of ``context`` tokens (``prefixes_at_context``):
    what prefix-cache reuse it can hold, as a count, never as a hit rate. A tier keeps whole
    chunks (pages), so a prefix takes ``ceil(context / chunk)`` of them."""
    transfer = role.get("transfer") or {}
    for tier in transfer.get("tiers") or []:
        tier["prefixes_at_context"] = tier["chunks"] // math.ceil(
            context / tier["tokens_per_chunk"])
    pool = transfer.get("host_pool")
    if pool:
        pool["prefixes_at_context"] = pool["tokens"] // tokens_per_request(
            context, int(role["block_size"]))

"""What ``kvledger inspect`` reports: a model's facts per layer, in runs and by kind."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any


def index_ranges(indices: list[int]) -> str:
    """``[0, 1, 2, 4, 6, 7]`` → ``"0-2,4,6-7"``."""
    parts: list[str] = []
    start = prev = indices[0]
    for i in [*indices[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ",".join(parts)


def _engine_reason(exc: Exception) -> Exception:
    """derive's refusal, or the default engine's reason for not serving the model type where
    it has one (a user asks kvledger about a model they mean to serve)."""
    from kvledger.derive import UnsupportedArchitecture
    from kvledger.plan.engines.base import get_layout
    from kvledger.plan.engines.registry import DEFAULT_ENGINE

    model_type = getattr(exc, "model_type", "")
    why = get_layout(DEFAULT_ENGINE).not_served(model_type) if model_type else ""
    if not why:
        return exc
    return UnsupportedArchitecture(f"unsupported: {why}", model_type=model_type,
                                   architectures=getattr(exc, "architectures", ()))


def inspect_payload(model: Any, kv_cache_dtype: str = "auto") -> dict[str, Any]:
    """The JSON ``kvledger inspect --json`` prints: model facts, per-layer and run-length groups.

    Groups merge *consecutive* layers whose facts are identical except for the index, so an
    interleaved pattern (Gemma's 5 sliding : 1 full) stays visible instead of being folded
    into two totals that hide the order.
    """
    from kvledger.derive import UnsupportedArchitecture, derive_model
    from kvledger.derive.kvdtype import served_kv_dtype
    from kvledger.derive.layers import Role

    explicit = None if kv_cache_dtype == "auto" else kv_cache_dtype
    try:
        facts = derive_model(model, kv_cache_dtype=explicit)
    except UnsupportedArchitecture as exc:
        raise _engine_reason(exc) from None
    kv_dtype_source = facts.kv_dtype_source
    notes = list(facts.notes)
    served = served_kv_dtype(facts.kv_dtype, facts.kv_dtype_source, explicit)
    if served is not None:
        # What the engines store, not what transformers would load: one dtype and one byte
        # count in inspect, plan and the pools (--kv-cache-dtype float32 shows float32).
        facts = derive_model(model, kv_cache_dtype=served)
        kv_dtype_source = "vLLM --dtype auto: a float32 checkpoint is served in bfloat16"
    layers = [layer.describe() for layer in facts.layers]
    groups: list[dict[str, Any]] = []
    for row in layers:
        key = {k: v for k, v in row.items() if k != "index"}
        if groups and groups[-1]["facts"] == key and groups[-1]["last"] + 1 == row["index"]:
            groups[-1]["last"] = row["index"]
            groups[-1]["count"] += 1
            continue
        groups.append({"first": row["index"], "last": row["index"], "count": 1, "facts": key})
    # The same facts gathered wherever they occur: a hybrid's pattern in a few rows.
    kinds: list[dict[str, Any]] = []
    for row in layers:
        key = {k: v for k, v in row.items() if k != "index"}
        same = next((k for k in kinds if k["facts"] == key), None)
        if same is None:
            kinds.append({"indices": [row["index"]], "facts": key})
        else:
            same["indices"].append(row["index"])
    for kind in kinds:
        kind["count"] = len(kind["indices"])
        kind["layers"] = index_ranges(kind.pop("indices"))
    describe = getattr(model, "describe", None)  # a ModelSource says where it came from
    weights = _weights(model, facts)
    return {
        "model": facts.model,
        **({"source": describe()} if callable(describe) else {}),
        "model_type": facts.model_type,
        "architectures": list(facts.architectures),
        "model_dtype": facts.model_dtype,
        "kv_dtype": facts.kv_dtype,
        "kv_dtype_source": kv_dtype_source,
        "max_position_embeddings": facts.max_position_embeddings,
        "num_layers": len(layers),
        # Served totals: the MTP (next-n) layers hold cache only when speculative decoding
        # drafts with them, so they are counted apart (``mtp_*``).
        "bytes_per_token": facts.bytes_per_token() - facts.bytes_per_token(Role.MTP),
        "bytes_per_request": facts.bytes_per_request() - facts.bytes_per_request(Role.MTP),
        "mtp_bytes_per_token": facts.bytes_per_token(Role.MTP),
        "mtp_bytes_per_request": facts.bytes_per_request(Role.MTP),
        "groups": groups,
        "kinds": kinds,
        "layers": layers,
        "weights": weights,
        "notes": list(dict.fromkeys(notes)),
        "warnings": list(facts.warnings),
    }


def _weights(model: Any, facts: Any) -> dict[str, Any]:
    """The whole checkpoint's weights (``plan/checkpoint_weights.py``): exact
    from its safetensors headers when ``model`` is a source that has them, else estimated
    from the architecture."""
    from kvledger.plan.checkpoint_weights import checkpoint_weights

    read = getattr(model, "safetensors", None)  # a ModelSource can read its headers
    exact = read() if callable(read) else None
    return checkpoint_weights(facts.config, model_dtype=facts.model_dtype, exact=exact,
                              hf_quant=facts.hf_quant_config)

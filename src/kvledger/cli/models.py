"""What ``kvledger models`` lists: the bundled catalog ids and the model types kvledger derives
(read from the model-type table, grouped by handler, wrappers marked)."""

from __future__ import annotations

from typing import Any


def models_payload() -> dict[str, Any]:
    """``{"catalog": [ids], "model_types": [...], "architectures": [...], "refused": [...]}``.

    A wrapper (multimodal ``*ForConditionalGeneration``) is listed under its language model's
    handler, with the key it reads the language model from and the inner types it accepts.
    Rows reached by architecture (EAGLE3 drafts) are listed apart: they are not model types.
    """
    from kvledger.derive.model_types import ARCHITECTURES, MODEL_TYPES, resolve
    from kvledger.plan.engines.base import get_layout
    from kvledger.plan.engines.registry import DEFAULT_ENGINE
    from kvledger.source.catalog import catalog_ids

    default = get_layout(DEFAULT_ENGINE)

    by_architecture = set(ARCHITECTURES.values())
    types: list[dict[str, Any]] = []
    refused: list[dict[str, str]] = []
    for name in sorted(MODEL_TYPES):
        row = resolve(name)
        if not row.derivable:
            via = sorted(a for a, n in ARCHITECTURES.items() if n == name)
            refused.append({"what": f"architecture {via[0]}" if via else name,
                            "reason": default.not_served(name)
                            or "kvledger has no handler for this config schema"})
            continue
        if name in by_architecture:
            continue
        handler_row = row
        while handler_row.is_wrapper:  # a wrapper may hold a wrapper (Qwen2.5-Omni's thinker)
            handler_row = resolve(handler_row.inner[0])
        types.append({
            "model_type": name,
            "handler": handler_row.handler,
            "wrapper": row.is_wrapper,
            "text_key": row.text_key or None,
            "inner": list(row.inner),
            "like": row.chain[1] if len(row.chain) > 1 else None,
            "config_class": row.config_class or None,
            "vllm": row.vllm or None,
        })
    archs = [
        {"architecture": arch, "row": name, "handler": resolve(name).handler}
        for arch, name in sorted(ARCHITECTURES.items()) if resolve(name).derivable
    ]
    return {"catalog": catalog_ids(), "model_types": types, "architectures": archs,
            "refused": refused}


def render_models(data: dict[str, Any]) -> str:
    """Plain text: catalog ids one per line, then model types grouped by handler module."""
    lines = [f"catalog ({len(data['catalog'])} bundled configs; use as MODEL):"]
    lines += [f"  {model_id}" for model_id in data["catalog"]]
    types = data["model_types"]
    lines += ["", f"model types ({len(types)} derived; * = multimodal wrapper → its language "
                  "model's type):"]
    groups: dict[str, list[str]] = {}
    for row in types:
        module = row["handler"].split(":", 1)[0]
        label = (f"{row['model_type']}* → {'/'.join(row['inner'])}" if row["wrapper"]
                 else row["model_type"])
        groups.setdefault(module, []).append(label)
    width = max((len(m) for m in groups), default=0)
    for module in sorted(groups):
        lines.append(f"  {module:<{width}}  {', '.join(groups[module])}")
    if data["architectures"]:
        lines += ["", "architectures (drafts that reuse a target's model_type):"]
        lines += [f"  {a['architecture']} → {a['handler']}" for a in data["architectures"]]
    if data["refused"]:
        lines += ["", "recognized, not derived (with the default engine's reason):"]
        lines += [f"  {r['what']}: {r['reason']}" for r in data["refused"]]
    return "\n".join(lines) + "\n"

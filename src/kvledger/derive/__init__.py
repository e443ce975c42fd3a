"""Real model configs → engine-neutral per-layer cache facts.

``derive_model(model)`` is the one entry point: it loads the config (see ``source``), finds
its row in the model-type table (``model_types``, via ``registry``), runs the one guard on
every level — the top-level config, a wrapper's inner text config (see ``guard``) — resolves
the KV element type, runs the row's handler, and returns ``ModelFacts``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.derive.config import Config, check_level_values
from kvledger.derive.errors import (
    ConfigError,
    DeriveError,
    UnknownCacheKey,
    UnsupportedArchitecture,
)
from kvledger.derive.guard import check_level
from kvledger.derive.layers import Kind, LayerCache, ModelFacts, RecurrentState, Role
from kvledger.derive.limits import MAX_CACHE_LAYERS
from kvledger.derive.model_types import Resolved, resolve
from kvledger.derive.quant import model_dtype, resolve_kv_dtype
from kvledger.derive.registry import derive_level, refuse_if_refused, row_for
from kvledger.source.catalog import catalog_ids
from kvledger.source.model_source import ModelSource
from kvledger.source.resolve import load_source

__all__ = [
    "Config",
    "ConfigError",
    "DeriveError",
    "Kind",
    "LayerCache",
    "ModelFacts",
    "ModelSource",
    "Role",
    "UnknownCacheKey",
    "UnsupportedArchitecture",
    "catalog_ids",
    "derive_model",
    "load_source",
]


def derive_model(
    model: Any,
    *,
    kv_cache_dtype: str | None = None,
    hf_quant_config: Mapping[str, Any] | None = None,
) -> ModelFacts:
    """Per-layer cache facts for ``model`` (path, directory, dict, config object, catalog id).

    ``kv_cache_dtype`` overrides the KV element type (``None``/``"auto"``: the checkpoint's KV
    quantization scheme if any, else the config's dtype).
    """
    source = load_source(model, hf_quant_config=hf_quant_config)
    cfg = Config(source.config, model=source.label)
    row = row_for(cfg.model_type, cfg.architectures)
    cfg = Config(source.config, model=source.label, defaults=row.defaults)
    check_level(cfg, row)
    check_level_values(cfg, row.keys)
    text, text_row = cfg, row
    if row.is_wrapper:
        text_row, text = _inner(cfg, row)
        check_level(text, text_row, path=f"{row.text_key}.")
        check_level_values(text, text_row.keys)
    kv_dtype, kv_source = resolve_kv_dtype(cfg, source.hf_quant_config, kv_cache_dtype)
    derived = derive_level(text, text_row, kv_dtype)
    if len(derived.layers) > MAX_CACHE_LAYERS:
        # Layer counts are bounded key by key (derive/limits.py); this catches a count a
        # list or pattern implies, so planning (linear in layers) stays bounded for any file.
        raise ConfigError(f"{source.label}: the config describes {len(derived.layers):,} "
                          f"cache layers; kvledger plans at most {MAX_CACHE_LAYERS:,}")
    for layer in derived.layers:
        if isinstance(layer, RecurrentState):
            layer.tensors()  # state shapes are computed lazily: validate them once, here
    if not derived.layers:
        raise ConfigError(
            f"{source.label}: the config describes no layers (check num_hidden_layers)"
        )
    notes = list(source.notes)
    if text is not cfg:
        notes.append(f"multimodal wrapper: cache facts are from its {row.text_key} "
                     f"({text_row.name}); the encoders hold no KV cache")
    notes.extend(derived.notes)
    # Decoder positions: max_position_embeddings, or (encoder-decoder) max_target_positions.
    max_pos = text.get("max_position_embeddings", text.get("max_target_positions"))
    if max_pos is not None and (
        isinstance(max_pos, bool) or not isinstance(max_pos, int) or max_pos < 1
    ):
        raise ConfigError(f"{source.label}: max_position_embeddings must be a positive "
                          f"integer, got {max_pos!r}")
    return ModelFacts(
        model=source.label,
        model_type=cfg.model_type,
        architectures=cfg.architectures,
        layers=tuple(derived.layers),
        model_dtype=model_dtype(cfg),
        kv_dtype=kv_dtype,
        kv_dtype_source=kv_source,
        max_position_embeddings=max_pos,
        config=source.config,
        notes=tuple(notes),
        hf_quant_config=source.hf_quant_config,
        extras=dict(derived.extras),
        warnings=tuple(derived.warnings),
    )


def _inner(cfg: Config, row: Resolved) -> tuple[Resolved, Config]:
    """A wrapper's language-model row and config. The inner dict's own ``model_type`` must be
    one the wrapper accepts; without one, the wrapper's config class decides (the first)."""
    sub = cfg.raw.get(row.text_key)
    stated = sub.get("model_type") if isinstance(sub, Mapping) else None
    inner_type = str(stated) if stated else row.inner[0]
    if inner_type not in row.inner:
        raise UnsupportedArchitecture(
            f"unsupported: {cfg.model_type} wrapper holds a {inner_type!r} {row.text_key}; "
            f"kvledger's {row.name} row accepts {', '.join(row.inner)}",
            model_type=cfg.model_type,
            architectures=cfg.architectures,
        )
    text_row = refuse_if_refused(resolve(inner_type), inner_type, cfg.architectures)
    return text_row, cfg.sub(row.text_key, model_type=inner_type, defaults=text_row.defaults)

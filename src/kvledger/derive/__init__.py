"""Real model configs → engine-neutral per-layer cache facts.

``derive_model(model)`` is the one entry point: it loads the config (see ``source``), finds
the family registered for its ``model_type`` (see ``registry``), checks the config for
cache-affecting keys the family does not understand (see ``guard``), resolves the KV element
type, and returns ``ModelFacts``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.derive.config import Config
from kvledger.derive.errors import (
    ConfigError,
    DeriveError,
    UnknownCacheKey,
    UnsupportedArchitecture,
)
from kvledger.derive.guard import check_keys
from kvledger.derive.kvdtype import model_dtype, resolve_kv_dtype
from kvledger.derive.layers import Kind, LayerCache, ModelFacts, RecurrentState, Role
from kvledger.derive.registry import family_for
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
    family = family_for(cfg.model_type, cfg.architectures)
    check_keys(cfg, family.CHECKED_KEYS, family=family.FAMILY)
    text = cfg.text()
    if text is not cfg:
        check_keys(text, family.CHECKED_KEYS, family=family.FAMILY)
    kv_dtype, kv_source = resolve_kv_dtype(cfg, source.hf_quant_config, kv_cache_dtype)
    derived = family.derive(cfg, kv_dtype)
    for layer in derived.layers:
        if isinstance(layer, RecurrentState):
            layer.tensors()  # state shapes are computed lazily: validate them once, here
    if not derived.layers:
        raise ConfigError(
            f"{source.label}: the config describes no layers (check num_hidden_layers)"
        )
    notes = list(source.notes)
    if text is not cfg:
        notes.append(f"multimodal wrapper: cache facts are from its {cfg.text_key}")
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
        extras=dict(derived.extras),
    )

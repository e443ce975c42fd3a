"""Real model configs → engine-neutral per-layer cache facts.

``derive_model(model)`` is the one entry point: it loads the config (see ``source``), finds
its row in the model-type table (``model_types``, via ``registry``), runs the one guard on
every level — the top-level config, a wrapper's inner text config (see ``guard``) — resolves
the KV element type, runs the row's handler, and returns ``ModelFacts``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvledger.derive.config import Config, check_level_values
from kvledger.derive.errors import (
    ConfigError,
    DeriveError,
    UnknownCacheKey,
    UnsupportedArchitecture,
)
from kvledger.derive.guard import check_level
from kvledger.derive.kvdtype import model_dtype, resolve_kv_dtype
from kvledger.derive.layers import (
    Kind,
    LayerCache,
    ModelFacts,
    RecurrentState,
    Role,
    group_layers,
)
from kvledger.derive.limits import MAX_CACHE_LAYERS, check_layers
from kvledger.derive.max_len import max_len, sentence_max_len
from kvledger.derive.model_types import Resolved, resolve
from kvledger.derive.quant import ignored_blocks
from kvledger.derive.registry import derive_level, refuse_if_underived, row_for
from kvledger.source.catalog import catalog_ids
from kvledger.source.model_source import ModelSource
from kvledger.source.resolve import load_source

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

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
    text, text_row, where = _language_model(cfg, row)
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
    check_layers(group_layers(derived.layers), where=source.label)
    if not derived.layers:
        raise ConfigError(
            f"{source.label}: the config describes no layers (check num_hidden_layers)"
        )
    notes = list(source.notes)
    if text_row is not row:
        notes.append(f"multimodal wrapper: cache facts are from its {where} "
                     f"({text_row.name}); the encoders hold no KV cache")
    notes.extend(derived.notes)
    # Decoder positions, as vLLM reads them (max_len.py: the smallest length key stated).
    max_pos = derived.max_len if derived.max_len is not None else max_len(text)
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
        warnings=(*derived.warnings, *ignored_blocks(cfg)),
        text_config={**text.defaults, **text.raw},
        sentence_max_len=sentence_max_len(source.sentence_config, source.label),
    )


def _language_model(cfg: Config, row: Resolved) -> tuple[Config, Resolved, str]:
    """The language model's config and row, each level guarded on the way down, and where it
    sat (``text_config``, ``thinker_config.text_config``, "top-level text keys").

    A wrapper's inner config may itself be a wrapper (Qwen2.5-Omni: ``thinker_config`` →
    ``text_config``); a ``text_inline`` wrapper without its text key object has the language
    model's keys at its own top level, so that one level is guarded with both rows' keys.
    A text config may also carry its wrapper's ``text_harmless`` keys.
    """
    level, level_row, path = cfg, row, ""
    extra: Mapping[str, str] = {}  # the enclosing wrapper's text_harmless
    while level_row.is_wrapper:
        inner_row, inner, inline = _inner(level, level_row)
        if inline:  # one dict, both rows
            check_level(inner, inner_row, path=path, also=level_row,
                        extra={**extra, **level_row.text_harmless})
            check_level_values(inner, inner_row.keys | level_row.keys)
            return inner, inner_row, "top-level text keys"
        mirrored = inner_row if level_row.text_mirrored else None
        if mirrored is not None:
            _check_mirrored(level, level_row, inner, inner_row)
        check_level(level, level_row, path=path, extra=extra, also=mirrored)
        check_level_values(level, level_row.keys | (mirrored.keys if mirrored else frozenset()))
        path = f"{path}{level_row.text_key}."
        extra = level_row.text_harmless
        level, level_row = inner, inner_row
    check_level(level, level_row, path=path, extra=extra)
    check_level_values(level, level_row.keys)
    return level, level_row, path.rstrip(".")


def _check_mirrored(top: Config, row: Resolved, text: Config, text_row: Resolved) -> None:
    """A ``text_mirrored`` wrapper: the engine's layers read the top level, its lengths the
    text config; a file whose two copies differ on a key the inner row reads is refused
    naming it (the same class builds both, so its own defaults agree)."""
    for key in sorted(text_row.keys):
        above = top.raw[key] if key in top.raw else text_row.defaults.get(key)
        if above != text.get(key):
            raise ConfigError(
                f"{top.model}: {row.name} {key} is {above!r} at the top level, which vLLM's "
                f"language model reads, but {text.get(key)!r} in {row.text_key}, which its "
                "length and text-config reads take; kvledger plans one value stated in both")


def _inner(cfg: Config, row: Resolved) -> tuple[Resolved, Config, bool]:
    """A wrapper's language-model row and config. The inner dict's own ``model_type`` must be
    one the wrapper accepts; without one, the wrapper's config class decides (the first).

    The inner config's defaults are the inner row's, plus what the wrapper's config class
    fills in for that inner type (``text_defaults``). A ``text_inline`` wrapper whose config
    has no ``text_key`` object gets its text config from its own top-level keys (the same
    dict: ``Qwen2VLConfig.__post_init__`` builds ``text_config`` from them).
    """
    sub = cfg.raw.get(row.text_key)
    inline = sub is None and row.text_inline
    stated = sub.get("model_type") if isinstance(sub, Mapping) else None
    inner_type = str(stated) if stated else row.inner[0]
    if inner_type not in row.inner:
        raise UnsupportedArchitecture(
            f"unsupported: {cfg.model_type} wrapper holds a {inner_type!r} {row.text_key}; "
            f"kvledger's {row.name} row accepts {', '.join(row.inner)}",
            model_type=cfg.model_type,
            architectures=cfg.architectures,
        )
    text_row = refuse_if_underived(resolve(inner_type), inner_type, cfg.architectures)
    defaults = {**text_row.defaults, **row.text_defaults.get(inner_type, {})}
    if inline:
        return text_row, Config(cfg.raw, model=cfg.model, parent=cfg.parent,
                                defaults=defaults, model_type=inner_type), True
    return text_row, cfg.sub(row.text_key, model_type=inner_type, defaults=defaults), False

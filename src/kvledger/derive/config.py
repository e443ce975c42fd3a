"""A read-only view of one model config, with the look-ups every family needs.

Families read keys through ``Config`` so that "required key missing" is always one clear
error naming the key and the model, never a ``KeyError`` or a silent default.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import Any

from kvledger.derive.errors import ConfigError

# Keys under which multimodal wrappers keep their language model's config.
TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config", "thinker_config")


class Config:
    """A config dict (the language model's, if the model is a multimodal wrapper)."""

    def __init__(self, raw: Mapping[str, Any], *, model: str, parent: Config | None = None):
        self.raw: dict[str, Any] = dict(raw)
        self.model = model
        self.parent = parent

    # -- look-ups -------------------------------------------------------------------------
    def __contains__(self, key: str) -> bool:
        return key in self.raw and self.raw[key] is not None

    def get(self, key: str, default: Any = None) -> Any:
        value = self.raw.get(key)
        return default if value is None else value

    def require(self, key: str) -> Any:
        if key not in self:
            raise ConfigError(f"{self.model}: config has no {key!r}, which this family needs")
        return self.raw[key]

    def int(self, key: str, default: int | None = None, *, minimum: int = 0) -> int:
        """An integer key; every integer a family reads is a count or a size, so it must be
        >= ``minimum`` (0 unless the caller needs at least one)."""
        value = self.get(key, default)
        if value is None:
            raise ConfigError(f"{self.model}: config has no {key!r}, which this family needs")
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{self.model}: {key!r} must be an integer, got {value!r}")
        if value < minimum:
            raise ConfigError(f"{self.model}: {key!r} must be >= {minimum}, got {value}")
        return value

    def first_int(self, keys: Iterable[str]) -> builtins.int:
        tried = list(keys)
        for key in tried:
            if key in self:
                return self.int(key)
        raise ConfigError(f"{self.model}: config has none of {', '.join(tried)}")

    # -- structure ------------------------------------------------------------------------
    def text(self) -> Config:
        """The language model's config: the wrapper's ``text_config`` (or alike), else self.

        Keys the wrapper holds and the text config lacks (dtype, quantization) are inherited,
        because HF puts them on the outer config for many multimodal models.
        """
        for key in TEXT_CONFIG_KEYS:
            sub = self.raw.get(key)
            if isinstance(sub, Mapping):
                merged = dict(sub)
                for inherit in ("torch_dtype", "dtype", "quantization_config"):
                    if inherit not in merged and inherit in self.raw:
                        merged[inherit] = self.raw[inherit]
                return Config(merged, model=self.model, parent=self)
        return self

    @property
    def text_key(self) -> str | None:
        for key in TEXT_CONFIG_KEYS:
            if isinstance(self.raw.get(key), Mapping):
                return key
        return None

    @property
    def model_type(self) -> str:
        stated = self.raw.get("model_type")
        if stated:
            return str(stated)
        # Zyphra's native (pre-transformers) Zamba2 config states no model_type; its
        # signature keys are unambiguous, and the mamba family reads that schema.
        if "layer_mapping" in self.raw and "num_mem_blocks" in self.raw:
            return "zamba2"
        return ""

    @property
    def architectures(self) -> tuple[str, ...]:
        archs = self.raw.get("architectures") or ()
        if self.parent is not None and not archs:
            return self.parent.architectures
        return tuple(str(a) for a in archs)

    def dtype(self) -> str | None:
        """The config's own dtype (``torch_dtype`` or ``dtype``), if stated."""
        for key in ("torch_dtype", "dtype"):
            value = self.raw.get(key)
            if isinstance(value, str) and value:
                return value.removeprefix("torch.")
        if self.parent is not None:
            return self.parent.dtype()
        return None

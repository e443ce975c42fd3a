"""A read-only view of one model config, with the look-ups every family needs.

Families read keys through ``Config`` so that "required key missing" is always one clear
error naming the key and the model, never a ``KeyError`` or a silent default.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping

from kvledger.derive.errors import ConfigError

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

# Keys under which multimodal wrappers keep their language model's config.
TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config", "thinker_config")


class Config:
    """A config dict (the language model's, if the model is a multimodal wrapper).

    ``defaults`` are what the model type's config class fills in for a key the file omits
    (``derive/model_types.py``): vLLM reads the config through that class, so an omitted key
    has the class's value, not the reader's guess. A key the file states as ``null`` is not
    defaulted (the class keeps ``None``; the handler's fallback then applies, as the class's
    ``__post_init__`` does).
    """

    def __init__(
        self,
        raw: Mapping[str, Any],
        *,
        model: str,
        parent: Config | None = None,
        defaults: Mapping[str, Any] | None = None,
        model_type: str | None = None,
    ):
        self.raw: dict[str, Any] = dict(raw)
        self.model = model
        self.parent = parent
        self.defaults: Mapping[str, Any] = defaults or {}
        self._model_type = model_type

    # -- look-ups -------------------------------------------------------------------------
    def _value(self, key: str) -> Any:
        if key in self.raw:
            return self.raw[key]
        return self.defaults.get(key)

    def __contains__(self, key: str) -> bool:
        return self._value(key) is not None

    def stated(self, key: str) -> bool:
        """Whether the file itself states ``key`` (not null, not a class default)."""
        return self.raw.get(key) is not None

    def get(self, key: str, default: Any = None) -> Any:
        value = self._value(key)
        return default if value is None else value

    def require(self, key: str) -> Any:
        if key not in self:
            raise ConfigError(f"{self.model}: config has no {key!r}, which this family needs")
        return self._value(key)

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
        because HF puts them on the outer config for many multimodal models. A text config that
        is itself a wrapper (Qwen2.5-Omni's ``thinker_config`` holds ``text_config``) is
        followed down to the language model's.
        """
        for key in TEXT_CONFIG_KEYS:
            sub = self.raw.get(key)
            if isinstance(sub, Mapping):
                merged = dict(sub)
                for inherit in ("torch_dtype", "dtype", "quantization_config"):
                    if inherit not in merged and inherit in self.raw:
                        merged[inherit] = self.raw[inherit]
                return Config(merged, model=self.model, parent=self).text()
        return self

    def sub(
        self, key: str, *, model_type: str, defaults: Mapping[str, Any] | None = None
    ) -> Config:
        """The config under ``key`` (a wrapper's language model), as ``text()`` builds it, typed
        ``model_type`` (the wrapper's config class decides it when the dict states none)."""
        sub = self.raw.get(key)
        if not isinstance(sub, Mapping):
            raise ConfigError(f"{self.model}: {self.model_type} config has no {key!r} object")
        merged = dict(sub)
        for inherit in ("torch_dtype", "dtype", "quantization_config"):
            if inherit not in merged and inherit in self.raw:
                merged[inherit] = self.raw[inherit]
        return Config(merged, model=self.model, parent=self, defaults=defaults,
                      model_type=model_type)

    @property
    def text_key(self) -> str | None:
        for key in TEXT_CONFIG_KEYS:
            if isinstance(self.raw.get(key), Mapping):
                return key
        return None

    @property
    def model_type(self) -> str:
        if self._model_type is not None:
            return self._model_type
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

"""A read-only view of one model config, with the look-ups every family needs.

Families read keys through ``Config`` so that "required key missing" is always one clear
error naming the key and the model, never a ``KeyError`` or a silent default.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping

from kvledger.derive.errors import ConfigError
from kvledger.derive.limits import bounds, check_dtype, check_values, checked_count

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
        # Where this level sits in the file ("text_config."): messages name the key by it.
        self.path = ""

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
            raise ConfigError(
                f"{self.model}: config has no {self.path}{key!r}, which this family needs")
        return self._value(key)

    def int(self, key: str, default: int | None = None, *, minimum: int = 0) -> int:
        """An integer key; every integer a family reads is a count or a size, so it must be
        >= ``minimum`` (0 unless the caller needs at least one) and within the key's bound
        (``derive/limits.py``: layer counts <= 10,000, heads <= 65,536, ...)."""
        value = self.get(key, default)
        if value is None:
            raise ConfigError(
                f"{self.model}: config has no {self.path}{key!r}, which this family needs")
        return checked_count(value, f"{self.path}{key}", where=self.model,
                             minimum=minimum, maximum=bounds(key)[1])

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
                found = Config(merged, model=self.model, parent=self)
                found.path = f"{self.path}{key}."
                return found.text()
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
        found = Config(merged, model=self.model, parent=self, defaults=defaults,
                       model_type=model_type)
        found.path = f"{self.path}{key}."
        return found

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
        """The config's own dtype (``torch_dtype`` or ``dtype``), if stated.

        A stated value must name a floating dtype (``limits.check_dtype``): ``true``, ``0``
        or ``[]`` is refused, not read as "no dtype" (which would mean float32)."""
        for key in ("torch_dtype", "dtype"):
            name = check_dtype(self.raw.get(key), f"{self.path}{key}", where=self.model)
            if name is not None:
                return name
        if self.parent is not None:
            return self.parent.dtype()
        return None


# Config classes whose transformers 5.19 ``validate_architecture`` requires
# ``hidden_size % num_attention_heads == 0`` (models/llama/configuration_llama.py), by the
# model_type that loads them.
HIDDEN_DIVIDES_HEADS = {"llama": "LlamaConfig"}


def check_level_values(cfg: Config, reads: Iterable[str]) -> None:
    """The edge check of one config level (``derive_model`` runs it on every level, once).

    Every count the limits table knows and the dtype keys, as the file states them
    (``limits.check_values``); then, where this level's handler reads both head counts, the
    rule vLLM's attention layer asserts at start-up: query heads are a whole multiple of KV
    heads (vllm/model_executor/layers/attention/attention.py ``Attention.__init__``:
    ``assert num_heads % num_kv_heads == 0``). Class defaults (``derive/model_types.py``)
    count, as they do for vLLM: Mistral's omitted ``num_key_value_heads`` is 8. And where
    the config class validates it, hidden size over heads (``HIDDEN_DIVIDES_HEADS``).
    """
    check_values(cfg.raw, where=cfg.model, path=cfg.path)
    if {"num_attention_heads", "num_key_value_heads"} <= set(reads):
        _must_divide(cfg, "num_attention_heads", "num_key_value_heads",
                     "vLLM's attention layer requires it (Attention.__init__: "
                     "num_heads % num_kv_heads == 0)")
    if cfg.model_type in HIDDEN_DIVIDES_HEADS:
        _must_divide(cfg, "hidden_size", "num_attention_heads",
                     f"transformers' {HIDDEN_DIVIDES_HEADS[cfg.model_type]}."
                     "validate_architecture refuses the config (even with head_dim stated), "
                     "so vLLM cannot load it")


def _must_divide(cfg: Config, whole_key: str, part_key: str, why: str) -> None:
    """``whole_key`` a multiple of ``part_key`` where both are positive integers (the limits
    table has refused other values already)."""
    whole, part = cfg.get(whole_key), cfg.get(part_key)
    if isinstance(whole, builtins.int) and isinstance(part, builtins.int) and (
        part > 0 and whole % part
    ):
        raise ConfigError(
            f"{cfg.model}: {cfg.path}{whole_key}={whole} is not a multiple of "
            f"{cfg.path}{part_key}={part}; {why}"
        )

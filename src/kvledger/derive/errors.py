"""Errors derive raises. Every one names what it could not understand."""

from __future__ import annotations


class DeriveError(ValueError):
    """Base class: the config cannot be turned into cache facts."""


class ConfigError(DeriveError):
    """A key a family needs is missing or has the wrong type."""


class UnsupportedArchitecture(DeriveError):
    """No family is registered for this ``model_type`` (or the family refuses this variant).

    Messages start with ``unsupported:`` so the CLI can print them as they are.
    """

    def __init__(self, message: str, *, model_type: str = "", architectures: tuple[str, ...] = ()):
        if not message.startswith("unsupported:"):
            message = f"unsupported: {message}"
        super().__init__(message)
        self.model_type = model_type
        self.architectures = architectures


class UnknownCacheKey(UnsupportedArchitecture):
    """A known model type met a cache-affecting config key it was never checked against.

    ``family`` names what was checked: a model-type row and its handler (``"qwen3_moe
    (standard)"``), or a handler's nested vocabulary.
    """

    def __init__(self, key: str, *, model_type: str, family: str):
        super().__init__(
            f"unsupported: {model_type} config carries cache-affecting key {key!r}, which "
            f"kvledger's {family} has not been checked against; refusing to guess its effect",
            model_type=model_type,
        )
        self.key = key

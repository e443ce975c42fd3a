"""Errors raised while finding a model: each one line, naming the model and the way out.

They subclass derive's ``ConfigError`` so a caller that already catches config problems
catches these too; each carries a ``hint`` (the CLI prints it after the message). This module
imports ``kvledger.derive.errors`` and is therefore imported only where an error is raised:
``kvledger.derive`` imports this package at start-up, and a module-level import here would
be circular.
"""

from __future__ import annotations

from kvledger.derive.errors import ConfigError


class SourceError(ConfigError):
    """The model cannot be found or read where MODEL says (path, cache, Hub, catalog)."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


class SafetensorsError(SourceError):
    """A safetensors header (or its index) is malformed: its bytes cannot be called exact."""

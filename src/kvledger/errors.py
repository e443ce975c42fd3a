"""Every error kvledger raises on purpose, in one tree (a leaf module: it imports nothing).

``KvledgerError`` is the root: a caller that wants "kvledger said no, for a reason it can name"
catches it, and the CLI prints any of them as one line and exits 2. The families, by where the
refusal comes from:

- ``DeriveError``: the config cannot be turned into cache facts — ``ConfigError`` (a key
  missing, malformed or out of bounds) and ``UnsupportedArchitecture`` (no family for this
  ``model_type``; ``UnknownCacheKey`` a cache-affecting key nobody checked).
- ``SourceError``: the model cannot be found or read where MODEL says; ``SafetensorsError`` a
  malformed checkpoint header. A ``ConfigError`` too, so a caller that catches config
  problems catches these.
- ``PlanError``: the planner refuses these options for this model — ``BudgetTooSmall``
  (``kvledger.plan.budget``: weights and reserves leave no KV memory) and
  ``EngineStartupRefusal`` (the engine release itself would not start: its reason, in its
  words, which the CLI quotes without renaming options to flags).
- ``DeployFileError``: a vLLM-Omni deploy file (``kvledger plan --omni-deploy``) that cannot
  be read: its field names are the file's own, so the CLI does not rename them to flags.

Each family subclasses ``ValueError`` as before (callers that caught ``ValueError`` still do).
Each error may carry a ``hint``: the way out, printed by the CLI after the message.
``InsufficientPoolBudget`` (``kvledger.declare.pools``) is a ``KvledgerError`` too, and stays the
``RuntimeError`` the seed protocol names.
"""

from __future__ import annotations


class KvledgerError(Exception):
    """Root of every error kvledger raises on purpose. ``hint``: the way out, or ``""``."""

    hint: str = ""


class DeriveError(KvledgerError, ValueError):
    """The config cannot be turned into cache facts."""


class ConfigError(DeriveError):
    """A key a family needs is missing, has the wrong type or is out of bounds."""


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


class SourceError(ConfigError):
    """The model cannot be found or read where MODEL says (path, cache, Hub, catalog)."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


class SafetensorsError(SourceError):
    """A safetensors header (or its index) is malformed: its bytes cannot be called exact."""


class PlanError(KvledgerError, ValueError):
    """The planner refuses these options for this model (the message names the option)."""


class DeployFileError(KvledgerError, ValueError):
    """A vLLM-Omni deploy file is unreadable or states what vLLM-Omni would not read (the
    message names the file and the field, in the file's own words)."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint or "check the deploy file against vLLM-Omni's schema (StageDeployConfig)"


class EngineStartupRefusal(PlanError):
    """The engine release itself would refuse to start with these settings.

    The message is the engine's reason as the engine words it (its option names, not
    kvledger's flags); ``hint`` may add the way out.
    """

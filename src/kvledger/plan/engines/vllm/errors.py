"""The errors the vLLM layout raises (their own module so every part can import them)."""

from __future__ import annotations

from kvledger.errors import EngineStartupRefusal, PlanError


class VllmLayoutError(PlanError):
    """The vLLM layout cannot plan this model or these options (names the reason)."""


class VllmRefusesToStart(VllmLayoutError, EngineStartupRefusal):
    """vLLM itself would refuse to start with these settings: the message is its reason, in
    its words, after "vLLM 0.32 refuses to start"."""

"""The one error the vLLM layout raises (its own module so every part can import it)."""

from __future__ import annotations


class VllmLayoutError(ValueError):
    """The vLLM layout cannot plan this model or these options (names the reason); messages
    that start with "vLLM 0.32 refuses to start" are vLLM's own start-up refusals."""

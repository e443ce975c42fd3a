"""The one error type of the serve-line reader."""

from __future__ import annotations


class ServeLineError(ValueError):
    """A serve line kvledger cannot plan: the engine would refuse it, or it changes memory in
    a way kvledger does not model. The message is one line naming the flag; the CLI prints it
    and exits 2 (a ``ValueError``, like every bad-input error)."""

"""The errors raised while finding a model, by the names callers import them under.

Each is one line naming the model and carries a ``hint`` (the way out: a token, --revision,
--offline, a path). The classes live in the one error tree, ``kvledger.errors``, below both
source and derive: finding a model imports nothing of deriving it.
"""

from __future__ import annotations

from kvledger.errors import SafetensorsError, SourceError

__all__ = ["SafetensorsError", "SourceError"]

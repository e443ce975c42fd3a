"""derive's errors, by the names derive's modules (and callers) import them under.

The classes live in the one error tree, ``kvledger.errors``; this module only hands them on.
"""

from __future__ import annotations

from kvledger.errors import ConfigError, DeriveError, UnknownCacheKey, UnsupportedArchitecture

__all__ = ["ConfigError", "DeriveError", "UnknownCacheKey", "UnsupportedArchitecture"]

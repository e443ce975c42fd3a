"""Moved to ``kvledger.source`` (path, local HF cache, Hub, catalog); kept importable here
because callers import ``load_source``, ``ModelSource`` and ``catalog_ids`` from this name."""

from kvledger.source.catalog import catalog_ids
from kvledger.source.model_source import ModelSource
from kvledger.source.resolve import load_source

__all__ = ["ModelSource", "catalog_ids", "load_source"]

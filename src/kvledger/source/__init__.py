"""Where a model's config comes from: a path, the local Hugging Face cache, the Hub, or the
bundled catalog — and the checkpoint's safetensors headers (exact weight bytes), read locally
or with HTTP range requests.

``load_source(model, revision=..., offline=...)`` is the one entry point; ``ModelSource`` is
what it returns. Names are exported lazily (PEP 562): a catalog plan imports only the modules
it needs, and ``huggingface_hub`` is imported only when the Hub is actually asked.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

_EXPORTS: dict[str, str] = {
    "ModelSource": "kvledger.source.model_source",
    "load_source": "kvledger.source.resolve",
    "catalog_ids": "kvledger.source.catalog",
    "SourceError": "kvledger.errors",
    "SafetensorsError": "kvledger.errors",
    "SafetensorsTotals": "kvledger.source.headers",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kvledger.source' has no attribute {name!r}")
    __import__(module)  # not importlib.import_module: importing importlib costs start-up
    value = getattr(sys.modules[module], name)
    globals()[name] = value
    return value

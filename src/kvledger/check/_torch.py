"""The one place check/ imports torch, lazily.

``import kvledger`` (and ``import kvledger.check``) must never pull torch: the planning side runs
on machines without it. Every check/ module calls :func:`torch_module` inside the function that
needs tensors, so the import cost and the ImportError are paid only by callers who measure.
"""

from __future__ import annotations

from typing import Any


def torch_module() -> Any:
    """``import torch`` or raise ImportError naming the extra that provides it."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "kvledger.check needs torch; install the extra: pip install 'kvledger[torch]'"
        ) from exc
    return torch

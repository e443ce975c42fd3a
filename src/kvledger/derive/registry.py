"""From a config's ``model_type`` (and architectures) to its row of the model-type table and
the handler that row names.

Lazy by design: a handler module is imported only when a config routed to it is derived, so
``import kvledger`` and the CLI start-up stay fast. An unknown ``model_type`` fails closed with
``UnsupportedArchitecture``; there is no "dense fallback".
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from kvledger.derive.config import Config
from kvledger.derive.errors import UnsupportedArchitecture
from kvledger.derive.layers import LayerCache
from kvledger.derive.model_types import (
    ARCHITECTURES,
    DRAFT_WORDS,
    MODEL_TYPES,
    Resolved,
    resolve,
    supported_types,
)
from kvledger.records import field, record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

HANDLER_PACKAGE = "kvledger.derive.families"


@record()
class Derived:
    """What a handler returns: the per-layer facts, notes, warnings and layout hints.

    ``warnings`` are for a config that states one size two ways that disagree (derived the
    way vLLM's model code does it): a plan shows them, unlike ``notes``. ``max_len``: the
    decoder's length, for a schema whose config class maps its own length key to one of
    vLLM's (Moondream's ``max_context`` → ``max_position_embeddings``); None: derive reads the
    level's keys (max_len.py).
    """

    layers: list[LayerCache]
    notes: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    max_len: int | None = None


Handler = Callable[..., Derived]


def row_for(model_type: str, architectures: tuple[str, ...] = ()) -> Resolved:
    """The table row for a top-level config: an architecture listed in ``ARCHITECTURES`` wins
    (drafts reuse their target's model_type), then the ``model_type``. Refusals raise."""
    name: str | None = None
    for arch in architectures:
        if arch in ARCHITECTURES:
            name = ARCHITECTURES[arch]
            break
    if name is None:
        for arch in architectures:
            if any(word in arch.lower() for word in DRAFT_WORDS):
                drafts = sorted(a for a, n in ARCHITECTURES.items()
                                if any(w in a.lower() for w in DRAFT_WORDS))
                raise UnsupportedArchitecture(
                    f"unsupported: draft architecture {arch} (model_type {model_type!r}) is not "
                    f"an EAGLE3 draft kvledger has been checked against; known drafts: "
                    f"{', '.join(drafts)}",
                    model_type=model_type,
                    architectures=architectures,
                )
        if model_type in MODEL_TYPES and model_type not in ARCHITECTURES.values():
            name = model_type
    if name is None:
        raise UnsupportedArchitecture(
            f"unsupported: model_type {model_type or '(none)'!r} "
            f"(architectures {list(architectures)}) has no row in kvledger's model-type table"
            + _closest(model_type) + "; `kvledger models` lists every supported type",
            model_type=model_type,
            architectures=architectures,
        )
    return refuse_if_underived(resolve(name), model_type, architectures)


def _closest(model_type: str) -> str:
    """``; closest supported: a, b`` (by spelling), or "" when none is close."""
    from difflib import get_close_matches  # only on this error path

    near = get_close_matches(model_type.lower(), supported_types(), n=3, cutoff=0.6)
    return f"; closest supported: {', '.join(near)}" if near else ""


def refuse_if_underived(
    row: Resolved, model_type: str, architectures: tuple[str, ...] = ()
) -> Resolved:
    """``row``, or ``UnsupportedArchitecture`` when kvledger recognizes the model type but no
    handler reads its schema. Engine-neutral: an engine that does not serve the type either
    replaces this with its own reason (``Layout.derive``)."""
    if not row.derivable:
        what = f"model_type {model_type!r}" + (
            "" if model_type == row.name else f" as architectures {list(architectures)}")
        raise UnsupportedArchitecture(
            f"unsupported: kvledger does not derive {what}: no handler in its model-type "
            "table reads this config schema; `kvledger models` lists every supported type",
            model_type=row.name, architectures=architectures,
        )
    return row


def handler_for(row: Resolved) -> Handler:
    """Import the row's handler module (lazily) and return its function."""
    module, _, function = row.handler.partition(":")
    if not module or not function:
        raise UnsupportedArchitecture(
            f"unsupported: model type {row.name!r} has no handler in the table",
            model_type=row.name,
        )
    name = f"{HANDLER_PACKAGE}.{module}"
    __import__(name)  # not importlib.import_module: importing importlib costs start-up
    found: Handler = getattr(sys.modules[name], function)
    return found


def derive_level(cfg: Config, row: Resolved, kv_dtype: str) -> Derived:
    """Run ``row``'s handler on ``cfg`` with the row's options."""
    return handler_for(row)(cfg, kv_dtype, **row.options)

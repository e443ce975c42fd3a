"""A release profile with some fields changed, known to its engine for one block of code.

``kvledger diff`` plans one side with a single profile field moved, and ``explain`` replays a
development build as its base release plus the architecture the log shows it serving. Both
need the changed profile reachable by version through the engine's own table, so the layout
the planner binds holds it and every rule reads it. ``bound`` adds it under a version of its
own (``0.32.0+gdn_checkpoint_alignment.3``: numbered, so a layout bound to an earlier one is
never reused) and removes it when the block ends.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kvledger import records

_BOUND = itertools.count()  # numbers the versions bound, one each


@contextmanager
def bound(releases: Any, release: Any, tag: str, **changes: Any) -> Iterator[str]:
    """``release`` with ``changes``, in ``releases`` (an engine's table, a mutable mapping)
    for the block under ``<release.version>+<tag>.<n>``; yields that version."""
    version = f"{release.version}+{tag}.{next(_BOUND)}"
    releases[version] = records.replace(release, version=version, **changes)
    try:
        yield version
    finally:
        del releases[version]

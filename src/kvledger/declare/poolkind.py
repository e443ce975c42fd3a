"""The three pool kinds (``Pool``), alone in a module.

Why apart from ``pools.py``: a plan's pool rows carry their kind, and the vLLM path of
``kvledger plan`` builds pool rows without ever planning pools; importing the planner's
dataclasses just for this enum would cost start-up time (a stated target). ``Pool`` is the same
object when imported from ``kvledger.declare.pools``.
"""

from __future__ import annotations

from enum import StrEnum


class Pool(StrEnum):
    """What a pool's size scales with (see ``kvledger.declare.pools``)."""

    PAGE = "page"  # cached history: sized from the remainder
    STATE = "state"  # in-flight requests: max_num_seqs × entries_per_req + extra_entries
    FIXED = "fixed"  # nothing: extra_entries the model controls

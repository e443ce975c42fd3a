"""pytest plugin (entry point ``kvledger`` under ``pytest11``): the ``kv_declared`` fixture.

Loaded into every pytest session of any environment that installs kvledger, so importing it
must stay cheap: torch is imported only when a test calls the fixture's function.

    def test_my_talker(kv_declared):
        kv_declared(model, run=lambda: model.generate(...), max_num_seqs=4)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def kv_declared() -> Callable[..., Any]:
    """``assert_declared`` as a fixture (same arguments, same AssertionError)."""
    from kvledger.check.assertions import assert_declared

    return assert_declared

"""The guard's name test (``looks_cache_affecting``): any case, anywhere in the name, and the
same answer as the regular expression it stands for on names that are not ASCII."""

from __future__ import annotations

import re

import pytest

from kvledger.derive.guard import CACHE_AFFECTING, looks_cache_affecting


@pytest.mark.parametrize(("key", "affecting"), [
    ("num_key_value_heads", True), ("NUM_KV_HEADS", True), ("MyNewWindowSize", True),
    ("vocab_size", False), ("hidden_act", False), ("bos_token_id", False),
    ("\u212av_heads", True),  # KELVIN SIGN + "v": case-folds to "kv", as in the expression
    ("\u017fliding", True),  # LATIN SMALL LETTER LONG S + "liding": "sliding"
    ("vocab_\u00e9", False),
])
def test_names_are_matched_ignoring_case_as_the_expression_does(key: str, affecting: bool) -> None:
    assert looks_cache_affecting(key) is affecting
    assert (re.search(CACHE_AFFECTING, key, re.IGNORECASE) is not None) is affecting

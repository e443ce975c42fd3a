"""A bundled catalog row whose config is a rebuild, not the checkpoint's own config.json
(``scripts/catalog_facts.py`` ``REBUILT``: MiniMaxAI/MiniMax-M3, a text-only ``minimax_m3``
config where the checkpoint is ``minimax_m3_vl``): the resolver asks the Hub first and uses
the row only where it cannot (offline, or the Hub does not answer), with a note saying so."""

from __future__ import annotations

import pytest

from kvledger.source.resolve import load_source
from oracle_cases import CONFIGS

from .conftest import Online

M3 = "MiniMaxAI/MiniMax-M3"


def test_offline_the_row_is_used_with_a_note() -> None:
    source = load_source(M3, offline=True)
    assert source.kind == "catalog"
    assert source.config["model_type"] == "minimax_m3"
    assert any("text-only rebuild" in n and "offline" in n for n in source.notes)


def test_online_the_hubs_config_wins(online: Online) -> None:
    if not (CONFIGS / "nvidia--MiniMax-M3-NVFP4.json").is_file():
        pytest.skip("the checkpoint-shaped config is in ../shared/configs")
    source = load_source(M3)
    assert source.kind == "hub"
    assert source.config["model_type"] == "minimax_m3_vl"


def test_a_row_that_is_the_checkpoints_own_file_is_used_first(online: Online) -> None:
    # No Hub request for an ordinary bundled row: the loopback Hub does not hold it.
    source = load_source("Qwen/Qwen3-8B")
    assert source.kind == "catalog"
    assert not any("rebuild" in n for n in source.notes)

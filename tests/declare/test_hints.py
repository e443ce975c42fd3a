"""The three-way fix hint of SEEDS.md B, with numbers."""

from __future__ import annotations

import pytest

from kvledger import InsufficientPoolBudget, budget_fix_hint

GIB = 1 << 30


def exc(reserved: int, available: int) -> InsufficientPoolBudget:
    return InsufficientPoolBudget(reserved, available, 256, entries_by_class={"gdn": 256})


def test_physically_free_is_the_limit() -> None:
    # 80 GiB card at 0.9 wants 72 GiB but only 40 GiB are free: utilization cannot help
    msg = budget_fix_hint(exc(8 * GIB, 4 * GIB), non_kv_bytes=36 * GIB, total_bytes=80 * GIB,
                          free_bytes=40 * GIB, gpu_memory_utilization=0.9, max_num_seqs=256)
    assert "only 40.00 GiB is physically free" in msg
    assert "raising utilization will not help" in msg
    # per seq 8 GiB / 256 = 32 MiB; 4 GiB budget holds 128 floors exactly → 127 leave room
    assert "reduce max_num_seqs to at most 127" in msg


def test_raise_utilization() -> None:
    # min_util = (60 + 10) / 80 = 0.875 → suggest 0.88
    msg = budget_fix_hint(exc(10 * GIB, 6 * GIB), non_kv_bytes=60 * GIB, total_bytes=80 * GIB,
                          free_bytes=80 * GIB, gpu_memory_utilization=0.825, max_num_seqs=256)
    assert "set gpu_memory_utilization >= 0.88" in msg


def test_exact_min_util_rounds_strictly_up() -> None:
    # min_util = (40 + 40) / 100 = 0.80 exactly: at 0.80 nothing is left to page → 0.81
    msg = budget_fix_hint(exc(40, 20), non_kv_bytes=40, total_bytes=100, free_bytes=100,
                          gpu_memory_utilization=0.6, max_num_seqs=4)
    assert ">= 0.81" in msg


def test_even_full_utilization_not_enough() -> None:
    # min_util = (70 + 20) / 80 = 1.125
    msg = budget_fix_hint(exc(20 * GIB, 2 * GIB), non_kv_bytes=70 * GIB, total_bytes=80 * GIB,
                          free_bytes=80 * GIB, gpu_memory_utilization=0.9, max_num_seqs=256)
    assert "even gpu_memory_utilization 1.0 is not enough" in msg
    assert "1.12" in msg


def test_rejects_bad_context() -> None:
    with pytest.raises(ValueError):
        budget_fix_hint(exc(1, 1), non_kv_bytes=0, total_bytes=10, free_bytes=10,
                        gpu_memory_utilization=1.5, max_num_seqs=1)
    with pytest.raises(TypeError):
        budget_fix_hint(exc(1, 1), non_kv_bytes=0.5, total_bytes=10,  # type: ignore[arg-type]
                        free_bytes=10, gpu_memory_utilization=0.5, max_num_seqs=1)

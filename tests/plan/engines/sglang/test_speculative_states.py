"""SGLang 0.5.23 speculative decoding on a recurrent-state (GDN / Mamba) model.

``_handle_max_mamba_cache`` (``mem_cache/kv_cache_configurator.py``) reserves the target-verify
scratch of ``memory_pool.py`` ``MambaPool`` (intermediate SSM states and conv windows per draft
token) before the KV pool: ``per_request × (capped + 1) × D``. Expected numbers below are worked
by hand from that formula (engine="sglang==0.5.23").
"""

from __future__ import annotations

import pytest

from kvledger.plan.engines.sglang.pools import GIB, SpecState, mamba_state_pool


def test_ratio_branch_solves_slots_jointly_with_the_draft_states() -> None:
    # rest 10 GB, r = 0.9: budget = 10 × 0.9 / 1.9 GB = 4.736842105263158 GB
    #   = 5,086,160,556.9 B (× 2**30).
    # per_request 1,000,000 B, D = 4, ratio 5 (3 + 2 extra-buffer tracking slots):
    #   slots = (5,086,160,556.9 − 1e6 × (1 + 4)) // (1e6 × (1 + 4/5))
    #         = 5,081,160,556.9 // 1,800,000 = 2822
    #   capped = min(max(1, 48 // 1), 2822 // 5 = 564) = 48 → 49 slots of scratch
    #   scratch = 1e6 × 49 × 4 = 196,000,000 B; pool = (2822 + 1) × 1e6 = 2,823,000,000 B
    pool = mamba_state_pool(10.0, 1_000_000, mamba_full_memory_ratio=0.9,
                            max_running_requests=48, disable_radix_cache=False,
                            attn_dp_size=1, spec=SpecState(4, 48, 5))
    assert pool.max_mamba_cache_size == 2822
    assert pool.spec_slots == 49
    assert pool.spec_reserved_bytes == 196_000_000
    assert pool.reserved_bytes == 2_823_000_000
    assert pool.rest_gb == pytest.approx(10.0 - 196_000_000 / GIB - 2_823_000_000 / GIB)


def test_ratio_branch_caps_the_scratch_by_the_state_slots() -> None:
    # rest 1 GB, r = 0.9: budget = 0.4736842105263158 GB = 508,616,055.6 B.
    # per_request 10,000,000 B, D = 4, ratio 5:
    #   slots = (508,616,055.6 − 5e7) // (1e7 × 1.8) = 458,616,055.6 // 18,000,000 = 25
    #   capped = min(48, 25 // 5 = 5) = 5 → 6 slots: scratch 1e7 × 6 × 4 = 240,000,000 B
    pool = mamba_state_pool(1.0, 10_000_000, mamba_full_memory_ratio=0.9,
                            max_running_requests=48, disable_radix_cache=False,
                            attn_dp_size=1, spec=SpecState(4, 48, 5))
    assert (pool.max_mamba_cache_size, pool.spec_slots) == (25, 6)
    assert pool.spec_reserved_bytes == 240_000_000


def test_radix_cache_off_reserves_scratch_for_every_slot() -> None:
    # --disable-radix-cache with max_running_requests 48 (SGLang's speculative default),
    # 2 DP-attention groups: slots = 48 // 2 = 24, scratch (24 + 1) × 1e6 × 3 = 75,000,000 B.
    pool = mamba_state_pool(10.0, 1_000_000, mamba_full_memory_ratio=0.9,
                            max_running_requests=48, disable_radix_cache=True,
                            attn_dp_size=2, spec=SpecState(3, 48, 1))
    assert (pool.max_mamba_cache_size, pool.spec_slots) == (24, 25)
    assert pool.spec_reserved_bytes == 75_000_000
    assert pool.reserved_bytes == 25_000_000


def test_without_speculation_nothing_is_reserved() -> None:
    # slots = (5,086,160,556.9 − 1e6) // 1e6 = 5085
    pool = mamba_state_pool(10.0, 1_000_000, mamba_full_memory_ratio=0.9,
                            max_running_requests=None, disable_radix_cache=False,
                            attn_dp_size=1)
    assert pool.max_mamba_cache_size == 5085
    assert pool.spec_reserved_bytes == 0

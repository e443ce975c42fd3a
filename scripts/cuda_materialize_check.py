"""Materialize a plan on CUDA and compare torch.cuda.memory_allocated() with the plan.

Run on a GPU machine: ``python scripts/cuda_materialize_check.py [--device cuda:0]``.
Prints one line per plan and exits non-zero if any allocation differs from
``plan.total_reserved_bytes`` by more than the caching allocator's rounding (each buffer is
rounded up to a multiple of 512 B; see torch's CUDACachingAllocator), or if the memory is not
returned when the arena is dropped. CI never runs this; the numbers belong in a report.
"""

from __future__ import annotations

import argparse
import sys

import torch

from kvledger import PoolPlan, fixed_pool, page_pool, plan_pools, state_pool
from kvledger.check import materialize

ROUND = 512  # CUDACachingAllocator rounds every block up to a multiple of 512 bytes


def plans() -> dict[str, PoolPlan]:
    # Llama-3.1-8B-like page: 16 tokens × 32 layers × 2 (K, V) × 8 kv heads × 128 × 2 B
    # = 2,097,152 B per block; a sliding ring state class and a FIXED model-local cache
    # (Ming talker StaticCache: 24 × 2 × 64 × 2048 × 2 × 2 B = 25,165,824 B).
    page = 16 * 32 * 2 * 8 * 128 * 2
    return {
        "paged-only 2 GiB": plan_pools([page_pool(page)], 2 * 1024**3, 256),
        "paged+state+fixed 4 GiB": plan_pools(
            [page_pool(page), state_pool("ring", 3 * 65_536 + 7, entries_per_req=2,
                                         extra_entries=1),
             fixed_pool("talker", 25_165_824, entries=1)],
            4 * 1024**3, 64,
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    device = torch.device(parser.parse_args().device)
    if device.type != "cuda" or not torch.cuda.is_available():
        print("no CUDA device: nothing to check", file=sys.stderr)
        return 2
    torch.cuda.set_device(device)
    failures = 0
    print(f"device {torch.cuda.get_device_name(device)}, torch {torch.__version__}")
    for name, plan in plans().items():
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        before = torch.cuda.memory_allocated(device)
        arena = materialize(plan, device)
        torch.cuda.synchronize(device)
        after = torch.cuda.memory_allocated(device)
        grown = after - before
        expected = plan.total_reserved_bytes
        slack = ROUND * len(arena.buffers)
        del arena
        torch.cuda.synchronize(device)
        released = torch.cuda.memory_allocated(device)
        ok = expected <= grown <= expected + slack and released == before
        failures += not ok
        print(
            f"{'OK  ' if ok else 'FAIL'} {name}: plan.total_reserved_bytes={expected:,} "
            f"memory_allocated before={before:,} after={after:,} grown={grown:,} "
            f"(rounding slack {grown - expected:,} B of at most {slack:,}) "
            f"after release={released:,}"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

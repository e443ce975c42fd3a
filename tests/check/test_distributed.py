"""reconcile(plan) over real torch.distributed (gloo, 4 CPU processes on 127.0.0.1).

Processes are forked (not spawned): a spawned child re-imports torch, seconds each on a
2-core CI runner; the parent has not initialised any process group or CUDA, so forking is safe.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

if sys.platform == "win32" or not torch.distributed.is_available():  # pragma: no cover
    pytest.skip("needs torch.distributed with fork", allow_module_level=True)

WORLD = 4
# Pipeline stages with different layer counts. One page = one 16-token block of every layer
# on the stage: 16 × 2 (K, V) × 8 kv heads × 128 × 2 B = 65,536 B per layer.
STAGE_LAYERS = [8, 6, 6, 4]
PER_LAYER_PAGE = 65_536
# Each stage: available 10,489,760 B, minus a STATE ring of 4 seqs × 1 × 1,000 B = 4,000 B,
# leaves 10,485,760 B (10 MiB) for pages:
#   8 layers: 10,485,760 // 524,288 = 20;  6 layers: // 393,216 = 26 (26.67);
#   4 layers: // 262,144 = 40.  Global minimum: 20.
AVAILABLE = 10_489_760
EXPECTED_LOCAL = [20, 26, 26, 40]
EXPECTED_MIN = 20
TIMEOUT_S = 2.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, port: int, outdir: str, absent_rank: int) -> None:
    import torch.distributed as dist

    from kvledger import page_pool, plan_pools, state_pool
    from kvledger.check import ReconcileTimeout, reconcile

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD,
        timeout=timedelta(seconds=30),
    )
    plan = plan_pools(
        [page_pool(STAGE_LAYERS[rank] * PER_LAYER_PAGE),
         state_pool("ring", 1000, entries_per_req=1)],
        available_bytes=AVAILABLE, max_num_seqs=4,
    )
    out: dict[str, object] = {"local": plan.paged_entries}
    if rank == absent_rank:
        # Never joins reconcile(); stays alive until the others have given up, so what they
        # see is the timeout, not a closed connection.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(list(Path(outdir).glob("*.json"))) < WORLD - 1:
            time.sleep(0.05)
    else:
        started = time.monotonic()
        try:
            result = reconcile(plan, timeout=TIMEOUT_S)
            out.update(pages=result.paged_entries, ring=result.entries["ring"],
                       ring_bytes=result.reserved_bytes["ring"],
                       kv_bytes=result.reserved_bytes["kv"])
        except ReconcileTimeout as exc:
            out.update(error=str(exc), timeout_s=exc.timeout_s)
        out["elapsed"] = time.monotonic() - started
    Path(outdir, f"{rank}.json").write_text(json.dumps(out))


def _launch(tmp_path: Path, absent_rank: int) -> dict[int, dict[str, object]]:
    import torch.multiprocessing as mp

    ctx = mp.start_processes(
        _worker, args=(_free_port(), str(tmp_path), absent_rank), nprocs=WORLD, join=False,
        start_method="fork",
    )
    deadline = time.monotonic() + 45  # a hang fails the test instead of stalling CI
    while not ctx.join(timeout=1):
        if time.monotonic() > deadline:
            for p in ctx.processes:
                p.kill()
            pytest.fail("distributed workers did not finish within 45 s")
    return {
        int(f.stem): json.loads(f.read_text()) for f in tmp_path.glob("*.json")
    }


def test_every_rank_ends_with_the_global_minimum(tmp_path: Path) -> None:
    results = _launch(tmp_path, absent_rank=-1)
    assert sorted(results) == [0, 1, 2, 3]
    assert [results[r]["local"] for r in range(WORLD)] == EXPECTED_LOCAL
    for r in range(WORLD):
        assert results[r]["pages"] == EXPECTED_MIN
        assert results[r]["kv_bytes"] == EXPECTED_MIN * STAGE_LAYERS[r] * PER_LAYER_PAGE
        # STATE untouched: 4 entries, 4,000 B on every stage.
        assert (results[r]["ring"], results[r]["ring_bytes"]) == (4, 4000)


def test_a_rank_that_never_joins_times_out_clearly(tmp_path: Path) -> None:
    results = _launch(tmp_path, absent_rank=3)
    for r in range(3):
        err = str(results[r]["error"])
        assert f"rank {r}/4" in err and "within 2 s" in err and "never joined" in err
        assert results[r]["timeout_s"] == TIMEOUT_S
        # bounded: gave up after about the configured timeout, not a hang
        assert TIMEOUT_S * 0.9 <= float(results[r]["elapsed"]) < TIMEOUT_S + 20  # type: ignore[arg-type]


def test_reconcile_refuses_without_a_process_group_or_page_class() -> None:
    from kvledger import PoolPlan, page_pool, plan_pools
    from kvledger.check import reconcile

    with pytest.raises(ValueError, match="no PAGE class"):
        reconcile(PoolPlan.empty())
    plan = plan_pools([page_pool(100)], available_bytes=1000, max_num_seqs=1)
    with pytest.raises(RuntimeError, match="not initialised"):
        reconcile(plan)
    with pytest.raises(ValueError, match="timeout"):
        reconcile(plan, timeout=0)

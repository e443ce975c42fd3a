"""The questions people bring: how many requests, how long, how many GPUs.

- **max concurrency at max_model_len** — for ``--engine vllm`` vLLM's own definition (the
  "Maximum concurrency for L tokens per request" it logs: blocks ÷ blocks one request of L
  tokens needs in the worst case, unrounded); for native, requests whose STATE floors are
  reserved (``max_num_seqs``) and whose pages fit: ``min(max_num_seqs, blocks ÷ ⌈L / B⌉)``.
- **max context at a concurrency N** — the largest L with concurrency(L) ≥ N, by bisection
  over a monotone (non-increasing in L) concurrency function the caller supplies.
- **fit** — the first layout on one GPU type that holds N requests of L tokens: TP in
  1, 2, 4, 8; PP in 1, 2, 4, …; one node before two, TP inside a node before PP, PP across
  nodes (``plan/fit_layouts.py``; TP keeps every GPU busy on every token, PP adds pipeline
  bubbles; vLLM's guidance), DP × EP for a MoE model when asked. Each candidate is planned for real
  (weights, reserves, TP head split, PP stages), and the first that holds it wins; when none
  does, every attempt says why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

TP_SIZES = (1, 2, 4, 8)
PP_SIZES = (1, 2, 4, 8, 16)


def max_context_at(
    concurrency: int, concurrency_at: Callable[[int], float], *, hi: int
) -> int | None:
    """The largest context ``L ≤ hi`` with ``concurrency_at(L) ≥ concurrency``; None if even
    one token per request does not reach it."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")
    if hi < 1:
        raise ValueError(f"the context bound must be >= 1, got {hi}")
    if concurrency_at(1) < concurrency:
        return None
    lo = 1  # invariant: concurrency_at(lo) >= concurrency
    if concurrency_at(hi) >= concurrency:
        return hi
    top = hi  # invariant: concurrency_at(top) < concurrency
    while top - lo > 1:
        mid = (lo + top) // 2
        if concurrency_at(mid) >= concurrency:
            lo = mid
        else:
            top = mid
    return lo


def fit_candidates(
    num_decoder_layers: int,
    tp_sizes: Iterable[int] = TP_SIZES,
    pp_sizes: Iterable[int] = PP_SIZES,
    gpus_per_node: int = 8,
) -> list[tuple[int, int]]:
    """(tp, pp) in the order ``fit`` tries them (``plan/fit_layouts.py``): one node before
    two, TP inside a node before PP inside it, PP across nodes with TP = the node."""
    from kvledger.plan.fit_layouts import fit_layouts

    return [(c.tensor_parallel_size, c.pipeline_parallel_size) for c in
            fit_layouts(num_decoder_layers, tp_sizes, pp_sizes, gpus_per_node=gpus_per_node)]

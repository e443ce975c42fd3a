"""The GPU layouts ``fit`` tries, in the order an operator would pick them.

vLLM's guidance (docs, "Distributed inference and serving"): tensor parallelism inside a node,
pipeline parallelism across nodes (TP = the GPUs of a node, PP = the nodes). So:

1. one node before two: layouts are ordered by the nodes of ``gpus_per_node`` GPUs they fill;
2. inside one node, TP only (fewer GPUs first), and — asked with ``--enable-expert-parallel``
   for a MoE model — DP × EP layouts (each DP rank its own engine, the experts over all of
   them: ``plan/engines/vllm/experts.py``), tried before TP at the same GPU count, more DP
   ranks first (DP multiplies the KV cache; TP replicates MLA's latent);
3. PP inside one node only as a fallback, once no TP (or DP × EP) layout of one node holds
   the load — it is still one node, so it comes before two;
4. across nodes, TP = the node (the largest TP size ≤ ``gpus_per_node``) × PP = stages, and DP
   × EP layouts of that many GPUs.

TP never spans nodes. ``max_gpus`` caps every layout.
"""

from __future__ import annotations

from collections.abc import Iterable

from kvledger.records import record

DP_SIZES = (2, 4, 8, 16, 32, 64)
GPUS_PER_NODE = 8


@record(frozen=True)
class Candidate:
    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int = 1
    enable_expert_parallel: bool = False

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.data_parallel_size

    def nodes(self, gpus_per_node: int) -> int:
        return -(-self.gpus // gpus_per_node)


def fit_layouts(
    num_decoder_layers: int,
    tp_sizes: Iterable[int],
    pp_sizes: Iterable[int],
    *,
    gpus_per_node: int = GPUS_PER_NODE,
    max_gpus: int | None = None,
    dp_sizes: Iterable[int] = (),
) -> list[Candidate]:
    """The candidates in ``fit``'s order (module docstring). ``dp_sizes``: the DP × EP
    layouts to add (empty: none)."""
    tps = sorted({t for t in tp_sizes if t <= gpus_per_node})
    pps = sorted({p for p in pp_sizes if p <= max(1, num_decoder_layers)})
    node_tp = max(tps) if tps else 0
    out: list[Candidate] = []
    for tp in tps:
        for pp in pps:
            one = Candidate(tp, pp)
            if one.gpus > gpus_per_node and tp != node_tp:
                continue  # across nodes: TP fills the node, PP spans the nodes
            out.append(one)
        out.extend(Candidate(tp, 1, dp, True) for dp in sorted(set(dp_sizes)) if dp > 1)
    if max_gpus is not None:
        out = [c for c in out if c.gpus <= max_gpus]

    def order(c: Candidate) -> tuple[int, int, int, int, int]:
        nodes = c.nodes(gpus_per_node)
        pp_in_node = int(nodes == 1 and c.pipeline_parallel_size > 1)
        return (nodes, pp_in_node, c.gpus, 0 if c.enable_expert_parallel else 1,
                -c.data_parallel_size * 100 + c.pipeline_parallel_size)

    return sorted(out, key=order)

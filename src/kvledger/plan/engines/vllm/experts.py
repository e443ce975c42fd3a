"""Which expert weights one vLLM GPU holds under data and expert parallelism.

From vLLM's source (0.32.0 and 0.33.0 read alike; the rule is no release-profile field):

- ``model_executor/layers/fused_moe/layer.py`` ``make_parallel_config`` builds every MoE
  layer's ``FusedMoEParallelConfig`` with ``dp_size`` = the DP group's world size;
  ``fused_moe/config.py`` ``FusedMoEParallelConfig.make`` then *flattens TP across DP*
  (``flatten_tp_across_dp_and_pcp``: ``dp_size × pcp_size × tp_size`` ranks). Without
  ``enable_expert_parallel`` every expert is TP-sliced over those DP × TP GPUs; with it
  (``use_ep``) ``ep_size`` is that flattened size and each GPU holds whole experts:
  ``fused_moe/expert_map_manager.py`` ``determine_expert_map`` gives rank r
  ``E // ep_size`` experts, one more for the first ``E % ep_size`` ranks. Either way one GPU
  holds 1 / (DP × TP) of the routed experts' bytes (the ceiling of E / EP whole experts on
  the first ranks, which kvledger rounds to the even share).
- Everything else — attention, dense MLPs, embeddings and LM head, routers — is built per DP
  rank with the TP group's layers (``ColumnParallelLinear``, ``VocabParallelEmbedding``):
  divided by TP, replicated across DP ranks. Each DP rank is its own engine with its own KV
  cache and ``max_num_seqs`` (``totals`` multiply them).
- Shared experts are an ordinary MLP of the DP rank (``models/deepseek_v2.py``
  ``DeepseekV2MoE``: ``DeepseekV2MLP`` with the TP group), not EP-split — and with
  ``ParallelConfig.use_sequence_parallel_moe`` (``config/parallel.py``: EP, TP > 1, DP > 1
  and an all-to-all backend of its list, the default ``allgather_reducescatter`` among them)
  that MLP is built with ``disable_tp``: whole on every GPU. ``SEQUENCE_PARALLEL_SHARED``
  lists the architectures whose model file does so; for any other the shared experts are
  taken as TP-split, and the basis says so.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.derive.layers import ModelFacts
    from kvledger.plan.request import PlanRequest
    from kvledger.plan.weights import WeightSplit

# Architectures whose shared-expert MLP vLLM builds with ``disable_tp=is_sequence_parallel``
# (models/deepseek_v2.py DeepseekV2MoE → DeepseekV2MLP; registry.py maps these three there).
SEQUENCE_PARALLEL_SHARED = frozenset({
    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM",
})
# ParallelConfig.all2all_backend's default (config/parallel.py) is in
# use_sequence_parallel_moe's list; kvledger plans the default backend.


def weight_split(facts: ModelFacts, request: PlanRequest) -> WeightSplit | None:
    """The split of ``request``'s layout (module docstring), with the parts kept whole on
    every TP rank (``plan/tp_replicated.py REPLICATED_ON_TP``: MLA's down-projections, the DSA
    indexer, the router); None when everything is divided by TP alone."""
    tp, dp = request.tensor_parallel_size, request.data_parallel_size
    from kvledger.plan.tp_replicated import REPLICATED_ON_TP, has_replicated_parts
    from kvledger.plan.weights import WeightSplit

    whole_on_tp = tp > 1 and has_replicated_parts(facts.language_config())
    if dp == 1:
        if not whole_on_tp:
            return None
        return WeightSplit(dict(REPLICATED_ON_TP), _WHOLE_ON_TP.format(tp=tp))

    ep = request.enable_expert_parallel
    sequence_parallel = ep and tp > 1
    whole = sequence_parallel and bool(SEQUENCE_PARALLEL_SHARED & set(facts.architectures))
    how = ("expert parallelism: whole experts over" if ep else
           "no expert parallelism: every expert TP-sliced over")
    basis = (f"vLLM {how} the DP × TP = {dp * tp} GPUs (fused_moe/config.py "
             "FusedMoEParallelConfig.make, flatten_tp_across_dp_and_pcp); attention, dense "
             f"MLPs, embeddings and head divided by TP {tp} on each DP rank")
    if whole:
        basis += ("; shared experts whole on every GPU (sequence-parallel MoE: "
                  "deepseek_v2.py DeepseekV2MLP disable_tp)")
    elif sequence_parallel:
        basis += ("; shared experts taken as TP-split (sequence-parallel MoE may replicate "
                  "them in this model's file: not checked)")
    ranks = {"routed_experts": dp * tp, "shared_experts": 1 if whole else tp}
    if whole_on_tp:
        ranks.update(REPLICATED_ON_TP)
        basis += "; " + _WHOLE_ON_TP.format(tp=tp)
    return WeightSplit(ranks, basis, expert_parallel=ep)


_WHOLE_ON_TP = ("MLA's q_a / kv_a projections, the DSA indexer and the router whole on each "
                "of the {tp} TP ranks (deepseek_v2.py DeepSeekV2FusedQkvAProjLinear disable_tp, "
                "Indexer ReplicatedLinear; fused_moe/router/gate_linear.py GateLinear)")

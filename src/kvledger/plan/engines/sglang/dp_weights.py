"""Which weights one SGLang GPU holds under DP attention (``--enable-dp-attention``).

SGLang 0.5.23's ``tp_size`` counts every GPU of the replica; DP attention splits it into
``dp_size`` attention groups of ``attn_tp = tp / dp`` GPUs (``runtime_context``
``derive_attn_tp_size``). Read in the 0.5.23 wheel's model files:

- ``models/deepseek_v2.py`` (``DeepseekV2ForCausalLM``, ``DeepseekV3ForCausalLM``,
  ``DeepseekV32ForCausalLM``): the MLA projections ``q_b_proj`` / ``kv_b_proj`` / ``o_proj``
  are built with ``parallel_group="attn_tp"`` (``DeepseekV2AttentionMLA``: ``num_local_heads =
  num_heads // attn_tp_size``); the input embedding with ``get_embedding_tp_kwargs()``
  (``layers/vocab_parallel_embedding.py``: ``use_attn_tp_group`` under DP attention);
- ``models/qwen2_moe.py`` ``Qwen2MoeModel`` (the base of ``qwen3_moe.py``'s
  ``Qwen3MoeModel``): ``embed_tokens`` with ``use_attn_tp_group=is_dp_attention_enabled()``,
  ``qwen3_moe.py``'s ``qkv_proj`` / ``o_proj`` with ``parallel_group="attn_tp"``.

So attention and the input embedding are divided by ``attn_tp`` (replicated over the DP
groups); the LM head stays over the whole TP group unless ``--enable-dp-lm-head``
(``ParallelLMHead(use_attn_tp_group=enable_dp_lm_head)``), the experts over ``tp`` (or an
``--ep-size`` equal to it: the same bytes), dense MLPs over ``tp`` unless
``--moe-dense-tp-size 1`` — those two flags are refused by the serve-line reader. For other
architectures the split is not read: their weights stay divided by TP, an estimate.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.derive.layers import ModelFacts
    from kvledger.plan.request import PlanRequest
    from kvledger.plan.weights import WeightSplit

ATTN_TP_ARCHITECTURES = frozenset({
    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM",
    "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM",
})


def weight_split(facts: ModelFacts, request: PlanRequest) -> WeightSplit | None:
    """DP attention's split (module docstring), with the parts SGLang keeps whole on every TP
    rank (``plan/tp_replicated.py REPLICATED_ON_TP``: deepseek_v2.py's ReplicatedLinear
    ``fused_qkv_a_proj_with_mqa`` / ``kv_a_proj_with_mqa``, the MoE gates); None when
    everything is divided by TP."""
    options = request.sglang
    tp, dp = request.tensor_parallel_size, request.data_parallel_size
    from kvledger.plan.tp_replicated import REPLICATED_ON_TP, has_replicated_parts
    from kvledger.plan.weights import WeightSplit

    whole = dict(REPLICATED_ON_TP) if tp > 1 and has_replicated_parts(
        facts.language_config()) else {}
    why = (f"MLA's q_a / kv_a projections and the router whole on each of the {tp} TP ranks "
           "(deepseek_v2.py ReplicatedLinear, MoEGate; qwen2_moe.py / mixtral.py "
           "ReplicatedLinear gates)")
    # Options of the wrong type, or tp % dp: refused by the layout when it plans
    # (engine._options, settings.resolve), not split here.
    if not getattr(options, "enable_dp_attention", False) or dp == 1 or tp % dp or \
            not ATTN_TP_ARCHITECTURES & set(facts.architectures):
        return WeightSplit(whole, why) if whole else None

    attn_tp = tp // dp
    basis = (f"SGLang DP attention: attention and the input embedding over attn_tp = "
             f"{tp} / {dp} = {attn_tp} GPUs, replicated over the {dp} DP groups "
             "(deepseek_v2.py / qwen2_moe.py parallel_group attn_tp); the rest over TP "
             f"{tp}")
    if whole:
        basis += "; " + why
    return WeightSplit({"attn": attn_tp, "embed": attn_tp, **whole}, basis)

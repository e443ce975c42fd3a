"""Which checkpoints ATOM serves, and which attention backend each one gets.

ATOM builds the model class from ``architectures[0]`` through ``support_model_arch_dict``
(``atom/model_engine/model_runner.py``): an architecture not in it is a ``KeyError`` at
start-up. ``ARCHITECTURES`` is that table's keys (the value is the ATOM class, for people).

The backend is chosen from the text config (``ModelRunner.__init__`` → ``get_attn_backend``,
``atom/utils/selector.py``), in this order:

1. ``is_deepseek_v4``: an architecture containing "DeepseekV4" → ``DeepseekV4Backend``;
2. ``is_kimi_linear``: model_type ``kimi_linear`` → ``KimiMLAGDNBackend`` (MLA + KDA state);
3. ``is_deepseek_mla``: model_type in ``MLA_MODEL_TYPES`` and ``kv_lora_rank`` set →
   ``AiterMLABackend`` (its V3.2 indexer when the config has ``index_topk``);
4. ``is_qwen_next``: model_type in ``GDN_MODEL_TYPES`` → ``GDNAttentionBackend``;
5. otherwise ``AiterBackend`` (split K/V; its MiMo-V2 branch for ``MIMO_MODEL_TYPES``, its
   sparse index cache for MiniMax-M3's ``sparse_attention_config``).

The environment switches ``ATOM_USE_TRITON_MLA`` / ``ATOM_USE_UNIFIED_ATTN`` are taken at their
defaults (off); the vLLM / SGLang plugin modes are not ATOM's own server and are not covered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# support_model_arch_dict (atom/model_engine/model_runner.py at releases.COMMIT).
ARCHITECTURES: dict[str, str] = {
    "Qwen3ForCausalLM": "atom.models.qwen3.Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM": "atom.models.qwen3_moe.Qwen3MoeForCausalLM",
    "LlamaForCausalLM": "atom.models.llama.LlamaForCausalLM",
    "MixtralForCausalLM": "atom.models.mixtral.MixtralForCausalLM",
    "DeepseekV3ForCausalLM": "atom.models.deepseek_v2.DeepseekV2ForCausalLM",
    "DeepseekV32ForCausalLM": "atom.models.deepseek_v2.DeepseekV2ForCausalLM",
    "DeepseekV4ForCausalLM": "atom.models.deepseek_v4.DeepseekV4ForCausalLM",
    "GptOssForCausalLM": "atom.models.gpt_oss.GptOssForCausalLM",
    "GlmMoeDsaForCausalLM": "atom.models.deepseek_v2.GlmMoeDsaForCausalLM",
    "Glm4MoeForCausalLM": "atom.models.glm4_moe.Glm4MoeForCausalLM",
    "Qwen3NextForCausalLM": "atom.models.qwen3_next.Qwen3NextForCausalLM",
    "Qwen3_5ForConditionalGeneration": "atom.models.qwen3_5.Qwen3_5MultimodalModel",
    "Qwen3_5MoeForConditionalGeneration": "atom.models.qwen3_5.Qwen3_5MoeMultimodalModel",
    "Qwen3_5MoeForCausalLM": "atom.models.qwen3_5.Qwen3_5MoeForCausalLM",
    "KimiK25ForConditionalGeneration": "atom.models.kimi_k25.KimiK25ForCausalLM",
    "KimiK3ForConditionalGeneration": "atom.models.kimi_k3.KimiK3ForConditionalGeneration",
    "MiniMaxM2ForCausalLM": "atom.models.minimax_m2.MiniMaxM2ForCausalLM",
    "MiMoV2ForCausalLM": "atom.models.mimo_v2.MiMoV2ForCausalLM",
    "MiMoV2FlashForCausalLM": "atom.models.mimo_v2.MiMoV2ForCausalLM",
    "Mistral3ForConditionalGeneration": "atom.models.mistral3.Mistral3TextOnly",
    "MistralForCausalLM": "atom.models.mistral3.Mistral3ForCausalLM",
    "MiniMaxM3SparseForCausalLM": "atom.models.minimax_m3.MiniMaxM3SparseForCausalLM",
    "MiniMaxM3SparseForConditionalGeneration":
        "atom.models.minimax_m3.MiniMaxM3SparseForConditionalGeneration",
}

# ModelRunner.is_deepseek_mla: these model types (with kv_lora_rank set). deepseek_v32,
# glm_moe_dsa and kimi_k2 load through atom/config.py _CONFIG_REGISTRY as deepseek_v3.
MLA_MODEL_TYPES = frozenset({"deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_mtp",
                             "glm_moe_dsa", "kimi_k2"})
# ModelRunner.is_qwen_next.
GDN_MODEL_TYPES = frozenset({"qwen3_next", "qwen3_next_mtp", "qwen3_5_text",
                             "qwen3_5_moe_text"})
# ModelRunner.is_mimo_v2.
MIMO_MODEL_TYPES = frozenset({"mimo_v2", "mimo_v2_flash"})

V4, KIMI_MLA_GDN, MLA, GDN, MHA, MIMO_V2 = (
    "deepseek_v4", "kimi_mla_gdn", "mla", "gdn", "mha", "mimo_v2")
# For people: the ATOM class each backend name stands for.
BACKEND_CLASSES = {
    V4: "atom/model_ops/attentions/deepseek_v4_attn.py DeepseekV4AttentionMetadataBuilder",
    KIMI_MLA_GDN: "atom/model_ops/attentions/kimi_mla_gdn_attn.py _KimiMLAGDNCommon",
    MLA: "atom/model_ops/attentions/aiter_mla.py AiterMLAMetadataBuilder",
    GDN: "atom/model_ops/attentions/gdn_attn.py GDNAttentionMetadataBuilder",
    MHA: "atom/model_ops/attentions/aiter_attention.py AiterAttentionMetadataBuilder",
    MIMO_V2: "atom/model_ops/attentions/aiter_attention.py AiterAttentionMetadataBuilder "
             "(is_mimo_v2 branch)",
}


class NotServedByAtom(ValueError):
    """ATOM has no model class for this checkpoint's architecture."""


def refuse_unserved(model_type: str, architectures: Sequence[str]) -> None:
    arch = architectures[0] if architectures else ""
    if arch in ARCHITECTURES:
        return
    from kvledger.plan.engines.atom.releases import NEWEST

    named = f"architecture {arch!r}" if arch else "no architectures entry"
    raise NotServedByAtom(
        f"{NEWEST.label} does not serve model type {model_type!r} ({named}): ATOM builds a "
        f"model from architectures[0] through support_model_arch_dict "
        f"(atom/model_engine/model_runner.py), which has no such entry; it serves "
        f"{', '.join(sorted(ARCHITECTURES))}"
    )


def backend(text: Mapping[str, Any], architectures: Sequence[str]) -> str:
    """The backend ``ModelRunner.__init__`` selects for this text config."""
    model_type = str(text.get("model_type") or "")
    if any("DeepseekV4" in str(a) for a in architectures) or \
            model_type in ("deepseek_v4", "deepseek_v4_mtp"):
        return V4
    if model_type == "kimi_linear":
        return KIMI_MLA_GDN
    if model_type in MLA_MODEL_TYPES and text.get("kv_lora_rank") is not None:
        return MLA
    if model_type in GDN_MODEL_TYPES:
        return GDN
    if model_type in MIMO_MODEL_TYPES:
        return MIMO_V2
    return MHA

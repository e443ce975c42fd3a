"""The decoder layer of the Llama-like models vLLM builds, per tensor-parallel rank, as the
shapes LoRA slots and CPU offload are sized from.

Classes (vllm/model_executor/models/{llama,qwen2,qwen3,mistral}.py, the same in 0.32.0 and
0.33.0): ``LlamaForCausalLM`` and ``Qwen3ForCausalLM`` list ``embed_tokens`` and ``lm_head``
in ``embedding_modules`` (so LoRA wraps them: lora/utils.py ``get_supported_lora_modules``);
``Qwen2ForCausalLM`` has none, and ``MistralForCausalLM`` empties it ("We don't support LoRA on
the embedding layers"). Each decoder layer holds, in ``named_parameters`` order:
``self_attn.qkv_proj`` (QKVParallelLinear: q heads / TP, KV heads / TP but at least one, a
bias with ``attention_bias`` / Qwen2's always-on q/k/v bias), ``self_attn.o_proj``
(RowParallelLinear, input / TP, a full-size bias with ``attention_bias`` on Llama),
Qwen3's ``q_norm`` / ``k_norm`` (head_dim each), ``mlp.gate_up_proj`` (MergedColumnParallel:
2 × intermediate / TP) and ``mlp.down_proj`` (RowParallel: intermediate / TP in), each with a
bias under Llama's ``mlp_bias``, then ``input_layernorm`` and ``post_attention_layernorm``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.records import record

# architecture → whether its vLLM class lets LoRA wrap the embedding and the LM head.
LLAMA_LIKE = {
    "LlamaForCausalLM": True,
    "Qwen3ForCausalLM": True,
    "Qwen2ForCausalLM": False,
    "MistralForCausalLM": False,
}


# Mixture-of-experts classes whose attention is the Llama-like one above and whose MoE block
# is a router (``GateLinear``, a ReplicatedLinear) and gated experts (qwen3_moe.py,
# mixtral.py): both list embed_tokens and lm_head in embedding_modules.
MOE_LIKE = {"Qwen3MoeForCausalLM": True, "MixtralForCausalLM": True}


class NotLlamaLike(ValueError):
    """The model is not one whose layer kvledger sizes module by module (names it)."""


@record(frozen=True)
class Dims:
    """A Llama-like decoder's sizes, and one tensor-parallel rank's share of them."""

    architecture: str
    hidden: int
    q: int  # query width per rank (heads / TP × head_dim)
    kv: int  # key (= value) width per rank (max(1, KV heads / TP) × head_dim)
    o_in: int  # o_proj's input per rank (heads × head_dim / TP)
    inter: int  # intermediate size per rank
    head_dim: int
    layers: int
    vocab: int
    tp: int
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    qk_norm: bool

    # Mixture of experts (MOE_LIKE): experts, their intermediate size per rank, and how many
    # decoder layers hold experts (the others a dense MLP of ``inter``).
    experts: int = 0
    moe_inter: int = 0
    moe_layers: int = 0

    @property
    def embeddings_lora(self) -> bool:
        return {**LLAMA_LIKE, **MOE_LIKE}[self.architecture]


def _count(cfg: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = cfg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise NotLlamaLike(f"the config's {key} must be a positive integer, got {value!r}")
    return value


def dims(cfg: Mapping[str, Any], tp: int, *, moe: bool = False) -> Dims:
    """The sizes of ``cfg`` (a text config) on one of ``tp`` ranks; ``NotLlamaLike`` names the
    architecture when it is not in ``LLAMA_LIKE`` (or, with ``moe``, ``MOE_LIKE``)."""
    archs = cfg.get("architectures") or []
    arch = str(archs[0]) if isinstance(archs, list) and archs else ""
    known = {**LLAMA_LIKE, **MOE_LIKE} if moe else LLAMA_LIKE
    if arch not in known:
        raise NotLlamaLike(f"{arch or 'this architecture'} (kvledger sizes them module by "
                           f"module for {', '.join(known)} only)")
    hidden = _count(cfg, "hidden_size")
    heads = _count(cfg, "num_attention_heads")
    kv_heads = _count(cfg, "num_key_value_heads", heads)
    head_dim = cfg.get("head_dim") or hidden // heads
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 1:
        raise NotLlamaLike(f"the config's head_dim must be a positive integer, got {head_dim!r}")
    inter = _count(cfg, "intermediate_size")
    if heads % tp or inter % tp or (kv_heads % tp and tp % kv_heads):
        raise NotLlamaLike(f"{tp}-way tensor parallelism does not divide its heads or MLP")
    llama = arch in ("LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM")
    # llama.py LlamaDecoderLayer: attention_bias (or bias) on qkv and o, qkv_bias overriding
    # qkv's; qwen2.py: a q/k/v bias always; qwen3.py: attention_bias on qkv only.
    attention_bias = bool(cfg.get("attention_bias") or cfg.get("bias"))
    if llama:
        qkv_bias = bool(cfg["qkv_bias"]) if "qkv_bias" in cfg else attention_bias
    else:
        qkv_bias = arch == "Qwen2ForCausalLM" or bool(cfg.get("attention_bias"))
    return Dims(
        architecture=arch, hidden=hidden, q=heads // tp * head_dim,
        kv=max(1, kv_heads // tp) * head_dim, o_in=heads * head_dim // tp, inter=inter // tp,
        head_dim=head_dim, layers=_count(cfg, "num_hidden_layers"),
        vocab=_count(cfg, "vocab_size"), tp=tp, qkv_bias=qkv_bias,
        o_bias=llama and attention_bias, mlp_bias=llama and bool(cfg.get("mlp_bias")),
        qk_norm=arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM"),
        **_experts(cfg, arch, tp),
    )


def _experts(cfg: Mapping[str, Any], arch: str, tp: int) -> dict[str, int]:
    """Mixtral: every layer holds ``num_local_experts`` experts of ``intermediate_size``
    (mixtral.py MixtralMoE). Qwen3-MoE: layer i holds ``num_experts`` of
    ``moe_intermediate_size`` unless it is in ``mlp_only_layers`` or (i + 1) is no multiple
    of ``decoder_sparse_step`` (qwen3_moe.py Qwen3MoeDecoderLayer)."""
    if arch == "MixtralForCausalLM":
        inter = _count(cfg, "intermediate_size")
        experts, layers = _count(cfg, "num_local_experts"), _count(cfg, "num_hidden_layers")
    elif arch == "Qwen3MoeForCausalLM":
        inter, experts = _count(cfg, "moe_intermediate_size"), _count(cfg, "num_experts")
        step = _count(cfg, "decoder_sparse_step", 1)
        dense = cfg.get("mlp_only_layers") or []
        if not isinstance(dense, list):
            raise NotLlamaLike(f"the config's mlp_only_layers must be a list, got {dense!r}")
        layers = sum(1 for i in range(_count(cfg, "num_hidden_layers"))
                     if i not in dense and (i + 1) % step == 0)
    else:
        return {}
    if inter % tp:
        raise NotLlamaLike(f"{tp}-way tensor parallelism does not divide its experts' MLP")
    return {"experts": experts, "moe_inter": inter // tp, "moe_layers": layers}


def layer_parameters(d: Dims) -> list[tuple[str, int]]:
    """(name, elements) of one decoder layer's parameters on one rank, in vLLM's order."""
    qkv = d.q + 2 * d.kv
    out = [("self_attn.qkv_proj.weight", qkv * d.hidden)]
    if d.qkv_bias:
        out.append(("self_attn.qkv_proj.bias", qkv))
    out.append(("self_attn.o_proj.weight", d.hidden * d.o_in))
    if d.o_bias:
        out.append(("self_attn.o_proj.bias", d.hidden))
    if d.qk_norm:
        out += [("self_attn.q_norm.weight", d.head_dim), ("self_attn.k_norm.weight", d.head_dim)]
    out.append(("mlp.gate_up_proj.weight", 2 * d.inter * d.hidden))
    if d.mlp_bias:
        out.append(("mlp.gate_up_proj.bias", 2 * d.inter))
    out.append(("mlp.down_proj.weight", d.hidden * d.inter))
    if d.mlp_bias:
        out.append(("mlp.down_proj.bias", d.hidden))
    out += [("input_layernorm.weight", d.hidden), ("post_attention_layernorm.weight", d.hidden)]
    return out

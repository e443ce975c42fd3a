"""The share of each linear category a ModelOpt checkpoint keeps unquantized, layer by layer.

ModelOpt's ``hf_quant_config.json`` names the modules it left in the model dtype in
``exclude_modules``, often layer by layer (nvidia/DeepSeek-V3.1-NVFP4 lists every layer's
q_a / q_b / kv_a / kv_b projections but not its o_proj; nvidia/GLM-5.2-NVFP4 lists whole dense
layers ``model.layers.1.*`` and every layer's ``self_attn*`` and ``shared_experts*``). One probe
module per category cannot say that: GLM-5.2's whole expert set was counted at 16 bits because
``model.layers.1.*`` names layer 1. Here each decoder (and MTP) layer's modules are named as
vLLM prefixes them and matched with vLLM's rule (vLLM 0.33 modelopt.py
``ModelOptQuantConfigBase.is_layer_excluded``: quant_utils ``is_layer_skipped`` on the exact
name, a fused module skipped when its fused name or every shard is listed; then any listed
name that is a substring of the prefix, also with ``language_model.`` removed; then the list as
fnmatch wildcards). Module names and sizes from deepseek_v2.py (MLA: ``fused_qkv_a_proj`` of
``q_a_proj`` + ``kv_a_proj_with_mqa``, ``q_b_proj``, ``kv_b_proj``, ``o_proj``; MoE
``mlp.experts``, ``mlp.shared_experts.gate_up_proj`` / ``down_proj``; dense ``mlp.gate_up_proj`` /
``down_proj``) and llama.py / qwen3_moe.py (``self_attn.qkv_proj`` of q/k/v, ``o_proj``).

Not applied: ``apply_vllm_mapper``'s rewrite of a pattern ``path*`` into ``path`` and
``path.*`` (run only for a model with a weights mapper); it changes the result only where
``path`` ends in a layer number that begins a longer one (``layers.1`` inside ``layers.12``)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any

# Language models whose vLLM modules carry the names below: deepseek_v2.py (deepseek_v2 / v3,
# kimi_k2), vllm/models/deepseek_v32 (deepseek_v32, and glm_moe_dsa: the registry's
# GlmMoeDsaForCausalLM), glm4_moe.py, qwen3_moe.py, llama.py / qwen2.py / qwen3.py / mistral.
# Another family (Gemma 4's dense MLP beside its experts, MiniMax's block_sparse_moe) is left to
# the category probes.
NAMED_FAMILIES = frozenset({"deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2",
                            "glm_moe_dsa", "glm4_moe", "qwen3_moe", "llama", "mistral", "qwen2",
                            "qwen3"})

# Layer prefixes a language model's layer takes in vLLM: alone, or under a multimodal wrapper.
_ROOTS = ("model.layers.{i}", "language_model.model.layers.{i}", "model.language_model.layers.{i}")


def _excluded(prefix: str, patterns: Sequence[str], shards: Sequence[str] = ()) -> bool:
    """vLLM 0.33 modelopt.py ``is_layer_excluded`` for one module prefix."""
    if prefix in patterns:
        return True
    if shards:
        head = prefix.rsplit(".", 1)[0]
        if all(f"{head}.{s}" in patterns for s in shards):
            return True
    bare = prefix.removeprefix("language_model.") if prefix.startswith("language_model.") \
        else None
    for p in patterns:
        if p != prefix and (p in prefix or (bare is not None and p in bare)):
            return True
    return any(fnmatch.fnmatch(prefix, p) for p in patterns)


def _any_root(i: int, name: str, patterns: Sequence[str], shards: Sequence[str] = ()) -> bool:
    return any(_excluded(f"{root.format(i=i)}.{name}", patterns, shards) for root in _ROOTS)


def _attention_parts(text: Any) -> list[tuple[str, tuple[str, ...], int]] | None:
    """(vLLM module name, its checkpoint shards, parameters) of one layer's attention: MLA
    (``kv_lora_rank`` stated) or GQA; None for another mixer."""
    h = text.get("hidden_size")
    heads = text.get("num_attention_heads")
    if not isinstance(h, int) or not isinstance(heads, int) or h <= 0 or heads <= 0:
        return None
    kv_lora = text.get("kv_lora_rank")
    if isinstance(kv_lora, int) and kv_lora > 0:
        nope = int(text.get("qk_nope_head_dim") or 0)
        rope = int(text.get("qk_rope_head_dim") or 0)
        v = int(text.get("v_head_dim") or 0)
        q_lora = text.get("q_lora_rank")
        o = ("self_attn.o_proj", (), heads * v * h)
        kv_b = ("self_attn.kv_b_proj", (), kv_lora * heads * (nope + v))
        q_b_size = heads * (nope + rope)
        if isinstance(q_lora, int) and q_lora > 0:
            return [("self_attn.fused_qkv_a_proj", ("q_a_proj", "kv_a_proj_with_mqa"),
                     h * q_lora + h * (kv_lora + rope)),
                    ("self_attn.q_b_proj", (), q_lora * q_b_size), kv_b, o]
        return [("self_attn.q_proj", (), h * q_b_size),
                ("self_attn.kv_a_proj_with_mqa", (), h * (kv_lora + rope)), kv_b, o]
    kv_heads = text.get("num_key_value_heads") or heads
    head_dim = text.get("head_dim") or h // heads
    if not isinstance(kv_heads, int) or not isinstance(head_dim, int):
        return None
    q, kv = heads * head_dim, kv_heads * head_dim
    return [("self_attn.qkv_proj", ("q_proj", "k_proj", "v_proj"), h * (q + 2 * kv)),
            ("self_attn.o_proj", (), q * h)]


def excluded_shares(text: Any, model_type: str, patterns: Sequence[str], moe: Sequence[bool],
                    experts: int, first_mtp: int) -> Mapping[str, float] | None:
    """Per linear category, the share of its parameters ``patterns`` keep unquantized, over
    the layers ``moe`` lists (True: a MoE layer; MTP layers appended by the caller from index
    ``first_mtp``, each with its ``eh_proj``, 2·hidden × hidden, which deepseek_mtp.py builds
    as a plain ``nn.Linear``: never quantized, counted with the attention). None when
    no pattern names a layer (the category probes decide then) or the attention is of a kind
    not modelled here (a family outside ``NAMED_FAMILIES``)."""
    if model_type not in NAMED_FAMILIES or not any("layers." in p for p in patterns):
        return None
    parts = _attention_parts(text)
    if parts is None:
        return None
    kept: dict[str, float] = dict.fromkeys(("attn", "dense_mlp", "shared_experts",
                                             "routed_experts"), 0.0)
    total = dict.fromkeys(kept, 0.0)
    shared = bool(text.get("n_shared_experts") or text.get("shared_expert_intermediate_size"))
    h = int(text.get("hidden_size"))
    for i, sparse in enumerate(moe):
        if i >= first_mtp:
            total["attn"] += 2 * h * h
            kept["attn"] += 2 * h * h
        for name, shards, size in parts:
            total["attn"] += size
            if _any_root(i, name, patterns, shards):
                kept["attn"] += size
        mlps: list[tuple[str, str]] = []
        if sparse and experts:
            mlps.append(("routed_experts", "mlp.experts"))
            if shared:
                mlps += [("shared_experts", "mlp.shared_experts.gate_up_proj"),
                         ("shared_experts", "mlp.shared_experts.down_proj")]
        else:
            mlps += [("dense_mlp", "mlp.gate_up_proj"), ("dense_mlp", "mlp.down_proj")]
        for category, name in mlps:
            # gate_up holds two of an MLP's three equal matrices; an expert set counts whole.
            weight = 2.0 if name.endswith("gate_up_proj") else 1.0
            shards = ("gate_proj", "up_proj") if name.endswith("gate_up_proj") else ()
            total[category] += weight
            if _any_root(i, name, patterns, shards):
                kept[category] += weight
    return {c: kept[c] / total[c] for c in kept if total[c]}

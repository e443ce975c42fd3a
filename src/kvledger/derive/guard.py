"""Fail closed on config keys a family has not been checked against.

A new release of a model family often adds one key that changes the cache (a window, a
layer-type list, a shared-KV flag). Falling back to the dense formula then gives a silently
wrong number, the worst defect this project can have. So every family lists the keys it
understands, and any other key whose *name* looks cache-affecting is an error naming it.

The name test is deliberately broad: a false alarm costs one line in a family's checked list,
a miss costs a wrong plan.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kvledger.derive.config import Config
from kvledger.derive.errors import UnknownCacheKey, UnsupportedArchitecture

# Compiled on first use (re.search caches it): compiling this alternation at import cost ~4 ms
# of CLI start-up.
CACHE_AFFECTING = (
    r"window|sliding|swa|chunk|kv|key_value|head|layer|attn|attention|cache|compress|index|"
    r"state|conv|ssm|mamba|linear|lora_rank|rope_dim|nope|nextn|mtp|draft|eagle|cross|"
    r"encoder|decoder|sink|shar|dtype|quant|n_groups|d_model|d_inner|expand|hybrid|pattern|"
    r"block_config|full_attn|lightning|kda|gdn|topk|n_embd|n_head|n_layer|n_inner|n_ctx|"
    r"max_position|source_positions|target_positions|sparse|compress|ratio"
)

# Keys whose names match the pattern above but that never change what is cached.
NEVER_CACHE_AFFECTING = frozenset(
    {
        "attention_dropout", "attention_bias", "attn_pdrop", "attention_probs_dropout_prob",
        "attention_softmax_in_fp32", "attn_logit_softcapping", "final_logit_softcapping",
        "layer_norm_eps", "layer_norm_epsilon", "rms_norm_eps", "layernorm_epsilon",
        "norm_epsilon", "use_cache", "output_attentions", "output_hidden_states",
        "initializer_range", "hidden_dropout", "hidden_dropout_prob", "resid_pdrop",
        "embd_pdrop", "tie_word_embeddings", "head_bias", "mlp_bias", "use_return_dict",
        "return_dict", "is_encoder_decoder", "add_cross_attention", "decoder_start_token_id",
        "chunk_size_feed_forward", "cross_attention_hidden_size", "tie_encoder_decoder",
        "encoder_no_repeat_ngram_size", "is_decoder", "pruned_heads", "torchscript",
        "torch_dtype", "dtype", "layerdrop", "decoder_layerdrop", "encoder_layerdrop",
        "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
        "summary_first_dropout", "summary_proj_to_labels", "summary_use_proj",
        "summary_activation", "summary_type", "attention_multiplier", "use_qk_norm",
        "qk_layernorm", "use_qk_layernorm", "router_jitter_noise", "moe_layer_freq",
        "first_k_dense_replace", "decoder_sparse_step", "mlp_only_layers", "norm_topk_prob",
        "num_experts_per_tok", "moe_topk", "topk_group", "topk_method", "n_group",
        "routed_scaling_factor", "scoring_func", "aux_loss_alpha", "seq_aux",
        "output_router_logits", "router_aux_loss_coef", "use_bfloat16",
    }
)


def check_keys(cfg: Config, checked: Iterable[str], *, family: str) -> None:
    """Raise ``UnknownCacheKey`` for the first cache-affecting key outside ``checked``.

    Keys whose value is ``None`` are ignored: an absent feature cannot change the cache.
    Nested dicts are the family's business (it reads what it needs from them).
    """
    known = set(checked) | NEVER_CACHE_AFFECTING
    for key in sorted(cfg.raw):
        if key in known or cfg.raw[key] is None:
            continue
        if re.search(CACHE_AFFECTING, key, re.IGNORECASE):
            raise UnknownCacheKey(key, model_type=cfg.model_type or "?", family=family)


# DeepSeek-style fp8 block quantization of the weights (the ``fp8`` vocabulary's own keys,
# kept for callers that name them).
WEIGHT_QUANT_KEYS = frozenset(
    {"activation_scheme", "fmt", "quant_method", "weight_block_size", "scale_fmt"}
)


def check_quantization_config(
    cfg: Config, *, family: str, weight_keys: frozenset[str] = WEIGHT_QUANT_KEYS
) -> None:
    """Check ``cfg``'s quantization block against its ``quant_method``'s vocabulary
    (``kvledger.derive.quant``): weight-only keys pass, KV keys are resolved there, anything
    else fails closed naming ``quantization_config.<key>``. ``weight_keys`` are accepted on
    top of the vocabulary (the defaults are already in the fp8 vocabulary)."""
    from kvledger.derive.quant import check_quantization_config as check

    check(cfg, family=family, extra_keys=weight_keys - WEIGHT_QUANT_KEYS)


def check_keys_for_type(
    cfg: Config, keys_by_type: dict[str, frozenset[str]], *, family: str, model_type: str
) -> None:
    """For families covering several model types, each with its own checked keys: refuse a
    type the family has no list for, then check ``cfg`` against that type's list only (a key
    checked for one type must not slip through on another)."""
    keys = keys_by_type.get(model_type)
    if keys is None:
        raise UnsupportedArchitecture(
            f"unsupported: model_type {model_type!r} reached the {family} family, which has "
            "no handler for it",
            model_type=model_type,
            architectures=cfg.architectures,
        )
    check_keys(cfg, keys, family=f"{family}/{model_type}")

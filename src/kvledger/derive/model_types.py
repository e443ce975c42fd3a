"""THE model-type table: ``model_type`` → how kvledger derives that config's caches.

One row per model type (as config.json spells it). A row names its handler
(``"module:function"`` under ``kvledger.derive.families``), the cache-affecting keys the
handler reads, the keys whose names look cache-affecting but are not (each with *why*), the
keys that must be false or absent, the defaults the config class fills in for keys a
config.json omits, handler options, and — for multimodal wrappers — where the language model's
config sits and which inner types it may be. ``like=`` inherits another row.

Why data and not code: adding a Llama-like decoder must be one line here and one test with a
real config (docs/adding-a-model-type.md), and ``tests/derive/test_model_types.py`` can walk
every row: like= chains end, handlers import, options bind, every checked key is read by its
handler, every harmless key says why.

Defaults: vLLM loads config.json through the transformers (or vLLM) config class of its
``model_type``, so a key the file omits takes the class's default — e.g. Qwen3Config's
``head_dim`` is 128 whatever ``hidden_size`` says. Values were read from transformers 5.19 (the
one vLLM 0.32 runs with) by ``scripts/transformers_defaults.py``; a default that follows
another key (``num_key_value_heads`` = ``num_attention_heads``) is left to the handler's own
fallback, which is the same rule.

This module is plain data: importing it builds dict literals and imports no
handler (``bench/startup.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

# A row is a plain dict of the fields below (cheap to build at import; ``resolve`` turns the
# one a config needs into a ``Resolved``). Fields, all optional:
#   handler   "module:function" under kvledger.derive.families
#   keys      cache-affecting keys the handler reads
#   harmless  {key: why} — keys whose names look cache-affecting but that cache nothing
#   off       keys that must be false/absent (else the config is refused naming them)
#   like      inherit that row's fields; this row's own override (key sets and maps merge)
#   defaults  what the model type's config class fills in for a key config.json omits
#   config_class, vllm   where the defaults / the handler's facts were read
#   options   keyword arguments of the handler
#   text_key, inner      wrapper: the key holding the language model's config; the inner
#                        model types it may hold (first: the default when it states none);
#                        an inner type may itself be a wrapper (Qwen2.5-Omni's thinker)
#   text_defaults        wrapper: {inner type: {key: value}} its config class fills in for a
#                        text config that omits them, beyond the inner row's own defaults
#                        (LlamaConfig's sizes for llava-1.5's sparse text_config)
#   text_inline          wrapper: without a text_key object the config class builds the
#                        text config from the top-level keys (older Qwen2-VL / GLM-4.1V files)
#   text_harmless        wrapper: {key: why} its text config may carry beyond what the inner
#                        row lists (the wrapper's own training flags in a llama text_config)
#   text_mirrored        wrapper: the engine builds the language model from the wrapper's
#                        top-level keys and reads only lengths (its hf_text_config) from the
#                        text_key copy; the two must agree on the inner row's keys (Isaac)
#   stated    remote-code model types (derive/remote_code.py): keys config.json must state,
#             because no config class kvledger can read fills them in (their default lives in
#             the checkpoint's own configuration code); a config omitting one is refused
# A row with no handler and no text_key names a model type kvledger recognizes but does not
# derive (no handler reads its schema): derive refuses it, engine-neutrally. Whether an
# engine release serves a model type, and why not, is that engine's data
# (plan/engines/vllm/releases/model_type_verdicts.py), never a field here.
if TYPE_CHECKING:  # an alias for annotations only
    Row = dict[str, Any]
FIELDS = frozenset(
    {"handler", "keys", "harmless", "off", "like", "defaults", "config_class", "options",
     "text_key", "inner", "text_defaults", "text_inline", "text_harmless", "vllm", "stated",
     "text_mirrored"}
)


def _ro(d: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(d or {}))


def T(**row: Any) -> Row:
    """A table row (see the field list above)."""
    return row


# -- keys every level may carry ------------------------------------------------------------
# Read by derive itself (derive/__init__.py, max_len.py, quant.py, config.py) for every model
# type; the quantization blocks are checked key by key by their own vocabulary
# (guard.check_level). The length keys are max_len.MAX_LEN_KEYS (vLLM's own list).
CORE_KEYS = frozenset(
    {"max_position_embeddings", "max_target_positions", "torch_dtype", "dtype",
     "quantization_config", "compression_config", "n_positions", "max_seq_len", "seq_length",
     "model_max_length", "max_sequence_length", "max_seq_length", "seq_len"}
)

# Read from the same (text) config by plan/weights.py's parameter estimate, never by derive. A
# class default for one of them keeps that estimate on the config class's value (LlamaConfig's
# intermediate_size 11008 for llava-1.5's sparse text_config) as derive's defaults keep its
# sizes on the class's; a row's defaults may hold them (ModelFacts.text_config carries both).
WEIGHT_KEYS = frozenset({"intermediate_size", "vocab_size"})

_DROPOUT = "training-time dropout; inference keeps nothing for it"
_EPS = "normalisation epsilon: arithmetic, nothing stored"
_SCORE = "scales, caps or upcasts attention scores; the cached K and V are unchanged"
_WEIGHTS = "a bias or norm inside the projections: weights, not cache"
_HEAD = "an option of a head vLLM never builds (sequence / audio classification)"
_MOE = "mixture-of-experts routing or layout: which experts run, not what is cached"
_MLP = "an MLP / expert width: weights, not cache"
_TOKEN = "a special token id or count in the prompt: no cache of its own"

# Keys whose names match the guard's cache-affecting pattern but that never change what is
# cached, for every model type.
HARMLESS: Mapping[str, str] = _ro(
    {
        **dict.fromkeys(
            ("attention_dropout", "attn_pdrop", "attention_probs_dropout_prob", "layerdrop",
             "decoder_layerdrop", "encoder_layerdrop"), _DROPOUT),
        **dict.fromkeys(("layer_norm_eps", "layer_norm_epsilon", "layernorm_epsilon"), _EPS),
        **dict.fromkeys(
            ("attention_softmax_in_fp32", "attn_logit_softcapping", "scale_attn_weights",
             "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
             "attention_multiplier"), _SCORE),
        **dict.fromkeys(
            ("attention_bias", "head_bias", "qkv_bias", "qk_layernorm", "use_qk_layernorm"),
            _WEIGHTS),
        "use_weighted_layer_sum": _HEAD,
        **dict.fromkeys(
            ("moe_layer_freq", "decoder_sparse_step", "mlp_only_layers", "norm_topk_prob",
             "moe_topk", "topk_group", "topk_method", "n_shared_experts",
             "shared_intermediate_size", "shared_expert_intermediate_size", "mlp_layer_types",
             "moe_router_dtype"), _MOE),
    }
)

# The keys transformers standardised for decoder attention (read by families/standard.py).
STANDARD_KEYS = frozenset(
    {"num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
     "hidden_size"}
)
_WINDOW_KEYS = STANDARD_KEYS | {"sliding_window", "layer_types"}
# Remote-code types (derive/remote_code.py): what config.json must state for vLLM's model file
# to size the cache without a config class's default. The length key too: without one vLLM
# derives max_model_len from the remote class's default, which kvledger cannot know.
_REMOTE_STATED = frozenset(
    {"num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size",
     "max_position_embeddings"}
)
_REMOTE_CLASS = "none in transformers (the checkpoint's remote code)"
_QWEN_WINDOW_OFF = {
    "max_window_layers": "which layers slide when use_sliding_window is true; that switch must "
    "be off here, and then Qwen2Config drops the window altogether",
}
_WRAPPER_TOKENS = {
    "boi_token_index": _TOKEN, "eoi_token_index": _TOKEN, "image_token_index": _TOKEN,
    "video_token_index": _TOKEN,
}

_MLA_KEYS = frozenset(
    {"num_hidden_layers", "kv_lora_rank", "qk_rope_head_dim", "q_lora_rank",
     "num_nextn_predict_layers", "index_topk", "index_head_dim", "index_topk_freq",
     "index_topk_pattern", "index_skip_topk_offset", "indexer_types"}
)
_MLA_HARMLESS = {
    **dict.fromkeys(
        ("qk_nope_head_dim", "v_head_dim", "num_attention_heads", "num_key_value_heads",
         "head_dim", "qk_head_dim"),
        "shapes MLA's up-projections; the cache holds kv_lora_rank + qk_rope_head_dim per "
        "token (vLLM MLAAttentionSpec, one head)"),
    "index_n_heads": "DSA indexer query heads: compute only; its key cache is one head",
    "index_share_for_mtp_iteration": "reuses the MTP indexer's top-k across draft steps; no "
                                     "cache of its own",
    "indexer_rope_interleave": "rope layout of the indexer key; same width either way",
}

_GDN_KEYS = frozenset(
    {"num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
     "hidden_size", "full_attention_interval", "layer_types", "linear_conv_kernel_dim",
     "linear_key_head_dim", "linear_value_head_dim", "linear_num_key_heads",
     "linear_num_value_heads", "num_nextn_predict_layers"}
)
_GDN_HARMLESS = {"attn_output_gate": "a gate on the attention output; caches nothing"}

_KDA_KEYS = frozenset(
    {"num_hidden_layers", "linear_attn_config", "layer_types", "kv_lora_rank",
     "qk_rope_head_dim", "num_nextn_predict_layers"}
)
_KDA_HARMLESS = {
    **_MLA_HARMLESS,
    "q_lora_rank": "query projection rank: weights",
    "mla_use_nope": "NoPE MLA: the rope part is qk_rope_head_dim (0), read as such",
    "num_shared_experts": _MOE, "use_grouped_topk": _MOE,
    "hc_sinkhorn_iters": "hyper-connection mixing of residual streams: activations only",
    "activation_situ_linear_beta": "an activation parameter",
    "attn_res_block_size": "Kimi-K3 attention residuals mix earlier layers' outputs inside "
                           "one forward pass; nothing is kept across tokens (vLLM allocates "
                           "nothing)",
}

_MAMBA2_HARMLESS = {
    "chunk_size": "SSD chunk length for prefill: compute, not state",
    "use_mamba_kernels": "kernel choice", "mamba_proj_bias": _WEIGHTS,
    "use_conv_bias": _WEIGHTS, "mamba_hidden_act": "an activation",
    "moe_shared_expert_intermediate_size": _MLP, "moe_shared_expert_overlap": _MOE,
}

# Keys of the coverage wave's dense decoders whose names look cache-affecting; each reason was
# checked against the vLLM 0.32 model file named in the row (grep: none of these reaches an
# Attention's heads, head size or window).
_RESIDUAL = "where the residual connection or a norm sits: activations, not cache"
_HARMLESS_DENSE = {
    "add_bias_linear": _WEIGHTS, "add_qkv_bias": _WEIGHTS, "use_qkv_bias": _WEIGHTS,
    "skip_bias_add_qkv": "Megatron's bias-fusion flag; vLLM's bloom.py does not read it",
    "apply_query_key_layer_scaling": _SCORE, "scale_attention_softmax_in_fp32": _SCORE,
    "apply_residual_connection_post_layernorm": _RESIDUAL, "post_layer_norm": _RESIDUAL,
    "do_layer_norm_before": _RESIDUAL,
    "parallel_attn": "attention and MLP side by side in one block: wiring, not cache",
    "pre_allocate_kv_cache": "transformers' own generate() buffer option; vLLM's paged cache "
                             "does not read it",
    "n_inner": _MLP,
    "num_attention_heads_per_layer": "query heads per layer; every layer keeps "
                                     "num_key_value_heads KV heads (vLLM laguna.py)",
    "use_bidirectional_attention": "not read by vLLM's laguna.py / muse_glimmer.py: they build "
                                   "causal decoder attention either way",
    "layer_rope_theta": "per-layer RoPE bases; vLLM's muse_glimmer.py does not read it (it "
                        "takes RoPE/NoPE from no_rope_layers)",
}


_PIXEL_SHUFFLE = ("pixel-shuffle factor of the vision tokens: prompt length, not a cache; "
                  "encoders keep no KV cache")
_ROPE_BASES = "per-layer RoPE bases (0: NoPE): positions, not what is cached"
_SINKS = ("learned per-head attention-sink logits: weights; the cached K and V keep their "
          "shape")


def _dense(*keys: str) -> dict[str, str]:
    """The ``_HARMLESS_DENSE`` entries one row needs."""
    return {k: _HARMLESS_DENSE[k] for k in keys}


_MINICPM3_HARMLESS = {
    **dict.fromkeys(("kv_lora_rank", "q_lora_rank"),
                    "low-rank projections: vLLM's minicpm3.py up-projects and caches full "
                    "per-head K/V"),
    "num_key_value_heads": "not read: vLLM's minicpm3.py gives every query head its own K/V",
    "head_dim": "MiniCPM3Config sets it to qk_rope_head_dim for RoPE; the cache width is "
                "qk_nope_head_dim + qk_rope_head_dim",
}


# -- moe-hybrid group (coverage wave): the harmless keys its rows share
_HARMLESS_MOE_HYBRID: Mapping[str, str] = _ro(
    {
        "mamba_conv_bias": _WEIGHTS, "conv_bias": _WEIGHTS,
        "mamba_chunk_size": "SSD chunk length for prefill: compute, not state",
        "mamba_dt_rank": "rank of the Mamba time-step projection: weights",
        "expert_layer_offset": _MOE, "expert_layer_period": _MOE,
        "add_swa_attention_sink_bias": "a learned per-head sink logit: a weight, no cache",
        "add_full_attention_sink_bias": "a learned per-head sink logit: a weight, no cache",
        "lm_head_bias": "a bias on the output head: weights",
    }
)

# -- multimodal wrappers (coverage wave): pieces their rows share -----------------------------
# Keys of wrapper levels (and of the text configs they hold) whose names look cache-affecting
# but that vLLM 0.32 never turns into KV: the encoders and projectors run once per input and
# keep no cache of their own (vLLM's encoder-output cache holds embeddings outside the KV
# pool, sized by the scheduler's encoder budget, not by these keys).
_ENCODER = "configures the vision / audio encoder or its projector; encoders keep no KV cache"
_HARMLESS_MULTIMODAL = {
    **_WRAPPER_TOKENS,
    "audio_token_index": _TOKEN,
    "ignore_index": "label id masked out of the training loss",
    "vision_feature_layer": "which vision-encoder layer feeds the projector; " + _ENCODER,
}
# A pre-transformers-5 file may repeat the text keys at its top level beside text_config; the
# config class then builds the text config from the text_config object alone
# (Qwen2VLConfig.__post_init__), so vLLM never reads these copies.
_TEXT_COPY = ("a top-level copy of a text key beside text_config: the config class builds the "
              "text config from text_config and ignores it")
_QWEN_VL_TOP = dict.fromkeys(
    ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
     "sliding_window", "use_sliding_window", "max_window_layers", "layer_types"), _TEXT_COPY)
# LlamaConfig, MistralConfig and Qwen2Config (transformers 5.19) fill in 32 layers × 32 heads,
# hidden 4096 for a text config that omits them: llava-1.5 and Qwen2-Audio publish sparse
# text_configs that rely on it (their wrappers build the text config with these classes).
# Their MLP width and vocabulary differ (WEIGHT_KEYS: for the weights estimate).
_SIZES_4096 = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32}
_LLAMA_4096 = {**_SIZES_4096, "intermediate_size": 11008, "vocab_size": 32000}
_MISTRAL_4096 = {**_SIZES_4096, "intermediate_size": 14336, "vocab_size": 32000}
_QWEN2_4096 = {**_SIZES_4096, "intermediate_size": 22016, "vocab_size": 151936}
_QWEN2_VL_TEXT_DEFAULTS = {"num_key_value_heads": 8, "hidden_size": 8192,
                           "num_hidden_layers": 80, "num_attention_heads": 64,
                           "max_position_embeddings": 32768}

_MTP_UNMODELLED = ("EXAONE 4.5's MTP layer is built only by vLLM's Exaone4_5_MTP drafter "
                   "(--speculative-method mtp); kvledger derives no MTP layer for it, so such a "
                   "plan refuses instead of dropping it")


# -- dense-2 (coverage wave 2): keys of its rows whose names look cache-affecting; each reason
# read from the vLLM 0.32 model file named in the row.
_HARMLESS_DENSE2: Mapping[str, str] = _ro(
    {
        "kv_channels": "Megatron's per-head width, not read by vLLM's nemotron.py (it takes "
                       "head_dim, else hidden_size // num_attention_heads)",
    }
)


def _dense2(*keys: str) -> dict[str, str]:
    """The ``_HARMLESS_DENSE2`` entries one row needs."""
    return {k: _HARMLESS_DENSE2[k] for k in keys}


# -- moe-hybrid-2 group (coverage wave 2): keys whose names look cache-affecting, each checked
# against the vLLM 0.32 model file of the row that uses it.
_FALCON_H1_SCALE = ("a muP multiplier applied to activations in vLLM's falcon_h1.py; the "
                    "cached K/V and Mamba state keep their shapes")
_HARMLESS_MOE_HYBRID2: Mapping[str, str] = _ro(
    {
        "clip_qkv": "not read by vLLM's olmoe.py (HF clamps q/k/v activations with it): no "
                    "cache of its own",
        **dict.fromkeys(("attention_in_multiplier", "attention_out_multiplier",
                         "ssm_in_multiplier", "ssm_out_multiplier", "ssm_multipliers",
                         "lm_head_multiplier"), _FALCON_H1_SCALE),
        "mamba_rms_norm": "a gated RMSNorm inside the Mamba2 mixer (falcon_h1.py "
                          "use_rms_norm): weights",
        "mamba_norm_before_gate": "order of norm and gate in the mixer; vLLM does not "
                                  "read it",
        "mamba_use_mlp": "whether the block has an MLP; vLLM does not read it",
        "attn_layer_indices": "not read by vLLM's falcon_h1.py: every layer builds attention "
                              "and a Mamba2 mixer (FalconH1ParallelHybrid)",
    }
)


def _moe_hybrid2(*keys: str) -> dict[str, str]:
    """The ``_HARMLESS_MOE_HYBRID2`` entries one row needs."""
    return {k: _HARMLESS_MOE_HYBRID2[k] for k in keys}


# -- multimodal-2 (coverage wave 2): pieces its rows share -----------------------------------
# Gemma3nTextConfig keys whose names look cache-affecting; none reaches Gemma3nAttention's
# heads, head size, window or sharing (vLLM gemma3n.py, grep).
_GEMMA3N_TEXT_HARMLESS = {
    "hidden_size_per_layer_input": "per-layer input embeddings (PLE): weights, not cache",
    "vocab_size_per_layer_input": "per-layer input embeddings (PLE): weights, not cache",
    "activation_sparsity_pattern": "per-layer MLP activation sparsity (Gaussian top-k): "
                                   "compute, not cache",
}


MODEL_TYPES: Mapping[str, Row] = _ro(
    {
        # -- standard decoders (families/standard.py) ----------------------------------------
        "llama": T(handler="standard:derive", keys=_WINDOW_KEYS, config_class="LlamaConfig",
                   options={"layer_windows": True}, vllm="llama.py"),
        "mistral": T(like="llama", config_class="MistralConfig",
                     defaults={"num_key_value_heads": 8, "sliding_window": 4096,
                               "max_position_embeddings": 131072},
                     vllm="mistral.py (llama.py attention)"),
        "mixtral": T(like="llama", config_class="MixtralConfig",
                     defaults={"num_key_value_heads": 8, "max_position_embeddings": 131072},
                     options={"layer_windows": False}, vllm="mixtral.py"),
        "qwen2": T(handler="standard:derive", keys=_WINDOW_KEYS, harmless=_QWEN_WINDOW_OFF,
                   off={"use_sliding_window"}, config_class="Qwen2Config",
                   defaults={"num_key_value_heads": 32, "max_position_embeddings": 32768},
                   options={"layer_windows": False, "window_switch": "use_sliding_window",
                            "stated_head_dim": False},
                   vllm="qwen2.py (head_dim = hidden_size // num_attention_heads)"),
        "qwen2_moe": T(like="qwen2", config_class="Qwen2MoeConfig",
                       defaults={"num_key_value_heads": 16}, vllm="qwen2_moe.py"),
        "qwen3": T(like="qwen2", config_class="Qwen3Config",
                   defaults={"num_key_value_heads": 32, "head_dim": 128},
                   options={"stated_head_dim": True}, vllm="qwen3.py"),
        "qwen3_moe": T(like="qwen2", config_class="Qwen3MoeConfig",
                       defaults={"num_key_value_heads": 4}, options={"stated_head_dim": True},
                       vllm="qwen3_moe.py"),
        "qwen3_vl": T(text_key="text_config", inner=("qwen3_vl_text",),
                      config_class="Qwen3VLConfig", vllm="qwen3_vl.py"),
        "qwen3_vl_text": T(handler="standard:derive", keys=STANDARD_KEYS,
                           config_class="Qwen3VLTextConfig",
                           defaults={"num_key_value_heads": 32, "head_dim": 128,
                                     "max_position_embeddings": 128000},
                           vllm="qwen3_vl.py (Qwen3LLMModel: qwen3.py decoder layers)"),
        "qwen3_vl_moe": T(text_key="text_config", inner=("qwen3_vl_moe_text",),
                          config_class="Qwen3VLMoeConfig", vllm="qwen3_vl_moe.py"),
        "qwen3_vl_moe_text": T(handler="standard:derive", keys=STANDARD_KEYS,
                               config_class="Qwen3VLMoeTextConfig",
                               defaults={"num_key_value_heads": 16,
                                         "max_position_embeddings": 128000},
                               vllm="qwen3_vl_moe.py (qwen3_moe.py decoder layers)"),
        "phi3": T(handler="standard:derive", keys=STANDARD_KEYS | {"sliding_window"},
                  harmless={"original_max_position_embeddings":
                            "LongRoPE's pre-training length: picks the RoPE scaling, not the "
                            "cache"},
                  config_class="Phi3Config", defaults={"max_position_embeddings": 4096},
                  vllm="phi3.py (llama.py)"),
        "cohere": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="CohereConfig",
                    defaults={"max_position_embeddings": 8192},
                    vllm="commandr.py (v1: no window)"),
        # -- dense (coverage wave, vLLM registry) ---------------------------------------------
        # Llama-like decoders routed to the standard handler.
        "gemma": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="GemmaConfig",
                   defaults={"num_key_value_heads": 16, "head_dim": 256,
                             "max_position_embeddings": 8192},
                   vllm="gemma.py"),
        "granite": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="GraniteConfig",
                     defaults={"max_position_embeddings": 2048},
                     vllm="granite.py (layer_types/SWA variants not checked: refused by key)"),
        "stablelm": T(handler="standard:derive", keys=STANDARD_KEYS,
                      config_class="StableLmConfig",
                      harmless=_dense("use_qkv_bias"),
                      defaults={"num_key_value_heads": 32, "max_position_embeddings": 4096},
                      options={"stated_head_dim": False},
                      vllm="stablelm.py (head_dim = hidden_size // num_attention_heads)"),
        "opt": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="OPTConfig",
                 harmless=_dense("do_layer_norm_before"),
                 defaults={"max_position_embeddings": 2048}, options={"stated_head_dim": False},
                 vllm="opt.py (multi-head, hidden_size // num_attention_heads)"),
        # ministral3 (Devstral-2-123B, text only) uses the multimodal group's row below.
        "laguna": T(handler="layer_patterns:derive", keys=_WINDOW_KEYS,
                    harmless=_dense("num_attention_heads_per_layer",
                                    "use_bidirectional_attention"),
                    config_class="LagunaConfig",
                    defaults={"num_key_value_heads": 8, "head_dim": 128, "sliding_window": 512,
                              "max_position_embeddings": 131072},
                    vllm="laguna.py"),
        "exaone4": T(handler="layer_patterns:derive",
                     keys=_WINDOW_KEYS | {"sliding_window_pattern"},
                     config_class="Exaone4Config",
                     defaults={"num_key_value_heads": 32, "sliding_window": 4096,
                               "max_position_embeddings": 2048},
                     options={"every": 4},
                     vllm="exaone4.py"),
        # Served by vLLM 0.32's Transformers backend (registry _TRANSFORMERS_SUPPORTED_MODELS;
        # transformers/base.py _create_attention_instances: KV heads and head size from
        # ModelArchConfigConvertorBase, a per-layer window where layer_types says sliding, the
        # engine-level window otherwise — the standard handler's rules).
        "gpt_neox": T(handler="standard:derive", keys=STANDARD_KEYS,
                      config_class="GPTNeoXConfig", defaults={"max_position_embeddings": 2048},
                      vllm="Transformers backend (GPTNeoXForCausalLM)"),
        "phi": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="PhiConfig",
                 defaults={"max_position_embeddings": 2048},
                 vllm="Transformers backend (PhiForCausalLM)"),
        "olmo2": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="Olmo2Config",
                   defaults={"max_position_embeddings": 2048},
                   vllm="Transformers backend (Olmo2ForCausalLM)"),
        # Persimmon: dropped from vLLM's own models after v0.25.0 (_PREVIOUSLY_SUPPORTED_MODELS),
        # yet served: with no registered architecture the registry tries the Transformers
        # backend before that message (inspect_model_cls → _try_resolve_transformers;
        # PersimmonForCausalLM is backend-compatible), and TransformersForCausalLM gives every
        # layer one full-attention KV cache (tests/oracles/vllm-0.32/vllm-0.32-tfbackend.jsonl).
        # PersimmonConfig has no num_key_value_heads (64 query heads, 64 KV heads) and no
        # head_dim (hidden_size // heads).
        "persimmon": T(handler="standard:derive", keys=STANDARD_KEYS,
                       config_class="PersimmonConfig",
                       defaults={"max_position_embeddings": 16384},
                       vllm="Transformers backend (PersimmonForCausalLM; vLLM <= 0.25.0 had "
                            "persimmon.py)"),
        "olmo3": T(handler="layer_patterns:derive", keys=_WINDOW_KEYS,
                   config_class="Olmo3Config",
                   defaults={"sliding_window": 4096, "max_position_embeddings": 2048},
                   options={"every": 4, "pattern_key": None},
                   vllm="Transformers backend (Olmo3ForCausalLM)"),
        "starcoder2": T(handler="standard:derive", keys=_WINDOW_KEYS,
                        config_class="Starcoder2Config",
                        harmless=_dense("scale_attention_softmax_in_fp32"),
                        defaults={"num_key_value_heads": 2, "max_position_embeddings": 4096},
                        vllm="Transformers backend (Starcoder2ForCausalLM)"),
        # -- dense-2 (coverage wave 2, vLLM registry) ---------------------------------------
        # nemotron.py NemotronAttention.__init__: head_dim = config.head_dim, else
        # hidden_size // num_attention_heads (NemotronConfig.__post_init__ fills the same);
        # num_key_value_heads defaults to num_attention_heads; one full-attention Attention per
        # layer, no window.
        "nemotron": T(handler="standard:derive", keys=STANDARD_KEYS,
                      harmless=_dense2("kv_channels"),
                      config_class="NemotronConfig",
                      defaults={"max_position_embeddings": 4096},
                      vllm="nemotron.py (head_dim or hidden_size // num_attention_heads)"),
        # ernie45.py Ernie4_5ForCausalLM is llama.py's LlamaForCausalLM (only RoPE style and
        # the o_proj bias change): LlamaAttention takes config.head_dim, else hidden_size //
        # heads; Ernie4_5Config fills head_dim 128 and 2 KV heads for keys a file omits.
        "ernie4_5": T(like="llama", config_class="Ernie4_5Config",
                      defaults={"num_key_value_heads": 2, "head_dim": 128,
                                "max_position_embeddings": 131072},
                      vllm="ernie45.py (llama.py attention)"),
        # The first, remote-code release of ERNIE-4.5-0.3B-PT names Ernie4_5_ForCausalLM, which
        # vLLM 0.32's registry lacks (reached through ARCHITECTURES below). SGLang 0.5.23 does
        # register that name (srt/models/ernie4.py), but the vLLM layout reads not_in_vllm by
        # model_type, not by the row an architecture picks, so the config is refused outright
        # rather than planned for SGLang without an SGLang oracle case.
        "ernie4_5_remote_code": T(),
        # Refused: no transformers 5.19 or vLLM 0.32 config class (CONFIG_MAPPING and
        # vllm/transformers_utils/config.py _CONFIG_REGISTRY lack the model_type), so vLLM
        # 0.32's registry entry is reachable only with --trust-remote-code.
        "solar": T(),
        "plamo3": T(),
        "teleflm": T(),
        # Pre-standard schemas (families/legacy_schemas.py) and special arithmetic.
        "falcon": T(handler="legacy_schemas:falcon",
                    keys={"num_hidden_layers", "num_attention_heads", "hidden_size", "n_embed",
                          "num_kv_heads", "new_decoder_architecture", "multi_query", "n_head",
                          "n_layer"},
                    harmless=_dense("apply_residual_connection_post_layernorm",
                                    "parallel_attn"),
                    config_class="FalconConfig",
                    defaults={"max_position_embeddings": 2048}, vllm="falcon.py"),
        "chatglm": T(handler="legacy_schemas:chatglm",
                     keys={"num_layers", "num_attention_heads", "hidden_size",
                           "multi_query_attention", "multi_query_group_num", "kv_channels"},
                     harmless=_dense("add_bias_linear", "add_qkv_bias",
                                     "apply_query_key_layer_scaling",
                                     "apply_residual_connection_post_layernorm",
                                     "post_layer_norm"),
                     config_class="vLLM ChatGLMConfig",
                     defaults={"multi_query_group_num": 1, "seq_length": 2048},
                     vllm="chatglm.py"),
        "gpt_bigcode": T(handler="legacy_schemas:gpt_bigcode",
                         keys={"n_layer", "n_head", "n_embd", "num_hidden_layers",
                               "num_attention_heads", "hidden_size", "multi_query",
                               "num_key_value_heads"},
                         harmless=_dense("n_inner", "pre_allocate_kv_cache",
                                         "scale_attention_softmax_in_fp32"),
                         config_class="GPTBigCodeConfig", defaults={"n_positions": 1024},
                         vllm="Transformers backend (GPTBigCodeForCausalLM)"),
        "gptj": T(handler="dense:gpt2", keys={"n_layer", "n_head", "n_embd"},
                  harmless=_dense("n_inner"),
                  config_class="GPTJConfig", defaults={"n_positions": 2048},
                  vllm="gpt_j.py (multi-head, n_embd // n_head)"),
        "bloom": T(handler="legacy_schemas:bloom",
                   keys={"n_layer", "n_head", "num_hidden_layers", "num_attention_heads",
                         "hidden_size", "n_embed"},
                   harmless=_dense("apply_residual_connection_post_layernorm",
                                   "skip_bias_add_qkv"),
                   config_class="BloomConfig", vllm="bloom.py"),
        "minicpm3": T(handler="minicpm3:derive",
                      keys={"num_hidden_layers", "num_attention_heads", "hidden_size",
                            "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"},
                      harmless=_MINICPM3_HARMLESS,
                      config_class="MiniCPM3Config",
                      defaults={"qk_nope_head_dim": 64, "qk_rope_head_dim": 32,
                                "max_position_embeddings": 32768},
                      vllm="minicpm3.py (full K/V, not MLA)"),
        "muse_glimmer": T(text_key="text_config", inner=("muse_glimmer_text",),
                          config_class="vLLM MuseGlimmerConfig", vllm="muse_glimmer.py"),
        "muse_glimmer_text": T(handler="layer_patterns:muse_glimmer",
                               keys=_WINDOW_KEYS | {"no_rope_layers"},
                               harmless=_dense("layer_rope_theta",
                                               "use_bidirectional_attention"),
                               config_class="vLLM MuseGlimmerTextConfig",
                               defaults={"num_key_value_heads": 2, "head_dim": 128,
                                         "sliding_window": 2048,
                                         "max_position_embeddings": 16384},
                               vllm="muse_glimmer.py"),
        # Refused: vLLM 0.32 lists the architecture in _PREVIOUSLY_SUPPORTED_MODELS
        # (model_executor/models/registry.py), or the model_type has no transformers 5.19 /
        # vLLM config class, so vLLM loads it only by running the checkpoint's own code.
        "baichuan": T(),
        "qwen": T(),
        "xverse": T(),
        "internlm": T(),
        # transformers MptConfig / modeling_mpt.py (ALiBi, multi-head); vLLM dropped mpt.py in
        # 0.28, so only the native layout plans it (the vLLM layout refuses in vLLM's words).
        "mpt": T(handler="legacy_schemas:mpt", keys={"n_heads", "n_layers", "d_model",
                                                     "attn_config"},
                 harmless={"expansion_ratio": _MLP},
                 config_class="MptConfig",
                 defaults={"d_model": 2048, "n_heads": 16, "n_layers": 24,
                           "max_seq_len": 2048},
                 vllm="none since 0.28 (transformers modeling_mpt.py MptAttention)"),
        "RefinedWeb": T(),
        "RefinedWebModel": T(),
        "stablelm_epoch": T(),
        "aquila": T(),
        "jais": T(),
        "telechat": T(),
        # Remote-code types planned from the keys config.json states (derive/remote_code.py;
        # vLLM's answers: tests/oracles/vllm-0.32/vllm-0.32-remote.jsonl, run_remote_oracle.py).
        # internlm2.py InternLM2Attention.__init__: num_key_value_heads K/V heads of
        # hidden_size // num_attention_heads, no window; InternLM2Model builds
        # num_hidden_layers decoder layers.
        "internlm2": T(handler="standard:derive", keys=STANDARD_KEYS, stated=_REMOTE_STATED,
                       config_class=_REMOTE_CLASS, options={"stated_head_dim": False},
                       vllm="internlm2.py (hidden_size // num_attention_heads)"),
        # exaone.py ExaoneAttention.__init__: head_dim = getattr(config, "head_dim", None) or
        # hidden_size // num_attention_heads; K/V heads getattr(config, "num_key_value_heads",
        # num_attention_heads); ExaoneModel builds config.num_hidden_layers layers, which the
        # remote ExaoneConfig maps to num_layers (attribute_map {"num_hidden_layers":
        # "num_layers"}, and __init__ sets num_hidden_layers = num_layers: LG's
        # configuration_exaone.py as SGLang 0.5.23 carries it, sglang/srt/configs/exaone.py).
        # A file stating num_hidden_layers as well is refused by the guard (not a key here).
        "exaone": T(handler="standard:derive",
                    keys=STANDARD_KEYS - {"num_hidden_layers"} | {"num_layers"},
                    stated={"num_layers", "num_attention_heads", "hidden_size",
                            "max_position_embeddings"},
                    config_class=_REMOTE_CLASS, options={"layers_key": "num_layers"},
                    vllm="exaone.py (head_dim or hidden_size // num_attention_heads)"),
        "internlm3": T(),
        # orion.py OrionAttention.__init__: num_key_value_heads K/V heads of
        # hidden_size // num_attention_heads, no window.
        "orion": T(handler="standard:derive", keys=STANDARD_KEYS, stated=_REMOTE_STATED,
                   config_class=_REMOTE_CLASS, options={"stated_head_dim": False},
                   vllm="orion.py (hidden_size // num_attention_heads)"),
        # -- dense decoders with their own arithmetic (families/dense.py) --------------------
        "minimax_m2": T(handler="dense:minimax_m2",
                        keys=STANDARD_KEYS | {"attn_type_list", "use_mtp", "num_mtp_modules",
                                              "mtp_transformer_layers"},
                        config_class="MiniMaxM2Config",
                        defaults={"num_key_value_heads": 8, "head_dim": 128,
                                  "max_position_embeddings": 196608},
                        vllm="minimax_m2.py"),
        "phi3small": T(handler="dense:phi3small",
                       keys=STANDARD_KEYS | {"blocksparse_block_size",
                                             "blocksparse_num_local_blocks",
                                             "blocksparse_vert_stride",
                                             "dense_attention_every_n_layers"},
                       harmless={
                           "blocksparse_homo_head_pattern": "which heads share a sparsity "
                           "pattern: what is read, every position is still cached",
                           "blocksparse_triton_kernel_block_size": "kernel tiling",
                           "mup_attn_multiplier": _SCORE,
                           "attention_dropout_prob": _DROPOUT},
                       vllm="phi3_small.py (vLLM <= 0.9.2)"),
        "gpt2": T(handler="dense:gpt2", keys={"n_layer", "n_head", "n_embd"},
                  harmless={"n_ctx": "GPT-2's context length: positions, not per-token size",
                            "n_inner": _MLP},
                  off={"add_cross_attention"}, config_class="GPT2Config", vllm="gpt2.py"),
        "llama_eagle3": T(handler="dense:eagle3",
                          keys=STANDARD_KEYS | {"eagle_config"},
                          harmless={"draft_vocab_size": "the draft's output vocabulary (its "
                                                        "lm_head): weights"},
                          off={"sliding_window", "layer_types"},
                          vllm="llama_eagle3.py"),
        # -- interleaved local / global attention (families/interleaved.py) ------------------
        "gemma2": T(handler="interleaved:gemma2", keys=_WINDOW_KEYS,
                    harmless={"query_pre_attn_scalar": _SCORE,
                              "cache_implementation": "transformers' cache class choice; vLLM "
                                                      "does not read it",
                              "sliding_window_size": "early gemma-2 files' copy of "
                                                     "sliding_window; transformers 5.19 "
                                                     "Gemma2Config and vLLM gemma2.py read "
                                                     "only sliding_window"},
                    config_class="Gemma2Config",
                    defaults={"num_key_value_heads": 4, "head_dim": 256,
                              "sliding_window": 4096, "max_position_embeddings": 8192},
                    vllm="gemma2.py"),
        "gemma3": T(text_key="text_config", inner=("gemma3_text",), harmless=_WRAPPER_TOKENS,
                    config_class="Gemma3Config", vllm="gemma3_mm.py"),
        "gemma3_text": T(like="gemma2", handler="interleaved:gemma3",
                         keys={"sliding_window_pattern", "_sliding_window_pattern"},
                         config_class="Gemma3TextConfig",
                         defaults={"max_position_embeddings": 131072}, vllm="gemma3.py"),
        "gpt_oss": T(handler="interleaved:gpt_oss", keys=_WINDOW_KEYS,
                     config_class="GptOssConfig",
                     defaults={"num_key_value_heads": 8, "head_dim": 64, "sliding_window": 128,
                               "max_position_embeddings": 131072},
                     vllm="gpt_oss.py"),
        "llama4": T(text_key="text_config", inner=("llama4_text",), harmless=_WRAPPER_TOKENS,
                    config_class="Llama4Config", vllm="mllama4.py"),
        "llama4_text": T(handler="interleaved:llama4",
                         keys=STANDARD_KEYS | {"attention_chunk_size", "no_rope_layers",
                                               "no_rope_layer_interval", "layer_types"},
                         harmless={"interleave_moe_layer_step": _MOE,
                                   "attn_temperature_tuning": _SCORE,
                                   "attn_scale": _SCORE,
                                   "for_llm_compressor": "llm-compressor's MoE weight layout",
                                   "nope_layer_interval":
                                       "an early Llama-4 spelling that nothing reads: "
                                       "transformers 5.19 Llama4TextConfig builds "
                                       "no_rope_layers from no_rope_layer_interval (default "
                                       "4), vLLM llama4.py reads no_rope_layers"},
                         config_class="Llama4TextConfig",
                         defaults={"num_key_value_heads": 8, "head_dim": 128,
                                   "max_position_embeddings": 131072},
                         vllm="llama4.py"),
        # -- per-layer heterogeneous blocks --------------------------------------------------
        "nemotron-nas": T(handler="nas:derive", keys=STANDARD_KEYS | {"block_configs"},
                          vllm="nemotron_nas.py"),
        # -- encoder-decoder and cross-attention (families/encdec.py) ------------------------
        "whisper": T(handler="encdec:whisper",
                     keys={"d_model", "decoder_attention_heads", "decoder_layers",
                           "max_source_positions", "encoder_layers", "head_dim"},
                     harmless={"decoder_ffn_dim": _MLP, "encoder_ffn_dim": _MLP,
                               "encoder_attention_heads": "the encoder runs once per request "
                               "and caches nothing",
                               "num_hidden_layers": "WhisperConfig's alias of encoder_layers",
                               "forced_decoder_ids": "generation prompt tokens"},
                     config_class="WhisperConfig",
                     defaults={"max_source_positions": 1500, "max_target_positions": 448},
                     vllm="whisper.py"),
        # vLLM 0.32 dropped its own mllama.py (0.10.2) but its registry hands the architecture
        # to the Transformers backend (TransformersMultiModalForCausalLM), which fails while
        # vLLM starts: tests/oracles/vllm-0.32/vllm-0.32-tfbackend.jsonl (run_tfbackend_oracle.py).
        "mllama": T(text_key="text_config", inner=("mllama_text_model",),
                    harmless={"image_token_index": _TOKEN}, config_class="MllamaConfig",
                    vllm="mllama.py (vLLM <= 0.10.2)"),
        "mllama_text_model": T(handler="encdec:mllama",
                               keys=STANDARD_KEYS | {"cross_attention_layers"},
                               config_class="MllamaTextConfig",
                               defaults={"num_key_value_heads": 8,
                                         "max_position_embeddings": 131072},
                               vllm="mllama.py (vLLM <= 0.10.2)"),
        # -- multi-head latent attention and DSA (families/mla.py) ---------------------------
        "deepseek_v2": T(handler="mla:derive", keys=_MLA_KEYS, harmless=_MLA_HARMLESS,
                         config_class="DeepseekV2Config",
                         defaults={"kv_lora_rank": 512, "qk_rope_head_dim": 64,
                                   "q_lora_rank": 1536, "max_position_embeddings": 2048},
                         vllm="deepseek_v2.py"),
        "deepseek_v3": T(like="deepseek_v2", config_class="DeepseekV3Config",
                         defaults={"num_nextn_predict_layers": 1,
                                   "max_position_embeddings": 4096},
                         vllm="deepseek_v2.py, deepseek_mtp.py"),
        "kimi_k2": T(like="deepseek_v3", config_class="DeepseekV3Config (vLLM maps kimi_k2)"),
        "deepseek_v32": T(like="deepseek_v2", config_class="DeepseekV32Config",
                          defaults={"index_topk": 2048, "index_head_dim": 128,
                                    "max_position_embeddings": 163840},
                          vllm="deepseek_v2.py (is_v32), models/deepseek_v32"),
        "glm_moe_dsa": T(like="deepseek_v32", keys={"layer_types"},
                         config_class="GlmMoeDsaConfig",
                         defaults={"q_lora_rank": 2048, "max_position_embeddings": 202752}),
        "deepseek_v4": T(handler="deepseek_v4:derive",
                         keys={"head_dim", "qk_rope_head_dim", "num_key_value_heads",
                               "num_hidden_layers", "sliding_window", "compress_ratios",
                               "index_head_dim", "num_nextn_predict_layers"},
                         harmless={
                             "num_attention_heads": "query heads: the cache is one KV head",
                             "q_lora_rank": "query projection rank: weights",
                             "o_lora_rank": "output projection rank: weights",
                             "compress_rope_theta": "rope base of compressed layers",
                             "index_n_heads": "indexer query heads: compute only",
                             "index_topk": "indexer top-k: compute only",
                             "num_hash_layers": _MOE, "expert_dtype": "expert weight dtype",
                             "hc_sinkhorn_iters": "hyper-connections: activations only"},
                         config_class="DeepseekV4Config",
                         vllm="models/deepseek_v4"),
        # -- MiniMax lightning / sparse (families/minimax.py) --------------------------------
        "minimax_m1": T(handler="minimax:m1",
                        keys={"num_hidden_layers", "num_attention_heads",
                              "num_key_value_heads", "head_dim", "hidden_size",
                              "attn_type_list"},
                        harmless={
                            **dict.fromkeys(
                                ("layernorm_full_attention_alpha",
                                 "layernorm_full_attention_beta",
                                 "layernorm_linear_attention_alpha",
                                 "layernorm_linear_attention_beta", "layernorm_mlp_alpha",
                                 "layernorm_mlp_beta"), "DeepNorm residual scales"),
                            "shared_moe_mode": _MOE},
                        vllm="minimax_text_01.py (vLLM <= 0.23.0)"),
        "minimax_m3": T(handler="minimax:m3",
                        keys={"num_hidden_layers", "num_key_value_heads", "head_dim",
                              "hidden_size", "num_attention_heads", "sparse_attention_config",
                              "num_mtp_modules", "num_nextn_predict_layers"},
                        harmless={"attention_output_gate": "a gate on the attention output"},
                        vllm="none for minimax_m3 (SGLang minimax_m3.py); see minimax_m3_text"),
        "minimax_m3_vl": T(text_key="text_config", inner=("minimax_m3_text",),
                           harmless={**_WRAPPER_TOKENS,
                                     "img_token_compression_config": "merges vision tokens "
                                     "before the language model; no cache",
                                     "num_reward_heads": "reward heads on the output (0 here)",
                                     "vision_feature_layer": "which vision-encoder layer "
                                     "feeds the projector; the encoder caches nothing"},
                           config_class="vLLM MiniMaxM3Config", vllm="models/minimax_m3"),
        "minimax_m3_text": T(like="minimax_m3", config_class="vLLM MiniMaxM3TextConfig",
                             defaults={"num_key_value_heads": 4, "head_dim": 128,
                                       "max_position_embeddings": 524288},
                             vllm="models/minimax_m3 (FullAttentionSpec + MLAAttentionSpec "
                                  "index_cache)"),
        # -- gated delta-net hybrids (families/gdn.py) ---------------------------------------
        "qwen3_next": T(handler="gdn:derive", keys=_GDN_KEYS, harmless=_GDN_HARMLESS,
                        off={"use_sliding_window"}, config_class="Qwen3NextConfig",
                        vllm="qwen3_next.py, qwen3_next_mtp.py"),
        "qwen3_5": T(text_key="text_config", inner=("qwen3_5_text",),
                     config_class="Qwen3_5Config", vllm="qwen3_5.py"),
        "qwen3_5_text": T(like="qwen3_next", keys={"mamba_ssm_dtype", "mtp_num_hidden_layers"},
                          options={"mtp_key": "mtp_num_hidden_layers"},
                          harmless={"mtp_use_dedicated_embeddings": "MTP embedding sharing: "
                                                                    "weights"},
                          config_class="Qwen3_5TextConfig", vllm="qwen3_5.py, qwen3_5_mtp.py"),
        "qwen3_5_moe": T(text_key="text_config", inner=("qwen3_5_moe_text",),
                         config_class="Qwen3_5MoeConfig", vllm="qwen3_5.py"),
        "qwen3_5_moe_text": T(like="qwen3_5_text", config_class="Qwen3_5MoeTextConfig"),
        # -- Kimi delta attention hybrids (families/kda.py) ----------------------------------
        "kimi_linear": T(handler="kda:kimi", keys=_KDA_KEYS, harmless=_KDA_HARMLESS,
                         config_class="KimiLinearConfig", vllm="kimi_linear.py"),
        "kimi_k3": T(text_key="text_config", inner=("kimi_linear",),
                     harmless={"ignore_index": "label id masked out of the training loss"},
                     config_class="vLLM KimiK3Config", vllm="models/kimi_k3"),
        "glm5_next": T(text_key="text_config", inner=("glm5_next_text",),
                       config_class="Glm5NextConfig", vllm="models/glm5next"),
        "glm5_next_text": T(handler="kda:glm", keys=_KDA_KEYS | {"index_head_dim",
                                                                  "index_kpool",
                                                                  "index_kpool_compress",
                                                                  "index_kpool_always_select_tail",
                                                                  "indexer_types"},
                            harmless={**_KDA_HARMLESS,
                                      "index_topk": "indexer top-k: compute only"},
                            config_class="Glm5NextTextConfig", vllm="models/glm5next"),
        # -- multimodal (coverage wave, vLLM registry) -------------------------------------
        # Wrappers: vLLM builds the language model from the text config (init_vllm_registered_
        # model) and the encoders beside it; only the language model's layers hold KV.
        "llava": T(text_key="text_config", inner=("llama", "mistral", "qwen2"),
                   harmless={**_HARMLESS_MULTIMODAL},
                   text_defaults={"llama": _LLAMA_4096, "mistral": _MISTRAL_4096,
                                  "qwen2": _QWEN2_4096},
                   config_class="LlavaConfig (text_config: AutoConfig, llama by default)",
                   vllm="llava.py (language model from text_config.architectures)"),
        "llava_next": T(like="llava", config_class="LlavaNextConfig (text_config: AutoConfig, "
                                                 "llama by default)",
                        vllm="llava_next.py (language model from text_config)"),
        "idefics3": T(text_key="text_config", inner=("llama",),
                      harmless={**_HARMLESS_MULTIMODAL},
                      text_harmless={"qk_layer_norms": "Idefics/SmolVLM training flag (QK "
                                     "layer norms, false here); vLLM's LlamaModel never reads "
                                     "it"},
                      text_defaults={"llama": _LLAMA_4096},
                      config_class="Idefics3Config (text_config: AutoConfig, llama by "
                                   "default)",
                      vllm="idefics3.py (LlamaModel on text_config, whatever its type)"),
        "smolvlm": T(like="idefics3", config_class="SmolVLMConfig (text_config: AutoConfig, "
                                                   "llama by default)",
                     vllm="smolvlm.py (Idefics3ForConditionalGeneration: LlamaModel)"),
        "mistral3": T(text_key="text_config", inner=("mistral", "ministral3"),
                      harmless={**_HARMLESS_MULTIMODAL},
                      text_defaults={"mistral": _MISTRAL_4096},
                      config_class="Mistral3Config (text_config: AutoConfig, mistral by "
                                   "default)",
                      vllm="mistral3.py (language model from text_config)"),
        # ministral3 is also what the dense group's Devstral-2-123B (text only) derives by.
        "ministral3": T(like="llama", config_class="Ministral3Config",
                        defaults={"num_key_value_heads": 8, "head_dim": 128,
                                  "hidden_size": 4096, "num_hidden_layers": 34,
                                  "num_attention_heads": 32,
                                  "max_position_embeddings": 262144},
                        vllm="mistral.py (Ministral3ForCausalLM → MistralForCausalLM, llama.py "
                             "attention)"),
        "qwen2_vl": T(text_key="text_config", inner=("qwen2_vl_text",), text_inline=True,
                      harmless={**_HARMLESS_MULTIMODAL, **_QWEN_VL_TOP},
                      config_class="Qwen2VLConfig", vllm="qwen2_vl.py"),
        "qwen2_vl_text": T(like="qwen2", config_class="Qwen2VLTextConfig",
                           defaults=_QWEN2_VL_TEXT_DEFAULTS,
                           vllm="qwen2_vl.py (Qwen2ForCausalLM: qwen2.py, head_dim = "
                                "hidden_size // num_attention_heads)"),
        "qwen2_5_vl": T(text_key="text_config", inner=("qwen2_5_vl_text",), text_inline=True,
                        harmless={**_HARMLESS_MULTIMODAL, **_QWEN_VL_TOP},
                        config_class="Qwen2_5_VLConfig", vllm="qwen2_5_vl.py"),
        "qwen2_5_vl_text": T(like="qwen2_vl_text", config_class="Qwen2_5_VLTextConfig",
                             vllm="qwen2_5_vl.py (Qwen2ForCausalLM: qwen2.py)"),
        "qwen2_5_omni": T(text_key="thinker_config", inner=("qwen2_5_omni_thinker",),
                          config_class="Qwen2_5OmniConfig",
                          vllm="qwen2_5_omni_thinker.py: vLLM builds only the thinker "
                               "(Qwen2_5OmniThinkerForConditionalGeneration); talker_config "
                               "and token2wav_config are never built and keep no KV"),
        "qwen2_5_omni_thinker": T(text_key="text_config", inner=("qwen2_5_omni_text",),
                                  harmless={**_HARMLESS_MULTIMODAL,
                                            "image_token_index": _TOKEN,
                                            "video_token_index": _TOKEN,
                                            "seconds_per_chunk": "audio/video interleave "
                                            "chunk length: prompt layout, no cache"},
                                  config_class="Qwen2_5OmniThinkerConfig",
                                  vllm="qwen2_5_omni_thinker.py"),
        "qwen2_5_omni_text": T(like="qwen2", harmless={**_HARMLESS_MULTIMODAL},
                               config_class="Qwen2_5OmniTextConfig",
                               defaults={"num_key_value_heads": 4, "hidden_size": 3584,
                                         "num_hidden_layers": 28, "num_attention_heads": 28,
                                         "max_position_embeddings": 32768},
                               vllm="qwen2_5_omni_thinker.py (Qwen2ForCausalLM: qwen2.py)"),
        # The talker_config of a Qwen2.5-Omni checkpoint: vLLM itself never builds it (the row
        # above); vLLM-Omni's talker stage does (kvledger.plan.omni). Its model file,
        # vllm_omni/model_executor/models/qwen2_5_omni/qwen2_5_omni_talker.py
        # (Qwen2_5OmniTalkerForConditionalGeneration → "Qwen2ForCausalLM_old",
        # qwen2_old.py Qwen2Attention: ``head_dim or hidden_size // total_num_heads``, commit
        # 0a96d9cc882c15b97cd88a3fc3cf786ad15c1069), reads the stated head_dim (128, where
        # 896 // 12 would be 74): stated_head_dim.
        "qwen2_5_omni_talker": T(like="qwen2", options={"stated_head_dim": True},
                                 harmless={**_HARMLESS_MULTIMODAL,
                                           "seconds_per_chunk": "audio/video interleave "
                                           "chunk length: prompt layout, no cache"},
                                 config_class="Qwen2_5OmniTalkerConfig",
                                 vllm="vllm-omni qwen2_5_omni_talker.py (qwen2_old.py "
                                      "Qwen2Attention: the stated head_dim)"),
        "qwen2_audio": T(text_key="text_config", inner=("qwen2",),
                         harmless={**_HARMLESS_MULTIMODAL},
                         text_defaults={"qwen2": _QWEN2_4096},
                         config_class="Qwen2AudioConfig (text_config: AutoConfig, qwen2 by "
                                      "default)",
                         vllm="qwen2_audio.py (Qwen2ForCausalLM)"),
        "qwen3_asr": T(text_key="thinker_config", inner=("qwen3_asr_thinker",),
                       config_class="vLLM Qwen3ASRConfig", vllm="qwen3_asr.py"),
        "qwen3_asr_thinker": T(text_key="text_config", inner=("qwen3_asr_text",),
                               harmless={**_HARMLESS_MULTIMODAL},
                               config_class="vLLM Qwen3ASRThinkerConfig", vllm="qwen3_asr.py"),
        "qwen3_asr_text": T(handler="standard:derive", keys=STANDARD_KEYS,
                            config_class="vLLM Qwen3ASRTextConfig",
                            defaults={"num_key_value_heads": 32, "head_dim": 128,
                                      "hidden_size": 4096, "num_hidden_layers": 32,
                                      "num_attention_heads": 32,
                                      "max_position_embeddings": 128000},
                            vllm="qwen3_asr.py (Qwen3ForCausalLM: qwen3.py, no window)"),
        "glm4v": T(text_key="text_config", inner=("glm4v_text",), text_inline=True,
                   harmless={**_HARMLESS_MULTIMODAL},
                   config_class="Glm4vConfig",
                   vllm="glm4_1v.py (Glm4vForConditionalGeneration → Glm4ForCausalLM)"),
        "glm4v_text": T(handler="standard:derive", keys=STANDARD_KEYS,
                        config_class="Glm4vTextConfig",
                        defaults={"num_key_value_heads": 2, "hidden_size": 4096,
                                  "num_hidden_layers": 40, "num_attention_heads": 32,
                                  "max_position_embeddings": 32768},
                        vllm="glm4_1v.py (Glm4ForCausalLM: glm4.py, no window)"),
        "kimi_k25": T(text_key="text_config", inner=("deepseek_v3", "kimi_k2"),
                      harmless={**_HARMLESS_MULTIMODAL,
                                "use_unified_vision_chunk": "how video frames are grouped for "
                                "the vision tower; " + _ENCODER},
                      config_class="Kimi_K25Config (text_config kimi_k2 → DeepseekV3Config)",
                      vllm="kimi_k25.py (DeepseekV2ForCausalLM: MLA)"),
        "exaone4_5": T(text_key="text_config", inner=("exaone4_5_text",),
                       harmless={**_HARMLESS_MULTIMODAL},
                       config_class="Exaone4_5_Config",
                       vllm="exaone4_5.py (Exaone4ForCausalLM)"),
        "exaone4_5_text": T(handler="wrapped_text:exaone4",
                            keys=_WINDOW_KEYS | {"sliding_window_pattern"},
                            harmless=dict.fromkeys(
                                ("num_nextn_predict_layers", "_num_mtp_layers",
                                 "mtp_loss_scaling_factor", "mtp_share_layers"),
                                _MTP_UNMODELLED),
                            config_class="Exaone4Config (Exaone4_5_Config maps exaone4_5_text "
                                         "to it)",
                            defaults={"num_key_value_heads": 32, "hidden_size": 4096,
                                      "num_hidden_layers": 32, "num_attention_heads": 32,
                                      "sliding_window": 4096, "sliding_window_pattern": 4,
                                      "max_position_embeddings": 2048},
                            vllm="exaone4.py (per-layer windows from layer_types)"),
        "minicpmv4_6": T(text_key="text_config", inner=("qwen3_5_text",),
                         harmless={**_HARMLESS_MULTIMODAL,
                                   "insert_layer_id": "the vision-tower layer after which the "
                                   "ViT merger runs; " + _ENCODER,
                                   "drop_vision_last_layer": "drops the vision tower's last "
                                   "layer; " + _ENCODER},
                         config_class="MiniCPMV4_6Config",
                         vllm="minicpmv4_6.py (Qwen3_5ForCausalLM: GDN hybrid)"),
        # refusals of this group: vLLM 0.32 cannot build these from a config.json
        "voxtral": T(),
        "internvl_chat": T(),
        "molmo": T(),
        "phi3_v": T(),
        "phi4mm": T(),
        "minicpmv": T(),
        # Both dropped from vLLM's own models; its registry hands them to the Transformers
        # backend (run_tfbackend_oracle.py, its last run). Neither is planned: see the reasons.
        "aya_vision": T(),
        "phi4_multimodal": T(),
        # -- multimodal-2 (coverage wave 2, vLLM registry) ---------------------------------
        # Gemma 3n: vLLM gemma3n_mm.py builds Gemma3nForCausalLM on text_config
        # (init_vllm_registered_model, architectures=["Gemma3nForCausalLM"]); its vision
        # (MobileNet-v5, timm) and audio (USM conformer) towers are transformers AutoModels
        # that hold no vLLM KV cache.
        "gemma3n": T(text_key="text_config", inner=("gemma3n_text",),
                     harmless=_HARMLESS_MULTIMODAL,
                     config_class="Gemma3nConfig",
                     vllm="gemma3n_mm.py (Gemma3nForCausalLM on text_config)"),
        "gemma3n_text": T(handler="gemma3n:derive",
                          keys={"num_hidden_layers", "num_attention_heads",
                                "num_key_value_heads", "head_dim", "sliding_window",
                                "layer_types", "num_kv_shared_layers"},
                          harmless=_GEMMA3N_TEXT_HARMLESS,
                          config_class="Gemma3nTextConfig",
                          defaults={"num_hidden_layers": 35, "num_attention_heads": 8,
                                    "num_key_value_heads": 2, "head_dim": 256,
                                    "sliding_window": 512, "num_kv_shared_layers": 15,
                                    "max_position_embeddings": 32768},
                          vllm="gemma3n.py (Gemma3nAttention: per-layer windows, "
                               "kv_sharing_target_layer_name by fixed offsets)"),
        # PaliGemma / PaliGemma 2: vLLM paligemma.py sets text_config.architectures to
        # GemmaForCausalLM (model_type gemma) or Gemma2ForCausalLM (anything else) and builds
        # it with init_vllm_registered_model. PaliGemmaConfig sets the text config's
        # use_bidirectional_attention to True; vLLM's gemma.py / gemma2.py never read it
        # (their attention is causal with a KV cache either way).
        "paligemma": T(text_key="text_config", inner=("gemma", "gemma2"),
                       harmless=_HARMLESS_MULTIMODAL,
                       text_harmless={"use_bidirectional_attention": "PaliGemmaConfig sets "
                                      "it True (image tokens attend both ways); vLLM's "
                                      "gemma.py / gemma2.py never read it, and the "
                                      "prefix-LM mask vLLM uses for model_type paligemma "
                                      "(ModelArchConfigConvertorBase.is_mm_prefix_lm) "
                                      "changes what is attended, not what is cached"},
                       config_class="PaliGemmaConfig (text_config: AutoConfig, gemma by "
                                    "default)",
                       vllm="paligemma.py (GemmaForCausalLM / Gemma2ForCausalLM on "
                            "text_config)"),
        # refusals of this group (vLLM 0.32's registry / config registry, transformers 5.19)
        "interns1": T(),
        # -- Mamba hybrids and pure Mamba (families/mamba.py) --------------------------------
        "nemotron_h": T(handler="mamba:nemotron_h",
                        keys={"num_hidden_layers", "num_attention_heads",
                              "num_key_value_heads", "head_dim", "attention_head_dim",
                              "hidden_size", "hybrid_override_pattern", "layers_block_type",
                              "mamba_num_heads", "mamba_head_dim", "n_groups",
                              "ssm_state_size", "conv_kernel", "expand",
                              "mamba_ssm_cache_dtype", "num_nextn_predict_layers",
                              "mtp_hybrid_override_pattern", "mtp_layers_block_type"},
                        harmless=_MAMBA2_HARMLESS, config_class="NemotronHConfig",
                        defaults={"num_key_value_heads": 8, "head_dim": 128,
                                  "mamba_num_heads": 128, "mamba_head_dim": 64,
                                  "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4,
                                  "expand": 2, "max_position_embeddings": 4096},
                        vllm="nemotron_h.py, nemotron_h_mtp.py"),
        "zamba2": T(handler="mamba:zamba2",
                    keys={"hidden_size", "num_attention_heads", "num_key_value_heads",
                          "attention_head_dim", "num_hidden_layers", "layers_block_type",
                          "mamba_d_state", "mamba_d_conv", "mamba_expand", "mamba_ngroups",
                          "mamba_headdim", "n_mamba_heads",
                          # Zyphra's native schema
                          "num_layers", "layer_mapping", "conv_dimension", "expansion_factor",
                          "kv_channels", "num_mem_heads", "state_size"},
                    harmless={
                        **_MAMBA2_HARMLESS,
                        "hybrid_layer_ids": "the indices of layers_block_type's 'hybrid' "
                                            "entries, read from that list",
                        "use_shared_attention_adapter": "LoRA adapters on the shared block: "
                                                        "weights",
                        "use_shared_block_lora": _WEIGHTS, "lora_rank": _WEIGHTS,
                        "add_bias_linear": _WEIGHTS},
                    config_class="Zamba2Config / Zyphra MambaConfig", vllm="zamba2.py"),
        "mamba": T(handler="mamba:mamba1",
                   keys={"num_hidden_layers", "hidden_size", "expand", "intermediate_size",
                         "state_size", "conv_kernel"},
                   # The mamba_ssm names a converted checkpoint keeps beside transformers' own
                   # (state-spaces/mamba-130m-hf): MambaConfig stores them as plain attributes
                   # and neither vLLM's mamba.py nor SGLang's configs/mamba.py reads them (they
                   # read hidden_size, intermediate_size, num_hidden_layers).
                   harmless={**_MAMBA2_HARMLESS,
                             "d_model": "mamba_ssm's name for hidden_size; not read",
                             "d_inner": "mamba_ssm's name for intermediate_size; not read",
                             "n_layer": "mamba_ssm's name for num_hidden_layers; not read",
                             "ssm_cfg": "mamba_ssm's constructor options (empty in the "
                                        "converted checkpoints); not read"},
                   config_class="MambaConfig",
                   defaults={"hidden_size": 768, "expand": 2, "state_size": 16,
                             "conv_kernel": 4},
                   vllm="mamba.py"),
        "mamba2": T(handler="mamba:mamba2",
                    keys={"num_hidden_layers", "hidden_size", "expand", "num_heads",
                          "head_dim", "n_groups", "state_size", "conv_kernel"},
                    harmless=_MAMBA2_HARMLESS,
                    config_class="Mamba2Config",
                    defaults={"num_heads": 128, "head_dim": 64, "hidden_size": 4096,
                              "expand": 2, "n_groups": 8, "state_size": 128,
                              "conv_kernel": 4},
                    vllm="mamba2.py"),
        # -- moe-hybrid (coverage wave, vLLM registry) ---------------------------------------
        # MoE decoders whose cache is the standard one (experts hold no KV); MTP layers from
        # num_nextn_predict_layers (families/mtp_decoder.py).
        "ernie4_5_moe": T(handler="mtp_decoder:derive",
                          keys=STANDARD_KEYS | {"num_nextn_predict_layers"},
                          harmless=dict.fromkeys(
                              ("moe_layer_start_index", "moe_layer_end_index",
                               "moe_layer_interval", "moe_num_shared_experts"), _MOE),
                          config_class="Ernie4_5_MoeConfig",
                          defaults={"num_key_value_heads": 4, "max_position_embeddings": 131072},
                          vllm="ernie45_moe.py (head_dim or hidden_size // heads), ernie_mtp.py"),
        "glm4_moe": T(handler="mtp_decoder:derive",
                      keys=STANDARD_KEYS | {"num_nextn_predict_layers"},
                      config_class="Glm4MoeConfig",
                      defaults={"num_key_value_heads": 8, "max_position_embeddings": 131072,
                                "num_nextn_predict_layers": 1},
                      options={"require": ("head_dim",)},
                      vllm="glm4_moe.py (reads config.head_dim), glm4_moe_mtp.py"),
        "phimoe": T(handler="standard:derive", keys=STANDARD_KEYS | {"sliding_window"},
                    harmless={"original_max_position_embeddings":
                              "LongRoPE's pre-training length: picks the RoPE scaling, not "
                              "the cache",
                              "lm_head_bias": _HARMLESS_MOE_HYBRID["lm_head_bias"]},
                    config_class="PhimoeConfig",
                    defaults={"num_key_value_heads": 8, "max_position_embeddings": 131072},
                    options={"layer_windows": False},
                    vllm="phimoe.py (no per-layer window: the model-level sliding_window "
                         "reaches every layer, even one wider than max_model_len)"),
        "dbrx": T(handler="dbrx:derive", keys={"n_layers", "n_heads", "d_model", "attn_config",
                                               "max_seq_len"},
                  config_class="DbrxConfig",
                  defaults={"n_layers": 24, "n_heads": 16, "d_model": 2048, "max_seq_len": 2048},
                  vllm="dbrx.py"),
        # Sliding + full attention with per-type geometry (families/mimo_v2.py, gemma4.py).
        "mimo_v2_flash": T(handler="mimo_v2:derive",
                           keys={"num_hidden_layers", "num_key_value_heads", "head_dim",
                                 "v_head_dim", "hybrid_layer_pattern", "layer_types",
                                 "sliding_window_size", "swa_num_key_value_heads",
                                 "swa_head_dim", "swa_v_head_dim"},
                           harmless={
                               "num_attention_heads": "query heads: not cached",
                               "swa_num_attention_heads": "query heads: not cached",
                               "sliding_window": "mimo_v2.py clears cache_config.sliding_window "
                                                 "and gives sliding layers "
                                                 "sliding_window_size",
                               "attention_chunk_size": "mimo_v2.py builds no chunked attention "
                                                       "and vLLM reads the key nowhere else",
                               "attention_value_scale": _SCORE,
                               "swa_rope_theta": "rope base of the sliding layers",
                               "add_swa_attention_sink_bias":
                                   _HARMLESS_MOE_HYBRID["add_swa_attention_sink_bias"],
                               "add_full_attention_sink_bias":
                                   _HARMLESS_MOE_HYBRID["add_full_attention_sink_bias"]},
                           config_class="MiMoV2FlashConfig",
                           defaults={"num_key_value_heads": 4, "head_dim": 192,
                                     "v_head_dim": 128, "max_position_embeddings": 131072},
                           vllm="mimo_v2.py"),
        "gemma4": T(text_key="text_config", inner=("gemma4_text",),
                    harmless={**_WRAPPER_TOKENS, "eoa_token_index": _TOKEN},
                    config_class="Gemma4Config", vllm="gemma4_mm.py"),
        "gemma4_text": T(handler="gemma4:derive",
                         keys={"num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                               "head_dim", "global_head_dim", "num_global_key_value_heads",
                               "attention_k_eq_v", "sliding_window", "layer_types",
                               "use_bidirectional_attention", "num_kv_shared_layers"},
                         harmless=dict.fromkeys(
                             ("hidden_size_per_layer_input", "vocab_size_per_layer_input"),
                             "per-layer input embeddings: weights, not cache"),
                         config_class="Gemma4TextConfig",
                         defaults={"num_key_value_heads": 4, "head_dim": 256,
                                   "global_head_dim": 512, "sliding_window": 512,
                                   "max_position_embeddings": 131072},
                         vllm="gemma4.py (per_layer_config, kv_sharing_target_layer_name)"),
        # Attention beside recurrent layers (families/ssm_hybrids.py).
        "granitemoehybrid": T(handler="ssm_hybrids:granitemoehybrid",
                              keys={"num_hidden_layers", "num_attention_heads",
                                    "num_key_value_heads", "hidden_size", "layer_types",
                                    "mamba_expand", "mamba_n_heads", "mamba_d_head",
                                    "mamba_n_groups", "mamba_d_state", "mamba_d_conv"},
                              harmless={**_MAMBA2_HARMLESS,
                                        **{k: _HARMLESS_MOE_HYBRID[k] for k in (
                                            "mamba_conv_bias", "mamba_chunk_size")}},
                              config_class="GraniteMoeHybridConfig",
                              defaults={"mamba_n_heads": 128, "mamba_n_groups": 1,
                                        "mamba_d_state": 256, "mamba_d_head": "auto",
                                        "mamba_d_conv": 4, "mamba_expand": 2,
                                        "max_position_embeddings": 2048},
                              vllm="granitemoehybrid.py"),
        "jamba": T(handler="ssm_hybrids:jamba",
                   keys={"num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                         "hidden_size", "attn_layer_period", "attn_layer_offset",
                         "mamba_expand", "mamba_d_state", "mamba_d_conv"},
                   harmless={**_MAMBA2_HARMLESS,
                             **{k: _HARMLESS_MOE_HYBRID[k] for k in (
                                 "mamba_conv_bias", "mamba_dt_rank", "expert_layer_offset",
                                 "expert_layer_period")}},
                   config_class="JambaConfig",
                   defaults={"num_key_value_heads": 8, "max_position_embeddings": 262144,
                             "attn_layer_period": 8, "attn_layer_offset": 4,
                             "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2},
                   vllm="jamba.py"),
        "lfm2": T(handler="ssm_hybrids:lfm2",
                  keys={"num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                        "hidden_size", "layer_types", "full_attn_idxs", "conv_dim",
                        "conv_L_cache"},
                  harmless={"conv_bias": _HARMLESS_MOE_HYBRID["conv_bias"],
                            "conv_dim_out": "the conv block's output width: weights",
                            "conv_use_xavier_init": "a weight initialisation switch",
                            "num_heads": "a legacy alias; vLLM's lfm2.py reads "
                                         "num_attention_heads"},
                  config_class="Lfm2Config",
                  defaults={"num_key_value_heads": 8, "max_position_embeddings": 128000,
                            "conv_L_cache": 3},
                  vllm="lfm2.py (short_conv_state_shape)"),
        "lfm2_vl": T(text_key="text_config", inner=("lfm2",),
                     harmless={"encoder_patch_size": "the vision encoder's patch size: no "
                                                     "cache",
                               "projector_use_layernorm": "a norm in the vision projector: "
                                                          "weights"},
                     config_class="Lfm2VlConfig", vllm="lfm2_vl.py"),
        # Checkpoints of this group vLLM 0.32 cannot load without their remote code. Hunyuan's
        # class goes to the Transformers backend (registry.py _TRANSFORMERS_SUPPORTED_MODELS),
        # whose Base.__init__ (transformers/base.py) builds AutoModel.from_config(...,
        # trust_remote_code): the checkpoint's modeling code, which kvledger cannot read.
        "hunyuan": T(),
        # DeepSeek-MoE v1: deepseek_v2.py DeepseekV2DecoderLayer takes DeepseekAttention
        # whenever config.model_type == "deepseek" (use_mha): num_key_value_heads K/V heads of
        # hidden_size // num_attention_heads, full K/V, not MLA; the experts hold no cache.
        "deepseek": T(handler="standard:derive", keys=STANDARD_KEYS, stated=_REMOTE_STATED,
                      config_class=_REMOTE_CLASS, options={"stated_head_dim": False},
                      vllm="deepseek_v2.py DeepseekForCausalLM (DeepseekAttention: "
                           "hidden_size // num_attention_heads)"),
        # Ling v1: bailing_moe.py BailingAttention.__init__ takes num_key_value_heads K/V heads
        # of config.head_dim or hidden_size // num_attention_heads — an attribute read, so
        # head_dim must be stated too (the published Ling-lite/plus files leave it to their
        # remote class: refused); no window; the experts hold no cache.
        "bailing_moe": T(handler="standard:derive", keys=STANDARD_KEYS,
                         stated=_REMOTE_STATED | {"head_dim"},
                         harmless={"use_qkv_bias": "a bias on the QKV projection: weights",
                                   "num_shared_experts": _MOE,
                                   "norm_head": "normalises the LM head's weights at load "
                                                "(bailing_moe.py load_weights): no cache"},
                         config_class=_REMOTE_CLASS,
                         vllm="bailing_moe.py (head_dim or hidden_size // num_attention_heads)"),
        "bailing_moe_v2": T(),
        # MiniCPM, MiniCPM4, MiniCPM-MoE: minicpm.py MiniCPMAttention.__init__ takes
        # num_key_value_heads K/V heads of hidden_size // num_attention_heads, no window; the
        # muP scales and the experts hold no cache.
        "minicpm": T(handler="standard:derive", keys=STANDARD_KEYS, stated=_REMOTE_STATED,
                     config_class=_REMOTE_CLASS, options={"stated_head_dim": False},
                     vllm="minicpm.py (hidden_size // num_attention_heads)"),
        # vLLM 0.32 serves MiMoForCausalLM (mimo.py, on qwen2.py) with the flag, but the
        # window depends on the remote class: tests/oracles/vllm-0.32/vllm-0.32-remote.jsonl.
        "mimo": T(),
        # -- moe-hybrid-2 (coverage wave 2, vLLM registry) ---------------------------------
        # OLMoE: every layer full attention; olmoe.py OlmoeAttention.__init__ takes
        # num_key_value_heads K/V heads of hidden_size // num_attention_heads (no head_dim,
        # no window); the 64 experts hold no cache.
        "olmoe": T(handler="standard:derive", keys=STANDARD_KEYS,
                   harmless=_moe_hybrid2("clip_qkv"),
                   config_class="OlmoeConfig", defaults={"max_position_embeddings": 4096},
                   options={"stated_head_dim": False},
                   vllm="olmoe.py (head_dim = hidden_size // num_attention_heads)"),
        # Granite-3.x MoE: granitemoe.py GraniteMoeAttention.__init__ takes num_key_value_heads
        # K/V heads of hidden_size // num_attention_heads; granite.py
        # granite_layer_attn_params gives a layer a window (and sinks) only from layer_types /
        # sliding_window, which this row does not check: refused by key.
        "granitemoe": T(handler="standard:derive", keys=STANDARD_KEYS,
                        config_class="GraniteMoeConfig",
                        defaults={"max_position_embeddings": 2048},
                        options={"stated_head_dim": False},
                        vllm="granitemoe.py (head_dim = hidden_size // num_attention_heads)"),
        # Arcee Trinity (AFMoE, families/afmoe.py): afmoe.py slides a layer by
        # config.layer_types; AfmoeConfig.__post_init__ builds them when the file has none
        # (layer i full when (i + 1) % global_attn_every_n_layers == 0).
        "afmoe": T(handler="afmoe:derive",
                   keys=_WINDOW_KEYS | {"global_attn_every_n_layers"},
                   harmless=dict.fromkeys(("num_dense_layers", "num_shared_experts"), _MOE),
                   config_class="AfmoeConfig",
                   defaults={"head_dim": 128, "sliding_window": 1024,
                             "global_attn_every_n_layers": 4,
                             "max_position_embeddings": 16384},
                   vllm="afmoe.py (layer_types, per_layer_sliding_window)"),
        # Falcon-H1: attention and a Mamba2 mixer in every layer (families/falcon_h1.py).
        "falcon_h1": T(handler="falcon_h1:derive",
                       keys={"num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                             "head_dim", "hidden_size", "mamba_d_ssm", "mamba_expand",
                             "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state",
                             "mamba_d_conv"},
                       harmless={**_moe_hybrid2(
                           "attention_in_multiplier", "attention_out_multiplier",
                           "ssm_in_multiplier", "ssm_out_multiplier", "ssm_multipliers",
                           "lm_head_multiplier", "mamba_rms_norm", "mamba_norm_before_gate",
                           "mamba_use_mlp", "attn_layer_indices"),
                           **{k: _HARMLESS_MOE_HYBRID[k] for k in (
                               "mamba_conv_bias", "mamba_chunk_size")},
                           "mamba_proj_bias": _MAMBA2_HARMLESS["mamba_proj_bias"]},
                       config_class="FalconH1Config",
                       defaults={"num_key_value_heads": 8, "mamba_d_ssm": 1024,
                                 "mamba_n_heads": 128, "mamba_d_head": "auto",
                                 "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4,
                                 "mamba_expand": 2, "max_position_embeddings": 8192},
                       vllm="falcon_h1.py (FalconH1ParallelHybrid, "
                            "get_mamba_state_shape_from_config)"),
        # FalconMamba: vLLM's registry maps FalconMambaForCausalLM to mamba.py's
        # MambaForCausalLM (is_falcon_mamba only switches the mixer's RMSNorm on), so the
        # Mamba1 state is mamba's: intermediate_size, which FalconMambaConfig.__post_init__
        # (transformers 5.19) sets to expand × hidden_size whatever the file states.
        "falcon_mamba": T(like="mamba", config_class="FalconMambaConfig",
                          vllm="mamba.py (MambaForCausalLM; is_falcon_mamba: mixer RMSNorm)"),
        # Checkpoints of this group vLLM 0.32 loads only with their remote code: neither
        # transformers 5.19 nor vLLM's _CONFIG_REGISTRY (transformers_utils/config.py) has a
        # config class for these model types (vLLM registers only the bailing_moe_v3_vl
        # wrapper, whose text config it builds itself).
        "bailing_moe_v3": T(),
        "bailing_hybrid": T(),
        # -- configs vLLM 0.32 itself cannot serve -------------------------------------------
        "deepseek_ref": T(),
        "step3p7_flash": T(),
        # -- breadth: generative architectures of vLLM's registry not covered before ------
        # Each row's defaults were read from the transformers 5.19 config class it names
        # (scripts/class_default_configs.py writes the class's own to_dict() to
        # tests/data/class-default-configs/); its facts from the vLLM model file it names.
        # GLM-4.7-Flash: DeepSeek-V2's MLA (glm4_moe_lite.py builds DeepseekV2MLAAttention;
        # model_arch_config_convertor.py is_deepseek_mla lists glm4_moe_lite), an MTP layer
        # in glm4_moe_lite_mtp.py; Glm4MoeLiteConfig has kv_lora_rank 512, qk_rope_head_dim
        # 64 (as deepseek_v2's), q_lora_rank 768 and 202752 positions.
        "glm4_moe_lite": T(like="deepseek_v2", config_class="Glm4MoeLiteConfig",
                           defaults={"q_lora_rank": 768, "max_position_embeddings": 202752},
                           vllm="glm4_moe_lite.py, glm4_moe_lite_mtp.py"),
        # GLM-4 dense (Glm4Config: 2 KV heads x head_dim 128, 131072 positions); glm4.py takes
        # config.head_dim, else hidden_size // num_attention_heads; no window.
        "glm4": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="Glm4Config",
                  defaults={"num_key_value_heads": 2, "head_dim": 128,
                            "max_position_embeddings": 131072},
                  vllm="glm4.py"),
        # Apertus (ApertusConfig: MHA, no head_dim, 65536 positions); apertus.py takes
        # config.head_dim, else hidden_size // num_attention_heads; no window.
        "apertus": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="ApertusConfig",
                     defaults={"max_position_embeddings": 65536}, vllm="apertus.py"),
        # Seed-OSS (SeedOssConfig: 8 KV heads x 128, 524288 positions): vLLM 0.32 serves it with
        # its Transformers backend (registry _TRANSFORMERS_SUPPORTED_MODELS), whose attention
        # takes KV heads and head size as the standard handler reads them.
        "seed_oss": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="SeedOssConfig",
                      harmless={"attention_out_bias": _WEIGHTS},
                      defaults={"num_key_value_heads": 8, "head_dim": 128,
                                "max_position_embeddings": 524288},
                      vllm="Transformers backend (SeedOssForCausalLM)"),
        # Granite MoE with shared experts: granitemoeshared.py builds granitemoe.py's
        # GraniteMoeAttention (head_dim = hidden_size // num_attention_heads).
        "granitemoeshared": T(like="granitemoe", config_class="GraniteMoeSharedConfig",
                              vllm="granitemoeshared.py (granitemoe.py GraniteMoeAttention)"),
        # Command R7B / A (Cohere2Config): commandr.py slides the layers config.layer_types
        # marks sliding, over config.sliding_window + 1 tokens (CohereAttention.__init__: the
        # training convention sees the window plus the current token); the class builds
        # layer_types from sliding_window_pattern (default 4: every 4th layer full) and sets
        # head_dim = hidden_size // num_attention_heads whatever the file says.
        "cohere2": T(handler="layer_patterns:derive",
                     keys=_WINDOW_KEYS | {"sliding_window_pattern"},
                     config_class="Cohere2Config",
                     defaults={"num_key_value_heads": 64, "sliding_window": 4096,
                               "max_position_embeddings": 8192},
                     options={"every": 4, "window_extra": 1, "stated_head_dim": False},
                     vllm="commandr.py (CohereForCausalLM; v2: interleaved windows)"),
        # LFM2-MoE (Lfm2MoeConfig: 8 KV heads, head_dim hidden_size // heads, conv kernel 3,
        # no layer_types default): families/ssm_hybrids.py lfm2_moe.
        "lfm2_moe": T(handler="ssm_hybrids:lfm2_moe",
                      keys={"num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                            "hidden_size", "layer_types", "conv_L_cache"},
                      harmless={"conv_bias": "a bias in the conv block's projections: weights",
                                "num_dense_layers": "how many leading layers use a dense MLP "
                                                    "instead of experts: weights"},
                      config_class="Lfm2MoeConfig",
                      defaults={"num_key_value_heads": 8, "max_position_embeddings": 128000,
                                "conv_L_cache": 3},
                      vllm="lfm2_moe.py (short_conv_state_shape of hidden_size)"),
        # K-EXAONE MoE (ExaoneMoeConfig: exaone4's window pattern, every 4th layer full, window
        # 4096): exaone_moe.py slides config.layer_types' sliding layers over
        # config.sliding_window. Its per-layer sliding_windows and MTP fields (K-EXAONE 2.0)
        # are not modelled: the guard stops on them.
        "exaone_moe": T(like="exaone4", config_class="ExaoneMoeConfig",
                        harmless={"num_shared_experts": _MOE}, vllm="exaone_moe.py"),
        # Served by vLLM 0.32's Transformers backend (registry _TRANSFORMERS_SUPPORTED_MODELS):
        # KV heads and head size as the standard handler reads them, a per-layer window where
        # layer_types says sliding (see gpt_neox above). Defaults: each config class's own.
        "olmo": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="OlmoConfig",
                  harmless={"clip_qkv": "clamps the Q/K/V activations' values; the cached "
                                        "K and V keep their shape"},
                  defaults={"max_position_embeddings": 2048},
                  vllm="Transformers backend (OlmoForCausalLM)"),
        "glm": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="GlmConfig",
                 defaults={"num_key_value_heads": 2, "head_dim": 128,
                           "max_position_embeddings": 131072},
                 vllm="Transformers backend (GlmForCausalLM)"),
        "arcee": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="ArceeConfig",
                   defaults={"head_dim": 80, "max_position_embeddings": 4096},
                   vllm="Transformers backend (ArceeForCausalLM)"),
        "jais2": T(handler="standard:derive", keys=STANDARD_KEYS, config_class="Jais2Config",
                   defaults={"head_dim": 128, "max_position_embeddings": 8192},
                   vllm="Transformers backend (Jais2ForCausalLM)"),
        # SmolLM3Config: all layers full unless use_sliding_window (off here); no_rope_layers
        # only drops RoPE on some layers.
        "smollm3": T(handler="standard:derive", keys=_WINDOW_KEYS, off={"use_sliding_window"},
                     harmless=dict.fromkeys(("no_rope_layers", "no_rope_layer_interval"),
                                            "which layers skip RoPE: positions, not what is "
                                            "cached"),
                     config_class="SmolLM3Config",
                     defaults={"num_key_value_heads": 4, "max_position_embeddings": 32768},
                     vllm="Transformers backend (SmolLM3ForCausalLM)"),
        # VaultGemmaConfig builds gemma-2's pattern when the file has no layer_types (layer i
        # slides when (i + 1) % 2 != 0), as interleaved:gemma2 does.
        "vaultgemma": T(like="gemma2", config_class="VaultGemmaConfig",
                        defaults={"num_key_value_heads": 4, "head_dim": 256,
                                  "sliding_window": 4096, "max_position_embeddings": 8192},
                        vllm="Transformers backend (VaultGemmaForCausalLM)"),
        "flex_olmo": T(handler="standard:derive", keys=STANDARD_KEYS,
                       config_class="FlexOlmoConfig", defaults={"max_position_embeddings": 4096},
                       vllm="Transformers backend (FlexOlmoForCausalLM, MoE)"),
        "hunyuan_v1_dense": T(handler="standard:derive", keys=STANDARD_KEYS,
                              config_class="HunYuanDenseV1Config",
                              defaults={"max_position_embeddings": 2048},
                              vllm="Transformers backend (HunYuanDenseV1ForCausalLM)"),
        # CwmConfig builds layer_types when the file has none: layer i full when i % 4 == 0.
        "cwm": T(handler="layer_patterns:derive", keys=_WINDOW_KEYS, config_class="CwmConfig",
                 defaults={"num_key_value_heads": 8, "head_dim": 128, "sliding_window": 8192,
                           "max_position_embeddings": 131072},
                 options={"every": 4, "pattern_key": None, "first_full": True},
                 vllm="Transformers backend (CwmForCausalLM)"),
        # -- breadth round 3 (vLLM 0.33 registry; config-class defaults, transformers 5.19) --
        # Granite SWA (GraniteSWAConfig): granite.py granite_layer_attn_params slides a layer
        # when config.layer_types marks it sliding, over config.sliding_window; the class
        # builds layer_types with layer i full when i % 4 == 0. Head size: granite.py takes
        # config.head_dim, else hidden_size // num_attention_heads (the class has none).
        "granite_swa": T(handler="layer_patterns:derive", keys=_WINDOW_KEYS,
                         harmless={"layer_rope_theta": _ROPE_BASES,
                                   "attention_sinks": _SINKS},
                         config_class="GraniteSWAConfig",
                         defaults={"num_key_value_heads": 4, "hidden_size": 2560,
                                   "num_hidden_layers": 24, "num_attention_heads": 20,
                                   "sliding_window": 128, "max_position_embeddings": 8192},
                         options={"every": 4, "pattern_key": None, "first_full": True},
                         vllm="granite.py (GraniteForCausalLM; granite_layer_attn_params)"),
        # Granite MoE SWA: the registry serves it with granitemoeshared.py, whose
        # GraniteMoeAttention (granitemoe.py) takes head_dim = hidden_size // heads and the
        # same per-layer windows (granite_layer_attn_params); the class pattern as above.
        "granitemoe_swa": T(handler="layer_patterns:derive", keys=_WINDOW_KEYS,
                            harmless={"layer_rope_theta": _ROPE_BASES,
                                      "attention_sinks": _SINKS},
                            config_class="GraniteMoeSWAConfig",
                            defaults={"hidden_size": 4096, "num_hidden_layers": 32,
                                      "num_attention_heads": 32, "sliding_window": 128,
                                      "max_position_embeddings": 2048},
                            options={"every": 4, "pattern_key": None, "first_full": True,
                                     "stated_head_dim": False},
                            vllm="granitemoeshared.py (GraniteMoeSharedForCausalLM: "
                                 "granitemoe.py GraniteMoeAttention)"),
        # Command A+ MoE (Cohere2MoeConfig): cohere2_moe.py Cohere2MoeAttention slides the
        # layers config.layer_types marks sliding over config.sliding_window + 1 tokens, head
        # size config.head_dim (else hidden_size // heads). Without layer_types the class
        # builds (i + 1) % sliding_window_pattern != 0 sliding (first_k_dense_replace 0).
        "cohere2_moe": T(handler="layer_patterns:derive",
                         keys=_WINDOW_KEYS | {"sliding_window_pattern"},
                         harmless={"num_shared_experts": _MOE,
                                   "shared_expert_combination_strategy": _MOE,
                                   "prefix_dense_sliding_window_pattern":
                                       "which leading dense layers keep RoPE "
                                       "(cohere2_moe.py force_rope); their windows follow "
                                       "layer_types"},
                         config_class="Cohere2MoeConfig",
                         defaults={"num_key_value_heads": 64, "head_dim": 128,
                                   "hidden_size": 8192, "num_hidden_layers": 40,
                                   "num_attention_heads": 64, "sliding_window": 4096,
                                   "max_position_embeddings": 8192},
                         options={"every": 4, "window_extra": 1},
                         vllm="cohere2_moe.py (Cohere2MoeAttention: window sliding_window + 1)"),
        # HyperCLOVA X SEED (HyperCLOVAXConfig: head_dim = hidden_size // heads when None):
        # hyperclovax.py HyperCLOVAXAttention takes config.head_dim, no window.
        "hyperclovax": T(handler="standard:derive", keys=STANDARD_KEYS,
                         config_class="HyperCLOVAXConfig",
                         defaults={"hidden_size": 4096, "num_hidden_layers": 32,
                                   "num_attention_heads": 32, "max_position_embeddings": 2048},
                         vllm="hyperclovax.py (HyperCLOVAXAttention: config.head_dim)"),
        # Hy3 (HYV3Config: 8 KV heads x head_dim 128, 80 layers): hy_v3.py HYV3Attention takes
        # config.head_dim, else hidden_size // heads; no window. Its MTP layer (hy_v3_mtp.py)
        # is a drafter only, not modelled here.
        "hy_v3": T(handler="standard:derive", keys=STANDARD_KEYS,
                   harmless={"num_shared_experts": _MOE},
                   config_class="HYV3Config",
                   defaults={"num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096,
                             "num_hidden_layers": 80, "num_attention_heads": 64,
                             "max_position_embeddings": 131072},
                   vllm="hy_v3.py (HYV3Attention: config.head_dim)"),
        # Mellum 2 (MellumConfig): served by vLLM's Transformers backend (registry
        # _TRANSFORMERS_SUPPORTED_MODELS: TransformersMoEForCausalLM); the class builds
        # layer_types all full when the file has none, so its sliding_window 1024 reaches no
        # layer unless layer_types marks one sliding.
        "mellum": T(handler="layer_patterns:derive", keys=_WINDOW_KEYS,
                    config_class="MellumConfig",
                    defaults={"num_key_value_heads": 4, "head_dim": 128, "hidden_size": 2304,
                              "num_hidden_layers": 28, "num_attention_heads": 32,
                              "sliding_window": 1024, "max_position_embeddings": 131072},
                    vllm="Transformers backend (MellumForCausalLM)"),
        # A.X K1 (AXK1Config): vLLM lists axk1 among its DeepSeek-MLA types
        # (transformers_utils/model_arch_config_convertor.py is_deepseek_mla) and AXK1.py
        # builds AXK1MLAAttention: kv_lora_rank + qk_rope_head_dim per token, one head.
        "axk1": T(like="deepseek_v2", config_class="AXK1Config",
                  defaults={"num_hidden_layers": 61, "max_position_embeddings": 32768},
                  vllm="AXK1.py (AXK1MLAAttention)"),
        # LongCat-Flash (LongcatFlashConfig): longcat_flash.py builds two
        # DeepseekV2MLAAttention per decoder layer (self_attn[0], self_attn[1]) over
        # config.num_layers layers; families/mla.py longcat_flash.
        "longcat_flash": T(handler="mla:longcat_flash",
                           keys={"num_layers", "kv_lora_rank", "qk_rope_head_dim",
                                 "q_lora_rank"},
                           harmless={**_MLA_HARMLESS,
                                     "mla_scale_kv_lora": "scales the kv_a norm's weights at "
                                     "load (longcat_flash.py scale_mla_lora_norms_on_load): "
                                     "weights, not the latent's width"},
                           config_class="LongcatFlashConfig",
                           defaults={"num_layers": 28, "kv_lora_rank": 512,
                                     "qk_rope_head_dim": 64, "q_lora_rank": 1536,
                                     "max_position_embeddings": 131072},
                           vllm="longcat_flash.py (two DeepseekV2MLAAttention a layer)"),
        # OLMo-Hybrid (OlmoHybridConfig): olmo_hybrid.py builds a Gated DeltaNet layer where
        # config.layer_types says linear_attention (state: gated_delta_net_state_shape of the
        # linear_* keys, as qwen3_next) and OlmoHybridAttention elsewhere (KV heads
        # num_key_value_heads, head size hidden_size // num_attention_heads, whatever a
        # head_dim says: not a key of this row, so the guard stops on one). No window, and
        # vLLM has no MTP drafter for it.
        "olmo_hybrid": T(handler="gdn:derive",
                         keys=_GDN_KEYS - {"head_dim", "full_attention_interval",
                                           "num_nextn_predict_layers"},
                         harmless=dict.fromkeys(
                             ("linear_a_log_min", "linear_a_log_max", "linear_dt_min",
                              "linear_dt_max", "linear_dt_init_floor",
                              "linear_allow_neg_eigval"),
                             "initialisation ranges and sign of the DeltaNet's decay and step "
                             "parameters: weights; the state keeps its shape"),
                         config_class="OlmoHybridConfig",
                         defaults={"max_position_embeddings": 65536,
                                   "linear_conv_kernel_dim": 4},
                         options={"mtp_key": ""},
                         vllm="olmo_hybrid.py (OlmoHybridGatedDeltaNetAttention, "
                              "OlmoHybridAttention)"),
        # GLM-4.5V (Glm4vMoeConfig): glm4_1v.py builds Glm4MoeForCausalLM on text_config
        # (glm4v_moe_text). glm4_moe.py passes head_dim=config.head_dim and Glm4MoeAttention
        # takes head_dim or hidden_size // num_attention_heads: Glm4vMoeTextConfig's head_dim
        # defaults to None, so a config that leaves it gets the quotient. The text class has
        # no num_nextn_predict_layers (glm4_moe_mtp.py reads it without a default): no MTP
        # layer unless the file states it.
        "glm4v_moe": T(text_key="text_config", inner=("glm4v_moe_text",),
                       harmless={**_HARMLESS_MULTIMODAL},
                       config_class="Glm4vMoeConfig",
                       vllm="glm4_1v.py (Glm4vMoeForConditionalGeneration → "
                            "Glm4MoeForCausalLM)"),
        "glm4v_moe_text": T(handler="mtp_decoder:derive",
                            keys=STANDARD_KEYS | {"num_nextn_predict_layers"},
                            config_class="Glm4vMoeTextConfig",
                            defaults={"num_key_value_heads": 8, "hidden_size": 4096,
                                      "num_hidden_layers": 46, "num_attention_heads": 96,
                                      "max_position_embeddings": 65536},
                            vllm="glm4_moe.py (Glm4MoeAttention: head_dim or hidden_size // "
                                 "heads), glm4_moe_mtp.py"),
        # GLM-OCR (GlmOcrConfig): glm_ocr.py's GlmOcrForConditionalGeneration is glm4_1v.py's
        # Glm4vForConditionalGeneration, which builds Glm4ForCausalLM on text_config for
        # model_type glm_ocr (glm4.py: config.head_dim, else hidden_size // heads; no window).
        "glm_ocr": T(text_key="text_config", inner=("glm_ocr_text",),
                     harmless={**_HARMLESS_MULTIMODAL}, config_class="GlmOcrConfig",
                     vllm="glm_ocr.py (Glm4vForConditionalGeneration → Glm4ForCausalLM)"),
        "glm_ocr_text": T(handler="standard:derive", keys=STANDARD_KEYS,
                          config_class="GlmOcrTextConfig",
                          defaults={"num_key_value_heads": 8, "hidden_size": 1024,
                                    "num_hidden_layers": 16, "num_attention_heads": 16,
                                    "max_position_embeddings": 131072},
                          vllm="glm4_1v.py (Glm4ForCausalLM: glm4.py, no window)"),
        # PaddleOCR-VL (PaddleOCRVLConfig): paddleocr_vl.py copies text_config's keys onto the
        # top-level config (config.update) and builds ernie45.py's Ernie4_5ForCausalLM (a
        # LlamaForCausalLM: llama.py attention) on it.
        "paddleocr_vl": T(text_key="text_config", inner=("paddleocr_vl_text",),
                          harmless={**_HARMLESS_MULTIMODAL},
                          config_class="PaddleOCRVLConfig",
                          vllm="paddleocr_vl.py (Ernie4_5ForCausalLM on the text keys)"),
        "paddleocr_vl_text": T(like="ernie4_5", config_class="PaddleOCRVLTextConfig",
                               defaults={"hidden_size": 1024, "num_hidden_layers": 18,
                                         "num_attention_heads": 16},
                               vllm="paddleocr_vl.py (ernie45.py Ernie4_5ForCausalLM: "
                                    "llama.py attention)"),
        # Emu3 (Emu3Config): served by vLLM's Transformers backend (registry
        # _TRANSFORMERS_SUPPORTED_MODELS: TransformersMultiModalForCausalLM), which builds
        # transformers' Emu3TextModel: head_dim = hidden_size // num_attention_heads unless the
        # config has one (modeling_emu3.py Emu3Attention), num_key_value_heads KV heads.
        "emu3": T(text_key="text_config", inner=("emu3_text_model",),
                  harmless={**_HARMLESS_MULTIMODAL}, config_class="Emu3Config",
                  vllm="Transformers backend (Emu3ForConditionalGeneration)"),
        "emu3_text_model": T(handler="standard:derive", keys=STANDARD_KEYS,
                             config_class="Emu3TextConfig",
                             defaults={"num_key_value_heads": 8, "hidden_size": 4096,
                                       "num_hidden_layers": 32, "num_attention_heads": 32,
                                       "max_position_embeddings": 9216},
                             vllm="Transformers backend (Emu3TextModel attention)"),
        # Qwen3-Omni MoE (Qwen3OmniMoeConfig): the registry serves the architecture with
        # qwen3_omni_moe_thinker.py's Qwen3OmniMoeThinkerForConditionalGeneration, which builds
        # only the thinker: Qwen3MoeLLMForCausalLM (qwen3_moe.py attention: head_dim or
        # hidden_size // heads) on thinker_config.text_config; talker_config and
        # code2wav_config are never built and keep no KV.
        "qwen3_omni_moe": T(text_key="thinker_config", inner=("qwen3_omni_moe_thinker",),
                            config_class="Qwen3OmniMoeConfig",
                            vllm="qwen3_omni_moe_thinker.py (thinker only)"),
        "qwen3_omni_moe_thinker": T(text_key="text_config", inner=("qwen3_omni_moe_text",),
                                    harmless={**_HARMLESS_MULTIMODAL},
                                    config_class="Qwen3OmniMoeThinkerConfig",
                                    vllm="qwen3_omni_moe_thinker.py"),
        "qwen3_omni_moe_text": T(like="qwen3_moe", config_class="Qwen3OmniMoeTextConfig",
                                 defaults={"hidden_size": 2048, "num_hidden_layers": 28,
                                           "num_attention_heads": 28,
                                           "max_position_embeddings": 32768},
                                 vllm="qwen3_omni_moe_thinker.py (Qwen3MoeLLMForCausalLM: "
                                      "qwen3_moe.py attention)"),
        # North (CohereCompassConfig): cohere_compass.py builds CohereCompassForCausalLM on
        # text_config (vllm_config.with_hf_config); CohereCompassAttention takes
        # config.head_dim and slides the layers config.layer_types marks sliding over
        # config.sliding_window (no + 1 here). CohereCompassTextConfig builds layer_types all
        # full when the file has none.
        "cohere_compass": T(text_key="text_config", inner=("cohere_compass_text",),
                            harmless={**_HARMLESS_MULTIMODAL},
                            config_class="CohereCompassConfig",
                            vllm="cohere_compass.py (CohereCompassForCausalLM on text_config)"),
        "cohere_compass_text": T(handler="layer_patterns:derive", keys=_WINDOW_KEYS,
                                 config_class="CohereCompassTextConfig",
                                 defaults={"num_key_value_heads": 64, "head_dim": 128,
                                           "hidden_size": 8192, "num_hidden_layers": 40,
                                           "num_attention_heads": 64, "sliding_window": 4096,
                                           "max_position_embeddings": 8192},
                                 vllm="cohere_compass.py (CohereCompassAttention)"),
        # Multimodal wrappers of round 3: each vLLM model file builds its language model from
        # config.text_config (init_vllm_registered_model(hf_config=config.text_config), or the
        # class named) and the encoders beside it; only the language model's layers hold KV.
        "llava_onevision": T(like="llava",
                             harmless={"vision_aspect_ratio": "how many image tiles the "
                                       "processor cuts (anyres_max_N): prompt length, "
                                       "not a cache; " + _ENCODER},
                             config_class="LlavaOnevisionConfig (text_config: "
                                                        "AutoConfig, qwen2 by default)",
                             vllm="llava_onevision.py (language model from text_config)"),
        "llava_next_video": T(like="llava", config_class="LlavaNextVideoConfig (text_config: "
                                                         "AutoConfig, llama by default)",
                              vllm="llava_next_video.py (language model from text_config)"),
        "internvl": T(text_key="text_config", inner=("qwen2", "qwen3", "llama"),
                      harmless={**_HARMLESS_MULTIMODAL, "downsample_ratio": _PIXEL_SHUFFLE},
                      config_class="InternVLConfig (text_config: AutoConfig, qwen2 by default)",
                      vllm="InternVLForConditionalGeneration of interns1.py (language model "
                           "from text_config)"),
        "qianfan_ocr": T(text_key="text_config", inner=("qwen3",),
                         harmless={**_HARMLESS_MULTIMODAL, "downsample_ratio": _PIXEL_SHUFFLE},
                         config_class="QianfanOCRConfig (text_config: qwen3 by default)",
                         vllm="qianfan_ocr.py (InternVLChatModel, internvl.py: language model "
                              "from text_config)"),
        "glmasr": T(text_key="text_config", inner=("llama",), harmless={**_HARMLESS_MULTIMODAL},
                    config_class="GlmAsrConfig (text_config: llama by default)",
                    vllm="glmasr.py (LlamaForCausalLM on text_config)"),
        "audioflamingo3": T(text_key="text_config", inner=("qwen2",),
                            harmless={**_HARMLESS_MULTIMODAL},
                            config_class="AudioFlamingo3Config (text_config: qwen2 by default)",
                            vllm="audioflamingo3.py (Qwen2ForCausalLM on text_config)"),
        "cohere2_vision": T(text_key="text_config", inner=("cohere2",),
                            harmless={**_HARMLESS_MULTIMODAL},
                            config_class="Cohere2VisionConfig (text_config: cohere2 by default)",
                            vllm="cohere2_vision.py (language model from text_config)"),
        "granite_speech": T(text_key="text_config", inner=("granite",),
                            harmless={**_HARMLESS_MULTIMODAL, "encoder_config": _ENCODER,
                                      "window_size": "audio frames per Q-Former window of "
                                      "the projector (granite_speech.py "
                                      "GraniteSpeechEncoderProjector); " + _ENCODER},
                            config_class="GraniteSpeechConfig (text_config: granite by default)",
                            vllm="granite_speech.py (language model from text_config)"),
        "granite_speech_plus": T(like="granite_speech", config_class="GraniteSpeechPlusConfig",
                                 vllm="granite_speech_plus.py "
                                      "(GraniteSpeechForConditionalGeneration)"),
        # Granite 4 Vision: granite4_vision.py builds Granite4VisionLLMForCausalLM, a
        # GraniteModel (granite.py GraniteAttention: config.head_dim, else hidden_size //
        # heads; per-layer windows only from layer_types) on text_config, llama by default.
        "granite4_vision": T(text_key="text_config", inner=("llama", "granite"),
                             harmless={**_HARMLESS_MULTIMODAL,
                                       **dict.fromkeys(("spatial_target_layers",
                                                        "spatial_vision_layer"),
                                                       "which vision-tower layers feed the "
                                                       "spatial projector; " + _ENCODER)},
                             config_class="Granite4VisionConfig (text_config: llama by "
                                          "default)",
                             vllm="granite4_vision.py (GraniteModel on text_config)"),
        "blip-2": T(text_key="text_config", inner=("opt",),
                    harmless={**_HARMLESS_MULTIMODAL,
                              "use_decoder_only_language_model": "true for an OPT text "
                                  "config; a false one goes with a T5 text_config, which the "
                                  "inner types refuse"},
                    text_harmless={"_remove_final_layer_norm": _RESIDUAL,
                                   "layer_norm_elementwise_affine": _WEIGHTS},
                    config_class="Blip2Config (text_config: opt by default)",
                    vllm="blip2.py (language model from text_config)"),
        "minicpmv4_7": T(like="minicpmv4_6", config_class="MiniCPMV4_7Config",
                         vllm="minicpmv4_7.py (MiniCPMV4_6ForConditionalGeneration)"),
        "nemotron_h_omni": T(text_key="text_config", inner=("nemotron_h",),
                             harmless={**_HARMLESS_MULTIMODAL,
                                       "downsample_ratio": _PIXEL_SHUFFLE},
                             config_class="NemotronH_Omni_Reasoning_V3_Config (text_config: "
                                          "nemotron_h)",
                             vllm="NemotronH_Omni_Reasoning_V3 of nano_nemotron_vl.py (language "
                                  "model from text_config)"),
        # Served by vLLM's Transformers backend (registry _TRANSFORMERS_SUPPORTED_MODELS:
        # TransformersMultiModalForCausalLM): the text model's attention as qwen2's row reads.
        "vibevoice_asr": T(text_key="text_config", inner=("qwen2",),
                           harmless={**_HARMLESS_MULTIMODAL,
                                     **dict.fromkeys(("acoustic_tokenizer_encoder_config",
                                                      "semantic_tokenizer_encoder_config",
                                                      "acoustic_tokenizer_chunk_size"),
                                                     "configures the audio tokenizers' "
                                                     "encoders; " + _ENCODER)},
                           config_class="VibeVoiceAsrConfig (text_config: qwen2 by default)",
                           vllm="Transformers backend (VibeVoiceAsrForConditionalGeneration)"),
        # Aria: aria.py builds AriaTextModel, a LlamaModel whose decoder layers are
        # LlamaDecoderLayer (llama.py attention) with MoE MLPs, on text_config (aria_text).
        "aria": T(text_key="text_config", inner=("aria_text",),
                  harmless={**_HARMLESS_MULTIMODAL},
                  config_class="AriaConfig (text_config: AriaTextConfig)",
                  vllm="aria.py (AriaTextModel: LlamaModel on text_config)"),
        "aria_text": T(like="llama", config_class="AriaTextConfig",
                       harmless={"moe_num_shared_experts": _MOE},
                       defaults={"head_dim": 128, "hidden_size": 4096,
                                 "num_hidden_layers": 32, "num_attention_heads": 32,
                                 "max_position_embeddings": 2048},
                       vllm="aria.py (AriaTextDecoderLayer: llama.py LlamaAttention)"),
        # -- breadth round 4 (the last vLLM 0.33 architectures with a transformers config
        # class; class defaults written by scripts/class_default_configs.py) --
        # Cosmos3-Edge (Cosmos3EdgeConfig): cosmos3_edge.py _to_nemotron_h_config re-expresses
        # text_config as a NemotronHConfig of layers_block_type ["full_attention", "mlp"] x
        # num_hidden_layers, so every decoder layer is one Cosmos3EdgeAttention
        # (NemotronHAttention: num_key_value_heads x config.head_dim, else hidden_size //
        # heads; no window, no Mamba layer).
        "cosmos3_edge": T(text_key="text_config", inner=("cosmos3_edge_text",),
                          harmless={**_HARMLESS_MULTIMODAL},
                          config_class="Cosmos3EdgeConfig",
                          vllm="cosmos3_edge.py (Cosmos3EdgeForCausalLM: Nemotron-H attention "
                               "layers on text_config)"),
        "cosmos3_edge_text": T(handler="standard:derive", keys=STANDARD_KEYS,
                               config_class="Cosmos3EdgeTextConfig",
                               defaults={"num_key_value_heads": 8, "head_dim": 128,
                                         "hidden_size": 2048, "num_hidden_layers": 28,
                                         "num_attention_heads": 16,
                                         "max_position_embeddings": 131072},
                               vllm="cosmos3_edge.py (Cosmos3EdgeAttention: nemotron_h.py "
                                    "NemotronHAttention)"),
        # HunYuan-VL (HunYuanVLConfig): served by vLLM's Transformers backend (registry
        # _TRANSFORMERS_SUPPORTED_MODELS: TransformersMultiModalForCausalLM), which builds
        # transformers' HunYuanVLDenseV1Attention on text_config: num_key_value_heads x
        # getattr(config, "head_dim", hidden_size // heads). HunYuanVLTextConfig's head_dim
        # defaults to None, and that attention then computes None ** -0.5: vLLM stops
        # (new_type_verdicts NONE_NOT_ACCEPTED), so only a config that states it plans.
        "hunyuan_vl": T(text_key="text_config", inner=("hunyuan_vl_text",),
                        harmless={**_HARMLESS_MULTIMODAL},
                        config_class="HunYuanVLConfig",
                        vllm="Transformers backend (HunYuanVLForConditionalGeneration)"),
        "hunyuan_vl_text": T(handler="standard:derive", keys=STANDARD_KEYS,
                             config_class="HunYuanVLTextConfig",
                             defaults={"num_key_value_heads": 32, "hidden_size": 4096,
                                       "num_hidden_layers": 32, "num_attention_heads": 32,
                                       "max_position_embeddings": 2048},
                             vllm="Transformers backend (HunYuanVLDenseV1Attention)"),
        # Gemma-4 Unified (Gemma4UnifiedConfig): gemma4_unified.py builds Gemma4ForCausalLM
        # (gemma4.py, per_layer_config[i] head_dim / KV heads) on text_config; the encoder-
        # free audio and vision embedders keep no cache (families/gemma4.py unified).
        "gemma4_unified": T(text_key="text_config", inner=("gemma4_unified_text",),
                            harmless={**_WRAPPER_TOKENS, **_HARMLESS_MULTIMODAL,
                                      "eoa_token_index": _TOKEN},
                            config_class="Gemma4UnifiedConfig",
                            vllm="gemma4_unified.py (Gemma4ForCausalLM on text_config)"),
        "gemma4_unified_text": T(handler="gemma4:unified",
                                 keys={"num_hidden_layers", "num_attention_heads",
                                       "num_key_value_heads", "head_dim", "global_head_dim",
                                       "num_global_key_value_heads", "attention_k_eq_v",
                                       "sliding_window", "layer_types", "per_layer_config",
                                       "use_bidirectional_attention", "num_kv_shared_layers"},
                                 harmless=dict.fromkeys(
                                     ("hidden_size_per_layer_input",
                                      "vocab_size_per_layer_input"),
                                     "per-layer input embeddings: weights, not cache"),
                                 config_class="Gemma4UnifiedTextConfig",
                                 defaults={"num_key_value_heads": 4, "head_dim": 256,
                                           "global_head_dim": 512, "sliding_window": 1024,
                                           "use_bidirectional_attention": "vision",
                                           "max_position_embeddings": 262144},
                                 vllm="gemma4.py (Gemma4DecoderLayer: per_layer_config)"),
        # Refused with the reason plan/engines/vllm/releases/model_type_verdicts.py gives
        # (vLLM's start-up error, or a cache vLLM builds that kvledger does not plan).
        "ernie4_5_vl_moe": T(),
        "cohere_asr": T(),
        "diffusion_gemma": T(),
        "hrm_text": T(),
        "hy_v4": T(),
        "inkling_text": T(),
        "inkling_mm_model": T(),
        "qwen4_exp": T(),
        "qwen4_exp_text": T(),
        "step3p7": T(),
        # -- breadth round 5 (the classes transformers 5.20, vLLM 0.33's pin, adds) --
        # MOSS Transcribe-Diarize (MossTranscribeDiarizeConfig; vLLM loads it with its own
        # transformers_utils/configs/moss_transcribe_diarize.py): moss_transcribe_diarize.py
        # builds its language model with init_vllm_registered_model(hf_config=
        # config.text_config, architectures=["Qwen3ForCausalLM"]); the Whisper-style audio
        # encoder (MossTranscribeDiarizeWhisperEncoder) runs once per request and keeps no
        # cache, and the decoder has no cross-attention (audio enters as embeddings).
        "moss_transcribe_diarize": T(
            text_key="text_config", inner=("qwen3",),
            harmless={**_HARMLESS_MULTIMODAL,
                      "audio_chunk_size": "how many audio samples the encoder takes at once: "
                                          + _ENCODER},
            config_class="MossTranscribeDiarizeConfig (text_config: qwen3 by default)",
            vllm="moss_transcribe_diarize.py (Qwen3ForCausalLM on text_config)"),
        # Beam (vLLM 0.33 registers BeamForCausalLM, vllm/models/beam/nvidia/): vLLM loads
        # model_type beam with its own BeamConfig (transformers_utils/configs/beam.py,
        # _CONFIG_REGISTRY), not transformers 5.20's: its defaults are these, and without
        # layer_types every layer slides. BeamAttention (models/beam/nvidia/attention.py):
        # num_key_value_heads x (head_dim or hidden_size // num_attention_heads), a window of
        # sliding_window on the layers layer_types marks sliding, none on the full (NoPE) ones.
        # vLLM 0.32 does not serve it (model_type_verdicts.py).
        "beam": T(handler="layer_patterns:derive", keys=_WINDOW_KEYS,
                  harmless=dict.fromkeys(("mlp_layer_types", "topk_group", "norm_topk_prob"),
                                         _MOE),
                  config_class="BeamConfig (vLLM's own)",
                  defaults={"num_key_value_heads": 4, "hidden_size": 2048,
                            "num_hidden_layers": 24, "num_attention_heads": 32,
                            "sliding_window": 4096, "max_position_embeddings": 32768},
                  options={"all_sliding": True},
                  vllm="vllm/models/beam/nvidia/model.py (BeamAttention: layer_types, "
                       "per_layer_sliding_window)"),
        # Kolibri-1 (Kolibri1Config, transformers 5.20): vLLM 0.33 serves it by its
        # Transformers backend (registry _TRANSFORMERS_SUPPORTED_MODELS:
        # TransformersMoEForCausalLM; transformers/base.py _create_attention_instances: one
        # Attention a layer, a per-layer window where layer_types says sliding). The class
        # builds layer_types when the file has none: layer i full when (i + 1) % 5 == 0.
        # vLLM 0.32 does not serve it (model_type_verdicts.py).
        "kolibri1": T(handler="layer_patterns:derive", keys=_WINDOW_KEYS,
                      harmless=dict.fromkeys(("norm_topk_prob",
                                              "shared_expert_intermediate_size"), _MOE),
                      config_class="Kolibri1Config",
                      defaults={"num_key_value_heads": 4, "head_dim": 128, "hidden_size": 2560,
                                "num_hidden_layers": 50, "num_attention_heads": 48,
                                "sliding_window": 513, "max_position_embeddings": 262144},
                      options={"every": 5, "pattern_key": None},
                      vllm="Transformers backend (Kolibri1ForCausalLM, MoE)"),
        # Refused with the reason plan/engines/vllm/releases/model_type_verdicts.py gives.
        "molmo2": T(),
        "muse_spark": T(),
        # -- breadth round 6: model types vLLM loads with a config class of its own
        # (vllm/transformers_utils/config.py _CONFIG_REGISTRY; the classes are in
        # transformers_utils/configs/). The wrappers below build their language model with
        # init_vllm_registered_model on the config named; their vision / audio towers run once
        # per input and keep no cache.
        "kimi_vl": T(text_key="text_config", inner=("deepseek_v2", "deepseek_v3"),
                     harmless=_HARMLESS_MULTIMODAL,
                     config_class="vLLM's KimiVLConfig (transformers_utils/configs/kimi_vl.py; "
                                  "text_config: DeepseekV2Config by default)",
                     vllm="kimi_vl.py (DeepseekV2ForCausalLM on text_config)"),
        # DeepSeek-VL2: vLLM's DeepseekVLV2Config builds its text config (DeepseekVLV2TextConfig,
        # a DeepseekV2Config whose kv_lora_rank may be None) from language_config, and
        # deepseek_vl2.py DeepseekVLV2ForCausalLM runs init_vllm_registered_model on it; the
        # SigLIP tower and the MLP projector keep no cache.
        "deepseek_vl_v2": T(text_key="language_config", inner=("deepseek_v2",),
                            harmless=_HARMLESS_MULTIMODAL,
                            config_class="vLLM's DeepseekVLV2Config (transformers_utils/"
                                         "configs/deepseek_vl2.py; language_config: "
                                         "DeepseekVLV2TextConfig)",
                            vllm="deepseek_vl2.py (the registered model of language_config)"),
        # Isaac: vLLM's IsaacConfig is a Qwen3Config with a text_config copy; isaac.py runs
        # init_vllm_registered_model(architectures=["Qwen3ForCausalLM"]) on the TOP-LEVEL
        # config, while vLLM's length (get_hf_text_config) comes from text_config — which
        # lacks the top level's max_sequence_length, the processor's 16,384 (IsaacConfig takes
        # it as its own argument, so Qwen3Config(**kwargs) never sees it).
        "isaac": T(text_key="text_config", inner=("qwen3",), text_mirrored=True,
                   harmless=_HARMLESS_MULTIMODAL,
                   config_class="vLLM's IsaacConfig (transformers_utils/configs/isaac.py; a "
                                "Qwen3Config, text_config: Qwen3Config)",
                   vllm="isaac.py (Qwen3ForCausalLM on the top-level config)"),
        # Moondream 3: vLLM's Moondream3Config reads Moondream's own schema, config["text"]
        # (families/moondream3.py); the to_dict() copies of what the class builds from it
        # (the top-level sizes) are overwritten on load, never read from the file.
        "moondream3": T(text_key="config", inner=("moondream3_config",),
                        harmless={**_HARMLESS_MULTIMODAL, **dict.fromkeys(
                            ("num_hidden_layers", "num_attention_heads",
                             "num_key_value_heads"),
                            "Moondream3Config.__init__ overwrites it from config['text'] "
                            "(its text_config), which the decoder reads")},
                        config_class="vLLM's Moondream3Config (transformers_utils/configs/"
                                     "moondream3.py; the decoder: config['text'])",
                        vllm="moondream3.py (Moondream3TextModel on the text config)"),
        "moondream3_config": T(text_key="text", inner=("moondream3_text",),
                               config_class="the config dict of vLLM's Moondream3Config "
                                            "(its 'text', 'vision' and 'tokenizer' sections)",
                               vllm="moondream3.py"),
        "moondream3_text": T(handler="moondream3:derive",
                             keys={"n_layers", "n_heads", "n_kv_heads", "dim", "max_context"},
                             harmless={"prefix_attn": "the image prefix's length in "
                                       "Moondream's reference code; vLLM's moondream3.py "
                                       "never reads it (a plain causal Attention a layer)"},
                             defaults={"dim": 2048, "n_layers": 24, "n_heads": 32,
                                       "n_kv_heads": 32, "max_context": 4096},
                             config_class="vLLM's Moondream3TextConfig (transformers_utils/"
                                          "configs/moondream3.py)",
                             vllm="moondream3.py (Moondream3Attention)"),
        "openvla": T(text_key="text_config", inner=("llama",),
                     harmless={**_HARMLESS_MULTIMODAL,
                               "timm_override_act_layers": "activation overrides of the timm "
                                                           "vision backbones: " + _ENCODER},
                     config_class="vLLM's OpenVLAConfig (transformers_utils/configs/"
                                  "openvla.py; text_config: llama by default)",
                     vllm="openvla.py (the registered model of text_config)"),
        "bagel": T(text_key="llm_config", inner=("qwen2",),
                   harmless=_HARMLESS_MULTIMODAL,
                   config_class="vLLM's BagelConfig (transformers_utils/configs/bagel.py; "
                                "llm_config: qwen2 by default)",
                   vllm="bagel.py (Qwen2ForCausalLM on llm_config)"),
        "midashenglm": T(text_key="text_config", inner=("qwen2_5_omni_text",),
                         harmless={**_HARMLESS_MULTIMODAL,
                                   "audio_encoder_config": "the Dasheng audio encoder's own "
                                                           "config: " + _ENCODER},
                         config_class="vLLM's MiDashengLMConfig (transformers_utils/configs/"
                                      "midashenglm.py; text_config: qwen2_5_omni_text)",
                         vllm="midashenglm.py (Qwen2ForCausalLM on text_config)"),
        # FunAudioChat: funaudiochat.py builds Qwen3ForCausalLM on a text_config its class
        # makes a Qwen2Config; qwen3.py's attention takes head_dim = config.head_dim or
        # hidden_size // heads, and Qwen2Config leaves head_dim None, so the width is the
        # qwen2 row's hidden_size // num_attention_heads.
        "funaudiochat": T(text_key="text_config", inner=("qwen2",),
                          harmless=_HARMLESS_MULTIMODAL,
                          config_class="vLLM's FunAudioChatConfig (transformers_utils/configs/"
                                       "funaudiochat.py; text_config: Qwen2Config)",
                          vllm="funaudiochat.py (Qwen3ForCausalLM on text_config)"),
        # Step3 (vLLM's Step3TextConfig / Step3VLConfig, transformers_utils/configs/step3_vl.py)
        "step3_text": T(handler="step3:derive", keys={"num_hidden_layers", "head_dim"},
                        harmless={"num_attention_heads": "query heads; the cache keeps one "
                                  "K/V head whatever their number (step3_text.py)",
                                  "num_attention_groups": "not read by vLLM's step3_text.py: "
                                  "its decoder layer passes num_kv_heads=1 itself",
                                  "share_q_dim": "width of the shared query projection: "
                                                 "weights",
                                  "max_position_embedding": "the rotary table's length "
                                  "(step3_text.py max_position_embedding); vLLM's length "
                                  "comes from max_seq_len",
                                  "moe_layers_enum": _MOE, "share_expert_dim": _MLP},
                        defaults={"head_dim": 256},
                        config_class="vLLM's Step3TextConfig (transformers_utils/configs/"
                                     "step3_vl.py)",
                        vllm="step3_text.py (Step3TextAttention, one K/V head)"),
        "step3_vl": T(text_key="text_config", inner=("step3_text",),
                      harmless=_HARMLESS_MULTIMODAL,
                      config_class="vLLM's Step3VLConfig (transformers_utils/configs/"
                                   "step3_vl.py; text_config: step3_text)",
                      vllm="step3_vl.py (the registered model of text_config: "
                           "Step3TextForCausalLM)"),
        # Step-3.5 (vLLM 0.33 maps step3p5 to transformers' Step3p7TextConfig): step3p5.py
        # Step3p5DecoderLayer builds Step3p5Attention with num_kv_heads=num_attention_groups
        # (the class maps it to num_key_value_heads), head_dim, and sliding_window on the
        # layers layer_types marks sliding (per_layer_sliding_window; the model-level window is
        # cleared); only the query heads differ per layer.
        "step3p5": T(handler="standard:derive", keys=_WINDOW_KEYS,
                     harmless={"num_sliding_attention_heads": "query heads of the sliding "
                               "layers (step3p5.py _get_num_attention_heads); their K/V heads "
                               "are num_attention_groups like every layer's",
                               "per_layer_config": "per-layer query heads of a heterogeneous "
                               "config (step3p5.py _get_num_attention_heads); the K/V heads "
                               "stay num_attention_groups",
                               "query_pre_attn_scalar": _SCORE,
                               "share_expert_dim": _MLP,
                               **dict.fromkeys(("num_nextn_predict_layers", "mtp_layer_types",
                                                "mtp_mlp_layer_types"),
                                               "MTP layers: step3p5.py builds "
                                               "num_hidden_layers decoder layers; its MTP "
                                               "layers are built only by vLLM's drafter "
                                               "(--speculative-config), which kvledger does "
                                               "not derive for this row")},
                     options={"layer_windows": True},
                     # transformers' class: vLLM's _CONFIG_REGISTRY maps step3p5 to it
                     config_class="Step3p7TextConfig",
                     vllm="step3p5.py (Step3p5Attention)"),
        # Refused with the reason plan/engines/vllm/releases/model_type_verdicts.py gives.
        "step5": T(),
        "step5_vl": T(),
        "dory": T(),
        "flint": T(),
        "alpamayo2_super": T(),
        "ultravox": T(),
        "ovis": T(),
    }
)

# Architectures that pick a row whatever the model_type says (drafts that reuse a target's
# schema, and architectures vLLM lacks).
ARCHITECTURES: Mapping[str, str] = _ro(
    {
        "LlamaForCausalLMEagle3": "llama_eagle3",
        "Eagle3LlamaForCausalLM": "llama_eagle3",
        "Step3p7FlashForCausalLM": "step3p7_flash",
        "Ernie4_5_ForCausalLM": "ernie4_5_remote_code",
    }
)

# An architecture naming one of these and not listed above is a draft model kvledger has not
# been checked against (EAGLE-1, Medusa, ...): its layers would otherwise pass as a target's.
DRAFT_WORDS = ("eagle",)


class Resolved:
    """A row with its ``like=`` chain applied: what derive, the guard and ``kvledger models``
    use. (A plain slotted class: a dataclass here costs start-up for nothing.)"""

    __slots__ = ("chain", "config_class", "defaults", "handler", "harmless", "inner", "keys",
                 "name", "off", "options", "stated", "text_defaults", "text_harmless",
                 "text_inline", "text_key", "text_mirrored", "vllm")

    def __init__(self, name: str, chain: tuple[str, ...], merged: Mapping[str, Any]):
        self.name = name
        self.chain = chain
        self.handler: str = merged["handler"]
        self.keys: frozenset[str] = merged["keys"]
        self.harmless: Mapping[str, str] = _ro(merged["harmless"])
        self.off: frozenset[str] = merged["off"]
        self.stated: frozenset[str] = merged["stated"]
        self.defaults: Mapping[str, Any] = _ro(merged["defaults"])
        self.config_class: str = merged["config_class"]
        self.options: Mapping[str, Any] = _ro(merged["options"])
        self.text_key: str = merged["text_key"]
        self.inner: tuple[str, ...] = tuple(merged["inner"])
        self.text_defaults: Mapping[str, Mapping[str, Any]] = _ro(
            {k: _ro(v) for k, v in merged["text_defaults"].items()})
        self.text_inline: bool = bool(merged["text_inline"])
        self.text_mirrored: bool = bool(merged["text_mirrored"])
        self.text_harmless: Mapping[str, str] = _ro(merged["text_harmless"])
        self.vllm: str = merged["vllm"]

    @property
    def derivable(self) -> bool:
        """Whether derive reads this model type (a handler, or a wrapper's text config)."""
        return bool(self.handler or self.text_key)

    @property
    def is_wrapper(self) -> bool:
        return bool(self.text_key)

    @property
    def family(self) -> str:
        """The handler module (for messages), or "wrapper"."""
        return self.handler.split(":", 1)[0] if self.handler else "wrapper"


_RESOLVED: dict[str, Resolved] = {}


def resolve(name: str) -> Resolved:
    """The row for ``name`` with its ``like=`` chain merged (``KeyError`` if not a row;
    ``ValueError`` on a cycle or an unknown field). Key sets and mappings merge; other fields
    are overridden by the row nearer ``name``."""
    done = _RESOLVED.get(name)
    if done is not None:
        return done
    chain: list[str] = []
    cur = name
    while cur:
        if cur in chain:
            raise ValueError(f"model_types: like= cycle {' -> '.join([*chain, cur])}")
        chain.append(cur)
        cur = MODEL_TYPES[cur].get("like", "")
    merged: dict[str, Any] = {
        "handler": "", "keys": frozenset(), "harmless": {}, "off": frozenset(),
        "stated": frozenset(),
        "defaults": {}, "config_class": "", "options": {}, "text_key": "", "inner": (),
        "text_defaults": {}, "text_inline": False, "text_harmless": {}, "vllm": "",
        "text_mirrored": False,
    }
    for row_name in reversed(chain):  # base first
        row = MODEL_TYPES[row_name]
        unknown = set(row) - FIELDS
        if unknown:
            raise ValueError(f"model_types: row {row_name!r} has unknown fields {sorted(unknown)}")
        merged["keys"] = merged["keys"] | frozenset(row.get("keys", ()))
        merged["off"] = merged["off"] | frozenset(row.get("off", ()))
        merged["stated"] = merged["stated"] | frozenset(row.get("stated", ()))
        for field in ("harmless", "defaults", "options", "text_defaults", "text_harmless"):
            merged[field] = {**merged[field], **row.get(field, {})}
        for field in ("handler", "config_class", "text_key", "vllm", "inner", "text_inline",
                      "text_mirrored"):
            if row.get(field):
                merged[field] = row[field]
    out = Resolved(name, tuple(chain), merged)
    _RESOLVED[name] = out
    return out


def supported_types() -> list[str]:
    """Model types kvledger derives (rows with a handler or a text config), sorted."""
    return sorted(n for n in MODEL_TYPES if resolve(n).derivable)


def underived_types() -> list[str]:
    """Model types kvledger recognizes but does not derive (rows without a handler), sorted."""
    return sorted(n for n in MODEL_TYPES if not resolve(n).derivable)

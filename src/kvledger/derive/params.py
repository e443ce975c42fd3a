"""A checkpoint's parameters, counted from its architecture (engine-neutral).

``count_parameters(config)`` reads the language model's config the way derive does
(``Config.text()`` and the model-type table's class defaults, ``model_types.py``) and counts,
per category, the tensors the architecture's modules hold:

- ``embed`` / ``lm_head``: ``vocab × hidden`` each; no head when the embeddings are tied
  (``tie_word_embeddings``, with the config class's default where the file omits it);
- ``attn``: the attention projections as each family builds them (GQA q/k/v/o with
  ``head_dim``; MLA's low-rank ``q_a``/``q_b``/``kv_a``/``kv_b`` projections; the
  Mamba/Mamba2/GDN/KDA/short-conv mixers' projections), i.e. the linear layers a quantization
  method converts;
- ``dense_mlp``, ``shared_experts``, ``routed_experts``, ``router``: the MLPs (gated: three
  matrices, else two);
- ``other``: norms, biases, q/k norms, attention sinks, convolutions, SSM ``A``/``D``/``dt``
  vectors: what stays in the model dtype under every quantization method.

MTP layers (``num_nextn_predict_layers`` and alike) are counted apart (``mtp``): a checkpoint
stores them, an engine loads them only when it speculates with them. Vision / audio towers
(``vision_config`` …) are counted apart too (``towers``), from their own config where it
describes them, else named in ``warnings`` with their likely size.

Where an architecture's count is not exact (a family whose small tensors are not modelled, a
tower from a generic formula) the result carries a warning with the likely error: the count is
never silently approximate. Formulas were read from the model files named in each function
(vLLM 0.32 ``vllm/model_executor/models/`` and transformers 5.19 ``models/``); no code is
taken from them.

This module imports nothing from ``kvledger.plan``: it counts parameters; bytes, dtypes and
quantization are the planner's (``plan/weights.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kvledger.derive.config import TEXT_CONFIG_KEYS, Config
from kvledger.derive.errors import ConfigError
from kvledger.derive.limits import checked_count
from kvledger.records import field, record

# The one place the weight count's key aliases live: the first key a config states wins.
# (derive's handlers read the cache-affecting keys by their own names; these are the sizes
# only a weight count needs, under the names the legacy schemas give them.)
ALIASES: Mapping[str, tuple[str, ...]] = {
    "hidden": ("hidden_size", "d_model", "n_embd", "n_embed", "model_dim"),
    "layers": ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "decoder_layers"),
    "heads": ("num_attention_heads", "n_head", "n_heads", "decoder_attention_heads"),
    "kv_heads": ("num_key_value_heads", "num_kv_heads", "n_head_kv"),
    "inter": ("intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim"),
    "vocab": ("padded_vocab_size", "vocab_size"),
    "experts": ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts"),
    # A checkpoint's multi-token-prediction layers after its decoder (vLLM 0.32 reads
    # num_nextn_predict_layers in deepseek_v2.py / glm4_moe.py, num_mtp_modules in
    # minimax_m2.py, mtp_num_hidden_layers in qwen3_next.py).
    "mtp": ("num_nextn_predict_layers", "num_mtp_modules", "mtp_num_hidden_layers"),
}

# No checkpoint holds more (the largest released models have ~10^12): a count above it is a
# config error, refused rather than printed.
MAX_PARAMETERS = 1 << 50

CATEGORIES = ("embed", "lm_head", "attn", "dense_mlp", "shared_experts", "routed_experts",
              "router", "other")

# Config classes whose ``tie_word_embeddings`` default is true (transformers 5.19: the
# ``PreTrainedConfig`` default, kept by these classes' ``__init__``), by model_type. Classes
# not listed default it to false (LlamaConfig, Qwen2Config, MistralConfig, …).
_TIED_BY_DEFAULT = frozenset({
    "gemma", "gemma2", "gemma3", "gemma3_text", "gemma3n_text", "gemma4", "gemma4_text",
    "gpt2", "gpt_bigcode", "bloom", "falcon", "opt", "mamba", "starcoder2", "cohere",
    "cohere2", "paligemma", "whisper", "lfm2", "nemotron_h", "zamba2", "granitemoehybrid",
    "olmoe", "granite", "granitemoe",
})

# Layouts of the small tensors, by model_type (the model file each was read from):
#   mlp        "gated" (gate/up/down) or "plain" (fc1/fc2)
#   norm       "rms" (one vector), "ln" (weight + bias), per layer: ``norms`` of them
#   qkv_bias   q/k/v projections carry biases; ``o_bias`` the output projection too
#   mlp_bias   the MLP's linear layers carry biases; ``head_bias`` the LM head
#   qk_norm    "head" (RMSNorm over head_dim), "full" (over heads × head_dim), or None
_PROFILES: Mapping[str, Mapping[str, Any]] = {
    "llama": {},  # llama.py: attention_bias / mlp_bias keys say it
    "mistral": {}, "mixtral": {}, "granite": {}, "granitemoe": {}, "nemotron-nas": {},
    "deepseek_v2": {}, "deepseek_v3": {}, "deepseek_v32": {}, "kimi_k2": {}, "glm4_moe": {},
    "qwen2": {"qkv_bias": True}, "qwen2_moe": {"qkv_bias": True},  # qwen2.py: QKVParallel bias
    "qwen2_vl": {"qkv_bias": True}, "qwen2_5_vl": {"qkv_bias": True},
    "qwen2_vl_text": {"qkv_bias": True}, "qwen2_5_vl_text": {"qkv_bias": True},
    "qwen3": {"qk_norm": "head"}, "qwen3_moe": {"qk_norm": "head"},  # qwen3.py q_norm/k_norm
    "qwen3_vl_text": {"qk_norm": "head"}, "qwen3_vl_moe_text": {"qk_norm": "head"},
    "qwen3_next": {"qk_norm": "head"},
    "olmo2": {"qk_norm": "full"},  # olmo2.py: q_norm over heads × head_dim
    "olmo3": {"qk_norm": "full"},
    "olmoe": {"qk_norm": "full"},
    "gemma": {"norms": 2}, "gemma2": {"norms": 4},  # gemma2.py: pre/post attn and ffw norms
    "gemma3": {"norms": 4, "qk_norm": "head"}, "gemma3_text": {"norms": 4, "qk_norm": "head"},
    "gemma4_text": {"norms": 4, "qk_norm": "head", "layer_scalar": True},
    "gemma3n_text": {"norms": 4, "qk_norm": "head"},
    "phi": {"mlp": "plain", "norm": "ln", "norms": 1, "qkv_bias": True, "o_bias": True,
            "mlp_bias": True, "head_bias": True},  # phi.py: one LayerNorm, parallel blocks
    "phi3": {}, "phimoe": {"norm": "ln", "qkv_bias": True, "o_bias": True, "head_bias": True},
    "starcoder2": {"mlp": "plain", "norm": "ln", "qkv_bias": True, "o_bias": True,
                   "mlp_bias": True},  # starcoder2.py: use_bias (default true)
    "gpt_neox": {"mlp": "plain", "norm": "ln", "qkv_bias": True, "o_bias": True,
                 "mlp_bias": True},
    "stablelm": {"norm": "ln"}, "persimmon": {"mlp": "plain", "norm": "ln", "qkv_bias": True,
                                              "o_bias": True, "mlp_bias": True,
                                              "qk_norm": "head_ln"},
    "opt": {"mlp": "plain", "norm": "ln", "qkv_bias": True, "o_bias": True, "mlp_bias": True},
    "cohere": {"norms": 1, "norm": "ln_nobias"},
    "chatglm": {"qkv_bias": True},
    # Qwen v1 modeling_qwen.py / Molmo: c_attn with bias, c_proj without.
    "qwen": {"qkv_bias": True}, "molmo": {"qkv_bias": True},
    # gpt_oss.py: biased q/k/v/o (attention_bias), one learned sink logit per head, biased
    # experts (gate_up 2 × intermediate, down hidden) and router.
    "gpt_oss": {"sinks": True, "expert_bias": True},
    # llama4.py: qk norm is a weightless L2 norm; one shared expert of intermediate_size per
    # MoE layer; dense layers intermediate_size_mlp wide.
    "llama4_text": {"qk_norm": "none", "shared_expert": True},
}


@record(frozen=True)
class Parameters:
    """Parameters of one checkpoint, by category (module docstring)."""

    model_type: str
    categories: Mapping[str, int]  # the decoder the engine always loads
    mtp: Mapping[str, int] = field(default_factory=dict)  # its MTP layers, by category
    mtp_layers: int = 0
    towers: int = 0  # vision / audio towers and projectors counted from their configs
    towers_unused: int = 0  # of those, layers the model never runs (``towers_unused``)
    warnings: tuple[str, ...] = ()
    basis: str = "architecture"

    @property
    def decoder(self) -> int:
        return sum(self.categories.values())

    @property
    def mtp_total(self) -> int:
        return sum(self.mtp.values())

    @property
    def total(self) -> int:
        """Everything the checkpoint stores: decoder, MTP layers and towers."""
        return self.decoder + self.mtp_total + self.towers


class _Count:
    """Reads sizes from one (text) config level and accumulates parameters."""

    def __init__(self, cfg: Config, model_type: str, profile: Mapping[str, Any]):
        self.cfg = cfg
        self.model_type = model_type
        self.p = profile
        self.c: dict[str, int] = dict.fromkeys(CATEGORIES, 0)
        self.warnings: list[str] = []

    # -- look-ups ---------------------------------------------------------------------
    def num(self, *keys: str, default: int | None = None) -> int:
        for key in keys:
            value = self.cfg.get(key)
            if value is not None:
                return checked_count(value, f"{self.cfg.path}{key}", where=self.cfg.model)
        if default is None:
            raise ConfigError(f"{self.cfg.model}: config has none of "
                              f"{', '.join(self.cfg.path + k for k in keys)}, which the weight "
                              "count needs")
        return default

    def alias(self, name: str, default: int | None = None) -> int:
        return self.num(*ALIASES[name], default=default)

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.cfg.get(key)
        return default if value is None else bool(value)

    def add(self, category: str, n: int, times: int = 1) -> None:
        self.c[category] += n * times

    # -- building blocks --------------------------------------------------------------
    def norm(self, width: int) -> int:
        kind = self.p.get("norm", "rms")
        return 2 * width if kind == "ln" else width

    def gqa(self, hidden: int, heads: int, kv_heads: int, head_dim: int, *,
            q_gate: bool = False, no_v: bool = False) -> tuple[int, int]:
        """(linear, small) of one GQA attention: q/k/v/o projections (``q_gate``: the query
        projection also produces an output gate, Qwen3-Next; ``no_v``: V is K, Gemma 4's
        ``attention_k_eq_v`` full layers), their biases and q/k norms."""
        q, kv = heads * head_dim, kv_heads * head_dim
        linear = hidden * (q * (2 if q_gate else 1) + kv * (1 if no_v else 2)) + q * hidden
        small = 0
        bias = self.p.get("qkv_bias", False) or self.flag("attention_bias") or \
            self.flag("add_qkv_bias") or self.flag("qkv_bias") or self.flag("use_qkv_bias")
        if self.model_type == "chatglm":
            bias = self.flag("add_qkv_bias")
        if bias:
            small += q * (2 if q_gate else 1) + kv * (1 if no_v else 2)
        if self.p.get("o_bias", False) or (self.flag("attention_bias") and
                                           self.model_type not in ("qwen2", "chatglm")):
            small += hidden
        if self.p.get("sinks"):
            small += heads
        qk = self.p.get("qk_norm")
        if qk is None and (self.flag("qk_layernorm") or self.flag("use_qk_norm")):
            qk = "head"
        if qk == "head":
            small += 2 * head_dim
        elif qk == "head_ln":
            small += 4 * head_dim
        elif qk == "full":
            small += q + kv
        return linear, small

    def mlp(self, hidden: int, inter: int, *, gated: bool | None = None) -> tuple[int, int]:
        """(linear, bias) of one dense MLP."""
        if gated is None:
            gated = self.p.get("mlp", "gated") == "gated"
        mats = 3 if gated else 2
        bias = 0
        if self.p.get("mlp_bias", False) or self.flag("mlp_bias"):
            bias = (2 if gated else 1) * inter + hidden
        return mats * hidden * inter, bias

    def head(self, hidden: int, vocab: int, model_type: str) -> None:
        self.add("embed", vocab * hidden)
        tied = self.cfg.get("tie_word_embeddings")
        if tied is None:
            tied = model_type in _TIED_BY_DEFAULT
        if not tied:
            self.add("lm_head", vocab * hidden)
            if self.p.get("head_bias", False) or self.flag("lm_head_bias"):
                self.add("other", vocab)


# -- which layers hold experts ----------------------------------------------------------------


def moe_layers(cfg: Config, layers: int) -> list[bool]:
    """Per decoder layer: whether its MLP is a mixture of experts. The rules the families
    state (each read from its vLLM 0.32 model file):

    - ``first_k_dense_replace`` dense layers first, then every ``moe_layer_freq``-th
      (deepseek_v2.py: ``layer_idx >= first_k_dense_replace and layer_idx % moe_layer_freq
      == 0``; glm4_moe.py the same);
    - ``decoder_sparse_step`` and ``mlp_only_layers`` (qwen2_moe.py / qwen3_moe.py: sparse when
      ``(i + 1) % decoder_sparse_step == 0`` and ``i`` not in ``mlp_only_layers``);
    - ``expert_layer_period`` / ``expert_layer_offset`` (jamba.py: ``i % period == offset``);
    - ``interleave_moe_layer_step`` (llama4.py: ``(i + 1) % step == 0``);
    - ``mlp_layer_types`` ("sparse" / "dense") where a config lists them;
    - otherwise every layer.
    """
    types = cfg.get("mlp_layer_types")
    if isinstance(types, list) and len(types) == layers:
        return [str(t) == "sparse" for t in types]
    flags = [True] * layers
    if cfg.get("expert_layer_period") is not None:
        period = checked_count(cfg.get("expert_layer_period"), "expert_layer_period",
                               where=cfg.model, minimum=1)
        offset = checked_count(cfg.get("expert_layer_offset", 0), "expert_layer_offset",
                               where=cfg.model)
        return [i % period == offset for i in range(layers)]
    if cfg.get("interleave_moe_layer_step") is not None:
        step = checked_count(cfg.get("interleave_moe_layer_step"), "interleave_moe_layer_step",
                             where=cfg.model, minimum=1)
        return [(i + 1) % step == 0 for i in range(layers)]
    first = cfg.get("first_k_dense_replace")
    if first is not None:
        k = checked_count(first, "first_k_dense_replace", where=cfg.model)
        freq = checked_count(cfg.get("moe_layer_freq", 1), "moe_layer_freq", where=cfg.model,
                             minimum=1) if isinstance(cfg.get("moe_layer_freq", 1), int) else 1
        flags = [i >= k and i % freq == 0 for i in range(layers)]
    step = cfg.get("decoder_sparse_step")
    if step is not None:
        s = checked_count(step, "decoder_sparse_step", where=cfg.model, minimum=1)
        flags = [f and (i + 1) % s == 0 for i, f in enumerate(flags)]
    only = cfg.get("mlp_only_layers")
    if isinstance(only, list):
        dense = {int(i) for i in only if isinstance(i, int)}
        flags = [f and i not in dense for i, f in enumerate(flags)]
    return flags


def _moe(k: _Count, hidden: int, inter: int, experts: int) -> dict[str, int]:
    """One MoE block's parameters by category: routed experts (gated, ``moe_intermediate_size``
    wide), shared experts (``n_shared_experts × moe_intermediate_size`` as deepseek_v2.py
    builds them, or ``shared_expert_intermediate_size`` with its sigmoid gate as qwen2_moe.py),
    the router (``hidden × experts``; DeepSeek-V3's ``e_score_correction_bias`` with
    ``topk_method`` noaux_tc)."""
    cfg = k.cfg
    widths = cfg.get("moe_intermediate_size")
    if isinstance(widths, list) and widths:  # one width per layer (Hunyuan): the largest
        moe_inter = max(checked_count(w, "moe_intermediate_size", where=cfg.model)
                        for w in widths)
        if len(set(widths)) > 1:
            k.warnings.append("moe_intermediate_size lists several widths; counted at the "
                              "largest")
    else:
        moe_inter = k.num("moe_intermediate_size", "expert_intermediate_size", default=inter)
    out = {"routed_experts": experts * 3 * hidden * moe_inter, "router": hidden * experts,
           "shared_experts": 0, "other": 0}
    if k.p.get("expert_bias"):
        out["other"] += experts * (2 * moe_inter + hidden) + experts
    if cfg.get("topk_method") == "noaux_tc" or cfg.get("moe_router_enable_expert_bias"):
        out["other"] += experts
    n_shared = k.num("n_shared_experts", "num_shared_experts", default=0)
    shared_inter = k.num("shared_expert_intermediate_size",
                         "moe_shared_expert_intermediate_size", default=0)
    if shared_inter:
        out["shared_experts"] = 3 * hidden * shared_inter
        if k.model_type in ("qwen2_moe", "qwen3_next"):
            out["shared_experts"] += hidden  # shared_expert_gate: hidden → 1
    elif k.p.get("shared_expert"):
        out["shared_experts"] = 3 * hidden * inter
    elif n_shared:
        out["shared_experts"] = 3 * hidden * n_shared * moe_inter
    return out


# -- the families -----------------------------------------------------------------------------


def _decoder(k: _Count, *, mla: bool = False) -> None:
    """A transformer decoder: GQA or MLA attention, dense or MoE MLP, per layer; with the
    layer lists a family may state (``layer_types`` for Gemma 4's full/sliding shapes)."""
    cfg = k.cfg
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    heads = k.alias("heads")
    kv_heads = k.alias("kv_heads", default=heads)
    if k.model_type == "chatglm" and k.flag("multi_query_attention"):
        kv_heads = k.num("multi_query_group_num")
    head_dim = k.num("head_dim", "kv_channels", default=hidden // max(1, heads))
    if k.model_type in ("qwen2", "stablelm", "opt", "phi", "gpt_neox", "persimmon"):
        head_dim = hidden // max(1, heads)  # these model files ignore a stated head_dim
    widths = cfg.get("intermediate_size")
    per_layer_inter: list[int] | None = None
    if isinstance(widths, list):
        per_layer_inter = [checked_count(w, "intermediate_size", where=cfg.model)
                           for w in widths]
        if len(per_layer_inter) != layers:
            raise ConfigError(f"{cfg.model}: intermediate_size lists {len(per_layer_inter)} "
                              f"widths for {layers} layers")
        inter = max(per_layer_inter) if per_layer_inter else 4 * hidden
    else:
        inter = k.alias("inter", default=4 * hidden)
    if k.model_type in ("qwen", "molmo"):
        # Qwen (v1) and Molmo remote code: intermediate_size is the fused gate + up width;
        # each is half as wide (modeling_qwen.py QWenMLP: ff_dim_in = intermediate_size // 2;
        # modeling_molmo.py ff_proj → SwiGLU halves → ff_out).
        inter //= 2
    experts = k.alias("experts", default=0)
    if k.model_type == "gemma4_text" and not k.flag("enable_moe_block"):
        experts = 0
    sparse = moe_layers(cfg, layers) if experts else [False] * layers
    k.head(hidden, vocab, k.model_type)
    norms = k.p.get("norms", 2)
    types = cfg.get("layer_types")
    for i in range(layers):
        if mla:
            linear, small = _mla(k, hidden, heads)
        elif k.model_type == "gemma4_text" and isinstance(types, list) and i < len(types) \
                and types[i] == "full_attention":
            linear, small = k.gqa(hidden, heads, k.num("num_global_key_value_heads",
                                                       default=kv_heads),
                                  k.num("global_head_dim", default=head_dim),
                                  no_v=k.flag("attention_k_eq_v"))
        else:
            linear, small = k.gqa(hidden, heads, kv_heads, head_dim)
        k.add("attn", linear)
        k.add("other", small + norms * k.norm(hidden))
        if k.p.get("layer_scalar"):
            k.add("other", 1)  # gemma4: one learned layer_scalar per layer
        if sparse[i]:
            for cat, n in _moe(k, hidden, inter, experts).items():
                k.add(cat, n)
        else:
            width = per_layer_inter[i] if per_layer_inter else inter
            if k.model_type == "llama4_text":
                width = k.num("intermediate_size_mlp", default=inter)
            if k.model_type == "gemma4_text" and k.flag("use_double_wide_mlp"):
                width *= 2
            linear, bias = k.mlp(hidden, width)
            k.add("dense_mlp", linear)
            k.add("other", bias)
    k.add("other", k.norm(hidden))  # the final norm
    if k.model_type == "gemma3n_text":
        _gemma3n_extras(k, hidden, layers)
    if k.model_type not in _PROFILES and k.model_type not in _DECODER_CHECKED and \
            not any("no exact weight formula" in w for w in k.warnings):
        k.warnings.append(
            f"model_type {k.model_type!r}: counted as a generic decoder (projections and MLPs "
            "from the config; its biases and norms not checked): likely error under 0.5 %")


def _gemma3n_extras(k: _Count, hidden: int, layers: int) -> None:
    """Gemma 3n's tensors beyond the decoder (vLLM gemma3n.py): per-layer embeddings
    (``embed_tokens_per_layer``: vocab_size_per_layer_input × layers ×
    hidden_size_per_layer_input, and their projection from the hidden state), per layer the
    PLE gate / projection and its norm, LAuReL (rank ``laurel_rank``) and the AltUp router and
    coefficients; the AltUp (un)embedding projections ((n − 1) × hidden², twice)."""
    ple = k.num("hidden_size_per_layer_input", default=0)
    ple_vocab = k.num("vocab_size_per_layer_input", default=0)
    rank = k.num("laurel_rank", default=0)
    n = k.num("altup_num_inputs", default=1)
    k.add("embed", ple_vocab * layers * ple)
    k.add("attn", hidden * layers * ple)
    k.add("other", ple)
    per = 2 * hidden * ple + hidden + 2 * hidden * rank + hidden + n * n + n * n * n + \
        hidden * n + 2 * hidden
    k.add("other", layers * per)
    k.add("attn", 2 * (n - 1) * hidden * hidden)
    k.warnings.append("gemma3n_text: per-layer embeddings, LAuReL and AltUp counted from their "
                      "sizes; their small vectors approximately: likely error under 0.5 %")


# Model types whose count the generic decoder makes exactly (beyond those with a profile):
# the Llama layout (RMSNorm, no biases unless attention_bias / mlp_bias say so).
_DECODER_CHECKED = frozenset({
    "ministral", "ministral3", "qwen3_vl_moe_text", "exaone4", "laguna", "seed_oss",
    "hunyuan_v1_dense", "glm4", "glm", "apertus", "arcee", "smollm3", "olmo", "internlm2",
    "helium",
})


def _mla(k: _Count, hidden: int, heads: int) -> tuple[int, int]:
    """(linear, small) of one multi-head latent attention (deepseek_v2.py
    ``DeepseekV2MLAAttention``): ``q_a_proj`` hidden → q_lora_rank, its RMSNorm,
    ``q_b_proj`` → heads × (nope + rope) (or one ``q_proj`` without q_lora_rank);
    ``kv_a_proj_with_mqa`` hidden → kv_lora_rank + rope, its RMSNorm, ``kv_b_proj`` →
    heads × (nope + v); ``o_proj`` heads × v → hidden. DeepSeek-V3.2's DSA indexer
    (deepseek_v2.py ``Indexer``): ``wq_b`` q_lora_rank → index_n_heads × index_head_dim,
    ``wk`` hidden → index_head_dim with a LayerNorm, ``weights_proj`` hidden → index_n_heads."""
    nope, rope = k.num("qk_nope_head_dim"), k.num("qk_rope_head_dim")
    # MiniCPM3Config has no v_head_dim: its values are qk_nope_head_dim wide (minicpm3.py).
    v_dim, kv_lora = k.num("v_head_dim", default=nope), k.num("kv_lora_rank")
    q_lora = k.num("q_lora_rank", default=0)
    qk = nope + rope
    small = kv_lora
    if q_lora:
        linear = hidden * q_lora + q_lora * heads * qk
        small += q_lora
    else:
        linear = hidden * heads * qk
    linear += hidden * (kv_lora + rope) + kv_lora * heads * (nope + v_dim) + heads * v_dim * \
        hidden
    if k.cfg.get("index_topk") is not None:
        n, dim = k.num("index_n_heads"), k.num("index_head_dim")
        linear += (q_lora or hidden) * n * dim + hidden * dim
        small += 2 * dim + hidden * n  # k_norm (weight, bias); weights_proj stays unquantized
    return linear, small


def _mtp(k: _Count, count: int) -> dict[str, int]:
    """DeepSeek-style MTP modules (deepseek_mtp.py ``DeepSeekMultiTokenPredictorLayer``): each
    one more decoder layer of the last layer's kind, ``enorm`` and ``hnorm``, ``eh_proj``
    (2 × hidden → hidden), and the ``shared_head`` norm; the checkpoint also stores its own
    ``embed_tokens`` and ``shared_head.head`` copies (DeepSeek-V3's layer 61 does), counted
    here as stored."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    one = _Count(k.cfg, k.model_type, k.p)
    one.cfg = _with(k.cfg, {"num_hidden_layers": layers + count})
    _decoder(one, mla=k.cfg.get("kv_lora_rank") is not None)
    out = {cat: one.c[cat] - k.c[cat] for cat in CATEGORIES}
    out["attn"] += count * 2 * hidden * hidden
    out["other"] += count * 3 * hidden
    if k.model_type in ("deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe", "deepseek_v2"):
        out["embed"] += count * vocab * hidden
        out["lm_head"] += count * vocab * hidden
    return out


def _nemotron_h_mtp(k: _Count, count: int) -> dict[str, int]:
    """Nemotron-H's MTP stack (nemotron_h_mtp.py): ``mtp_layers_block_type`` blocks (an
    attention and an MoE block in Nemotron 3), with ``enorm`` / ``hnorm``, ``eh_proj``
    (2 × hidden → hidden) and a final norm, per MTP step."""
    types = k.cfg.get("mtp_layers_block_type") or ["attention", "moe"]
    sub = _Count(_with(k.cfg, {"hybrid_override_pattern": None,
                               "layers_block_type": list(types)}), k.model_type, k.p)
    _nemotron_h(sub)
    hidden, vocab = k.alias("hidden"), k.alias("vocab")
    sub.c["embed"] -= vocab * hidden
    sub.c["lm_head"] = 0
    sub.c["attn"] += 2 * hidden * hidden
    sub.c["other"] += 2 * hidden
    return {cat: n * count for cat, n in sub.c.items()}


def _with(cfg: Config, more: Mapping[str, Any]) -> Config:
    out = Config({**cfg.raw, **more}, model=cfg.model, parent=cfg.parent,
                 defaults=cfg.defaults, model_type=cfg.model_type)
    out.path = cfg.path
    return out


def _nas(k: _Count) -> None:
    """Nemotron-NAS / DeciLM ``block_configs`` (vLLM nemotron_nas.py ``DeciLMDecoderLayer``;
    the published ``modeling_decilm.py``): per layer, attention is absent (``no_op``), one
    ``hidden × hidden`` linear (``replace_with_linear``), or GQA with
    ``num_attention_heads // n_heads_in_group`` KV heads; the FFN is absent, one linear, or a
    gated MLP of ``_find_multiple(int(2 × ffn_mult × hidden / 3), 256)`` (nemotron_nas.py
    ``_ffn_mult_to_intermediate_size``). A layer norm precedes each present sub-block."""
    cfg = k.cfg
    hidden, vocab, heads = k.alias("hidden"), k.alias("vocab"), k.alias("heads")
    head_dim = k.num("head_dim", default=hidden // max(1, heads))
    blocks = cfg.require("block_configs")
    if not isinstance(blocks, list):
        raise ConfigError(f"{cfg.model}: block_configs must be a list")
    k.head(hidden, vocab, k.model_type)
    for i, block in enumerate(blocks):
        attn = block.get("attention") if isinstance(block, Mapping) else None
        ffn = block.get("ffn") if isinstance(block, Mapping) else None
        if not isinstance(attn, Mapping) or not isinstance(ffn, Mapping):
            raise ConfigError(f"{cfg.model}: block_configs[{i}] must hold an attention and an "
                              "ffn object")
        if attn.get("replace_with_linear"):
            k.add("attn", hidden * hidden)
            k.add("other", hidden)
        elif not attn.get("no_op"):
            group = checked_count(attn.get("n_heads_in_group"), f"block_configs[{i}]."
                                  "attention.n_heads_in_group", where=cfg.model, minimum=1)
            linear, small = k.gqa(hidden, heads, heads // group, head_dim)
            k.add("attn", linear)
            k.add("other", small + hidden)
        if ffn.get("replace_with_linear"):
            k.add("dense_mlp", hidden * hidden)
            k.add("other", hidden)
        elif not ffn.get("no_op"):
            mult = ffn.get("ffn_mult")
            if isinstance(mult, bool) or not isinstance(mult, (int, float)) or mult <= 0:
                raise ConfigError(f"{cfg.model}: block_configs[{i}].ffn.ffn_mult must be a "
                                  f"positive number, got {mult!r}")
            linear, bias = k.mlp(hidden, nas_intermediate_size(float(mult), hidden))
            k.add("dense_mlp", linear)
            k.add("other", bias + hidden)
    k.add("other", hidden)


def nas_intermediate_size(ffn_mult: float, hidden: int) -> int:
    """DeciLM's FFN width: ``int(2 × ffn_mult × hidden / 3)`` rounded up to a multiple of 256
    (vLLM nemotron_nas.py ``_ffn_mult_to_intermediate_size`` / ``_find_multiple``)."""
    n = int(2 * ffn_mult * hidden / 3)
    return n if n % 256 == 0 else n + 256 - n % 256


def _mamba1(k: _Count, hidden: int, *, jamba: bool) -> None:
    """One Mamba (v1) mixer (vLLM mamba_mixer.py ``MambaMixer``; jamba.py adds RMSNorms on dt,
    B and C): ``in_proj`` hidden → 2 × d_inner, ``conv1d`` d_inner × d_conv (+ bias),
    ``x_proj`` d_inner → dt_rank + 2 × d_state, ``dt_proj`` dt_rank → d_inner with bias,
    ``A_log`` d_inner × d_state, ``D`` d_inner, ``out_proj`` d_inner → hidden."""
    expand = k.num("mamba_expand", "expand", default=2)
    d_inner = k.num("intermediate_size", default=expand * hidden) if not jamba else \
        expand * hidden
    d_state = k.num("mamba_d_state", "state_size", default=16)
    d_conv = k.num("mamba_d_conv", "conv_kernel", default=4)
    rank = k.cfg.get("mamba_dt_rank", k.cfg.get("time_step_rank", "auto"))
    dt_rank = math.ceil(hidden / 16) if rank == "auto" else checked_count(
        rank, "mamba_dt_rank", where=k.cfg.model)
    proj_bias = k.flag("mamba_proj_bias", k.flag("use_bias"))
    conv_bias = k.flag("mamba_conv_bias", k.flag("use_conv_bias", True))
    k.add("attn", hidden * 2 * d_inner + d_inner * (dt_rank + 2 * d_state) +
          dt_rank * d_inner + d_inner * hidden)
    small = d_inner * d_conv + (d_inner if conv_bias else 0) + d_inner + d_inner * d_state + \
        d_inner
    if proj_bias:
        small += 2 * d_inner + hidden
    if jamba:
        small += dt_rank + 2 * d_state
    k.add("other", small)


def _mamba2(k: _Count, hidden: int, d_inner: int | None = None) -> None:
    """One Mamba2 mixer (vLLM mamba_mixer2.py ``MambaMixer2``): ``in_proj`` hidden →
    2 × d_inner + 2 × n_groups × d_state + heads, ``conv1d`` over d_inner + 2 × n_groups ×
    d_state channels (+ bias), ``dt_bias`` / ``A`` / ``D`` per head, the gated RMSNorm over
    d_inner, ``out_proj`` d_inner → hidden."""
    heads = k.num("mamba_num_heads", "mamba_n_heads", "num_heads")
    head_dim = k.num("mamba_head_dim", "mamba_d_head", "head_dim")
    d_inner = d_inner or heads * head_dim
    groups = k.num("n_groups", "mamba_n_groups", default=1)
    d_state = k.num("ssm_state_size", "mamba_d_state", "state_size")
    d_conv = k.num("conv_kernel", "mamba_d_conv", default=4)
    conv_ch = d_inner + 2 * groups * d_state
    k.add("attn", hidden * (d_inner + conv_ch + heads) + d_inner * hidden)
    small = conv_ch * d_conv + 3 * heads + d_inner
    if k.flag("use_conv_bias", True) or k.flag("mamba_conv_bias"):
        small += conv_ch
    if k.flag("use_bias") or k.flag("mamba_proj_bias"):
        small += d_inner + conv_ch + heads + hidden
    k.add("other", small)


def _jamba(k: _Count) -> None:
    """Jamba (vLLM jamba.py): attention where ``i % attn_layer_period == attn_layer_offset``,
    a Mamba mixer elsewhere; experts where ``i % expert_layer_period == expert_layer_offset``
    (``moe_layers``), a dense gated MLP elsewhere; two RMSNorms a layer and a final one."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    heads = k.alias("heads")
    kv_heads = k.alias("kv_heads", default=heads)
    inter = k.alias("inter")
    experts = k.alias("experts", default=0)
    period = k.num("attn_layer_period", default=8)
    offset = k.num("attn_layer_offset", default=4)
    sparse = moe_layers(k.cfg, layers) if experts else [False] * layers
    k.head(hidden, vocab, k.model_type)
    for i in range(layers):
        if i % period == offset:
            linear, small = k.gqa(hidden, heads, kv_heads, hidden // heads)
            k.add("attn", linear)
            k.add("other", small)
        else:
            _mamba1(k, hidden, jamba=True)
        k.add("other", 2 * hidden)
        if sparse[i]:
            k.add("routed_experts", experts * 3 * hidden * inter)
            k.add("router", hidden * experts)
        else:
            k.add("dense_mlp", 3 * hidden * inter)
    k.add("other", hidden)


def _nemotron_h(k: _Count) -> None:
    """Nemotron-H (vLLM nemotron_h.py): ``hybrid_override_pattern`` one mixer a layer — ``M``
    Mamba2, ``*`` attention, ``-`` MLP (relu² MLPs have no gate), ``E`` mixture of experts
    (latent projections when ``moe_latent_size`` is stated); one RMSNorm a layer, a final."""
    hidden, vocab = k.alias("hidden"), k.alias("vocab")
    pattern = nemotron_h_pattern(k.cfg, "hybrid_override_pattern", "layers_block_type")
    heads = k.alias("heads")
    kv_heads = k.alias("kv_heads", default=heads)
    head_dim = k.num("head_dim", "attention_head_dim", default=hidden // max(1, heads))
    gated = k.cfg.get("mlp_hidden_act") != "relu2"
    mats = 3 if gated else 2
    inter = k.alias("inter", default=4 * hidden)
    experts = k.alias("experts", default=0)
    latent = k.num("moe_latent_size", default=hidden)
    moe_inter = k.num("moe_intermediate_size", default=inter)
    shared = k.num("moe_shared_expert_intermediate_size", "shared_expert_intermediate_size",
                   default=0)
    k.head(hidden, vocab, k.model_type)
    for ch in pattern:
        k.add("other", hidden)
        if ch == "M":
            _mamba2(k, hidden)
        elif ch == "*":
            linear, small = k.gqa(hidden, heads, kv_heads, head_dim)
            k.add("attn", linear)
            k.add("other", small)
        elif ch == "-":
            k.add("dense_mlp", mats * hidden * inter)
        elif ch == "E":
            k.add("routed_experts", experts * mats * latent * moe_inter)
            k.add("shared_experts", mats * hidden * shared)
            if latent != hidden:
                k.add("shared_experts", 2 * hidden * latent)
            k.add("router", hidden * experts)
            k.add("other", experts)  # e_score_correction_bias
    k.add("other", hidden)


_BLOCK_CHARS = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}


def nemotron_h_pattern(cfg: Config, pattern_key: str, list_key: str) -> str:
    """The Nemotron-H layer pattern as one string: ``hybrid_override_pattern`` (``M*-E``), or
    the newer ``layers_block_type`` list (mamba / attention / mlp / moe)."""
    pattern = cfg.get(pattern_key)
    if isinstance(pattern, str):
        return pattern
    types = cfg.get(list_key)
    if isinstance(types, list) and all(str(t) in _BLOCK_CHARS for t in types):
        return "".join(_BLOCK_CHARS[str(t)] for t in types)
    raise ConfigError(f"{cfg.model}: config has neither {cfg.path}{pattern_key} nor a "
                      f"{cfg.path}{list_key} list, which the weight count needs")


def _gdn(k: _Count) -> None:
    """Qwen3-Next / Qwen3.5 (vLLM qwen3_next.py): Gated DeltaNet layers and, every
    ``full_attention_interval``-th (or where ``layer_types`` says full_attention), gated
    attention whose query projection also yields the output gate. GDN:
    ``in_proj_qkvz`` hidden → 2 × Kh × Kd + 2 × Vh × Vd, ``in_proj_ba`` hidden → 2 × Vh,
    ``conv1d`` over 2 × Kh × Kd + Vh × Vd channels, ``dt_bias`` / ``A_log`` per value head,
    a gated RMSNorm over Vd, ``out_proj`` Vh × Vd → hidden. MLP: experts on every layer."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    heads = k.alias("heads")
    kv_heads = k.alias("kv_heads", default=heads)
    head_dim = k.num("head_dim", default=hidden // heads)
    kh, kd = k.num("linear_num_key_heads"), k.num("linear_key_head_dim")
    vh, vd = k.num("linear_num_value_heads"), k.num("linear_value_head_dim")
    conv = k.num("linear_conv_kernel_dim", default=4)
    types = k.cfg.get("layer_types")
    interval = k.num("full_attention_interval", default=4)
    inter = k.alias("inter", default=4 * hidden)
    experts = k.alias("experts", default=0)
    sparse = moe_layers(k.cfg, layers) if experts else [False] * layers
    k.head(hidden, vocab, k.model_type)
    for i in range(layers):
        full = types[i] == "full_attention" if isinstance(types, list) and i < len(types) \
            else (i + 1) % interval == 0
        if full:
            linear, small = k.gqa(hidden, heads, kv_heads, head_dim,
                                  q_gate=k.flag("attn_output_gate", True))
            k.add("attn", linear)
            k.add("other", small)
        else:
            conv_ch = 2 * kh * kd + vh * vd
            k.add("attn", hidden * (2 * kh * kd + 2 * vh * vd) + hidden * 2 * vh +
                  vh * vd * hidden)
            k.add("other", conv_ch * conv + 2 * vh + vd)
        k.add("other", 2 * hidden)
        if sparse[i]:
            for cat, n in _moe(k, hidden, inter, experts).items():
                k.add(cat, n)
        else:
            k.add("dense_mlp", 3 * hidden * inter)
    k.add("other", hidden)


def _gdn_mtp(k: _Count, count: int) -> dict[str, int]:
    """Qwen3-Next / Qwen3.5 MTP (vLLM qwen3_next_mtp.py): per step one full-attention layer
    with the model's MLP, ``fc`` (2 × hidden → hidden), ``pre_fc_norm_embedding``,
    ``pre_fc_norm_hidden`` and a final ``norm``; the embedding and head are the model's
    (``mtp_use_dedicated_embeddings`` false)."""
    sub = _Count(_with(k.cfg, {"num_hidden_layers": 1, "layer_types": ["full_attention"],
                               "mlp_only_layers": []}), k.model_type, k.p)
    _gdn(sub)
    hidden = k.alias("hidden")
    sub.c["embed"] = sub.c["lm_head"] = 0
    sub.c["attn"] += 2 * hidden * hidden
    sub.c["other"] += 2 * hidden
    if k.flag("mtp_use_dedicated_embeddings"):
        sub.c["embed"] = k.c["embed"]
    return {cat: n * count for cat, n in sub.c.items()}


def _lfm2(k: _Count) -> None:
    """LFM2 (vLLM lfm2.py): ``layer_types`` conv or full_attention. A conv layer: ``in_proj``
    hidden → 3 × hidden, a depthwise conv of ``conv_L_cache`` taps, ``out_proj`` hidden →
    hidden (biases with ``conv_bias``); attention: GQA with per-head q/k layernorms. The
    SwiGLU MLP's width from ``block_ff_dim``: × 2/3 with ``block_auto_adjust_ff_dim``, ×
    ``block_ffn_dim_multiplier``, rounded up to ``block_multiple_of``. Two RMSNorms a layer,
    the final ``embedding_norm``; the head tied."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    heads = k.alias("heads")
    kv_heads = k.alias("kv_heads", default=heads)
    head_dim = hidden // heads
    ff = k.num("block_ff_dim", "intermediate_size")
    if k.flag("block_auto_adjust_ff_dim"):
        ff = int(2 * ff / 3)
        mult = k.cfg.get("block_ffn_dim_multiplier")
        if isinstance(mult, (int, float)) and not isinstance(mult, bool):
            ff = int(mult * ff)
        multiple = k.num("block_multiple_of", default=256) or 1
        ff = multiple * ((ff + multiple - 1) // multiple)
    taps = k.num("conv_L_cache", default=3)
    bias = k.flag("conv_bias")
    types = k.cfg.get("layer_types")
    k.head(hidden, vocab, k.model_type)
    for i in range(layers):
        if isinstance(types, list) and i < len(types) and types[i] == "full_attention":
            k.add("attn", hidden * (heads + 2 * kv_heads) * head_dim + heads * head_dim * hidden)
            k.add("other", 2 * head_dim)
        else:
            k.add("attn", hidden * 3 * hidden + hidden * hidden)
            k.add("other", hidden * taps + (3 * hidden + hidden + hidden if bias else 0))
        k.add("dense_mlp", 3 * hidden * ff)
        k.add("other", 2 * hidden)
    k.add("other", hidden)


def _falcon_h1(k: _Count) -> None:
    """Falcon-H1 (vLLM falcon_h1.py ``FalconH1ParallelHybrid``): every layer runs GQA
    attention and a Mamba2 mixer side by side, then a gated MLP. The mixer is ``mamba_d_ssm``
    wide (else ``mamba_expand × hidden``), with its norm when ``mamba_rms_norm``. Two RMSNorms
    a layer, a final one."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    heads = k.alias("heads")
    kv_heads = k.alias("kv_heads", default=heads)
    head_dim = k.num("head_dim", default=hidden // heads)
    inter = k.alias("inter")
    # The mixer's width: mamba_d_ssm, else mamba_expand × hidden (FalconH1Mixer's
    # intermediate_size), whatever mamba_n_heads × mamba_d_head say.
    d_ssm = k.num("mamba_d_ssm", default=0) or k.num("mamba_expand", default=2) * hidden
    k.head(hidden, vocab, k.model_type)
    for _ in range(layers):
        linear, small = k.gqa(hidden, heads, kv_heads, head_dim)
        k.add("attn", linear)
        k.add("other", small + 2 * hidden)
        _mamba2(k, hidden, d_inner=d_ssm)
        if not k.flag("mamba_rms_norm"):  # _mamba2 counted a gated norm this mixer lacks
            k.add("other", -d_ssm)
        linear, bias = k.mlp(hidden, inter)
        k.add("dense_mlp", linear)
        k.add("other", bias)
    k.add("other", hidden)


def _granite_hybrid(k: _Count) -> None:
    """Granite 4.0 hybrid (vLLM granitemoehybrid.py): ``layer_types`` mamba (a Mamba2 mixer
    ``mamba_expand × hidden`` wide) or attention (GQA); every layer a shared gated MLP of
    ``shared_intermediate_size`` and, with ``num_local_experts``, experts of
    ``intermediate_size`` and their router. Two RMSNorms a layer, a final one."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    heads = k.alias("heads")
    kv_heads = k.alias("kv_heads", default=heads)
    head_dim = hidden // heads
    shared = k.num("shared_intermediate_size", default=0)
    experts = k.alias("experts", default=0)
    inter = k.alias("inter", default=0)
    d_inner = k.num("mamba_expand", default=2) * hidden
    types = k.cfg.get("layer_types") or k.cfg.get("layers_block_type")
    k.head(hidden, vocab, k.model_type)
    for i in range(layers):
        kind = types[i] if isinstance(types, list) and i < len(types) else "mamba"
        if kind == "attention":
            linear, small = k.gqa(hidden, heads, kv_heads, head_dim)
            k.add("attn", linear)
            k.add("other", small)
        else:
            _mamba2(k, hidden, d_inner=d_inner)
        k.add("other", 2 * hidden)
        k.add("dense_mlp", 3 * hidden * shared)
        if experts:
            k.add("routed_experts", experts * 3 * hidden * inter)
            k.add("router", hidden * experts)
    k.add("other", hidden)


def _minimax_linear(k: _Count) -> None:
    """MiniMax-M1 / Text-01 (vLLM minimax_text_01.py): ``attn_type_list`` 0 = lightning
    (linear) attention — ``qkv_proj`` hidden → 3 × heads × head_dim (every head its own K and
    V), ``output_gate`` hidden → heads × head_dim, ``out_proj`` back, an RMSNorm over
    heads × head_dim — and 1 = GQA softmax attention; experts on every layer."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    heads = k.alias("heads")
    kv_heads = k.alias("kv_heads", default=heads)
    head_dim = k.num("head_dim", default=hidden // heads)
    inter = k.alias("inter")
    experts = k.alias("experts", default=0)
    kinds = k.cfg.get("attn_type_list")
    k.head(hidden, vocab, k.model_type)
    q = heads * head_dim
    for i in range(layers):
        full = isinstance(kinds, list) and i < len(kinds) and kinds[i] == 1
        if full:
            linear, small = k.gqa(hidden, heads, kv_heads, head_dim)
            k.add("attn", linear)
            k.add("other", small)
        else:
            k.add("attn", hidden * 3 * q + hidden * q + q * hidden)
            k.add("other", q)
        k.add("other", 2 * hidden)
        if experts:
            for cat, n in _moe(k, hidden, inter, experts).items():
                k.add(cat, n)
        else:
            k.add("dense_mlp", 3 * hidden * inter)
    k.add("other", hidden)


def _zamba2(k: _Count) -> None:
    """Zamba2 (vLLM zamba2.py), approximately: a Mamba2 mixer on every layer (``mamba_expand``
    / ``expansion_factor`` × hidden wide, 64-wide heads), ``num_mem_blocks`` shared
    transformer blocks (attention over the 2 × hidden concatenation of the hidden state and
    the embeddings: q/k/v 2h → 2h, o 2h → h; a gated MLP of ``intermediate_size`` (else 4h)),
    and on each hybrid layer (``g`` in ``layer_mapping`` / ``hybrid_layer_ids``) a hidden →
    hidden linear and rank-``adapter_rank`` LoRA adapters on the shared q/k/v and MLP. Norms
    and biases are not modelled (warning)."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    d_inner = k.num("mamba_expand", "expansion_factor", default=2) * hidden
    heads = d_inner // k.num("mamba_headdim", default=64)
    d_state = k.num("mamba_d_state", "state_size", default=64)
    groups = k.num("mamba_ngroups", default=1)
    conv = k.num("mamba_d_conv", "conv_dimension", default=4)
    inter = k.num("intermediate_size", "ffn_hidden_size", default=4 * hidden)
    blocks = k.num("num_mem_blocks", default=1)
    rank = k.num("adapter_rank", "lora_rank", default=0)
    mapping = k.cfg.get("layer_mapping")
    ids = k.cfg.get("hybrid_layer_ids")
    hybrid = sum(1 for m in mapping if m == "g") if isinstance(mapping, list) else \
        len(ids) if isinstance(ids, list) else 0
    conv_ch = d_inner + 2 * groups * d_state
    k.head(hidden, vocab, k.model_type)
    k.add("attn", layers * (hidden * (d_inner + conv_ch + heads) + d_inner * hidden))
    k.add("other", layers * (conv_ch * conv + conv_ch + 3 * heads + d_inner + hidden))
    two = 2 * hidden
    k.add("attn", blocks * (3 * two * two + two * hidden))
    k.add("dense_mlp", blocks * 3 * hidden * inter)
    k.add("attn", hybrid * hidden * hidden)
    if rank:
        k.add("other", hybrid * (3 * (two * rank + rank * two) + hidden * rank + rank * 2 * inter))
    k.add("other", hidden)
    k.warnings.append("zamba2: shared-block and adapter shapes counted approximately (norms, "
                      "biases and rope tables left out): likely error ±5 %")


def _mpt(k: _Count) -> None:
    """MPT (transformers mpt, vLLM <= 0.25 mpt.py): fused ``Wqkv`` (3 × d_model), ``out_proj``,
    a plain MLP ``expansion_ratio × d_model`` wide, LayerNorms (biases and linear biases
    unless ``no_bias``), ALiBi positions (no table), the head tied to the embedding."""
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    inter = k.num("expansion_ratio", default=4) * hidden
    bias = not k.flag("no_bias", True)
    k.add("embed", vocab * hidden)
    k.add("attn", layers * 4 * hidden * hidden)
    k.add("dense_mlp", layers * 2 * hidden * inter)
    norm = 2 * hidden if bias else hidden
    k.add("other", layers * (2 * norm + ((4 * hidden + inter + hidden) if bias else 0)) + norm)


def _legacy(k: _Count) -> None:
    """The pre-Llama schemas (gpt2.py, gpt_bigcode.py, bloom.py, falcon.py): fused QKV with
    biases, plain 4×-wide MLP with biases, LayerNorms with biases, learned positions where the
    model has them (GPT-2, BigCode)."""
    mt = k.model_type
    hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
    heads = k.alias("heads")
    head_dim = hidden // heads
    inter = k.alias("inter", default=4 * hidden) if k.cfg.get("n_inner") is not None or \
        k.cfg.get("ffn_hidden_size") is not None else 4 * hidden
    if mt == "falcon":
        new = k.flag("new_decoder_architecture")
        kv = k.num("num_kv_heads", default=heads) if new else \
            (1 if k.flag("multi_query", True) else heads)
        bias = k.flag("bias")
        qkv = hidden * (heads + 2 * kv) * head_dim
        per = qkv + hidden * hidden + 2 * hidden * inter
        small = (((heads + 2 * kv) * head_dim + hidden + inter + hidden) if bias else 0) + \
            (4 * hidden if new and k.cfg.get("num_ln_in_parallel_attn", 2) == 2 else 2 * hidden)
        k.add("attn", (qkv + hidden * hidden) * layers)
        k.add("dense_mlp", 2 * hidden * inter * layers)
        k.add("other", small * layers + 2 * hidden)
        del per
    else:
        kv = 1 if mt == "gpt_bigcode" and k.flag("multi_query", True) else heads
        qkv = hidden * (heads + 2 * kv) * head_dim
        k.add("attn", (qkv + hidden * hidden) * layers)
        k.add("dense_mlp", 2 * hidden * inter * layers)
        k.add("other", ((heads + 2 * kv) * head_dim + hidden + inter + hidden + 4 * hidden) *
              layers + 2 * hidden)
        if mt in ("gpt2", "gpt_bigcode"):
            k.add("embed", k.num("n_positions", "max_position_embeddings") * hidden)
        if mt == "bloom":
            k.add("other", 2 * hidden)  # word_embeddings_layernorm
    k.head(hidden, vocab, mt)
    if mt == "falcon" and k.cfg.get("tie_word_embeddings") is None:
        k.warnings.append(
            "falcon: the config leaves tie_word_embeddings to FalconConfig (true), so one "
            "embedding is counted; some Falcon checkpoints store lm_head.weight as well "
            f"(Falcon-180B does): stored bytes may be {vocab * hidden:,} parameters higher")


def _chatglm(k: _Count) -> None:
    """ChatGLM / GLM-4 (vLLM chatglm.py): ``query_key_value`` with ``add_qkv_bias``,
    ``dense`` out, ``dense_h_to_4h`` 2 × ffn_hidden_size (gated), ``dense_4h_to_h``; the
    output layer untied; two RMSNorms a layer, a final one."""
    _decoder(k)


# -- towers -----------------------------------------------------------------------------------


_TOWER_KEYS = ("vision_config", "audio_config", "speech_config", "audio_tower_config")
# Keys that name a tower whose sizes the config does not give.
_UNSIZED_TOWER_KEYS = ("img_processor", "mm_vision_tower", "vision_backbone", "vision_tower",
                       "embd_layer", "visual")
_UNCOUNTED_PARTS = ("talker_config", "token2wav_config")


# A tower size beyond this is no real encoder (the largest ViTs are ~10^4 wide).
_TOWER_SIZE_MAX = 1 << 20


def _tv(cfg: Mapping[str, Any], key: str, default: Any) -> int:
    """A tower config's size ``key`` (``default`` when absent or null), checked as a count
    below ``_TOWER_SIZE_MAX``: a tower config is not guarded by derive, so it is checked here."""
    value = cfg.get(key)
    if value is None:
        value = default
    return checked_count(value, f"tower {key}", where="config", minimum=0,
                         maximum=_TOWER_SIZE_MAX)


def _vit(cfg: Mapping[str, Any], *, gated: bool, ln: bool, qkv_bias: bool = True,
         mlp_bias: bool = True, qk_norm: int = 0, norms: int = 2) -> tuple[int, int]:
    """(hidden, params) of a ViT's encoder layers: attention (4 × h², biases), MLP, norms."""
    h = _tv(cfg, "hidden_size", 0) or _tv(cfg, "embed_dim", 0)
    depth = _tv(cfg, "num_hidden_layers", 0) or _tv(cfg, "depth", 0)
    ratio = cfg.get("mlp_ratio", 4)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or \
            not 0 < ratio <= 64:  # also refuses NaN and infinity
        raise ConfigError(f"config: a tower's mlp_ratio must be a number in (0, 64], got "
                          f"{ratio!r}")
    inter = _tv(cfg, "intermediate_size", 0) or int(h * float(ratio))
    per = 4 * h * h + (4 * h if qkv_bias else 0)
    per += (3 if gated else 2) * h * inter + ((2 if gated else 1) * inter + h if mlp_bias else 0)
    per += norms * (2 * h if ln else h) + qk_norm
    return h, depth * per


def towers(config: Mapping[str, Any], text_hidden: int) -> tuple[int, list[str]]:
    """(parameters, warnings) of the vision / audio towers and projectors a multimodal
    config describes. Counted for the tower types below from their own config keys and their
    config classes' defaults (transformers 5.19); another tower is counted by a generic ViT
    formula with a warning, or, where its config states no sizes, not counted, with a warning
    naming its likely size."""
    total = 0
    warnings: list[str] = []
    for key in TEXT_CONFIG_KEYS:  # a wrapper inside the wrapper (Qwen2.5-Omni's thinker)
        inner = config.get(key)
        if isinstance(inner, Mapping) and any(
                isinstance(inner.get(t), Mapping) for t in (*_TOWER_KEYS, *TEXT_CONFIG_KEYS)):
            n, warn = towers(inner, text_hidden)
            total += n
            warnings.extend(warn)
    for key in _UNSIZED_TOWER_KEYS:
        if config.get(key) and not isinstance(config.get("vision_config"), Mapping):
            warnings.append(f"the config names a tower ({key}) without a vision_config to size "
                            "it: not counted (vision towers hold 0.3–0.7 B parameters: the "
                            "estimate is low by that)")
            break
    for key in _UNCOUNTED_PARTS:
        if isinstance(config.get(key), Mapping):
            warnings.append(f"{key}: a part the checkpoint stores beside the language model "
                            "(a speech generator / vocoder) is not counted; a thinker-only model "
                            "does not load it; the stored bytes are low by its size")
    vision = config.get("vision_config")
    if isinstance(vision, Mapping):
        n, warn = _vision(config, vision, text_hidden)
        total += n
        warnings.extend(warn)
    for key in ("audio_config", "speech_config", "audio_tower_config"):
        sub = config.get(key)
        if isinstance(sub, Mapping):
            h, n = _vit(sub, gated=False, ln=True)
            if n:
                total += n + h * text_hidden
                warnings.append(f"{key} ({sub.get('model_type', '?')}): counted by a generic "
                                f"encoder formula, {n / 1e6:,.0f} M parameters; likely error "
                                "±10 % of the tower")
            else:
                warnings.append(f"{key} ({sub.get('model_type', '?')}) states no sizes: its "
                                "tower is not counted (audio encoders hold 0.3–0.7 B "
                                "parameters)")
    return total, warnings


def towers_unused(config: Mapping[str, Any]) -> int:
    """Tower parameters the model never uses: a LLaVA-style wrapper feeds its projector from
    ``vision_feature_layer`` (negative: counted from the end), so the CLIP / SigLIP layers
    after it and the encoder's post-LayerNorm take no part in the forward pass (transformers
    llava ``get_image_features`` reads ``hidden_states[vision_feature_layer]``). An engine
    may leave them unloaded (plan/weights.py says which)."""
    v = config.get("vision_config")
    layer = config.get("vision_feature_layer")
    if not isinstance(v, Mapping) or isinstance(layer, bool) or not isinstance(layer, int) or \
            layer >= -1:
        return 0
    mt = str(v.get("model_type") or "")
    if mt not in ("clip_vision_model", "siglip_vision_model"):
        return 0
    h = _tv(v, "hidden_size", 768)
    depth = _tv(v, "num_hidden_layers", 12)
    _, one = _vit({"hidden_size": h, "num_hidden_layers": 1,
                   "intermediate_size": v.get("intermediate_size", 3072)}, gated=False, ln=True)
    dropped = min(depth, -layer - 1)
    return dropped * one + 2 * h


def _vision(config: Mapping[str, Any], v: Mapping[str, Any],
            text_hidden: int) -> tuple[int, list[str]]:
    mt = str(v.get("model_type") or config.get("model_type") or "")
    top = str(config.get("model_type") or "")
    if top == "qwen2_vl" or mt == "qwen2_vl":
        # Qwen2VisionTransformer (qwen2_vl.py): Conv3d patch embed (no bias), LayerNorm blocks
        # with fused biased qkv and a plain GELU MLP (embed_dim × mlp_ratio), the patch merger
        # (LayerNorm, 4·e → 4·e → hidden). Qwen2VLVisionConfig defaults: depth 32,
        # embed_dim 1280, mlp_ratio 4, in_chans 3, patch 14, temporal 2, merge 2.
        e = _tv(v, "embed_dim", 1280)
        d = {"hidden_size": e, "depth": _tv(v, "depth", 32),
             "mlp_ratio": v.get("mlp_ratio", 4)}
        _, blocks = _vit(d, gated=False, ln=True)
        patch = _tv(v, "in_chans", v.get("in_channels", 3)) * \
            _tv(v, "temporal_patch_size", 2) * _tv(v, "spatial_patch_size",
                                                         v.get("patch_size", 14)) ** 2 * e
        merge = _tv(v, "spatial_merge_size", 2) ** 2 * e
        out = _tv(v, "hidden_size", text_hidden)
        merger = 2 * e + merge * merge + merge + merge * out + out
        return patch + blocks + merger, []
    if top == "qwen2_5_vl" or mt == "qwen2_5_vl":
        # Qwen2_5_VisionTransformer (qwen2_5_vl.py): RMSNorm blocks, biased qkv/proj, gated
        # biased MLP (intermediate_size), merger RMSNorm + 4·e → 4·e → out_hidden_size.
        e = _tv(v, "hidden_size", 1280)
        inter = _tv(v, "intermediate_size", 3420)
        d = {"hidden_size": e, "depth": _tv(v, "depth", 32), "intermediate_size": inter}
        _, blocks = _vit(d, gated=True, ln=False)
        patch = _tv(v, "in_chans", v.get("in_channels", 3)) * \
            _tv(v, "temporal_patch_size", 2) * _tv(v, "patch_size", 14) ** 2 * e
        merge = _tv(v, "spatial_merge_size", 2) ** 2 * e
        out = _tv(v, "out_hidden_size", text_hidden)
        return patch + blocks + e + merge * merge + merge + merge * out + out, []
    if mt == "gemma4_vision":
        # Gemma4VisionModel (transformers gemma4): patch Linear(3·p², h), a 2-D position
        # table (2 × position_embedding_size × h), gated MLP layers with q/k/v norms and four
        # norms a layer, no biases; the projector RMSNorm-free Linear(h, text hidden).
        h = _tv(v, "hidden_size", 1152)
        p = _tv(v, "patch_size", 16)
        heads = _tv(v, "num_attention_heads", 16)
        hd = _tv(v, "head_dim", h // heads)
        d = {"hidden_size": h, "num_hidden_layers": v.get("num_hidden_layers", 27),
             "intermediate_size": v.get("intermediate_size", 4304)}
        _, blocks = _vit(d, gated=True, ln=False, qkv_bias=False, mlp_bias=False,
                         qk_norm=2 * hd, norms=4)
        pos = 2 * _tv(v, "position_embedding_size", 10240) * h
        return 3 * p * p * h + pos + blocks + h * text_hidden, [
            "gemma4_vision tower: counted from its config (patch, positions, layers, "
            "projector); small norms not checked, likely error under 0.1 % of the tower"]
    if mt in ("siglip_vision_model", "siglip2_vision_model", "clip_vision_model", "siglip"):
        # SigLIP / CLIP vision (siglip.py, clip.py): Conv2d patch embed with bias, learned
        # positions ((image/patch)² [+1 class token for CLIP]), LayerNorm blocks with biased
        # attention and plain MLP, post LayerNorm; the wrapper's projector (Gemma 3:
        # RMSNorm + hidden × text hidden; LLaVA: two biased linears).
        h = _tv(v, "hidden_size", 768)
        p = _tv(v, "patch_size", 16 if "siglip" in mt else 32)
        img = _tv(v, "image_size", 224)
        d = {"hidden_size": h, "num_hidden_layers": v.get("num_hidden_layers", 12),
             "intermediate_size": v.get("intermediate_size", 3072)}
        _, blocks = _vit(d, gated=False, ln=True)
        clip = mt.startswith("clip")
        positions = (img // p) ** 2 + (1 if clip else 0)
        # CLIP's patch conv has no bias; it adds a class embedding and a pre-LayerNorm.
        n = 3 * p * p * h + (0 if clip else h) + positions * h + blocks + 2 * h
        if clip:
            n += h + 2 * h
        if top in ("gemma3",):
            n += h + h * text_hidden  # mm_soft_emb_norm, mm_input_projection_weight
            return n, []
        if top == "paligemma":
            n += h * text_hidden + text_hidden  # multi_modal_projector.linear with its bias
            return n, []
        n += h * text_hidden + text_hidden + text_hidden * text_hidden + text_hidden
        return n, [f"{mt} tower with a {top} projector: counted as LLaVA's two-layer MLP "
                   "projector; likely error under 1 % of the tower"]
    h, n = _vit(v, gated=False, ln=True)
    if n:
        return n + h * text_hidden, [
            f"vision tower {mt or '?'}: counted by a generic ViT formula ({n / 1e6:,.0f} M "
            "parameters: attention, MLP, norms; patch embedding and projector approximate): "
            "likely error ±10 % of the tower"]
    return 0, [f"vision tower {mt or '?'}: its vision_config states no sizes, so it is not "
               "counted (vision towers hold 0.3–0.7 B parameters: the estimate is low by that)"]


# -- the entry point --------------------------------------------------------------------------

_FAMILIES = {"nas:derive": "nas", "ssm_hybrids:jamba": "jamba", "mamba:nemotron_h": "nemotron_h",
             "gdn:derive": "gdn", "legacy_schemas:bloom": "legacy",
             "legacy_schemas:falcon": "legacy", "legacy_schemas:gpt_bigcode": "legacy",
             "dense:gpt2": "legacy", "mla:derive": "mla", "mtp_decoder:derive": "mla",
             "mamba:mamba1": "mamba1", "mamba:mamba2": "mamba2",
             "ssm_hybrids:lfm2": "lfm2", "falcon_h1:derive": "falcon_h1",
             "ssm_hybrids:granitemoehybrid": "granite_hybrid", "minimax:m1": "minimax_linear",
             "mamba:zamba2": "zamba2"}


def _text_level(config: Mapping[str, Any], model: str) -> tuple[Config, str, str]:
    """(text config with its class defaults, its model_type, the handler of its row): the
    language model's config as derive reads it (``Config.text()``, and the row defaults
    ``derive/__init__.py``'s ``_inner`` applies)."""
    from kvledger.derive.model_types import resolve
    from kvledger.derive.registry import row_for

    top = Config(config, model=model)
    try:
        row = row_for(top.model_type, top.architectures)
    except Exception:  # an unknown or refused wrapper: its language model's row, if any
        text = top.text()
        text_type = text.model_type or top.model_type
        if text is top:
            return text, text_type, ""
        try:
            inner_row = resolve(text_type)
        except KeyError:
            return text, text_type, ""
        if not inner_row.derivable or inner_row.is_wrapper:
            return text, text_type, ""
        out = Config(text.raw, model=model, parent=text.parent, defaults=inner_row.defaults,
                     model_type=text_type)
        out.path = text.path
        return out, text_type, inner_row.handler
    text = top.text()
    text_type = text.model_type if text is not top else top.model_type
    defaults = dict(row.defaults)
    handler = row.handler
    if row.is_wrapper:
        inner = text_type if text is not top and text_type in row.inner else row.inner[0]
        try:
            wrapped = resolve(inner)
        except KeyError:
            wrapped = None
        if wrapped is not None:
            defaults = {**wrapped.defaults, **row.text_defaults.get(inner, {})}
            handler = wrapped.handler
        text_type = inner
    out = Config(text.raw, model=model, parent=text.parent, defaults=defaults,
                 model_type=text_type)
    out.path = text.path
    return out, text_type, handler


# Sizes a config class fills in that the model-type table's defaults do not hold (they matter to
# the weight count only): transformers 5.19 Gemma3TextConfig's vocab_size.
_WEIGHT_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "gemma3_text": {"vocab_size": 262208},
    "gemma3": {"vocab_size": 262208},
}

# The generic decoder's error where a published parameter count shows it (the model card's
# total against this count of the config in ../shared/configs).
_GENERIC_ERROR: Mapping[str, str] = {
    "dense:minimax_m2": "-0.6 % against MiniMax-M2's published 230B",
    "mimo_v2:derive": "+2.2 % against MiMo-V2-Flash's published 309B",
    "encdec:whisper": "the audio encoder is not counted: -25 % on whisper-tiny (39M)",
    "encdec:mllama": "cross-attention layers counted as self-attention ones: likely ±2 %",
    "dense:eagle3": "an EAGLE-3 draft's fused input projection is not modelled: likely ±10 %",
}

# Handlers whose layers the generic decoder describes (attention + MLP per layer).
_DECODER_HANDLERS = ("standard:", "layer_patterns:", "interleaved:", "gemma4:", "gemma3n:",
                     "legacy_schemas:chatglm", "dbrx:", "dense:phi3small", "mtp_decoder:",
                     "mla:", "minicpm3:")


def count_parameters(config: Mapping[str, Any], *, model: str = "config") -> Parameters:
    """The checkpoint's parameters from its (whole) config.json: the decoder by category,
    its MTP layers and towers apart, and warnings where the count is not exact."""
    text, model_type, handler = _text_level(config, model)
    more = _WEIGHT_DEFAULTS.get(model_type)
    if more:
        text = Config(text.raw, model=model, parent=text.parent,
                      defaults={**more, **text.defaults}, model_type=model_type)
    profile = _PROFILES.get(model_type, {})
    k = _Count(text, model_type, profile)
    family = _FAMILIES.get(handler, "")
    if model_type in ("nemotron-nas", "deci") or (not handler and "block_configs" in text):
        family = "nas"
    if model_type == "mpt":
        family = "mpt"
    if not handler and ("hybrid_override_pattern" in text or "mamba_num_heads" in text):
        family = "nemotron_h"  # a config without a model_type: its keys say the layout
    mla = text.get("kv_lora_rank") is not None and text.get("qk_nope_head_dim") is not None
    if family == "mla" and not mla:
        family = ""
    if family == "" and mla and text.get("linear_attn_config") is None:
        family = "mla"
    if family == "" and handler and not handler.startswith(_DECODER_HANDLERS):
        k.warnings.append(
            f"model_type {model_type!r} ({handler}): its mixer or layer layout has no exact "
            "weight formula here; counted as a generic decoder (attention + MLP per layer): "
            + _GENERIC_ERROR.get(handler, "likely error up to ±20 %"))
    if not handler:
        k.warnings.append(
            f"model_type {model_type or '(none)'!r} has no row in the model-type table: counted "
            "as a generic decoder from its keys; likely error under 1 % for a Llama-like "
            "layout, more for another")
    if family == "nas":
        _nas(k)
    elif family == "jamba":
        _jamba(k)
    elif family == "nemotron_h":
        _nemotron_h(k)
    elif family == "gdn":
        _gdn(k)
    elif family == "legacy":
        _legacy(k)
    elif family == "lfm2":
        _lfm2(k)
    elif family == "falcon_h1":
        _falcon_h1(k)
    elif family == "granite_hybrid":
        _granite_hybrid(k)
    elif family == "minimax_linear":
        _minimax_linear(k)
    elif family == "mpt":
        _mpt(k)
    elif family == "zamba2":
        _zamba2(k)
    elif family in ("mamba1", "mamba2"):
        hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
        k.head(hidden, vocab, model_type)
        for _ in range(layers):
            if family == "mamba1":
                _mamba1(k, hidden, jamba=False)
            else:
                _mamba2(k, hidden)
            k.add("other", hidden)
        k.add("other", hidden)
    else:
        _decoder(k, mla=family == "mla")
    mtp_count = next((k.num(key) for key in ALIASES["mtp"] if k.num(key, default=0)), 0)
    mtp: dict[str, int] = {}
    if mtp_count:
        if family == "nemotron_h":
            mtp = _nemotron_h_mtp(k, mtp_count)
        elif family == "gdn":
            mtp = _gdn_mtp(k, mtp_count)
        else:
            mtp = _mtp(k, mtp_count)
        if family not in ("mla", "nemotron_h", "gdn") and model_type not in ("glm4_moe",):
            k.warnings.append(f"{mtp_count} MTP layer(s) of model_type {model_type!r} counted "
                              "as decoder layers with DeepSeek's eh_proj and norms: likely "
                              "error ±1 % of the MTP part")
    tower, tower_warnings = towers(config, k.alias("hidden"))
    total = sum(k.c.values()) + sum(mtp.values()) + tower
    if total > MAX_PARAMETERS or any(n < 0 for n in (*k.c.values(), *mtp.values())):
        raise ConfigError(f"{model}: the config describes {total:.3g} parameters; kvledger "
                          f"sizes at most {MAX_PARAMETERS:.3g} (far above any released model)")
    return Parameters(model_type=model_type, categories=dict(k.c), mtp=mtp,
                      mtp_layers=mtp_count, towers=tower,
                      towers_unused=towers_unused(config) if tower else 0,
                      warnings=(*k.warnings, *tower_warnings))

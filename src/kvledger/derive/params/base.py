"""The weight count's shared pieces: key aliases, categories, the small-tensor profiles
by model_type, the ``Parameters`` record and ``_Count``, the per-config accumulator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.derive.config import Config
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
    # mimo.py: MiMoModel is Qwen2's, whose o_proj has no bias whatever attention_bias says.
    "mimo": {"qkv_bias": True},
    "qwen2_vl": {"qkv_bias": True}, "qwen2_5_vl": {"qkv_bias": True},
    "qwen2_vl_text": {"qkv_bias": True}, "qwen2_5_vl_text": {"qkv_bias": True},
    "qwen3": {"qk_norm": "head"}, "qwen3_moe": {"qk_norm": "head"},  # qwen3.py q_norm/k_norm
    "qwen3_vl_text": {"qk_norm": "head"}, "qwen3_vl_moe_text": {"qk_norm": "head"},
    "qwen3_next": {"qk_norm": "head"},
    # qwen3_5.py builds Qwen3NextAttention (q_norm / k_norm over head_dim) and
    # Qwen3NextSparseMoeBlock (shared_expert_gate) for both Qwen3.5 text models.
    "qwen3_5_text": {"qk_norm": "head"}, "qwen3_5_moe_text": {"qk_norm": "head"},
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
    # Types no vLLM model builds, by their checkpoints' own tensors: VideoLLaMA3's language
    # model is Qwen2 (q/k/v_proj.bias), LLaVA-OneVision-1.5's is Qwen3 (q_norm / k_norm).
    "videollama3_qwen2": {"qkv_bias": True},
    "LLaVAOneVision1_5_text": {"qk_norm": "head"},
}

# MiniCPM-V's language model by version (vLLM minicpmv.py ``init_llm``: 2.5 and 4.0 Llama,
# 2.6 Qwen2 with q/k/v biases, 4.5 Qwen3 with q/k norms; ``get_version_by_config``: a config
# without ``version`` is 2.0 when hidden 2304 and query_num 64, else 2.5).
_MINICPMV_PROFILES: Mapping[tuple[int, ...], Mapping[str, Any]] = {
    (2, 6): {"qkv_bias": True}, (4, 5): {"qk_norm": "head"},
}


def minicpmv_profile(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The small-tensor profile of a ``minicpmv`` config's language model, by its version."""
    version = config.get("version")
    if version is None or isinstance(version, bool):
        return {}
    try:
        key = tuple(int(x) for x in str(version).split("."))
    except ValueError:
        return {}
    return _MINICPMV_PROFILES.get(key, {})


@record(frozen=True)
class Parameters:
    """Parameters of one checkpoint, by category (module docstring)."""

    model_type: str
    categories: Mapping[str, int]  # the decoder the engine always loads
    mtp: Mapping[str, int] = field(default_factory=dict)  # its MTP layers, by category
    mtp_layers: int = 0
    towers: int = 0  # vision / audio towers and projectors counted from their configs
    towers_unused: int = 0  # of those, layers the model never runs (``towers_unused``)
    # Of the decoder's "attn": the projections vLLM and SGLang keep whole on every TP rank —
    # MLA's down-projections q_a_proj and kv_a_proj_with_mqa, which have no head dimension to
    # shard (they feed the latent every rank caches whole), and the DSA indexer's wq_b and wk
    # (vLLM deepseek_v2.py Indexer: "no tensor parallel, just replicated"). The engine rule is
    # plan/tp_replicated.py.
    unsharded_attention: int = 0
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
        # Of "attn": what the engines keep whole on every TP rank
        # (``Parameters.unsharded_attention``).
        self.unsharded = 0
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

    def decoder_shape(self) -> tuple[int, int, int, int, int, int]:
        """(hidden, layers, vocab, heads, kv_heads, head_dim) as a Llama-like decoder states
        them: KV heads default to the query heads, head_dim to hidden // heads."""
        hidden, layers, vocab = self.alias("hidden"), self.alias("layers"), self.alias("vocab")
        heads = self.alias("heads")
        kv_heads = self.alias("kv_heads", default=heads)
        return (hidden, layers, vocab, heads, kv_heads,
                self.num("head_dim", default=hidden // max(1, heads)))

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
                                           self.model_type not in ("qwen2", "chatglm", "mimo")):
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



def _with(cfg: Config, more: Mapping[str, Any]) -> Config:
    out = Config({**cfg.raw, **more}, model=cfg.model, parent=cfg.parent,
                 defaults=cfg.defaults, model_type=cfg.model_type)
    out.path = cfg.path
    return out

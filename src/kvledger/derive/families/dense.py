"""Dense and GQA decoders: every layer caches K and V for its KV heads (Llama, Mistral, Mixtral,
Qwen2/Qwen3, Phi-3, Phi-3-small, GPT-2, Cohere Command-R, MiniMax-M2), plus EAGLE3 draft
configs that reuse the Llama schema.

Facts follow vLLM's model files (read for facts, cited per handler). The window rule is vLLM's:
a layer gets a per-layer window only from ``layer_types``; otherwise the model-wide
``sliding_window`` (``ModelConfig.get_sliding_window`` → ``CacheConfig.sliding_window``) applies
to *every* layer (vLLM ``Attention.__init__``: "model-level sliding window"). That is how
Mistral-7B and Phi-3-mini get a window on all layers.

Each model type checks its own key list on top of the family-wide ``CHECKED_KEYS`` (which is
only the union, so that the registry-level guard lets the config through to here): a key
checked for Phi-3-small must not silently pass on a Llama config.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.guard import check_keys, check_keys_for_type
from kvledger.derive.layers import Attention, FullAttention, LayerCache, Role, SlidingAttention
from kvledger.derive.registry import Derived

FAMILY = "dense"

# Keys every standard decoder config carries; their meaning is the same in every model type.
BASE_KEYS = frozenset(
    {
        "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
        "hidden_size", "max_position_embeddings", "quantization_config",
    }
)

_LLAMA_KEYS = BASE_KEYS | {"sliding_window", "layer_types"}
_EAGLE3_KEYS = BASE_KEYS | {"draft_vocab_size", "eagle_config", "target_hidden_size"}
_QWEN_KEYS = BASE_KEYS | {
    "sliding_window", "use_sliding_window", "max_window_layers", "layer_types",
}
# Qwen2-MoE: the shared expert's width (an MLP size, no cache effect).
_QWEN_MOE_KEYS = _QWEN_KEYS | {"shared_expert_intermediate_size"}
_PHI3_KEYS = BASE_KEYS | {"sliding_window", "original_max_position_embeddings"}
_PHI3SMALL_KEYS = BASE_KEYS | {
    "blocksparse_block_size", "blocksparse_homo_head_pattern", "blocksparse_num_local_blocks",
    "blocksparse_triton_kernel_block_size", "blocksparse_vert_stride",
    "dense_attention_every_n_layers", "mup_attn_multiplier", "attention_dropout_prob",
}
_GPT2_KEYS = frozenset({"n_layer", "n_head", "n_embd", "n_ctx", "n_positions", "n_inner"})
_COHERE_KEYS = BASE_KEYS
_MINIMAX_M2_KEYS = BASE_KEYS | {
    "use_mtp", "num_mtp_modules", "mtp_transformer_layers", "shared_intermediate_size",
}

KEYS_BY_TYPE: dict[str, frozenset[str]] = {
    "llama": _LLAMA_KEYS,
    "mistral": _LLAMA_KEYS,
    "mixtral": _LLAMA_KEYS,
    "qwen2": _QWEN_KEYS,
    "qwen2_moe": _QWEN_MOE_KEYS,
    "qwen3": _QWEN_KEYS,
    "qwen3_moe": _QWEN_MOE_KEYS,
    "phi3": _PHI3_KEYS,
    "phi3small": _PHI3SMALL_KEYS,
    "gpt2": _GPT2_KEYS,
    "cohere": _COHERE_KEYS,
    "minimax_m2": _MINIMAX_M2_KEYS,
}

CHECKED_KEYS: frozenset[str] = frozenset().union(*KEYS_BY_TYPE.values(), _EAGLE3_KEYS)

# Draft architectures whose layer layout is read from vLLM's llama_eagle3.py.
EAGLE3_ARCHITECTURES = frozenset({"LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM"})
# eagle_config entries that pick which *target* hidden states feed the draft: no draft cache.
_EAGLE_CONFIG_KEYS = frozenset({"eagle_aux_hidden_state_layer_ids", "use_aux_hidden_state"})


# -- helpers shared by the families of this package ----------------------------------------
def heads_and_dim(cfg: Config) -> tuple[int, int, int]:
    """(query heads, KV heads, head dim) the way vLLM's Llama-style attention reads them.

    vLLM ``LlamaDecoderLayer``: ``num_key_value_heads`` defaulting to ``num_attention_heads``;
    ``LlamaAttention``: ``head_dim`` if set, else ``hidden_size // num_attention_heads``.
    """
    heads = cfg.int("num_attention_heads")
    kv_heads = cfg.int("num_key_value_heads", heads)
    return heads, kv_heads, head_dim(cfg, heads, hidden_key="hidden_size")


def head_dim(cfg: Config, heads: int, *, hidden_key: str) -> int:
    """``head_dim`` if the config states it, else hidden size / heads (must divide exactly)."""
    if "head_dim" in cfg:
        return cfg.int("head_dim")
    hidden = cfg.int(hidden_key)
    if heads <= 0 or hidden % heads:
        raise ConfigError(
            f"{cfg.model}: {hidden_key}={hidden} is not divisible by {heads} heads and the config "
            "states no head_dim"
        )
    return hidden // heads


def attention(
    index: int,
    kv_heads: int,
    dim: int,
    dtype: str,
    *,
    role: Role = Role.DECODER,
    window: int | None = None,
    sinks: bool = False,
    note: str = "",
) -> Attention:
    """One self-attention layer with equal K and V geometry (window → sliding)."""
    if window is None:
        return FullAttention(
            index=index, role=role, dtype=dtype, k_heads=kv_heads, k_dim=dim,
            v_heads=kv_heads, v_dim=dim, sinks=sinks, note=note,
        )
    if window <= 0:
        raise ConfigError(f"sliding window must be a positive integer, got {window}")
    return SlidingAttention(
        index=index, role=role, dtype=dtype, k_heads=kv_heads, k_dim=dim, v_heads=kv_heads,
        v_dim=dim, window=window, sinks=sinks, note=note,
    )


def check_nested(
    cfg: Config, key: str, allowed: Iterable[str], *, family: str, must_be_falsy: Iterable[str] = ()
) -> Mapping[str, object]:
    """A nested dict's keys must all be known; ``must_be_falsy`` ones must be off (else raise)."""
    value = cfg.get(key) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{cfg.model}: {key!r} must be an object, got {value!r}")
    known = set(allowed) | set(must_be_falsy)
    for sub in sorted(value):
        if sub not in known:
            raise UnsupportedArchitecture(
                f"unsupported: {cfg.model_type} config carries {key}.{sub}, which the {family} "
                "family has not been checked against; refusing to guess its effect",
                model_type=cfg.model_type,
            )
    for sub in must_be_falsy:
        if value.get(sub):
            raise UnsupportedArchitecture(
                f"unsupported: {cfg.model_type} config sets {key}.{sub}={value[sub]!r}; the "
                f"{family} family models only configs where it is off",
                model_type=cfg.model_type,
            )
    return value


def _window(cfg: Config) -> int | None:
    """The model-wide window vLLM applies to every layer, or None."""
    if "sliding_window" not in cfg:
        return None
    return cfg.int("sliding_window")


def _uniform(
    text: Config, kv_dtype: str, window: int | None, *, note: str = ""
) -> list[LayerCache]:
    _, kv_heads, dim = heads_and_dim(text)
    return [
        attention(i, kv_heads, dim, kv_dtype, window=window, note=note)
        for i in range(text.int("num_hidden_layers"))
    ]


def _layer_types_windows(text: Config) -> list[int | None] | None:
    """Per-layer windows from ``layer_types`` (vLLM llama.py: only "sliding_attention" layers
    get ``config.sliding_window``), or None if the config has no ``layer_types``."""
    types = text.get("layer_types")
    if types is None:
        return None
    n = text.int("num_hidden_layers")
    if not isinstance(types, list) or len(types) != n:
        raise ConfigError(f"{text.model}: layer_types must list {n} entries, got {types!r}")
    out: list[int | None] = []
    for i, kind in enumerate(types):
        if kind == "full_attention":
            out.append(None)
        elif kind == "sliding_attention":
            out.append(text.int("sliding_window"))
        else:
            raise UnsupportedArchitecture(
                f"unsupported: {text.model_type} layer_types[{i}] is {kind!r}; only "
                "'full_attention' and 'sliding_attention' are understood",
                model_type=text.model_type,
            )
    return out


# -- model types ---------------------------------------------------------------------------
def _llama_like(text: Config, kv_dtype: str) -> Derived:
    """Llama 3.x / Mistral / Mixtral (vLLM llama.py; mistral and mixtral reuse its attention)."""
    _, kv_heads, dim = heads_and_dim(text)
    windows = _layer_types_windows(text)
    notes: list[str] = []
    if windows is None:
        window = _window(text)
        windows = [window] * text.int("num_hidden_layers")
        if window is not None:
            notes.append(
                f"sliding_window {window} applies to every layer (vLLM: model-level window, "
                "no layer_types)"
            )
    layers: list[LayerCache] = [
        attention(i, kv_heads, dim, kv_dtype, window=w) for i, w in enumerate(windows)
    ]
    return Derived(layers, notes)


def _eagle3(text: Config, kv_dtype: str) -> Derived:
    """EAGLE3 draft (vLLM llama_eagle3.py): ``num_hidden_layers`` Llama decoder layers whose
    attention has the draft config's own heads (``num_key_value_heads`` × ``head_dim`` or
    ``hidden_size // num_attention_heads``); the q/k/v input is 2 × hidden wide, which does not
    change the cache. vLLM numbers the draft layers after the target's; facts number them 0..n-1
    with role DRAFT, because the target is not part of this config.
    """
    check_keys(text, _EAGLE3_KEYS, family=f"{FAMILY}/eagle3")
    check_nested(text, "eagle_config", _EAGLE_CONFIG_KEYS, family=f"{FAMILY}/eagle3")
    if "sliding_window" in text or "layer_types" in text:
        raise UnsupportedArchitecture(
            "unsupported: EAGLE3 draft config with a sliding window or layer_types is not modeled",
            model_type=text.model_type,
            architectures=text.architectures,
        )
    _, kv_heads, dim = heads_and_dim(text)
    n = text.int("num_hidden_layers")
    layers: list[LayerCache] = [
        attention(i, kv_heads, dim, kv_dtype, role=Role.DRAFT) for i in range(n)
    ]
    notes = [
        f"EAGLE3 draft model: {n} draft layer(s) of its own, riding the target's block table "
        "when served; the target model's layers are not in this config"
    ]
    return Derived(layers, notes, {"draft_of": "eagle3"})


def _qwen(text: Config, kv_dtype: str) -> Derived:
    """Qwen2 / Qwen2.5 / Qwen3 (vLLM qwen2.py, qwen3.py).

    ``use_sliding_window: false`` means no window at all: transformers' Qwen2Config sets
    ``sliding_window = None`` when it is false, whatever number the file carries (Qwen2.5-7B
    carries 131072). With it true, which layers slide depends on ``max_window_layers`` in a way
    that has changed meaning between releases, so it fails closed.
    """
    notes: list[str] = []
    if text.get("use_sliding_window", False):
        raise UnsupportedArchitecture(
            f"unsupported: {text.model_type} with use_sliding_window=true (partial sliding window "
            f"above max_window_layers={text.get('max_window_layers')}) is not modeled",
            model_type=text.model_type,
            architectures=text.architectures,
        )
    windows = _layer_types_windows(text)
    if windows is not None and any(w is not None for w in windows):
        raise UnsupportedArchitecture(
            f"unsupported: {text.model_type} layer_types lists sliding layers although "
            "use_sliding_window is false",
            model_type=text.model_type,
        )
    if "sliding_window" in text:
        notes.append(
            f"sliding_window {text.get('sliding_window')} ignored: use_sliding_window is false"
            + (f" (max_window_layers {text.get('max_window_layers')} unused)"
               if "max_window_layers" in text else "")
        )
    return Derived(_uniform(text, kv_dtype, None), notes)


def _phi3(text: Config, kv_dtype: str) -> Derived:
    """Phi-3 (vLLM phi3.py subclasses LlamaForCausalLM). Phi-3-mini-4k states
    ``sliding_window: 2047`` and no ``layer_types``, so vLLM applies the model-level window to
    all layers (its SlidingWindowSpec shows 2047 on all 32 layers). The catalog copy is
    MODIFIED only by inserted ``name`` and ``attention_bias`` keys, which change no cache.
    """
    window = _window(text)
    notes = []
    if window is not None:
        notes.append(
            f"sliding_window {window} on every layer: vLLM's Attention falls back to the "
            "model-level CacheConfig.sliding_window when a layer has no per-layer window"
        )
    return Derived(_uniform(text, kv_dtype, window), notes)


def _phi3small(text: Config, kv_dtype: str) -> Derived:
    """Phi-3-small (remote code; vLLM phi3_small.py). Layers with (index + 1) %
    ``dense_attention_every_n_layers`` == 0 attend densely; the others use block-sparse
    attention (``blocksparse_num_local_blocks`` local blocks plus every
    ``blocksparse_vert_stride``-th block back to the start). Every layer is an ordinary vLLM
    ``Attention`` over the full paged cache: block-sparse reading still reaches back to the
    first block, so every position stays cached. KV heads ``num_key_value_heads``, head dim
    ``hidden_size // num_attention_heads``.
    """
    heads = text.int("num_attention_heads")
    kv_heads = text.int("num_key_value_heads")
    dim = head_dim(text, heads, hidden_key="hidden_size")
    every = text.int("dense_attention_every_n_layers", 0)
    if every < 0:
        raise ConfigError(f"{text.model}: dense_attention_every_n_layers must be >= 0, got {every}")
    local = text.int("blocksparse_num_local_blocks") * text.int("blocksparse_block_size")
    stride = text.int("blocksparse_vert_stride")
    layers: list[LayerCache] = []
    for i in range(text.int("num_hidden_layers")):
        dense = every > 0 and (i + 1) % every == 0
        note = "dense attention" if dense else (
            f"block-sparse: {local} local positions + every {stride}th block; caches all positions"
        )
        layers.append(attention(i, kv_heads, dim, kv_dtype, note=note))
    notes = [
        "Phi-3-small block-sparse layers read a subset of blocks but cache every position "
        "(vLLM phi3_small.py builds a plain Attention per layer); needs remote code in vLLM"
    ]
    return Derived(layers, notes)


def _gpt2(text: Config, kv_dtype: str) -> Derived:
    """GPT-2 (vLLM gpt2.py): ``n_layer`` layers of MHA, ``n_head`` heads of ``n_embd // n_head``."""
    if text.get("add_cross_attention"):
        raise UnsupportedArchitecture(
            "unsupported: gpt2 with add_cross_attention=true (encoder-decoder GPT-2) is not "
            "modeled",
            model_type="gpt2",
        )
    heads = text.int("n_head")
    embd = text.int("n_embd")
    if embd % heads:
        raise ConfigError(f"{text.model}: n_embd={embd} is not divisible by n_head={heads}")
    layers: list[LayerCache] = [
        attention(i, heads, embd // heads, kv_dtype) for i in range(text.int("n_layer"))
    ]
    return Derived(layers)


def _cohere(text: Config, kv_dtype: str) -> Derived:
    """Cohere Command-R v01 (vLLM commandr.py): full attention on every layer (the windowed
    variant is model_type cohere2, not registered here)."""
    return Derived(_uniform(text, kv_dtype, None))


def _minimax_m2(text: Config, kv_dtype: str) -> Derived:
    """MiniMax-M2 / M2.5 (vLLM minimax_m2.py): GQA full attention on every decoder layer
    (``num_key_value_heads`` × ``head_dim``; ``rotary_dim`` is partial RoPE, no cache effect).

    MTP: ``num_mtp_modules`` modules of ``mtp_transformer_layers`` transformer layers each,
    stored after the decoder (vLLM ``get_spec_layer_idx_from_weight_name``: layer
    ``num_hidden_layers + i``). They are listed with role MTP and the decoder's attention
    geometry; vLLM's minimax_m2.py skips their weights, so it serves no MTP for this model.
    """
    _, kv_heads, dim = heads_and_dim(text)
    n = text.int("num_hidden_layers")
    layers: list[LayerCache] = [attention(i, kv_heads, dim, kv_dtype) for i in range(n)]
    notes: list[str] = []
    if text.get("use_mtp", False):
        modules = text.int("num_mtp_modules", 0)
        per_module = text.int("mtp_transformer_layers", 1)
        mtp_note = "MTP transformer layer; geometry of the decoder's attention"
        layers.extend(
            attention(n + k, kv_heads, dim, kv_dtype, role=Role.MTP, note=mtp_note)
            for k in range(modules * per_module)
        )
        if modules:
            notes.append(
                f"{modules} MTP module(s) × {per_module} layer(s) listed with role mtp; vLLM "
                "(minimax_m2.py) skips these weights and serves no MTP for MiniMax-M2"
            )
    return Derived(layers, notes)


_HANDLERS: dict[str, Callable[[Config, str], Derived]] = {
    "llama": _llama_like,
    "mistral": _llama_like,
    "mixtral": _llama_like,
    "qwen2": _qwen,
    "qwen2_moe": _qwen,
    "qwen3": _qwen,
    "qwen3_moe": _qwen,
    "phi3": _phi3,
    "phi3small": _phi3small,
    "gpt2": _gpt2,
    "cohere": _cohere,
    "minimax_m2": _minimax_m2,
}


def derive(cfg: Config, kv_dtype: str) -> Derived:
    text = cfg.text()
    model_type = text.model_type or cfg.model_type
    archs = set(cfg.architectures)
    if model_type == "llama" and archs & EAGLE3_ARCHITECTURES:
        return _eagle3(text, kv_dtype)
    if model_type == "llama" and any("eagle" in a.lower() for a in archs):
        raise UnsupportedArchitecture(
            f"unsupported: llama draft architecture {sorted(archs)} is not an EAGLE3 draft "
            "kvledger has been checked against",
            model_type=model_type,
            architectures=cfg.architectures,
        )
    check_keys_for_type(text, KEYS_BY_TYPE, family=FAMILY, model_type=model_type)
    return _HANDLERS[model_type](text, kv_dtype)

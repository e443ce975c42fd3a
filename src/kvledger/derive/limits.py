"""What a config value may be: the one table of types and ranges every read goes through.

Why a table and one check at the edge: a value that is the wrong type or absurd must stop the
plan with one line naming the file and the key. Checked per family, some family forgets; not
checked at all, ``torch_dtype: true`` silently meant float32 KV (twice the bytes), a string
``n_routed_experts`` made DeepSeek-V3 a 37 B model instead of 671 B, and
``num_hidden_layers: 1000000000`` hung the planner. ``Config.int`` (every count a handler
reads) and ``check_values`` (every key of this table a config level states, read by a handler
or by the weights estimate) both go through ``checked_count``.

Bounds are generous but finite: each is far above every released model (the comment on each
says what the largest real value is), and low enough that planning stays fast and every byte
count stays an exact integer well inside ``2**60`` (``kvledger.declare.counts.MAX_BYTES``).
A config beyond them is a typo or a fuzzer, not a model; the message says the bound so a
real model that ever needs more is one line to change here.

Minimums: a count a handler divides by or multiplies into a cache shape (heads, widths) must
be >= 1 when stated; the others may be 0 (GLM-5.3-Flash states ``head_dim: 0`` and
``qk_rope_head_dim: 0`` on its MLA text config, Qwen3-Coder-480B
``shared_expert_intermediate_size: 0``, Kimi-K3 ``num_nextn_predict_layers: 0``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from kvledger.derive.errors import ConfigError
from kvledger.records import fields

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

# The deepest released decoders have 126 layers (Llama-3.1-405B) or 61 + 1 MTP (DeepSeek-V3);
# 10,000 is 80x that, and keeps a plan (linear in layers) well under a second.
MAX_LAYERS = 10_000
# Caches a whole model may describe: a layer can hold a few (attention + a sparse indexer's
# keys, self- + cross-attention), plus MTP layers.
MAX_CACHE_LAYERS = 4 * MAX_LAYERS
# DeepSeek-V3 has 128 attention heads, Qwen3-Next 32 value heads for its linear attention.
MAX_HEADS = 1 << 16
# Llama-3.1-405B's hidden size is 16,384.
MAX_HIDDEN = 1 << 20
# Per-head widths: the largest real one is MLA's 512-wide latent (576 with the rope part).
MAX_HEAD_DIM = 1 << 16
# MLP widths: Llama-3.1-405B's intermediate size is 53,248.
MAX_MLP = 1 << 24
# Kimi-K2 has 384 routed experts, Qwen3-Next 512.
MAX_EXPERTS = 1 << 16
# Gemma-3's vocabulary is 262,208 tokens.
MAX_VOCAB = 1 << 24
# Llama-4-Scout states 10,485,760 positions; 2**32 is 400x that (and a request's bytes stay
# far below 2**60 at any supported geometry).
MAX_POSITIONS = 1 << 32
# Anything else a handler reads as a count (state sizes, kernel widths, strides, ...).
MAX_COUNT = 1 << 32

# key -> (minimum, maximum) for every integer key a handler or the weights estimate reads.
# Keys read by a handler but missing here get (0, MAX_COUNT) from ``Config.int``.
_LAYERS = (0, MAX_LAYERS)
_HEADS = (1, MAX_HEADS)
_HIDDEN = (1, MAX_HIDDEN)
_DIM = (0, MAX_HEAD_DIM)
_MLP = (0, MAX_MLP)
_EXPERTS = (0, MAX_EXPERTS)
_POSITIONS = (1, MAX_POSITIONS)
LIMITS: Mapping[str, tuple[int, int]] = {
    **dict.fromkeys(
        ("num_hidden_layers", "num_layers", "n_layer", "decoder_layers", "encoder_layers",
         "num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules",
         "mtp_transformer_layers", "first_k_dense_replace", "dense_attention_every_n_layers",
         "no_rope_layer_interval", "index_topk_freq", "index_skip_topk_offset",
         "full_attention_interval", "max_window_layers", "n_layers", "num_kv_shared_layers",
         "attn_layer_offset", "attn_layer_period"), _LAYERS),
    **dict.fromkeys(
        ("num_attention_heads", "num_key_value_heads", "n_head", "decoder_attention_heads",
         "encoder_attention_heads", "num_heads", "mamba_num_heads", "n_mamba_heads",
         "linear_num_key_heads", "linear_num_value_heads", "num_mem_heads", "index_n_heads",
         "n_heads", "mamba_n_heads", "num_kv_heads", "num_global_key_value_heads",
         "swa_num_key_value_heads"),
        _HEADS),
    **dict.fromkeys(("hidden_size", "d_model", "n_embd"), _HIDDEN),
    **dict.fromkeys(
        ("head_dim", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
         "index_head_dim", "linear_key_head_dim", "linear_value_head_dim", "mamba_head_dim",
         "mamba_headdim", "attention_head_dim", "kv_channels", "ssm_state_size", "state_size",
         "mamba_d_state", "conv_kernel", "mamba_d_conv", "conv_dimension",
         "linear_conv_kernel_dim", "short_conv_kernel_size", "n_groups", "mamba_ngroups",
         "global_head_dim", "swa_head_dim", "swa_v_head_dim", "mamba_d_head"),
        _DIM),
    "q_lora_rank": (0, MAX_HIDDEN),
    "mamba_d_ssm": _MLP,  # Falcon-H1's Mamba2 inner width (families/falcon_h1.py)
    "global_attn_every_n_layers": _LAYERS,  # AFMoE: every n-th layer full (families/afmoe.py)
    **dict.fromkeys(
        ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size",
         "moe_shared_expert_intermediate_size", "n_inner", "ffn_dim", "moe_latent_size"),
        _MLP),
    **dict.fromkeys(("expand", "mamba_expand", "expansion_factor"), (1, 1 << 10)),
    **dict.fromkeys(
        ("n_routed_experts", "num_local_experts", "num_experts", "n_shared_experts",
         "num_experts_per_tok", "moe_topk"),
        _EXPERTS),
    # Tokens per pooled indexer entry (GLM-5.3: 4); vLLM pages it in blocks of 64 x pool
    # tokens, so a huge pool makes a kernel block hold no entry at all.
    "index_kpool": (1, 1 << 10),
    "vocab_size": (1, MAX_VOCAB),
    # Every length key vLLM reads (derive/max_len.py).
    **dict.fromkeys(
        ("max_position_embeddings", "max_target_positions", "max_source_positions",
         "n_positions", "max_seq_len", "seq_length", "model_max_length", "max_sequence_length",
         "max_seq_length", "seq_len"), _POSITIONS),
    # 0 means "no window" to vLLM (ModelConfig.__post_init__); chunks must be >= 1.
    "sliding_window": (0, MAX_POSITIONS),
    "attention_chunk_size": (1, MAX_POSITIONS),
    "index_topk": (0, MAX_POSITIONS),
}

# The names ``torch_dtype`` / ``dtype`` may take: the floating types vLLM serves a model in
# (``_resolve_auto_dtype``: float32, which it downcasts to bfloat16, float16, bfloat16), by
# the names transformers resolves with ``getattr(torch, name)`` (and its "torch." prefix).
# Other torch dtypes (float64, float8_*, int8) make vLLM fall back to bfloat16 with a
# warning, which kvledger does not model: refused by name rather than planned in that type.
CONFIG_DTYPES = frozenset({"float32", "float", "float16", "half", "bfloat16"})


# Keys a config class also takes as one value per layer (Gemma3nTextConfig:
# ``intermediate_size: int | list[int]``, an MLP width per layer): each entry is checked.
PER_LAYER_LISTS = frozenset({"intermediate_size"})


# Count keys whose config class also takes the string "auto" (computed in ``__post_init__``):
# transformers 5.19 BambaConfig, FalconH1Config and GraniteMoeHybridConfig default
# ``mamba_d_head`` to "auto" (mamba intermediate size // mamba_n_heads); the handlers resolve it.
AUTO_VALUED = frozenset({"mamba_d_head"})


def bounds(key: str) -> tuple[int, int]:
    """(minimum, maximum) for ``key``: its row in ``LIMITS``, else (0, MAX_COUNT)."""
    return LIMITS.get(key, (0, MAX_COUNT))


def checked_count(
    value: Any, key: str, *, where: str, minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    """``value`` as the count ``key`` must be, else ``ConfigError`` naming ``where`` and key.

    A bool is not an integer (``True`` would be one layer), nor is ``32.0`` (transformers
    keeps it a float and vLLM's ``range(32.0)`` fails), NaN or infinity.
    """
    low, high = bounds(key)
    low = low if minimum is None else minimum
    high = high if maximum is None else maximum
    if isinstance(value, bool) or not isinstance(value, int):
        shown = _shown(value)
        raise ConfigError(f"{where}: {key!r} must be an integer, got {shown}")
    if value < low:
        raise ConfigError(f"{where}: {key!r} must be >= {low}, got {value}")
    if value > high:
        raise ConfigError(
            f"{where}: {key!r} must be <= {high:,} (kvledger's bound, far above any released "
            f"model), got {_shown(value)}"
        )
    return value


def _shown(value: Any) -> str:
    """A value for a one-line message: short, even for a 400-digit integer or a deep list."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"a {len(str(abs(value)))}-digit number"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list | dict):
        return f"a JSON {'array' if isinstance(value, list) else 'object'}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_dtype(value: Any, key: str, *, where: str) -> str | None:
    """A config's ``torch_dtype`` / ``dtype``: None (absent) or a torch floating type name.

    Why strict: an unreadable value used to mean "no dtype", which transformers loads as
    float32 — a KV cache twice the size, with exit 0.
    """
    if value is None:
        return None
    name = value.removeprefix("torch.") if isinstance(value, str) else None
    if name not in CONFIG_DTYPES:
        raise ConfigError(
            f"{where}: {key!r} must name a floating dtype ({', '.join(sorted(CONFIG_DTYPES))}) "
            f"or be absent, got {_shown(value)}"
        )
    return name


def check_values(raw: Mapping[str, Any], *, where: str, path: str = "") -> None:
    """Every ``LIMITS`` key and dtype key ``raw`` states (not null), checked once.

    Keys are checked whether or not this model type's handler reads them: the weights
    estimate reads the MLP and expert widths, and a malformed value in a config is malformed
    whichever reader meets it first. ``path`` prefixes key names (``text_config.``).
    """
    for key, value in raw.items():
        if value is None or (value == "auto" and key in AUTO_VALUED):
            continue
        if key in PER_LAYER_LISTS and isinstance(value, list):
            for i, item in enumerate(value):
                checked_count(item, f"{path}{key}[{i}]", where=where,
                              minimum=LIMITS[key][0], maximum=LIMITS[key][1])
        elif key in LIMITS:
            checked_count(value, f"{path}{key}", where=where, minimum=LIMITS[key][0],
                          maximum=LIMITS[key][1])
        elif key in ("torch_dtype", "dtype"):
            check_dtype(value, f"{path}{key}", where=where)


# Bounds on what a handler derived, whatever key it read (a nested block such as DBRX's
# attn_config.kv_n_heads is read by its handler, not through ``Config.int``): each integer
# fact of a layer, the KV bytes one token costs over the whole model (the largest released
# models need about 2 MiB), and the fixed state one request holds.
MAX_TOKEN_BYTES = 1 << 40
MAX_REQUEST_BYTES = 1 << 60


def check_layers(groups: Iterable[Any], *, where: str) -> None:
    """Every integer field of every derived layer <= ``MAX_COUNT``, and the model's bytes per
    token and per request within their bounds: one line naming the layer and the field, so a
    value no table lists cannot become a 400-digit plan.

    ``groups``: the layers as groups of equal layers (``derive.layers.group_layers``, a
    ``LayerGroup`` each), as they are planned: one check per distinct layer, its bytes
    counted once per member."""
    per_token = per_request = 0
    for group in groups:
        layer, members = group.layer, len(group.indices)
        for f in fields(layer):
            value = getattr(layer, f.name)
            if isinstance(value, int) and not isinstance(value, bool) and value > MAX_COUNT:
                raise ConfigError(
                    f"{where}: layer {layer.index} ({type(layer).__name__}) {f.name} = "
                    f"{_shown(value)} is beyond kvledger's bound ({MAX_COUNT:,}); check the "
                    "config's head counts and sizes")
        if layer.owns_memory:
            try:
                per_token += layer.bytes_per_token() * members
                per_request += layer.bytes_per_request() * members
            except ValueError:
                continue  # a kind with no whole bytes per token (compressed): fields bound it
    if per_token > MAX_TOKEN_BYTES or per_request > MAX_REQUEST_BYTES:
        raise ConfigError(
            f"{where}: the config's sizes make {_shown(per_token)} B of KV cache per token and "
            f"{_shown(per_request)} B of state per request, beyond kvledger's bounds (2**40, "
            "2**60); check its head counts and sizes")

"""Attention interleaved with recurrent layers, one layer list each: Granite-4.0-H
(``granitemoehybrid``: Mamba2), Jamba (Mamba1) and LFM2 (short convolution).

Every attention layer here caches K and V of ``num_key_value_heads`` × ``hidden_size //
num_attention_heads`` (the three model files compute the head dim and read no ``head_dim``)
with no window; the recurrent layers keep a fixed per-request state in the model dtype
(vLLM ``mamba_cache_dtype`` / ``mamba_ssm_cache_dtype`` "auto").

* granitemoehybrid (vLLM ``granitemoehybrid.py``): ``layer_types`` (legacy names ``mamba`` /
  ``attention`` are remapped by transformers to ``linear_attention`` / ``full_attention``;
  default all Mamba). Mamba2 mixer: intermediate ``mamba_expand × hidden_size``,
  ``mamba_n_heads`` × ``mamba_d_head`` (``"auto"``: intermediate / heads), ``mamba_n_groups``,
  ``mamba_d_state``, ``mamba_d_conv``. A config whose layers are all attention keeps no state,
  and vLLM then plans it as a plain decoder.
* jamba (vLLM ``jamba.py``; ``JambaConfig.layers_block_type``): layer i is attention when
  ``i % attn_layer_period == attn_layer_offset``, else a Mamba1 mixer of intermediate
  ``mamba_expand × hidden_size``, ``mamba_d_state``, ``mamba_d_conv``.
* lfm2 (vLLM ``lfm2.py``): ``layer_types`` entries ``full_attention`` or ``conv`` (default:
  ``full_attn_idxs``, else every layer attention, ``Lfm2Config.__post_init__``); a conv layer
  keeps ``(conv_L_cache - 1) × conv_dim`` (``short_conv_state_shape``); ``conv_L_cache`` 1
  would leave a zero-byte state (a zero-size page in vLLM's pool) and is refused.
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.families.standard import attention, divided_head_dim
from kvledger.derive.kvdtype import model_dtype
from kvledger.derive.layers import FullAttention, LayerCache
from kvledger.derive.registry import Derived
from kvledger.derive.states import Mamba1State, Mamba2State, ShortConvState

# transformers 5.19 configuration_utils._LEGACY_LAYER_TYPE_REMAP (the part that applies here).
LEGACY_LAYER_TYPES = {"mamba": "linear_attention", "attention": "full_attention"}


def _attention(cfg: Config, kv_dtype: str) -> FullAttention:
    heads = cfg.int("num_attention_heads", minimum=1)
    dim = divided_head_dim(cfg, heads, hidden_key="hidden_size")
    kv_heads = cfg.int("num_key_value_heads", heads, minimum=1)
    layer = attention(0, kv_heads, dim, kv_dtype)
    assert isinstance(layer, FullAttention)
    return layer


def _types(cfg: Config, n: int, default: list[str], allowed: tuple[str, ...],
           remap: dict[str, str] | None = None) -> list[str]:
    stated = cfg.get("layer_types")
    if stated is None:
        return default
    if not isinstance(stated, list) or len(stated) != n:
        raise ConfigError(f"{cfg.model}: layer_types must list {n} entries, got {stated!r}")
    types = [(remap or {}).get(str(t), str(t)) for t in stated]
    bad = sorted({t for t in types if t not in allowed})
    if bad:
        raise UnsupportedArchitecture(
            f"unsupported: {cfg.model_type} layer_types has {bad}; understood: "
            f"{', '.join(allowed)}",
            model_type=cfg.model_type,
        )
    return types


def _assemble(template: dict[str, LayerCache], types: list[str]) -> list[LayerCache]:
    return [template[t].at(i) for i, t in enumerate(types)]


def _notes(kind: str, types: list[str], state: LayerCache) -> list[str]:
    recurrent = sum(1 for t in types if t != "full_attention")
    return [f"{len(types) - recurrent} attention and {recurrent} {kind} layers; "
            f"{kind} state {state.bytes_per_request()} B per request per layer (model dtype)"]


def lfm2_moe(cfg: Config, kv_dtype: str) -> Derived:
    """LFM2-MoE (vLLM lfm2_moe.py): a layer is attention where ``config.layer_types`` says
    full_attention, else a short convolution whose state is ``hidden_size`` wide
    (``Lfm2MoeForCausalLM.get_mamba_state_shape_from_config``), kernel ``conv_L_cache``.
    Lfm2MoeConfig leaves ``layer_types`` None and builds none, and the model file indexes it,
    so a config that states none is refused."""
    n = cfg.int("num_hidden_layers")
    if cfg.get("layer_types") is None:
        raise UnsupportedArchitecture(
            f"unsupported: {cfg.model_type} config states no layer_types; Lfm2MoeConfig builds "
            "none and vLLM's lfm2_moe.py indexes config.layer_types to place its attention "
            "layers, so vLLM stops with \"TypeError: 'NoneType' object is not subscriptable\"",
            model_type=cfg.model_type,
        )
    types = _types(cfg, n, [], ("full_attention", "conv"))
    state = ShortConvState(index=0, intermediate_size=cfg.int("hidden_size", minimum=1),
                           conv_kernel=cfg.int("conv_L_cache", minimum=2),
                           conv_dtype=model_dtype(cfg))
    layers = _assemble({"conv": state, "full_attention": _attention(cfg, kv_dtype)}, types)
    return Derived(layers, _notes("short-conv", types, state))


def granitemoehybrid(cfg: Config, kv_dtype: str) -> Derived:
    n = cfg.int("num_hidden_layers")
    hidden = cfg.int("hidden_size")
    inner = cfg.int("mamba_expand") * hidden
    heads = cfg.int("mamba_n_heads", minimum=1)
    stated_dim = cfg.get("mamba_d_head")
    # GraniteMoeHybridConfig.__post_init__: "auto" -> intermediate // heads; its
    # validate_architecture then refuses heads x head_dim != intermediate.
    head_dim = inner // heads if stated_dim == "auto" else cfg.int("mamba_d_head")
    if inner % heads or head_dim * heads != inner:
        raise UnsupportedArchitecture(
            f"unsupported: granitemoehybrid mamba_n_heads x mamba_d_head ({heads} x "
            f"{head_dim}) != mamba_expand x hidden_size ({inner}); transformers' "
            "GraniteMoeHybridConfig rejects this config, so vLLM cannot load it",
            model_type=cfg.model_type,
        )
    state = Mamba2State(
        index=0, intermediate_size=inner, n_groups=cfg.int("mamba_n_groups", minimum=1),
        num_heads=heads, head_dim=head_dim, state_size=cfg.int("mamba_d_state", minimum=1),
        conv_kernel=cfg.int("mamba_d_conv", minimum=1), conv_dtype=model_dtype(cfg),
    )
    types = _types(cfg, n, ["linear_attention"] * n, ("linear_attention", "full_attention"),
                   LEGACY_LAYER_TYPES)
    layers = _assemble({"linear_attention": state,
                        "full_attention": _attention(cfg, kv_dtype)}, types)
    return Derived(layers, _notes("Mamba2", types, state))


def jamba(cfg: Config, kv_dtype: str) -> Derived:
    n = cfg.int("num_hidden_layers")
    period = cfg.int("attn_layer_period", minimum=1)
    offset = cfg.int("attn_layer_offset")
    if offset >= period:
        # JambaConfig.validate_architecture refuses it.
        raise ConfigError(f"{cfg.model}: attn_layer_offset {offset} must be smaller than "
                          f"attn_layer_period {period}")
    types = ["full_attention" if i % period == offset else "mamba" for i in range(n)]
    state = Mamba1State(
        index=0, intermediate_size=cfg.int("mamba_expand") * cfg.int("hidden_size"),
        state_size=cfg.int("mamba_d_state", minimum=1),
        conv_kernel=cfg.int("mamba_d_conv", minimum=1), conv_dtype=model_dtype(cfg),
    )
    layers = _assemble({"mamba": state, "full_attention": _attention(cfg, kv_dtype)}, types)
    return Derived(layers, _notes("Mamba1", types, state))


def lfm2(cfg: Config, kv_dtype: str) -> Derived:
    n = cfg.int("num_hidden_layers")
    full = cfg.get("full_attn_idxs")
    if full is not None and (not isinstance(full, list) or any(
            isinstance(i, bool) or not isinstance(i, int) for i in full)):
        raise ConfigError(f"{cfg.model}: full_attn_idxs must list layer indices")
    attn_at = set(range(n)) if full is None else set(full)
    default = ["full_attention" if i in attn_at else "conv" for i in range(n)]
    types = _types(cfg, n, default, ("full_attention", "conv"))
    state = ShortConvState(index=0, intermediate_size=cfg.int("conv_dim", minimum=1),
                           conv_kernel=cfg.int("conv_L_cache", minimum=2),
                           conv_dtype=model_dtype(cfg))
    layers = _assemble({"conv": state, "full_attention": _attention(cfg, kv_dtype)}, types)
    return Derived(layers, _notes("short-conv", types, state))

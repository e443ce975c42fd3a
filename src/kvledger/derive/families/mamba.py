"""Mamba hybrids and pure Mamba: Nemotron-H / Nemotron-3 (``nemotron_h``), Zamba2 (HF
``zamba2`` and Zyphra's native format), ``mamba`` (Mamba1) and ``mamba2``.

Nemotron-H (vLLM ``nemotron_h.py``): ``hybrid_override_pattern`` has one character per
layer: ``M`` Mamba2 mixer, ``*`` attention, ``-`` MLP and ``E`` MoE (no cache). Mamba2
geometry: ``mamba_num_heads`` x ``mamba_head_dim`` (= intermediate size), ``n_groups``,
``ssm_state_size``, ``conv_kernel``. MTP: ``num_nextn_predict_layers`` repetitions of
``mtp_hybrid_override_pattern`` (vLLM ``NemotronHMultiTokenPredictor``). The SSM state is
``mamba_ssm_cache_dtype`` when the config states it, else float32 — vLLM's
``NemotronHForCausalLMConfig`` default ("only float32 is known to have no accuracy issues").

Zamba2 (Zyphra ``mamba_block.py``; vLLM ``zamba2.py``): every layer is a Mamba2 layer; at
each ``g`` (HF: ``hybrid``) position one of ``num_mem_blocks`` shared transformer blocks runs
first. The blocks share weights, but every invocation keeps its own KV cache (Zyphra keys the
cache by invocation, ``forward_layer_idx``), so each ``g`` position is one attention cache of
``num_attention_heads`` x ``2·kv_channels`` (the block attends over ``2·hidden_size``
features). Native-format defaults (``mamba_headdim`` 64, ``mamba_ngroups`` 1) are those of
Zyphra's own ``MambaConfig``.
"""

from __future__ import annotations

from typing import Any

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.kvdtype import model_dtype
from kvledger.derive.layers import FullAttention, LayerCache, NoCache, Role
from kvledger.derive.registry import Derived
from kvledger.derive.states import Mamba1State, Mamba2State

FAMILY = "mamba"

NEMOTRON_SYMBOLS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}


def _at(template: LayerCache, index: int, role: Role = Role.DECODER) -> LayerCache:
    return template.at(index, role)


def _dense_attention(cfg: Config, kv_dtype: str) -> FullAttention:
    heads = cfg.int("num_attention_heads")
    kv_heads = cfg.int("num_key_value_heads", heads)
    dims = {k: cfg.int(k) for k in ("head_dim", "attention_head_dim") if k in cfg}
    if len(set(dims.values())) > 1:
        raise ConfigError(f"{cfg.model}: head_dim and attention_head_dim disagree: {dims}")
    head_dim = next(iter(dims.values())) if dims else cfg.int("hidden_size") // heads
    return FullAttention(index=0, k_heads=kv_heads, k_dim=head_dim, v_heads=kv_heads,
                         v_dim=head_dim, dtype=kv_dtype)


# layers_block_type names (transformers 5.19 NemotronHConfig, after its legacy remap
# "mamba" -> "linear_attention", "attention" -> "full_attention") -> pattern symbols.
BLOCK_TYPE_SYMBOLS = {
    "linear_attention": "M", "mamba": "M", "full_attention": "*", "attention": "*",
    "mlp": "-", "moe": "E",
}
_DEFAULT_MTP_BLOCKS = ("full_attention", "moe")  # NemotronHConfig's mtp_layers_block_type


def _pattern(cfg: Config, key: str) -> str:
    value = cfg.require(key)
    if not isinstance(value, str):
        raise ConfigError(f"{cfg.model}: {key} must be a string")
    unknown = sorted(set(value) - set(NEMOTRON_SYMBOLS))
    if unknown:
        raise UnsupportedArchitecture(f"{cfg.model}: {key} has unknown layer symbols {unknown}")
    return value


def _blocks(cfg: Config, key: str) -> str:
    """A ``layers_block_type``-style list as a pattern string."""
    value = cfg.require(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{cfg.model}: {key} must be a list of layer type names")
    unknown = sorted({v for v in value if v not in BLOCK_TYPE_SYMBOLS})
    if unknown:
        raise UnsupportedArchitecture(f"{cfg.model}: {key} has unknown layer types {unknown}")
    return "".join(BLOCK_TYPE_SYMBOLS[v] for v in value)


def nemotron_pattern(cfg: Config, warnings: list[str]) -> str:
    """The per-layer pattern as transformers 5.19's NemotronHConfig builds it (and vLLM's
    nemotron_h.py reads it back as ``hybrid_override_pattern``): ``layers_block_type`` when
    stated, else the legacy ``hybrid_override_pattern``. The layer count is the pattern's
    length; a ``num_hidden_layers`` that disagrees is ignored by the config class ("Using
    layers_block_type length"), so it is a warning here, not an error."""
    if "layers_block_type" in cfg:
        pattern = _blocks(cfg, "layers_block_type")
        if "hybrid_override_pattern" in cfg and _pattern(cfg, "hybrid_override_pattern") != pattern:
            warnings.append(
                f"{cfg.model_type}: hybrid_override_pattern disagrees with layers_block_type; "
                "transformers' NemotronHConfig keeps layers_block_type (vLLM reads it), so "
                "kvledger does too"
            )
    else:
        pattern = _pattern(cfg, "hybrid_override_pattern")
    stated = cfg.get("num_hidden_layers")
    if stated is not None and stated != len(pattern):
        warnings.append(
            f"{cfg.model_type}: num_hidden_layers {stated} disagrees with the {len(pattern)} "
            "layers the pattern lists; NemotronHConfig derives the layer count from the "
            f"pattern (vLLM builds {len(pattern)} layers), so kvledger does too"
        )
    return pattern


def _mtp_pattern(cfg: Config) -> str:
    """NemotronHConfig: an explicit ``mtp_layers_block_type`` wins; else the legacy
    ``mtp_hybrid_override_pattern``; else the class default [full_attention, moe]."""
    if "mtp_layers_block_type" in cfg:
        blocks = cfg.get("mtp_layers_block_type")
        remapped = tuple(BLOCK_TYPE_SYMBOLS.get(b, b) for b in blocks) if isinstance(
            blocks, list) else None
        default = tuple(BLOCK_TYPE_SYMBOLS[b] for b in _DEFAULT_MTP_BLOCKS)
        if remapped != default or "mtp_hybrid_override_pattern" not in cfg:
            return _blocks(cfg, "mtp_layers_block_type")
    if "mtp_hybrid_override_pattern" in cfg:
        return _pattern(cfg, "mtp_hybrid_override_pattern")
    return "".join(BLOCK_TYPE_SYMBOLS[b] for b in _DEFAULT_MTP_BLOCKS)


def _derive_nemotron_h(cfg: Config, kv_dtype: str) -> Derived:
    warnings: list[str] = []
    pattern = nemotron_pattern(cfg, warnings)
    n = len(pattern)
    heads, head_dim = cfg.int("mamba_num_heads"), cfg.int("mamba_head_dim")
    inner = heads * head_dim  # vLLM nemotron_h: intermediate = mamba_num_heads * mamba_head_dim
    if "expand" in cfg and cfg.int("expand") * cfg.int("hidden_size") != inner:
        warnings.append(
            f"{cfg.model_type}: expand x hidden_size = "
            f"{cfg.int('expand') * cfg.int('hidden_size')} disagrees with mamba_num_heads x "
            f"mamba_head_dim = {inner}; vLLM's nemotron_h.py sizes the Mamba2 state from "
            f"mamba_num_heads x mamba_head_dim, so kvledger uses {inner}"
        )
    stated = cfg.get("mamba_ssm_cache_dtype")
    mdtype = model_dtype(cfg)
    state = Mamba2State(
        index=0, intermediate_size=inner, n_groups=cfg.int("n_groups"), num_heads=heads,
        head_dim=head_dim, state_size=cfg.int("ssm_state_size"),
        conv_kernel=cfg.int("conv_kernel"), conv_dtype=mdtype,
        temporal_dtype=str(stated) if stated is not None else "float32",
        temporal_dtype_source=("config mamba_ssm_cache_dtype" if stated is not None else
                               "vLLM NemotronH default float32 (config states none)"),
        temporal_follows_conv=False,
    )
    attn = _dense_attention(cfg, kv_dtype)
    none = NoCache(index=0, dtype=kv_dtype)
    by_symbol: dict[str, LayerCache] = {"M": state, "*": attn, "-": none, "E": none}
    layers = [_at(by_symbol[c], i) for i, c in enumerate(pattern)]
    mtp = cfg.int("num_nextn_predict_layers", 0)
    mtp_pattern = _mtp_pattern(cfg) if mtp else ""
    for k, c in enumerate(mtp_pattern * mtp):
        layers.append(_at(by_symbol[c], n + k, Role.MTP))
    notes = [f"Mamba2 state: conv {state.conv_dtype}, SSM {state.temporal_dtype} "
             f"({state.temporal_dtype_source}); kv_cache_dtype does not apply to it"]
    if mtp:
        notes.append(f"MTP: {mtp} x pattern {mtp_pattern!r}")
    return Derived(layers=layers, notes=notes, warnings=warnings)


def _zamba2_layout(cfg: Config) -> tuple[list[bool], dict[str, Any]]:
    """(per-layer "has a shared-attention invocation", Mamba2 + attention geometry)."""
    hidden = cfg.int("hidden_size")
    heads = cfg.int("num_attention_heads")
    if "layer_mapping" in cfg:  # Zyphra native
        mapping = cfg.require("layer_mapping")
        if not isinstance(mapping, list) or any(m not in ("m", "g") for m in mapping):
            raise UnsupportedArchitecture(f"{cfg.model}: layer_mapping entries other than "
                                          "'m'/'g' are not checked")
        if len(mapping) != cfg.int("num_layers"):
            raise ConfigError(f"{cfg.model}: layer_mapping length != num_layers")
        if cfg.int("num_mem_heads", heads) != heads:
            raise UnsupportedArchitecture(f"{cfg.model}: num_mem_heads != num_attention_heads "
                                          "is not checked")
        expand = cfg.int("expansion_factor")
        head_dim = cfg.int("mamba_headdim", 64)  # Zyphra MambaConfig default
        geometry = {
            "inner": expand * hidden, "n_groups": cfg.int("mamba_ngroups", 1),
            "heads": expand * hidden // head_dim, "head_dim": head_dim,
            "state": cfg.int("state_size"), "kernel": cfg.int("conv_dimension"),
            # Zyphra attention.py: K/V per head are 2 * kv_channels wide, num_query_groups
            # (default num_attention_heads) KV heads.
            "kv_heads": heads, "kv_dim": 2 * cfg.int("kv_channels", hidden // heads),
        }
        return [m == "g" for m in mapping], geometry
    types = cfg.require("layers_block_type")
    if not isinstance(types, list) or any(t not in ("mamba", "hybrid") for t in types):
        raise UnsupportedArchitecture(f"{cfg.model}: layers_block_type entries other than "
                                      "'mamba'/'hybrid' are not checked")
    if len(types) != cfg.int("num_hidden_layers"):
        raise ConfigError(f"{cfg.model}: layers_block_type length != num_hidden_layers")
    geometry = {
        "inner": cfg.int("mamba_expand") * hidden, "n_groups": cfg.int("mamba_ngroups"),
        "heads": cfg.int("n_mamba_heads"), "head_dim": cfg.int("mamba_headdim"),
        "state": cfg.int("mamba_d_state"), "kernel": cfg.int("mamba_d_conv"),
        "kv_heads": cfg.int("num_key_value_heads", heads),
        "kv_dim": cfg.int("attention_head_dim", 2 * hidden // heads),
    }
    return [t == "hybrid" for t in types], geometry


def _derive_zamba2(cfg: Config, kv_dtype: str) -> Derived:
    shared, g = _zamba2_layout(cfg)
    if g["heads"] * g["head_dim"] != g["inner"]:
        raise ConfigError(f"{cfg.model}: Mamba2 heads x head_dim != expand x hidden_size")
    state = Mamba2State(
        index=0, intermediate_size=g["inner"], n_groups=g["n_groups"], num_heads=g["heads"],
        head_dim=g["head_dim"], state_size=g["state"], conv_kernel=g["kernel"],
        conv_dtype=model_dtype(cfg),
    )
    attn = FullAttention(index=0, k_heads=g["kv_heads"], k_dim=g["kv_dim"],
                         v_heads=g["kv_heads"], v_dim=g["kv_dim"], dtype=kv_dtype,
                         note="shared-weight block; this invocation's own KV cache")
    layers: list[LayerCache] = []
    for i, has_attn in enumerate(shared):
        if has_attn:
            layers.append(_at(attn, i))
        layers.append(_at(state, i))
    notes = [f"Zamba2: {sum(shared)} shared-attention invocations, each with its own KV "
             f"cache, plus {len(shared)} Mamba2 layers"]
    return Derived(layers=layers, notes=notes)


def _derive_mamba1(cfg: Config) -> Derived:
    """Mamba1 (vLLM mamba.py ``get_mamba_state_shape_from_config`` reads
    ``config.intermediate_size``; FalconMamba uses the same model file). transformers 5.19's
    MambaConfig / FalconMambaConfig ``__post_init__`` set ``intermediate_size = int(expand *
    hidden_size)``, but a value the file states is applied after it (the keys the dataclass
    does not declare go through ``PreTrainedConfig.__post_init__(**kwargs)`` last:
    ``MambaConfig.from_dict({"hidden_size": 768, "expand": 2, "intermediate_size": 1000})``
    keeps 1000), so vLLM sizes the state with the stated value, and with expand × hidden_size
    only when the file states none. Where the two disagree (falcon-mamba-7b: expand 16,
    intermediate_size 8192) the stated one is planned, with a warning."""
    warnings: list[str] = []
    inner = cfg.int("expand") * cfg.int("hidden_size")
    if cfg.stated("intermediate_size"):
        stated = cfg.int("intermediate_size", minimum=1)
        if stated != inner:
            warnings.append(
                f"{cfg.model_type}: expand x hidden_size = {inner} disagrees with "
                f"intermediate_size {stated}; transformers keeps the stated intermediate_size "
                "(what vLLM's mamba.py reads), so kvledger uses it"
            )
        inner = stated
    state = Mamba1State(
        index=0, intermediate_size=inner, state_size=cfg.int("state_size"),
        conv_kernel=cfg.int("conv_kernel"), conv_dtype=model_dtype(cfg),
    )
    n = cfg.int("num_hidden_layers")
    return Derived(layers=[_at(state, i) for i in range(n)], warnings=warnings)


def _derive_mamba2(cfg: Config) -> Derived:
    """Mamba2 (vLLM mamba2.py ``get_mamba_state_shape_from_config``: intermediate
    ``expand * hidden_size``, ``num_heads`` x ``head_dim``). transformers 5.19's Mamba2Config
    refuses a config where the two disagree (``validate_architecture``: "Inconsistent
    configuration"), so vLLM cannot load one and neither does kvledger."""
    inner = cfg.int("expand") * cfg.int("hidden_size")
    heads, head_dim = cfg.int("num_heads"), cfg.int("head_dim")
    if heads * head_dim != inner:
        raise UnsupportedArchitecture(
            f"unsupported: mamba2 hidden_size x expand ({inner}) != num_heads x head_dim "
            f"({heads * head_dim}); transformers' Mamba2Config rejects this config "
            "('Inconsistent configuration'), so vLLM cannot load it",
            model_type="mamba2",
        )
    state = Mamba2State(
        index=0, intermediate_size=inner, n_groups=cfg.int("n_groups"),
        num_heads=heads, head_dim=head_dim,
        state_size=cfg.int("state_size"), conv_kernel=cfg.int("conv_kernel"),
        conv_dtype=model_dtype(cfg),
    )
    n = cfg.int("num_hidden_layers")
    return Derived(layers=[_at(state, i) for i in range(n)])


def nemotron_h(cfg: Config, kv_dtype: str) -> Derived:
    return _derive_nemotron_h(cfg, kv_dtype)


def zamba2(cfg: Config, kv_dtype: str) -> Derived:
    return _derive_zamba2(cfg, kv_dtype)


def mamba1(cfg: Config, kv_dtype: str) -> Derived:
    return _derive_mamba1(cfg)


def mamba2(cfg: Config, kv_dtype: str) -> Derived:
    return _derive_mamba2(cfg)

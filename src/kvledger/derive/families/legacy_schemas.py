"""Decoders whose configs predate transformers' standard attention keys: Falcon, ChatGLM /
GLM-4 (THUDM's own schema), GPT-BigCode (StarCoder, SantaCoder, WizardCoder) and BLOOM.

Every layer is ordinary K/V attention; what differs is where the head counts live and how
the KV-head count follows from flags. Each function cites the vLLM 0.32 model file (or, for
GPT-BigCode, the Transformers backend) whose ``Attention`` it mirrors, and the config class
that fills in what config.json omits (its defaults are in the model-type row).
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.families.standard import attention, divided_head_dim
from kvledger.derive.layers import LayerCache
from kvledger.derive.registry import Derived


def _one_of(cfg: Config, name: str, alias: str) -> int:
    """An integer the config class stores under ``name`` and also accepts as ``alias``
    (transformers' ``attribute_map``): stating both with different values is ambiguous."""
    if cfg.stated(name) and cfg.stated(alias) and cfg.int(name) != cfg.int(alias):
        raise ConfigError(
            f"{cfg.model}: {name}={cfg.int(name)} and {alias}={cfg.int(alias)} disagree "
            "(the config class reads them as one value)"
        )
    return cfg.int(alias) if cfg.stated(alias) else cfg.int(name)


def _layers(n: int, kv_heads: int, dim: int, kv_dtype: str) -> list[LayerCache]:
    return [attention(i, kv_heads, dim, kv_dtype) for i in range(n)]


def falcon(cfg: Config, kv_dtype: str) -> Derived:
    """Falcon (vLLM falcon.py ``FalconAttention``): head dim ``hidden_size //
    num_attention_heads``; KV heads ``num_kv_heads`` when ``new_decoder_architecture``
    (Falcon-40B/180B: grouped), else 1 when ``multi_query`` (Falcon-7B), else one per query
    head. FalconConfig (transformers 5.19) fills ``num_kv_heads`` = ``num_attention_heads``
    when absent and takes a legacy ``n_embed`` as ``hidden_size``.

    The legacy names ``n_head`` / ``n_layer`` are not FalconConfig fields (no attribute map):
    vLLM ignores them. Where a file states only those, vLLM would build the class defaults
    (71 heads, 32 layers) whatever they say, so kvledger refuses rather than plan that; where
    they disagree with the fields vLLM reads, it warns.
    """
    warnings: list[str] = []
    for legacy, field in (("n_head", "num_attention_heads"), ("n_layer", "num_hidden_layers")):
        if not cfg.stated(legacy):
            continue
        if not cfg.stated(field):
            raise UnsupportedArchitecture(
                f"unsupported: falcon config states {legacy}={cfg.get(legacy)!r} but not "
                f"{field}; FalconConfig (transformers 5.19) has no {legacy} field, so an "
                f"engine loading it through that class builds the default {field} instead",
                model_type=cfg.model_type,
            )
        if cfg.int(legacy) != cfg.int(field):
            warnings.append(f"falcon: {legacy}={cfg.int(legacy)} is ignored; vLLM reads "
                            f"{field}={cfg.int(field)}")
    heads = cfg.int("num_attention_heads", minimum=1)
    hidden = cfg.int("n_embed") if cfg.stated("n_embed") else cfg.int("hidden_size")
    if hidden % heads:
        raise ConfigError(f"{cfg.model}: hidden_size={hidden} is not divisible by {heads} heads")
    if cfg.get("new_decoder_architecture", False):
        kv_heads = cfg.int("num_kv_heads", heads)
        how = f"new_decoder_architecture: num_kv_heads {kv_heads}"
    elif cfg.get("multi_query", True):
        kv_heads, how = 1, "multi_query: one KV head"
    else:
        kv_heads, how = heads, "multi-head: one KV head per query head"
    n = cfg.int("num_hidden_layers")
    return Derived(_layers(n, kv_heads, hidden // heads, kv_dtype), [f"falcon {how}"],
                   warnings=warnings)


def chatglm(cfg: Config, kv_dtype: str) -> Derived:
    """ChatGLM2/3 and GLM-4 in THUDM's schema (vLLM chatglm.py ``GLMAttention``; config class
    vLLM's own ``ChatGLMConfig``): ``num_layers`` layers; KV heads ``multi_query_group_num``
    when ``multi_query_attention``, else ``num_attention_heads``; head dim
    ``hidden_size // num_attention_heads``. ``kv_channels`` (the per-head width the remote
    code uses) is not read by vLLM; if it disagrees, vLLM's width is used and a warning says
    so."""
    heads = cfg.int("num_attention_heads", minimum=1)
    dim = divided_head_dim(cfg, heads, hidden_key="hidden_size")
    warnings: list[str] = []
    if cfg.stated("kv_channels") and cfg.int("kv_channels") != dim:
        warnings.append(f"chatglm: kv_channels {cfg.int('kv_channels')} disagrees with "
                        f"hidden_size / num_attention_heads = {dim}; vLLM's chatglm.py uses {dim}")
    if cfg.get("multi_query_attention", False):
        kv_heads = cfg.int("multi_query_group_num", minimum=1)
        note = f"multi_query_attention: {kv_heads} KV head group(s) (multi_query_group_num)"
    else:
        kv_heads, note = heads, "multi_query_attention off: one KV head per query head"
    return Derived(_layers(cfg.int("num_layers"), kv_heads, dim, kv_dtype), [note],
                   warnings=warnings)


def gpt_bigcode(cfg: Config, kv_dtype: str) -> Derived:
    """GPT-BigCode (StarCoder, SantaCoder; vLLM 0.32 serves it through its Transformers
    backend, transformers/base.py ``_create_attention_instances``): ``n_layer`` layers of
    head dim ``n_embd // n_head`` (the backend's head size when the config has no
    ``head_dim``); KV heads from GPTBigCodeConfig's ``__post_init__``, which sets
    ``num_key_value_heads`` = 1 when ``multi_query`` (the class default) else ``n_head`` —
    overriding any value the file states."""
    heads = _one_of(cfg, "n_head", "num_attention_heads")
    embd = _one_of(cfg, "n_embd", "hidden_size")
    if heads < 1 or embd % heads:
        raise ConfigError(f"{cfg.model}: n_embd={embd} is not divisible by n_head={heads}")
    kv_heads = 1 if cfg.get("multi_query", True) else heads
    warnings: list[str] = []
    if cfg.stated("num_key_value_heads") and cfg.int("num_key_value_heads") != kv_heads:
        warnings.append(f"gpt_bigcode: num_key_value_heads {cfg.int('num_key_value_heads')} is "
                        f"replaced by GPTBigCodeConfig (multi_query → {kv_heads})")
    n = _one_of(cfg, "n_layer", "num_hidden_layers")
    note = "multi_query: one KV head" if kv_heads == 1 else "multi-head attention"
    return Derived(_layers(n, kv_heads, embd // heads, kv_dtype), [note], warnings=warnings)


def bloom(cfg: Config, kv_dtype: str) -> Derived:
    """BLOOM (vLLM bloom.py ``BloomAttention``): ``n_layer`` layers (BloomConfig maps
    ``num_hidden_layers`` onto it) of ``n_head`` heads (``num_attention_heads`` likewise),
    multi-head, head dim ``hidden_size // n_head``; a legacy ``n_embed`` is the hidden size
    (BloomConfig ``__post_init__``). ALiBi biases the scores and adds no cache."""
    heads = _one_of(cfg, "n_head", "num_attention_heads")
    hidden = cfg.int("n_embed") if cfg.stated("n_embed") else cfg.int("hidden_size")
    if heads < 1 or hidden % heads:
        raise ConfigError(f"{cfg.model}: hidden size {hidden} is not divisible by {heads} heads")
    n = _one_of(cfg, "n_layer", "num_hidden_layers")
    return Derived(_layers(n, heads, hidden // heads, kv_dtype),
                   ["ALiBi position biases: no cache of their own"])


# MptAttentionConfig's attention kinds (transformers configuration_mpt.py): only multi-head
# attention is built by transformers' MptAttention (modeling_mpt.py, one K and V head per
# query head); llm-foundry's multi-query / grouped-query variants are refused by name.
_MPT_ATTENTION = "multihead_attention"


def mpt(cfg: Config, kv_dtype: str) -> Derived:
    """MPT (transformers ``MptForCausalLM``, modeling_mpt.py ``MptAttention``): ``n_layers``
    blocks of multi-head attention, ``n_heads`` K/V heads of ``d_model // n_heads``; ALiBi
    instead of RoPE, which caches nothing. ``MptConfig`` (transformers 5.x) defaults
    ``d_model`` 2048, ``n_heads`` 16, ``n_layers`` 24 and ``attn_config.attn_type``
    "multihead_attention"; ``max_seq_len`` (2048) is its length, which derive's length rule
    reads. No engine kvledger plans for serves MPT today (vLLM dropped its model in 0.28):
    these facts are the reference implementation's, for the native layout."""
    attn = cfg.get("attn_config") or {}
    if not isinstance(attn, dict):
        raise ConfigError(f"{cfg.model}: attn_config must be an object, got {attn!r}")
    kind = attn.get("attn_type", _MPT_ATTENTION)
    if kind != _MPT_ATTENTION:
        raise UnsupportedArchitecture(
            f"unsupported: mpt attn_config.attn_type {kind!r}: transformers' MptAttention "
            f"builds only {_MPT_ATTENTION!r}, and kvledger has not checked another",
            model_type=cfg.model_type, architectures=cfg.architectures)
    for key in ("kv_n_heads", "sliding_window_size"):
        if attn.get(key) not in (None, -1) and key in attn:
            raise UnsupportedArchitecture(
                f"unsupported: mpt attn_config.{key}={attn[key]!r} is an llm-foundry option "
                "transformers' MptAttention does not read; kvledger has not checked it",
                model_type=cfg.model_type, architectures=cfg.architectures)
    heads = cfg.int("n_heads")
    width = cfg.int("d_model")
    if width % heads:
        raise ConfigError(f"{cfg.model}: d_model={width} is not divisible by n_heads={heads}")
    return Derived(_layers(cfg.int("n_layers"), heads, width // heads, kv_dtype))

"""Interleaved local/global attention: Gemma-2, Gemma-3, gpt-oss (sliding windows, attention
sinks) and Llama-4 (chunked local attention on RoPE layers, global attention on NoPE layers).

Which layers are local is read from ``layer_types`` when the config lists it, else from the
rule the architecture's config class uses to build that list (cited per model). When both are
present they must agree; a disagreement fails closed rather than picking one.
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.families.standard import attention, heads_and_dim, stated_layer_types
from kvledger.derive.layers import ChunkedAttention, LayerCache
from kvledger.derive.registry import Derived

SLIDING = "sliding_attention"
FULL = "full_attention"
CHUNKED = "chunked_attention"


def _agree(
    text: Config, stated: list[str] | None, rule: list[str], rule_name: str | None
) -> list[str]:
    """The stated ``layer_types`` if any, else the rule. With ``rule_name`` set, the config
    also carries the rule's own key, so the two must agree; ``None``: the rule is only the
    config class's default and ``layer_types`` wins (as in vLLM, which reads only it)."""
    if stated is None:
        return rule
    if rule_name is not None and stated != rule:
        raise UnsupportedArchitecture(
            f"unsupported: {text.model_type} layer_types disagrees with {rule_name}; refusing "
            "to pick one",
            model_type=text.model_type,
        )
    return stated


def _windowed(text: Config, kv_dtype: str, types: list[str], *, sinks: bool) -> list[LayerCache]:
    _, kv_heads, dim = heads_and_dim(text)
    window = text.int("sliding_window")
    return [
        attention(i, kv_heads, dim, kv_dtype, window=window if t == SLIDING else None, sinks=sinks)
        for i, t in enumerate(types)
    ]


def gemma2(text: Config, kv_dtype: str) -> Derived:
    """Gemma-2 (vLLM gemma2.py: a layer slides iff layer_types[i] == "sliding_attention").

    Without layer_types, transformers' Gemma2Config builds it as sliding for even indices
    ("sliding_attention" if (i + 1) % 2 else "full_attention"): 0, 2, 4, ... slide.
    """
    n = text.int("num_hidden_layers")
    rule = [SLIDING if (i + 1) % 2 else FULL for i in range(n)]
    types = _agree(text, stated_layer_types(text, n, (SLIDING, FULL)), rule, None)
    note = f"alternating local (window {text.int('sliding_window')}) / global attention"
    return Derived(_windowed(text, kv_dtype, types, sinks=False), [note])


# transformers 5.19 Gemma3TextConfig.__post_init__: sliding_window_pattern's default.
GEMMA3_DEFAULT_PATTERN = 6


def gemma3(text: Config, kv_dtype: str) -> Derived:
    """Gemma-3 (vLLM gemma3.py: window on layers whose layer_types entry is sliding).

    Without layer_types, transformers' Gemma3TextConfig uses ``sliding_window_pattern`` P
    (older files: ``_sliding_window_pattern``): layer i is global iff (i + 1) % P == 0. A file
    that states neither (gemma-3 release-time configs) gets P = 6: transformers 5.19
    ``Gemma3TextConfig.__post_init__`` reads ``kwargs.get("sliding_window_pattern", 6)`` and
    builds layer_types from it, which is what vLLM 0.32 serves (held-out oracle case,
    tests/oracles/vllm-0.32/vllm-0.32-coverage-heldout.jsonl: 52 sliding + 10 full layers of 62).
    """
    n = text.int("num_hidden_layers")
    stated = stated_layer_types(text, n, (SLIDING, FULL))
    pattern_key = next(
        (k for k in ("sliding_window_pattern", "_sliding_window_pattern") if k in text), None
    )
    if pattern_key is None and stated is not None:
        types = stated
    elif pattern_key is None:
        types = [FULL if (i + 1) % GEMMA3_DEFAULT_PATTERN == 0 else SLIDING for i in range(n)]
    else:
        p = text.int(pattern_key)
        if p < 1:
            raise ConfigError(f"{text.model}: {pattern_key} must be >= 1, got {p}")
        rule = [FULL if (i + 1) % p == 0 else SLIDING for i in range(n)]
        types = _agree(text, stated, rule, f"{pattern_key}={p}")
    local = types.count(SLIDING)
    note = (
        f"{local} local (window {text.int('sliding_window')}) and {n - local} global layers"
    )
    return Derived(_windowed(text, kv_dtype, types, sinks=False), [note])


def gpt_oss(text: Config, kv_dtype: str) -> Derived:
    """gpt-oss: even-indexed layers use ``sliding_window``, odd ones full attention (OpenAI's
    reference ``AttentionBlock``: ``sliding_window if layer_idx % 2 == 0 else 0``; vLLM
    gpt_oss.py alike). The published ``layer_types`` states the same; if a config's list
    disagrees with that rule it fails closed. Every layer has learned attention sinks (one
    logit per head, a weight, not cached).
    """
    n = text.int("num_hidden_layers")
    rule = [SLIDING if i % 2 == 0 else FULL for i in range(n)]
    types = _agree(text, stated_layer_types(text, n, (SLIDING, FULL)), rule, "even-layer windows")
    notes = ["attention sinks: a learned per-head logit on every layer; they add no cache"]
    return Derived(_windowed(text, kv_dtype, types, sinks=True), notes)


def llama4(text: Config, kv_dtype: str) -> Derived:
    """Llama-4 text model (vLLM llama4.py: ``nope = no_rope_layers[i] == 0``; RoPE layers use
    ChunkedLocalAttention with ``attention_chunk_size`` when it is set, NoPE layers use global
    attention).

    ``no_rope_layers`` (1 = RoPE, 0 = NoPE); when empty or missing, transformers'
    Llama4TextConfig builds it as ``int((i + 1) % no_rope_layer_interval != 0)`` with interval
    4 by default — Scout's published config has ``[]``, so layers 3, 7, 11, ... are global.
    """
    n = text.int("num_hidden_layers")
    if "attention_chunk_size" not in text.raw:
        raise ConfigError(
            f"{text.model}: llama4 config has no attention_chunk_size (transformers would default "
            "it); state it explicitly"
        )
    chunk = text.get("attention_chunk_size")
    flags = text.get("no_rope_layers") or []
    if flags:
        if not isinstance(flags, list) or len(flags) < n or any(f not in (0, 1) for f in flags):
            raise ConfigError(f"{text.model}: no_rope_layers must list 0/1 for {n} layers")
        rope = [bool(f) for f in flags[:n]]
    else:
        interval = text.int("no_rope_layer_interval", 4)
        if interval < 1:
            raise ConfigError(f"{text.model}: no_rope_layer_interval must be >= 1")
        rope = [(i + 1) % interval != 0 for i in range(n)]
    local = chunk is not None
    rule = [CHUNKED if r and local else FULL for r in rope]
    types = _agree(text, stated_layer_types(text, n, (CHUNKED, FULL)), rule,
                   "no_rope_layers/attention_chunk_size")
    _, kv_heads, dim = heads_and_dim(text)
    layers: list[LayerCache] = []
    for i, t in enumerate(types):
        if t == CHUNKED:
            layers.append(
                ChunkedAttention(
                    index=i, dtype=kv_dtype, k_heads=kv_heads, k_dim=dim, v_heads=kv_heads,
                    v_dim=dim, chunk=text.int("attention_chunk_size"), note="RoPE, chunked local",
                )
            )
        else:
            layers.append(attention(i, kv_heads, dim, kv_dtype, note="NoPE, global"))
    notes = (
        [f"{types.count(CHUNKED)} chunked-local (chunk {chunk}) and {types.count(FULL)} global "
         "(NoPE) layers"]
        if local
        else ["attention_chunk_size is null: every layer attends globally"]
    )
    return Derived(layers, notes)

"""Dense decoders whose cache needs arithmetic of its own beyond the standard handler:
MiniMax-M2 (MTP layers), Phi-3-small (block-sparse layers), GPT-2 (its own key names) and
EAGLE3 draft configs that reuse the Llama schema. Their rows in ``model_types.py`` say which
function handles them and which keys each reads.

Facts follow vLLM's model files (read for facts, cited per handler).
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.families.standard import attention, check_nested, head_dim, heads_and_dim
from kvledger.derive.layers import LayerCache, Role
from kvledger.derive.registry import Derived

# eagle_config entries that pick which *target* hidden states feed the draft: no draft cache.
_EAGLE_CONFIG_KEYS = frozenset({"eagle_aux_hidden_state_layer_ids", "use_aux_hidden_state"})


def eagle3(text: Config, kv_dtype: str) -> Derived:
    """EAGLE3 draft (vLLM llama_eagle3.py): ``num_hidden_layers`` Llama decoder layers whose
    attention has the draft config's own heads (``num_key_value_heads`` × ``head_dim`` or
    ``hidden_size // num_attention_heads``); the q/k/v input is 2 × hidden wide, which does not
    change the cache. vLLM numbers the draft layers after the target's; facts number them 0..n-1
    with role DRAFT, because the target is not part of this config.
    """
    check_nested(text, "eagle_config", _EAGLE_CONFIG_KEYS, family="llama_eagle3 row")
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


def phi3small(text: Config, kv_dtype: str) -> Derived:
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


def gpt2(text: Config, kv_dtype: str) -> Derived:
    """GPT-2 (vLLM gpt2.py): ``n_layer`` layers of MHA, ``n_head`` heads of ``n_embd // n_head``.
    (``add_cross_attention`` — encoder-decoder GPT-2 — is an off key of the gpt2 row.)"""
    heads = text.int("n_head")
    embd = text.int("n_embd")
    if embd % heads:
        raise ConfigError(f"{text.model}: n_embd={embd} is not divisible by n_head={heads}")
    layers: list[LayerCache] = [
        attention(i, heads, embd // heads, kv_dtype) for i in range(text.int("n_layer"))
    ]
    return Derived(layers)


def minimax_m2(text: Config, kv_dtype: str) -> Derived:
    """MiniMax-M2 / M2.5 (vLLM minimax_m2.py): GQA full attention on every decoder layer
    (``num_key_value_heads`` × ``head_dim``; ``rotary_dim`` is partial RoPE, no cache effect).

    MTP: ``num_mtp_modules`` modules of ``mtp_transformer_layers`` transformer layers each,
    stored after the decoder (vLLM ``get_spec_layer_idx_from_weight_name``: layer
    ``num_hidden_layers + i``). They are listed with role MTP and the decoder's attention
    geometry; vLLM's minimax_m2.py skips their weights, so it serves no MTP for this model.

    ``attn_type_list`` (MiniMax-M2.7 states it; MiniMax-M1's convention: 1 = softmax, 0 =
    lightning): vLLM's minimax_m2.py never reads it and builds softmax GQA attention
    (``MiniMaxM2Attention``) on every layer. A list of all 1s says the same and is accepted; a
    0 would be a lightning layer vLLM does not build, so it is refused.
    """
    _, kv_heads, dim = heads_and_dim(text)
    n = text.int("num_hidden_layers")
    kinds = text.get("attn_type_list")
    if kinds is not None:
        if not isinstance(kinds, list) or len(kinds) != n:
            raise ConfigError(f"{text.model}: attn_type_list must list {n} layers")
        lightning = [i for i, k in enumerate(kinds) if k != 1]
        if lightning:
            raise UnsupportedArchitecture(
                f"unsupported: minimax_m2 attn_type_list marks layers {lightning[:8]} as not "
                "softmax (1); vLLM's minimax_m2.py builds softmax attention on every layer",
                model_type=text.model_type,
            )
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

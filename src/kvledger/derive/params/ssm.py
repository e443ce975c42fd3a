"""State-space mixers and their hybrids: Mamba, Mamba2, Jamba, Nemotron-H (and its MTP),
Falcon-H1, Granite 4.0 hybrid, Zamba2."""

from __future__ import annotations

import math

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError
from kvledger.derive.limits import checked_count
from kvledger.derive.params.base import _Count, _with
from kvledger.derive.params.decoder import moe_layers


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

"""The transformer decoder's count: which layers hold experts, a MoE block, GQA / MLA
attention, Gemma 3n's extras and DeepSeek-style MTP layers."""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError
from kvledger.derive.limits import checked_count
from kvledger.derive.params.base import _PROFILES, CATEGORIES, _Count, _with

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
    ``topk_method`` noaux_tc). Kimi-Linear's latent MoE (vLLM 0.33 models/kimi_k3
    ``KimiMoE``, ``routed_expert_hidden_size``): the routed experts work at that width, behind
    ``routed_expert_down_proj`` (hidden → latent), its RMSNorm (``latent_moe_use_norm``) and
    ``routed_expert_up_proj`` (latent → hidden); the router and the shared experts stay at
    hidden."""
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
    latent = k.num("routed_expert_hidden_size", default=0)
    out = {"routed_experts": experts * 3 * (latent or hidden) * moe_inter,
           "router": hidden * experts, "shared_experts": 0, "other": 0}
    if latent:
        out["routed_experts"] += 2 * hidden * latent  # the down and up projections
        out["other"] += latent if k.flag("latent_moe_use_norm") else 0
    if k.p.get("expert_bias"):
        out["other"] += experts * (2 * moe_inter + hidden) + experts
    if cfg.get("topk_method") == "noaux_tc" or cfg.get("moe_router_enable_expert_bias"):
        out["other"] += experts
    n_shared = k.num("n_shared_experts", "num_shared_experts", default=0)
    shared_inter = k.num("shared_expert_intermediate_size",
                         "moe_shared_expert_intermediate_size", default=0)
    if shared_inter:
        out["shared_experts"] = 3 * hidden * shared_inter
        if k.model_type in ("qwen2_moe", "qwen3_next", "qwen3_5_moe_text"):
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
            if experts and cfg.get("dense_intermediate_size") is not None:
                # MiniMax-M3 (models/minimax_m3 MiniMaxM3DecoderLayer): a dense layer's MLP
                # is dense_intermediate_size wide; intermediate_size sizes the experts.
                width = k.num("dense_intermediate_size")
            if k.model_type == "llama4_text":
                width = k.num("intermediate_size_mlp", default=inter)
            if k.model_type == "gemma4_text" and k.flag("use_double_wide_mlp") and \
                    _gemma4_kv_shared(k, i, layers):
                width *= 2
            linear, bias = k.mlp(hidden, width)
            k.add("dense_mlp", linear)
            k.add("other", bias)
    k.add("other", k.norm(hidden))  # the final norm
    if k.model_type == "gemma3n_text":
        _gemma3n_extras(k, hidden, layers)
    if k.model_type == "gemma4_text":
        _gemma4_per_layer_embeddings(k, hidden, layers)
    if k.model_type not in _PROFILES and k.model_type not in _DECODER_CHECKED and \
            not any("no exact weight formula" in w for w in k.warnings):
        k.warnings.append(
            f"model_type {k.model_type!r}: counted as a generic decoder (projections and MLPs "
            "from the config; its biases and norms not checked): likely error under 0.5 %")


def _gemma4_kv_shared(k: _Count, i: int, layers: int) -> bool:
    """Whether Gemma 4's layer ``i`` reads an earlier layer's cache (vLLM gemma4.py
    ``Gemma4DecoderLayer``: ``layer_idx >= first_kv_shared_layer_idx > 0``, the first being
    ``num_hidden_layers − num_kv_shared_layers``): only those layers' MLPs are double wide under
    ``use_double_wide_mlp``."""
    first = layers - k.num("num_kv_shared_layers", default=0)
    return i >= first > 0


def _gemma4_per_layer_embeddings(k: _Count, hidden: int, layers: int) -> None:
    """Gemma 4's per-layer embeddings where ``hidden_size_per_layer_input`` is set (the E2B /
    E4B models; vLLM gemma4.py ``Gemma4Model``): ``embed_tokens_per_layer``
    (vocab_size_per_layer_input × layers × ple), ``per_layer_model_projection`` (hidden →
    layers × ple, no bias) and its RMSNorm (ple); per layer (``Gemma4DecoderLayer``) the
    ``per_layer_input_gate`` (hidden → ple), ``per_layer_projection`` (ple → hidden), both
    without bias, and ``post_per_layer_input_norm`` (hidden)."""
    ple = k.num("hidden_size_per_layer_input", default=0)
    if ple <= 0:
        return
    ple_vocab = k.num("vocab_size_per_layer_input", default=k.alias("vocab"))
    k.add("embed", ple_vocab * layers * ple)
    k.add("attn", hidden * layers * ple)
    k.add("other", ple)
    k.add("attn", layers * 2 * hidden * ple)
    k.add("other", layers * hidden)


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
    # Kept whole on every TP rank (Parameters.unsharded_attention): q_a and kv_a.
    k.unsharded += hidden * q_lora + hidden * (kv_lora + rope)
    if k.cfg.get("index_topk") is not None:
        n, dim = k.num("index_n_heads"), k.num("index_head_dim")
        linear += (q_lora or hidden) * n * dim + hidden * dim
        k.unsharded += (q_lora or hidden) * n * dim + hidden * dim  # wq_b, wk
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




def _chatglm(k: _Count) -> None:
    """ChatGLM / GLM-4 (vLLM chatglm.py): ``query_key_value`` with ``add_qkv_bias``,
    ``dense`` out, ``dense_h_to_4h`` 2 × ffn_hidden_size (gated), ``dense_4h_to_h``; the
    output layer untied; two RMSNorms a layer, a final one."""
    _decoder(k)

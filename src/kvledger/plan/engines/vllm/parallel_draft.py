"""vLLM's DFlash and DSpark drafts (``--speculative-config`` method ``dflash`` / ``dspark``):
the draft's decoder layers in the KV cache, and its weights beside the target's.

Read in vLLM 0.34.0's source (``plans_parallel_drafts`` in the release profile; a release
whose source was not read for this refuses the methods by name):

- The draft is a separate checkpoint whose config.json kvledger reads from ``--draft-config``
  (a pasted ``"model": "<local dir>"`` maps to it). ``SpeculativeConfig.__post_init__`` →
  ``DraftModelSpeculatorConfig.configure`` (v1/worker/gpu/spec_decode/speculator_config.py)
  builds the draft's ``ModelConfig`` at the target's dtype; DFlash wraps its hf_config in an
  ``EAGLEConfig`` (dflash/config.py ``adapt_draft_model_config`` → transformers_utils/
  configs/eagle.py: an architecture that neither starts nor ends with "DFlash" becomes
  ``DFlash{arch}``), DSpark keeps it (``SpeculativeConfig.hf_config_override``: a qwen3
  ``DSparkDraftModel`` becomes ``Qwen3DSparkModel``). The registry (model_executor/models/
  registry.py) maps ``DFlashDraftModel`` to qwen3_dflash.py ``DFlashQwen3ForCausalLM`` and
  ``Qwen3DSparkModel`` to qwen3_dspark.py ``Qwen3DSparkForCausalLM``, the two planned here.
- KV: ``DFlashQwen3Model.__init__`` builds ``num_hidden_layers`` ``DFlashQwen3DecoderLayer``
  numbered after the target's (``start_layer_id`` = the target's layer count), each with one
  ``Attention`` of ``num_key_value_heads`` KV heads of ``head_dim`` (both must be stated: the
  Qwen3Config the draft is read as defaults them to 8 and 128), a decoder attention with
  ``per_layer_sliding_window`` from
  ``_resolve_layer_attention`` (``layer_types[i] == "sliding_attention"``, or every layer
  with ``dflash_config.use_swa``; window ``dflash_config.swa_window_size`` else
  ``sliding_window``). v1/worker/gpu/attn_utils.py ``get_kv_cache_spec`` collects them with
  the target's layers, marked ``is_draft`` — a field "excluded from equality so it never
  affects grouping" (v1/kv_cache_interface.py ``KVCacheSpec``): the draft's layers join the
  target's KV cache groups and add their bytes per token to the same pool, at the target's
  cache dtype (``load_dflash_model`` replaces it only with a speculative ``kv_cache_dtype``,
  which kvledger refuses). Non-causal layers (``_dflash_layer_causal``; the default without
  ``is_causal`` / ``dflash_config.causal`` / ``layer_types``) change no spec; they make vLLM
  pick the draft's attention backend with ``use_non_causal`` (``load_dflash_model``), which
  on SM10x is FLASH_ATTN while the target takes FLASHINFER (platforms/cuda.py
  ``_get_backend_priorities``): refused there, as kvledger plans one backend per model.
- Weights (per TP rank, the target's dtype): per layer ``QKVParallelLinear`` (+ bias with
  ``attention_bias``), ``RowParallelLinear`` o_proj (+ a bias of hidden_size), q_norm /
  k_norm (head_dim each), ``Qwen2MLP`` (gate_up and down, no bias), two RMSNorms, and an
  attention-sink vector of the rank's heads with ``dflash_config.attention_sink_bias``;
  then ``fc`` (``ReplicatedLinear``: target_hidden_size × the number of target layers fed,
  ``_get_dflash_fc_input_size``; only with ``use_aux_hidden_state``, default True),
  ``hidden_norm``, ``norm``, ``mask_embedding`` (hidden_size). ``embed_tokens`` and
  ``lm_head`` are shared with the target's (v1/worker/gpu/spec_decode/dflash/utils.py
  ``load_dflash_model``, eagle/utils.py ``maybe_share_target_embed``) unless the draft
  ships its own that differ, which a config cannot show: counted shared, except an
  ``lm_head`` of a config stating ``has_own_lm_head`` (never shared). A draft vocabulary
  other than the target's adds ``draft_id_to_target_id`` (int64 × draft_vocab_size).
  DSpark (``Qwen3DSparkModel``) adds ``markov_head`` (``markov_w1``: vocab_size ×
  markov_rank; ``markov_w2``: draft_vocab_size × markov_rank, both replicated) and, with
  ``enable_confidence_head``, a float32 ``confidence_head`` (hidden_size [+ markov_rank]
  + 1 bias).

Not counted: the proposer's own buffers (dflash/speculator.py ``DFlashSpeculator.__init__``:
``hidden_states`` max_num_tokens × hidden_size, the sampling index rows), which vLLM's
profile run sees as non-KV memory; the draft's copies of embed_tokens / lm_head that exist
until they are replaced by the target's; a quantized draft (refused).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError
from kvledger.derive.families.standard import attention
from kvledger.derive.layers import LayerCache, Role
from kvledger.plan.engines.vllm.errors import VllmLayoutError

# The draft architectures planned here (first architecture, after vLLM's renaming) and the
# vLLM class each becomes (model_executor/models/registry.py _SPECULATIVE_DECODING_MODELS).
_PLANNED = {
    "dflash": {"DFlashDraftModel": "DFlashQwen3ForCausalLM"},
    "dspark": {"Qwen3DSparkModel": "Qwen3DSparkForCausalLM"},
}
_SLIDING = "sliding_attention"


class ParallelDraftRefused(VllmLayoutError):
    """A DFlash / DSpark draft kvledger does not plan (names what vLLM does)."""


def _how(method: str) -> str:
    return (f"to plan the target alone drop --speculative-method {method} (the draft's "
            "memory is then not counted)")


def draft_class(config: Mapping[str, Any], method: str) -> str:
    """The vLLM class the draft config becomes, or the refusal (``ParallelDraftRefused``)."""
    archs = [str(a) for a in config.get("architectures") or []]
    if not archs:
        raise ParallelDraftRefused(f"the {method} draft config states no architectures; vLLM "
                                   "picks the draft model class from them")
    first = archs[0]
    if method == "dflash":
        # transformers_utils/configs/eagle.py EAGLEConfig.__init__ (method "dflash").
        if not (first.startswith("DFlash") or first.endswith("DFlash")
                or first == "LiLiCorrDraftModel"):
            first = f"DFlash{first}"
    elif first == "DSparkDraftModel" and config.get("model_type") == "qwen3":
        first = "Qwen3DSparkModel"  # SpeculativeConfig.hf_config_override
    found = _PLANNED[method].get(first)
    if found is None:
        planned = ", ".join(_PLANNED[method])
        raise ParallelDraftRefused(
            f"{method} draft architecture {first}: vLLM builds it from its own model file "
            f"(registry.py), which kvledger has not read; kvledger plans {planned} "
            f"(qwen3_{method}.py) — {_how(method)}")
    if config.get("quantization_config"):
        raise ParallelDraftRefused(
            f"a quantized {method} draft (quantization_config): vLLM loads it with "
            "get_draft_quant_config, whose layouts kvledger does not size for drafts — "
            f"{_how(method)}")
    return found


def _text(config: Mapping[str, Any]) -> Config:
    return Config(dict(config), model="draft config")


def _dflash_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    section = config.get("dflash_config") or {}
    if not isinstance(section, Mapping):
        raise ConfigError("draft config: dflash_config must be an object")
    return section


def _causal(config: Mapping[str, Any], index: int) -> bool:
    """qwen3_dflash.py ``_dflash_layer_causal``."""
    if config.get("is_causal") is not None:
        return bool(config["is_causal"])
    override = _dflash_config(config).get("causal")
    if override is not None:
        return bool(override)
    types = config.get("layer_types")
    if not types:
        return False
    return bool(types[index] == _SLIDING)


def _window(config: Mapping[str, Any], index: int) -> int | None:
    """qwen3_dflash.py ``_resolve_layer_attention``: the layer's sliding window, or None."""
    section = _dflash_config(config)
    types: list[Any] | None = config.get("layer_types")
    use_swa = bool(section.get("use_swa", False))
    any_sliding = any(t == _SLIDING for t in types or ())
    sliding = use_swa if types is None or (use_swa and not any_sliding) else \
        bool(types[index] == _SLIDING)
    if not sliding:
        return None
    window = section.get("swa_window_size", config.get("sliding_window"))
    if window is None:
        raise ConfigError("draft config: DFlash sliding attention requires a window size in "
                          "dflash_config.swa_window_size or sliding_window (vLLM raises)")
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ConfigError(f"draft config: sliding window must be a positive integer, got "
                          f"{window!r}")
    return window


def _geometry(config: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(layers, query heads, KV heads, head dim) as ``DFlashQwen3Attention`` reads them."""
    text = _text(config)
    layers = text.int("num_hidden_layers", minimum=1)
    heads = text.int("num_attention_heads", minimum=1)
    if "num_key_value_heads" not in config:
        raise ConfigError("draft config states no num_key_value_heads (its Qwen3Config class "
                          "default would apply); state it")
    kv_heads = text.int("num_key_value_heads", minimum=1)
    # DFlashQwen3Attention takes ``getattr(config, "head_dim", None) or hidden // heads``, but
    # the draft's config is built as Qwen3Config (EAGLEConfig's AutoConfig.for_model; DSpark's
    # hf_config), whose head_dim defaults to 128: an omitted head_dim is 128, not
    # hidden // heads. As for the KV heads, kvledger asks for it rather than assume the class.
    if "head_dim" not in config:
        raise ConfigError("draft config states no head_dim (its Qwen3Config class default, "
                          "128, would apply, not hidden_size // num_attention_heads); state it")
    dim = config["head_dim"]
    if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
        raise ConfigError(f"draft config: head_dim must be a positive integer, got {dim!r}")
    types = config.get("layer_types")
    if types is not None and (not isinstance(types, list) or len(types) < layers):
        raise ConfigError(f"draft config: layer_types must list one type per layer "
                          f"({layers})")
    return layers, heads, kv_heads, dim


def draft_layers(config: Mapping[str, Any], first_index: int,
                 kv_dtype: str) -> tuple[LayerCache, ...]:
    """The draft's attention layers (role DRAFT), numbered from ``first_index`` as vLLM
    numbers them (``start_layer_id`` = the target's layer count)."""
    layers, _, kv_heads, dim = _geometry(config)
    sinks = bool(_dflash_config(config).get("attention_sink_bias",
                                            config.get("add_swa_attention_sink_bias", False)))
    out: list[LayerCache] = []
    for i in range(layers):
        causal = _causal(config, i)
        out.append(attention(first_index + i, kv_heads, dim, kv_dtype, role=Role.DRAFT,
                             window=_window(config, i), sinks=sinks,
                             note=f"draft layer {i} ({'causal' if causal else 'non-causal'})"))
    return tuple(out)


def has_non_causal(config: Mapping[str, Any]) -> bool:
    """qwen3_dflash.py ``dflash_has_any_non_causal``."""
    layers = _geometry(config)[0]
    return not all(_causal(config, i) for i in range(layers))


def _aux_layers(config: Mapping[str, Any]) -> int | None:
    """How many target layers feed ``fc`` (eagle3_utils.get_eagle3_aux_layers_from_config)."""
    ids = config.get("eagle_aux_hidden_state_layer_ids")
    if not ids:
        ids = _dflash_config(config).get("target_layer_ids")
    if not ids:
        ids = config.get("dspark_target_layer_ids")
    if not ids:
        ids = config.get("target_layer_ids")
    if not ids:
        for name in ("dflash_config", "eagle_config"):
            section = config.get(name)
            if isinstance(section, Mapping) and section.get("layer_ids"):
                ids = section["layer_ids"]
                break
    return len(ids) if isinstance(ids, list | tuple) and ids else None


def draft_weight_bytes(config: Mapping[str, Any], method: str, *, target_vocab: int,
                       element_bytes: int, tp: int) -> tuple[int, str]:
    """(bytes on each TP rank, how they were counted) for the draft's parameters."""
    text = _text(config)
    layers, heads, kv_heads, dim = _geometry(config)
    hidden = text.int("hidden_size", minimum=1)
    inter = text.int("intermediate_size", minimum=1)
    vocab = text.int("vocab_size", minimum=1)
    draft_vocab = int(config.get("draft_vocab_size") or vocab)
    if heads % tp:
        raise ParallelDraftRefused(f"the {method} draft's {heads} attention heads do not divide "
                                   f"over {tp} TP ranks (vLLM asserts they do)")
    if kv_heads >= tp and kv_heads % tp:
        raise ParallelDraftRefused(f"the {method} draft's {kv_heads} KV heads do not divide "
                                   f"over {tp} TP ranks (vLLM asserts they do)")
    if inter % tp:
        raise ParallelDraftRefused(f"the {method} draft's intermediate_size {inter} does not "
                                   f"divide over {tp} TP ranks")
    q_rank, kv_rank = heads // tp, max(1, kv_heads // tp)
    bias = bool(config.get("attention_bias", False))
    section = _dflash_config(config)
    sinks = bool(section.get("attention_sink_bias",
                             config.get("add_swa_attention_sink_bias", False)))
    per_layer = (hidden * (q_rank + 2 * kv_rank) * dim            # qkv_proj
                 + (q_rank + 2 * kv_rank) * dim * bias             # its bias
                 + q_rank * dim * hidden + hidden * bias           # o_proj (+ bias)
                 + 2 * dim                                         # q_norm, k_norm
                 + 3 * hidden * (inter // tp)                      # gate_up, down
                 + 2 * hidden                                      # the two layer norms
                 + q_rank * sinks)                                 # attention sink
    drafter = {**(config.get("eagle_config") or {}), **section}
    aux = bool(drafter.get("use_aux_hidden_state", config.get("use_aux_hidden_state", True)))
    fed = _aux_layers(config) or layers
    target_hidden = int(config.get("target_hidden_size") or hidden)
    fc = target_hidden * fed * hidden if aux else 0
    model = 3 * hidden + fc  # hidden_norm, norm, mask_embedding (+ fc)
    elements = layers * per_layer + model
    if method == "dflash":
        # dflash/utils.py load_dflash_model: the target's lm_head unless the config says
        # has_own_lm_head; qwen3_dflash.py: a d2t row per draft token unless the vocabularies
        # are equal.
        embed = 0
        lm_head = draft_vocab * hidden // tp if config.get("has_own_lm_head") else 0
        d2t = draft_vocab != target_vocab
    else:
        # dspark/utils.py load_dspark_model: the target's embed_tokens when the draft's
        # vocab_size is not larger, its lm_head when draft_vocab_size equals the target's;
        # qwen3_dspark.py: d2t only for a smaller draft vocabulary.
        embed = vocab * hidden // tp if vocab > target_vocab else 0
        lm_head = draft_vocab * hidden // tp if draft_vocab != target_vocab else 0
        d2t = draft_vocab < target_vocab
    elements += embed + lm_head
    extra_bytes = 8 * draft_vocab if d2t else 0  # int64 draft_id_to_target_id
    own = [name for name, n in (("embed_tokens", embed), ("lm_head", lm_head)) if n]
    how = (f"{layers} draft layer(s): qkv/o/MLP over TP {tp}, norms"
           + (f", fc {target_hidden}×{fed}→{hidden} (replicated)" if fc else "")
           + (f"; its own {' and '.join(own)}" if own else "")
           + ("; embed_tokens and lm_head shared with the target" if not own else "")
           + (f"; draft_id_to_target_id {draft_vocab} × int64" if extra_bytes else ""))
    if method == "dspark":
        rank = text.int("markov_rank", minimum=1)
        elements += vocab * rank + draft_vocab * rank  # markov_w1, markov_w2 (replicated)
        how += f"; Markov head ({vocab}+{draft_vocab})×{rank} (replicated)"
        if config.get("enable_confidence_head"):
            width = hidden + (rank if config.get("confidence_head_with_markov") else 0)
            extra_bytes += 4 * (width + 1)  # float32 proj weight + bias
            how += "; float32 confidence head"
    return elements * element_bytes + extra_bytes, how


def draft_config_of(request: Any) -> dict[str, Any] | None:
    """The ``--draft-config`` JSON (``VllmLaunch.draft_config``), or None."""
    import json

    text = getattr(getattr(request, "vllm_launch", None), "draft_config", None)
    return None if text is None else dict(json.loads(text))


def speculates_in_parallel(request: Any) -> str:
    """The DFlash / DSpark method the request drafts with ("" when none)."""
    from kvledger.plan.request import PARALLEL_DRAFT_METHODS

    method = (getattr(request, "speculative_method", None) or "").lower()
    if method in PARALLEL_DRAFT_METHODS and int(getattr(request, "num_speculative_tokens", 0)):
        return method
    return ""


def with_draft(facts: Any, request: Any, release: Any) -> Any:
    """``facts`` with the DFlash / DSpark draft's layers after the target's (role DRAFT), or
    the refusal naming what vLLM does and how to plan anyway."""
    from kvledger import records

    method = speculates_in_parallel(request)
    if not method:
        return facts
    if not getattr(release, "plans_parallel_drafts", False):
        from kvledger.plan.engines.vllm.releases import NEWEST

        newest = NEWEST.rsplit(".", 1)[0]
        raise ParallelDraftRefused(
            f"{release.short}: --speculative-method {method} adds a draft model's decoder "
            "layers to the KV cache, and kvledger read how only in a newer release's source "
            f"(plans_parallel_drafts); plan with --engine vllm=={newest}, or {_how(method)}")
    config = draft_config_of(request)
    if config is None:
        if method == "dspark" and facts.model_type in ("deepseek_v4", "deepseek_v41"):
            raise ParallelDraftRefused(
                "--speculative-method dspark on DeepSeek-V4: vLLM builds the draft from the "
                "target checkpoint's mtp.* weights (n_mtp_layers DeepseekV4DecoderLayer "
                "blocks with their own compressed KV caches, a Markov and a confidence head: "
                "models/deepseek_v4/nvidia/dspark.py), which kvledger does not plan yet; "
                + _how(method))
        raise ParallelDraftRefused(
            f"--speculative-method {method} loads a separate draft model whose decoder layers "
            "add KV to the target's pool: give the draft's config.json with --draft-config "
            "CONFIG_JSON (kvledger reads no draft config from the Hub)")
    draft_class(config, method)
    if has_non_causal(config):
        from kvledger.plan.engines.vllm.hardware import capability

        cap, _ = capability(getattr(request, "gpu", None))
        if cap is not None and cap[0] == 10:
            raise ParallelDraftRefused(
                f"a non-causal {method} draft on an SM10x GPU: vLLM gives the draft FLASH_ATTN "
                "(use_non_causal) while the target takes FLASHINFER (platforms/cuda.py "
                "_get_backend_priorities), two backends kvledger does not plan in one pool; "
                + _how(method))
    text = facts.language_config()
    first = text.get("num_hidden_layers")
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        first = max((layer.index for layer in facts.layers), default=-1) + 1
    layers = draft_layers(config, first, facts.kv_dtype)
    note = (f"{method} draft: {len(layers)} decoder layer(s) (layers {first}–"
            f"{first + len(layers) - 1}) in the target's KV cache groups, from --draft-config")
    return records.replace(facts, layers=(*facts.layers, *layers),
                           notes=(*facts.notes, note))


def draft_weights(facts: Any, request: Any) -> tuple[int, str] | None:
    """(bytes per GPU, how) of the DFlash / DSpark draft's weights, or None without one."""
    method = speculates_in_parallel(request)
    config = draft_config_of(request) if method else None
    if config is None:
        return None
    from kvledger.declare.dtypes import resolve_dtype
    from kvledger.plan.engines.vllm.resolve import _model_dtype

    dtype = _model_dtype(facts)  # the draft's ModelConfig takes the target's dtype
    vocab = facts.language_config().get("vocab_size")
    if isinstance(vocab, bool) or not isinstance(vocab, int):
        raise ParallelDraftRefused("the target config states no vocab_size, which the "
                                   f"{method} draft's weights depend on")
    found, how = draft_weight_bytes(config, method, target_vocab=vocab,
                                    element_bytes=resolve_dtype(dtype).bits // 8,
                                    tp=request.tensor_parallel_size)
    return found, f"{method} draft weights, {dtype}: {how}"

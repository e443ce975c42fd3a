"""vLLM 0.32's start-up refusals that follow from the model and the options alone.

A plan for a deployment vLLM would not start is a plausible wrong number, so the vLLM layout
checks what vLLM checks before it sizes the KV cache, each rule from vLLM's source (cited on
the function), and stops with vLLM's own reason. One rule for how a refusal shows (README,
"Decisions worth knowing"):

- a **configuration** vLLM rejects at start-up (parallel sizes, block size, max_model_len,
  scheduler limits) is ``VllmStartupError``: exit 2, one line, vLLM's reason first;
- a **budget** too small for one ``max_model_len`` request is not an error: the plan is
  still computed (it is what vLLM's planner computes before it raises) and the JSON says
  ``vllm_refuses_to_start: true`` with ``vllm_refusal_reason`` (``memory_refusal_reason``).

Pipeline parallelism on a model class without ``SupportsPP`` is refused here too; which classes
have it is data (``pp_support.py``). Rules elsewhere in the layout that are start-up refusals
too: the sparse-MLA and MiniMax-M3 kernel block sizes (``hybrid.py``), nvfp4 / fp8_e5m2 on
MLA (``resolve.py``), KV schemes vLLM rejects (``cache_dtype.py``), and KV heads that do not
split over TP (``derive.layers.split_heads``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from kvledger.derive.config import TEXT_CONFIG_KEYS
from kvledger.derive.errors import ConfigError
from kvledger.derive.layers import Attention, CrossAttention, LayerCache, ModelFacts
from kvledger.derive.limits import MAX_POSITIONS
from kvledger.plan.engines.vllm.errors import VllmLayoutError, VllmRefusesToStart, engine_words
from kvledger.plan.request import PlanRequest

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from kvledger.plan.engines.vllm.releases.profile import VllmRelease

def prefix(release: VllmRelease | None) -> str:
    """How a start-up refusal begins: ``vLLM 0.33 refuses to start`` (the release planned)."""
    return f"{engine_words(release)} refuses to start"

# vLLM ``_get_and_verify_max_len``: RoPE types whose ``factor`` is *not* applied (their
# max_position_embeddings is already the scaled length).
FACTOR_NOT_APPLIED = frozenset(
    {"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"}
)
# transformers ``attribute_map`` entries that give ``num_attention_heads`` another name, for
# the model types kvledger derives (read from transformers 5.19's config classes).
HEADS_ALIAS = {"gpt2": "n_head", "whisper": "encoder_attention_heads"}
# Every SM90 attention backend vLLM 0.32 can pick for standard attention (FLASH_ATTN,
# FLASHINFER, TRITON_ATTN, FLEX_ATTENTION) or dense MLA (FLASH_ATTN_MLA, TRITON_MLA; FLASHMLA
# takes 64, a multiple) splits a block into kernel blocks of a multiple of 16
# (``get_supported_kernel_block_sizes``, ``AttentionBackend.supports_block_size``).
KERNEL_BLOCK_MULTIPLE = 16
# The model types of new_type_verdicts.READ_WITHOUT_DEFAULT, CHECKED_AT_INIT,
# ASSERTED_AT_INIT, NONE_NOT_ACCEPTED and STRING_PARSED (the module is imported only for these,
# at the top level or as a wrapper's text config, and for wrapper-named configs without a
# vision_config; a test keeps them equal).
MAY_STOP_IN_INIT = frozenset({"glm4_moe_lite", "hunyuan_v1_dense", "longcat_flash",
                              "glm4v_moe_text", "hy_v3", "hunyuan_vl_text",
                              "gemma4_unified", "qianfan_ocr",
                              "nemotron_h_omni", "qwen3_omni_moe", "cohere_compass",
                              "step3_text", "step3p5", "funaudiochat"})


class VllmStartupError(VllmRefusesToStart):
    """vLLM would raise this at start-up; the message starts with ``prefix(release)``."""

    def __init__(self, reason: str, source: str, fix: str = "",
                 release: VllmRelease | None = None) -> None:
        tail = f"; {fix}" if fix else ""
        super().__init__(f"{prefix(release)}: {reason} ({source}){tail}")
        self.reason = reason


def text_config(facts: ModelFacts) -> Mapping[str, Any]:
    """The language model's config as vLLM reads it (``get_hf_text_config``)."""
    for key in TEXT_CONFIG_KEYS:
        sub = facts.config.get(key)
        if isinstance(sub, Mapping):
            return sub
    return facts.config


def check_startup(facts: ModelFacts, request: PlanRequest, release: VllmRelease) -> None:
    """Every start-up refusal of this module for ``facts`` served with ``request``, in the
    order vLLM meets them (the first one is what vLLM says): ``EngineArgs.create_engine_config``
    builds ``ModelConfig`` (max_model_len), then ``SchedulerConfig`` (batched tokens), then
    ``VllmConfig``, whose ``ModelConfig.verify_with_parallel_config`` checks the attention
    heads against TP and then pipeline-parallel support; the KV-head split is met only when
    the model is built, after the model class's own reads of its config
    (``new_type_verdicts.construction_refusal``). (Oracle:
    ``tests/oracles/vllm-0.32/vllm-0.32-pp-startup.jsonl``, ``vllm-0.32-breadth.jsonl``.)"""
    tp = request.tensor_parallel_size
    check_max_model_len(facts, request, release)
    check_scheduler(request, release)
    check_attention_heads(facts, tp, release)
    check_pipeline_parallel(facts, request.pipeline_parallel_size, release)
    check_model_class(facts, release)
    check_kv_heads(facts, tp, release)


def check_model_class(facts: ModelFacts, release: VllmRelease) -> None:
    """vLLM's model class for ``facts`` stops in ``__init__`` on an attribute its config
    lacks (``new_type_verdicts.py``: the wrapper-named flat text configs, keys read without a
    class default)."""
    wrapper = facts.architectures[:1] and facts.architectures[0].endswith(
        "ForConditionalGeneration") and "vision_config" not in facts.config
    inner = facts.text_config.get("model_type")
    if (not wrapper and facts.model_type not in MAY_STOP_IN_INIT
            and inner not in MAY_STOP_IN_INIT):
        return  # the common case: the tables are not imported (tests/cli/test_start_up_imports)
    from kvledger.plan.engines.vllm.new_type_verdicts import construction_refusal

    refusal = construction_refusal(facts, release)
    if refusal is not None:
        reason, where = refusal
        raise VllmStartupError(reason, where, release=release)


# -- tensor parallelism ------------------------------------------------------------------------


def attention_heads(facts: ModelFacts) -> int:
    """``model_arch_config.total_num_attention_heads``: the text config's
    ``num_attention_heads`` (through transformers' attribute_map), 0 when it has none."""
    text = text_config(facts)
    value = text.get("num_attention_heads")
    if value is None:
        value = text.get(HEADS_ALIAS.get(str(text.get("model_type") or facts.model_type), ""))
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def check_tensor_parallel(facts: ModelFacts, tp: int,
                          release: VllmRelease | None = None) -> None:
    """Two rules vLLM applies before it builds a KV cache:

    - vllm/config/model.py ``ModelConfig.verify_with_parallel_config``: the attention heads
      must divide by the tensor parallel size (``-tp 3`` on a 128-head model, ``-tp
      1000000``);
    - vllm/model_executor/models/llama.py ``LlamaAttention.__init__`` (``assert tp_size %
      self.total_num_kv_heads == 0`` when there are fewer KV heads than ranks, else the
      reverse) and vllm/model_executor/layers/linear.py ``QKVParallelLinear.__init__``
      (``divide(total_num_kv_heads, tp)`` or ``divide(tp, total_num_kv_heads)``, which
      assert too): KV heads are split, or replicated, exactly. 3 KV heads at TP 4 is refused
      (the oracle: an AssertionError in LlamaAttention); at TP 6 each is held twice.

    Not checked: the MLP and expert widths TP must divide too (``MergedColumnParallelLinear``
    divides ``intermediate_size``); the head rule above already rules out every TP of the
    released configs that those would.
    """
    check_attention_heads(facts, tp, release)
    check_kv_heads(facts, tp, release)


def check_attention_heads(facts: ModelFacts, tp: int,
                          release: VllmRelease | None = None) -> None:
    """The first rule of ``check_tensor_parallel``: attention heads divide by TP."""
    heads = attention_heads(facts)
    if heads % tp:
        raise VllmStartupError(
            f"Total number of attention heads ({heads}) must be divisible by tensor parallel "
            f"size ({tp}).", "ModelConfig.verify_with_parallel_config",
            f"use a --tensor-parallel-size that divides {heads}", release=release)


def check_kv_heads(facts: ModelFacts, tp: int, release: VllmRelease | None = None) -> None:
    """The second rule of ``check_tensor_parallel``: KV heads split or replicate exactly."""
    # once per facts (a walk over every layer; the check runs for each plan of them)
    counts = facts.cached(("vllm kv head counts",), lambda: sorted(kv_head_counts(facts.layers)))
    for kv_heads in counts:
        if kv_heads and tp > kv_heads and tp % kv_heads:
            raise VllmStartupError(
                f"{tp} is not divisible by {kv_heads}: {kv_heads} KV heads are replicated over "
                f"tensor parallel size {tp} only when it is a multiple (assert tp_size % "
                "self.total_num_kv_heads == 0)",
                "LlamaAttention.__init__, QKVParallelLinear.__init__",
                f"use a --tensor-parallel-size that divides or is a multiple of {kv_heads}",
                release=release)


def kv_head_counts(layers: Iterable[LayerCache]) -> set[int]:
    """KV head counts of the layers vLLM projects with QKVParallelLinear (self-attention with
    K/V heads; MLA latents and indexer keys are replicated, not split)."""
    return {
        layer.k_heads for layer in layers
        if isinstance(layer, Attention) and not isinstance(layer, CrossAttention)
        and layer.owns_memory
    }


# -- pipeline parallelism ----------------------------------------------------------------------


def check_pipeline_parallel(facts: ModelFacts, pp: int, release: VllmRelease) -> None:
    """vllm/config/model.py ``ModelConfig.verify_with_parallel_config``: with
    ``pipeline_parallel_size > 1`` the model class vLLM resolves from ``architectures`` must
    implement ``SupportsPP`` (``ModelRegistry.is_pp_supported_model``), else vLLM raises
    NotImplementedError (``pipeline_parallel_refusal``)."""
    if pp > 1 and (refusal := pipeline_parallel_refusal(facts, release)) is not None:
        raise refusal


def pipeline_parallel_refusal(facts: ModelFacts,
                              release: VllmRelease) -> VllmLayoutError | None:
    """Why vLLM ``release`` will not run ``facts`` with PP > 1, or None when it will.

    The verdicts are data (``pp_support.py``: each release's registry's own answer per
    architecture, ``pp_table(release)``).
    For a config kvledger derived, an architecture list with no verdict is refused too, naming
    the architectures, rather than planned on a guess: vLLM refuses every class without
    SupportsPP, and kvledger cannot tell which class it would build. Facts built by hand (a
    model type with no row in the model-type table) name no class vLLM has, so there is
    nothing to look up: they are planned, as ``not_in_vllm`` plans them."""
    from kvledger.derive.model_types import MODEL_TYPES
    from kvledger.plan.engines.vllm.pp_support import pp_verdict  # only for PP > 1 (start-up)

    if facts.model_type not in MODEL_TYPES:
        return None

    if not facts.architectures:
        return VllmLayoutError(
            f"{facts.model}: the config names no architectures, and {release.short} decides "
            "pipeline-parallel support by the model class they name (registry.py "
            "inspect_model_cls: 'No model architectures are specified'); use "
            "--pipeline-parallel-size 1")
    verdict = pp_verdict(facts.architectures, release)
    if verdict is None:
        named = ", ".join(facts.architectures)
        return VllmLayoutError(
            f"{facts.model}: kvledger does not know whether {release.short} serves architectures "
            f"[{named}] with pipeline parallelism (it refuses every model class without "
            "SupportsPP, and kvledger's table, plan/engines/vllm/pp_support.py, has no verdict for "
            "the class vLLM would pick); use --pipeline-parallel-size 1")
    arch, supported, where = verdict
    if supported:
        return None
    return VllmStartupError(
        "Pipeline parallelism is not supported for this model. Supported models implement "
        f"the `SupportsPP` interface. ({arch}: {where} does not)",
        "ModelConfig.verify_with_parallel_config",
        "use --pipeline-parallel-size 1 (split the model over GPUs with "
        "--tensor-parallel-size instead)", release=release)


# -- block size --------------------------------------------------------------------------------


def check_block_size(final_block: int, requested: int | None, has_attention: bool,
                     release: VllmRelease | None = None) -> None:
    """A block size the attention backends cannot split into kernel blocks.

    vLLM ``CudaPlatform.get_attn_backend_cls`` validates each backend on the SM90 priority
    list with the configured block size (``AttentionBackend.validate_configuration`` →
    ``supports_block_size``) and raises "No valid attention backend found" when none takes it;
    for hybrid models that kept the user's size, ``Platform._check_aligned_block_size`` does
    the same. ``--block-size auto`` never reaches this (vLLM picks a size every backend takes),
    nor does an attention-free model (no attention backend). The sparse-MLA (64) and
    MiniMax-M3 (128) kernels are checked where their block size is chosen (``hybrid.py``).
    """
    if requested is None or not has_attention or final_block % KERNEL_BLOCK_MULTIPLE == 0:
        return
    raise VllmStartupError(
        f"No valid attention backend found for cuda with block_size={final_block} (FLASH_ATTN, "
        f"FLASHINFER, TRITON_ATTN, FLEX_ATTENTION and the MLA backends: block_size not "
        f"supported; they take multiples of {KERNEL_BLOCK_MULTIPLE})",
        "CudaPlatform.get_attn_backend_cls",
        f"use --block-size auto or a multiple of {KERNEL_BLOCK_MULTIPLE}", release=release)


# -- max_model_len -----------------------------------------------------------------------------


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        found = float(value)  # an integer past float's range (10**400) is no factor either
    except OverflowError:
        return None
    return found if math.isfinite(found) and found > 0 else None


def _rope_dicts(config: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """vLLM ``iter_rope_parameters`` on the top-level config (``rope_parameters``, which
    transformers fills from a legacy ``rope_scaling``): one dict, or one per layer type."""
    params = config.get("rope_parameters")
    if not isinstance(params, Mapping) or not params:
        params = config.get("rope_scaling")
    if not isinstance(params, Mapping) or not params:
        return []
    if all(isinstance(v, Mapping) for v in params.values()):  # nested by layer type
        return [v for v in params.values() if v]
    return [params]


def rope_types(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The RoPE types ``iter_rope_parameters`` yields ("rope_type", legacy "type")."""
    return tuple(str(p.get("rope_type", p.get("type", "default"))) for p in _rope_dicts(config))


def derived_max_model_len(facts: ModelFacts) -> tuple[float, str] | None:
    """(length, key) vLLM derives from the config, None when no key states one.

    The length keys as derive reads them (``facts.max_position_embeddings``:
    ``derive/max_len.py``, vLLM's ``derive_max_model_len_and_key`` — the smallest stated,
    ``model_max_length`` over them, class defaults included), named by the key that gave it,
    then vllm/config/model.py ``_get_and_verify_max_len``: times the RoPE ``factor`` of a
    type not in ``FACTOR_NOT_APPLIED``, except for Gemma-3, whose length is already scaled.
    Then a sentence-transformers config's ``max_seq_length`` (``facts.sentence_max_len``,
    source/sentence.py) *replaces* the result (``encoder_config``, after the RoPE step), the
    key named unchanged, as vLLM's message names it. tokenizer_config.json's
    ``model_max_length`` is not read: vLLM takes the minimum with it only for a pooling runner
    of a config stating ``position_embedding_type: "absolute"``, never for the generate runner
    kvledger plans (``tests/oracles/vllm-0.32/vllm-0.32-tokenizer-len.jsonl``).
    """
    derived = _from_config(facts)
    if derived is not None and facts.sentence_max_len is not None:
        return float(facts.sentence_max_len[1]), derived[1]
    return derived


# vllm/config/model.py ``_get_and_verify_max_len``: "none of the keys were found in the
# config": this length is assumed (with a warning), then the RoPE step applies to it.
NO_LENGTH_KEY_DEFAULT = 2048


def fallback_max_model_len(facts: ModelFacts) -> int:
    """vLLM's length for a config that states none and no ``--max-model-len``: 2,048 times
    the RoPE factor (``_get_and_verify_max_len``; vLLM warns "Assuming the model's maximum
    length is 2048")."""
    return int(NO_LENGTH_KEY_DEFAULT * _rope_step(facts))


def _rope_step(facts: ModelFacts) -> float:
    """The RoPE ``factor`` ``_get_and_verify_max_len`` multiplies the length by (1 for
    Gemma-3, whose length is already scaled, and for the types in FACTOR_NOT_APPLIED)."""
    top_type = str(facts.config.get("model_type") or facts.model_type)
    factor = 1.0
    if "gemma3" not in top_type:
        for params in _rope_dicts(facts.config):
            rope_type = params.get("rope_type", params.get("type"))
            if rope_type not in FACTOR_NOT_APPLIED and params.get("factor") is not None:
                factor = _rope_factor(facts, params.get("factor"))
    return factor


def _from_config(facts: ModelFacts) -> tuple[float, str] | None:
    """``derived_max_model_len`` from config.json alone (the RoPE step included)."""
    from kvledger.derive.max_len import MAX_LEN_KEYS, OVERRIDE_KEY

    length = facts.max_position_embeddings
    if length is None:
        return None
    text = text_config(facts)
    stated = [k for k in (OVERRIDE_KEY, *MAX_LEN_KEYS) if text.get(k) == length]
    key = stated[0] if stated else "max_position_embeddings"  # a class default
    factor = _rope_step(facts)
    derived = length * factor
    if derived > MAX_POSITIONS and facts.sentence_max_len is None:
        raise ConfigError(f"{facts.model}: the RoPE factor {factor:g} makes the derived "
                          f"max_model_len {derived:.4g}, beyond kvledger's bound of "
                          f"{MAX_POSITIONS:,} positions")
    return derived, key


def _rope_factor(facts: ModelFacts, value: Any) -> float:
    """A RoPE ``factor`` vLLM multiplies by: a positive finite number (vLLM would fail on
    anything else: a string, or NaN that no comparison can then refuse)."""
    found = _positive(value)
    if found is None:
        raise ConfigError(f"{facts.model}: the RoPE 'factor' must be a positive number, got "
                          f"{value!r}")
    return found


def _as_vllm_prints(facts: ModelFacts, length: float) -> str:
    """The derived length as vLLM's message shows it: a float once it multiplied by a RoPE
    factor (``131072.0`` for Llama-3.1), else the config's integer (or the integer of a
    sentence-transformers ``max_seq_length``, which replaced it)."""
    top_type = str(facts.config.get("model_type") or facts.model_type)
    if facts.sentence_max_len is None and "gemma3" not in top_type and _rope_dicts(facts.config):
        return str(float(length))
    return str(int(length)) if length.is_integer() else str(length)


def default_max_model_len(facts: ModelFacts) -> int:
    """vLLM's ``max_model_len`` when none is given: the derived length (for LongRoPE, the
    config's ``original_max_position_embeddings``), ``_get_and_verify_max_len``."""
    derived = derived_max_model_len(facts)
    if derived is None:
        # vLLM: no length key (2,048 assumed), then the sentence-transformers length replaces
        # it; with neither, the 2,048 after the RoPE step (``fallback_max_model_len``).
        if facts.sentence_max_len is not None:
            return int(facts.sentence_max_len[1])
        return fallback_max_model_len(facts)
    for params in _rope_dicts(facts.config):
        if params.get("rope_type", params.get("type")) in ("longrope", "su"):
            original = _positive(facts.config.get("original_max_position_embeddings"))
            if original is not None:
                return int(original)
    return int(derived[0])


def check_max_model_len(facts: ModelFacts, request: PlanRequest,
                        release: VllmRelease | None = None) -> None:
    """vllm/config/model.py ``_get_and_verify_max_len``: a ``max_model_len`` above the
    derived one raises unless the config's own ``model_max_length`` allows it, or
    ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` (``request.allow_long_max_model_len``; a serve line's
    environment sets it)."""
    wanted = request.max_model_len
    derived = derived_max_model_len(facts)
    if wanted is None or derived is None or wanted <= derived[0]:
        return
    top_limit = _positive(facts.config.get("model_max_length"))
    if (top_limit is not None and wanted <= top_limit) or request.allow_long_max_model_len:
        return
    length, key = derived
    taken = "" if facts.sentence_max_len is None else \
        f" (vLLM took {int(length)} from {facts.sentence_max_len[0]} max_seq_length)"
    raise VllmStartupError(
        f"User-specified max_model_len ({wanted}) is greater than the derived max_model_len "
        f"({key}={_as_vllm_prints(facts, length)} or model_max_length={_shown_limit(top_limit)}"
        " in model's "
        "config.json)", "ModelConfig._get_and_verify_max_len",
        f"pass --max-model-len <= {int(length)}{taken}, or set "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (kvledger: --allow-long-max-model-len)",
        release=release)


def sentence_len_notes(facts: ModelFacts, request: PlanRequest,
                       release: VllmRelease) -> list[str]:
    """Where the default max_model_len came from, when not from config.json: a plan that
    starts at 4,096 tokens on a 40,960-position config must say which file decided it."""
    if facts.sentence_max_len is None or request.max_model_len is not None:
        return []
    name, value = facts.sentence_max_len
    if default_max_model_len(facts) != value:  # LongRoPE: original_max_position_embeddings
        return []
    alone = _from_config(facts)
    instead = "" if alone is None else \
        f" in place of the {int(alone[0]):,} it derives from config.json"
    return [f"max_model_len {value:,} is {name}'s max_seq_length: {release.short} starts with it"
            f"{instead} (ModelConfig._get_and_verify_max_len); SGLang does not read that file"]


def _shown_limit(value: float | None) -> str:
    if value is None:
        return "None"
    return str(int(value)) if value.is_integer() else str(value)


# -- scheduler ---------------------------------------------------------------------------------


def check_scheduler(request: PlanRequest, release: VllmRelease | None = None) -> None:
    """vllm/config/scheduler.py ``SchedulerConfig.verify_max_model_len``: a step must hold at
    least one token of every sequence it admits."""
    if request.max_num_batched_tokens < request.max_num_seqs:
        raise VllmStartupError(
            f"max_num_batched_tokens ({request.max_num_batched_tokens}) must be greater than or "
            f"equal to max_num_seqs ({request.max_num_seqs}).",
            "SchedulerConfig.verify_max_model_len",
            "raise --max-num-batched-tokens or lower --max-num-seqs", release=release)


# -- not enough memory -------------------------------------------------------------------------


def memory_refusal_reason(
    max_model_len: int, needed_bytes: int, usable_bytes: int
) -> str:
    """vLLM's words when one request does not fit (v1/core/kv_cache_utils.py
    ``_check_enough_kv_cache_memory``), with kvledger's exact byte counts beside its GiB."""
    if usable_bytes <= 0:
        return ("No available memory for the cache blocks: the KV budget does not hold the "
                f"null block ({usable_bytes:,} B usable). Try increasing "
                "`gpu_memory_utilization`")
    return (
        f"To serve at least one request with the model's max seq len ({max_model_len}), "
        f"({needed_bytes / (1 << 30):.2f} GiB KV cache is needed, which is larger than the "
        f"available KV cache memory ({usable_bytes / (1 << 30):.2f} GiB) "
        f"[{needed_bytes:,} B needed, {usable_bytes:,} B usable after the null block]. Try "
        "increasing `gpu_memory_utilization` or decreasing `max_model_len`"
    )

"""Settings vLLM 0.32 resolves before it sizes the KV cache.

Each value here is one vLLM decides on its own from the model config and the engine
arguments, and each moves the numbers: the model dtype, what ``--kv-cache-dtype auto``
means, async scheduling and the resulting ``max_in_flight_tokens``, the prefix-caching
default and the Mamba cache mode, and the Mamba state dtypes. They are computed, never
read from an oracle, so a test can compare them with what vLLM logged.
"""

from __future__ import annotations

from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.layers import Kind, ModelFacts, Role
from kvledger.plan.engines.vllm.backend_choice import (
    dense_mla_backend,
    forced_standard,
    rocm_own_standard,
    sparse_mla_backend,
    text_config,
)
from kvledger.plan.engines.vllm.cache_dtype import CacheDtype, resolve_cache_dtype
from kvledger.plan.engines.vllm.errors import VllmLayoutError, VllmRefusesToStart
from kvledger.plan.engines.vllm.specs import (
    QUANT_FP8_PER_TENSOR,
    QUANT_NONE,
    QUANT_NVFP4,
)
from kvledger.plan.request import MTP_METHODS, PlanRequest
from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from kvledger.plan.engines.vllm.releases.profile import VllmRelease
    from kvledger.plan.engines.vllm.sparse_mla_backends import SparseMlaBackend

__all__ = ["Resolved", "VllmLayoutError", "kv_dtype_name", "resolve"]


@record(frozen=True)
class Resolved:
    """The settings vLLM resolves from the options and the model before it sizes the cache."""

    model_dtype: str
    # cache_config.cache_dtype as vLLM resolves it: the option, or under "auto" a checkpoint's
    # KV scheme vLLM adopts ("fp8_e4m3" for ModelOpt FP8, "fp8" for compressed-tensors).
    cache_dtype: str
    kv_storage_dtype: str  # element type of attention pages ("uint8" for fp8)
    kv_quant: str
    async_scheduling: bool
    max_concurrent_batches: int
    max_in_flight_tokens: int
    max_model_len: int
    max_num_batched_tokens: int
    max_num_encoder_input_tokens: int
    enable_prefix_caching: bool
    is_hybrid: bool
    use_mla: bool
    use_sparse: bool
    mamba_cache_mode: str
    mamba_cache_dtype: str
    mamba_ssm_cache_dtype: str
    requested_block_size: int | None  # None: "auto"
    release: VllmRelease  # the release that resolved these settings (its rules read it)
    # The KV element type by name ("bfloat16", "fp8_e4m3", "nvfp4"; never a storage type),
    # and one line saying where vLLM got it.
    kv_cache_dtype: str = ""
    cache_dtype_source: str = ""
    cache_dtype_reason: str = ""
    # SlidingWindowSpec.extra_retained_tokens (multi-module MTP keeps re-prefill runway).
    extra_retained_tokens: int = 0
    # Layer indices of MiniMax-M3's block-sparse attention (MiniMaxM3SparseAttention: its
    # MINIMAX_M3_SPARSE backend and the MINIMAX_M3_SPARSE_INDEXER side cache), which take
    # whole 128-token kernel blocks only (see ``hybrid.MINIMAX_M3_KERNEL_BLOCK``).
    minimax_sparse_layers: frozenset[int] = frozenset()
    # vLLM 0.33's GDN prefill checkpoint (releases/v0_33.py): the alignment entering the hybrid
    # block size and the checkpoint pages a GDN state charges a request; 0 when it does not
    # apply (0.32, prefix caching off, a Triton prefill on this GPU).
    gdn_checkpoint_alignment: int = 0
    gdn_prefill_checkpoint_blocks: int = 0
    # vLLM ``ModelConfig.get_mamba_chunk_size`` where mamba_cache_mode is "all" (the hybrid
    # block is a multiple of it); 0 otherwise.
    mamba_chunk_size: int = 0
    # Dense MLA: the backend the GPU's capability picks (``mla_backends.choose``) and the
    # block size ``--block-size auto`` then takes; "" / 0 for other models.
    mla_backend: str = ""
    mla_auto_block: int = 0
    # The release's CacheConfig.DEFAULT_BLOCK_SIZE (releases/profile.py default_block_size):
    # where --block-size auto starts and a hybrid block's kernel alignment starts.
    default_block_size: int = 16
    # A selected standard backend whose preferred block is not 16 (ROCm's
    # ROCM_AITER_UNIFIED_ATTN: 64); 0 when --block-size auto takes vLLM's usual 16.
    standard_auto_block: int = 0
    # Sparse MLA (DSA) on an SM10x GPU: the backend ``sparse_mla_backends.choose_sm10x`` finds,
    # which sets the stored layout and block-stride alignment; None elsewhere (the SM90 rules
    # in ``convert.layer_spec``).
    sparse_mla: SparseMlaBackend | None = None
    notes: tuple[str, ...] = ()

    def as_vllm_resolved(self) -> dict[str, Any]:
        """The subset the oracle lists under ``vllm_resolved`` (same names)."""
        return {
            "model_dtype": self.model_dtype,
            "cache_dtype": self.cache_dtype,
            "async_scheduling": self.async_scheduling,
            "max_in_flight_tokens": self.max_in_flight_tokens,
            # 0.10's CacheConfig has no mamba_cache_mode: vLLM reports none.
            "mamba_cache_mode": self.mamba_cache_mode if self.release.mamba_cache_settings
            else None,
            "mamba_ssm_cache_dtype": self.mamba_ssm_cache_dtype,
            "mamba_cache_dtype": self.mamba_cache_dtype,
            "is_hybrid": self.is_hybrid,
            "use_mla": self.use_mla,
        }


# vLLM ``_FLOAT16_NOT_SUPPORTED_MODELS`` (config/model.py): "Numerical instability".
_NO_FLOAT16 = frozenset({"gemma2", "gemma3", "gemma3_text", "glm4"})


def _model_dtype(facts: ModelFacts) -> str:
    """vLLM's ``--dtype auto``: the one rule the weights line and the profile run read
    (``VllmEngine.serving_dtype``).

    vLLM ``_get_and_verify_dtype`` → ``_resolve_auto_dtype`` (config/model.py), on an SM80+
    GPU (supported dtypes bfloat16, float16, float32; preferred bfloat16): a float32 config
    (or one stating none, which loads as float32) is downcast to the preferred bfloat16, as
    is a dtype the platform does not list; a dtype the model type may not use (float16 for
    gemma2/3, glm4: ``_FLOAT16_NOT_SUPPORTED_MODELS``) falls back to bfloat16 too."""
    from kvledger.declare.dtypes import resolve_dtype

    dtype = resolve_dtype(facts.model_dtype).name
    if dtype not in ("bfloat16", "float16"):
        return "bfloat16"
    if dtype == "float16" and facts.model_type in _NO_FLOAT16:
        return "bfloat16"
    return dtype


# vLLM ``VllmConfig.__post_init__``: async scheduling defaults on unless a speculative method
# outside EagleModelTypes / NgramGPUTypes / draft_model / dspark / dflash is configured.
_NO_ASYNC_SPEC_METHODS = frozenset({"ngram", "medusa", "mlp_speculator", "suffix",
                                    "custom_class"})
# vLLM ``VllmConfig._get_v2_model_runner_unsupported_features``: these fall back to the V1
# model runner (otherwise Model Runner V2 is the default wherever Triton is, i.e. on GPUs).
_V1_RUNNER_SPEC_METHODS = frozenset({"suffix", "medusa", "mlp_speculator", "custom_class"})


def dcp_size(request: PlanRequest) -> int:
    """The request's ``decode_context_parallel_size`` (1: none); the
    rules are ``dcp.py``'s, imported only when it is above 1."""
    size = getattr(request.vllm_launch, "decode_context_parallel_size", 1)
    return size if isinstance(size, int) else 1


def concurrent_batches(request: PlanRequest, release: VllmRelease) -> tuple[bool, int]:
    """(async scheduling, ``VllmConfig.max_concurrent_batches``) as the planned release
    resolves them (config/vllm.py ``VllmConfig.__post_init__``).

    vLLM 0.32: a speculative method outside the EAGLE family / ``ngram_gpu`` / ``draft_model``
    / ``dspark`` / ``dflash`` turns async scheduling off whichever model runner runs, and the
    V1 runner never combines it with PP. vLLM 0.33 (``async_off_only_on_v1_runner``): those
    rules hold only for the V1 runner (``v1_async_sched_incompat``), so under Model Runner V2
    — the default on a GPU unless the method is one it lacks — ``ngram`` keeps async on. (The
    CPU oracle runs the V1 runner, having no Triton: it cannot show the 0.33 rule.)

    ``max_concurrent_batches``: with async scheduling, Model Runner V2 keeps pp + 1 batches
    in flight, V1 keeps 2 (it never combines async scheduling with PP); without, pp.
    """
    pp = request.pipeline_parallel_size
    method = request.speculative_method if request.num_speculative_tokens else None
    v2_runner = method not in _V1_RUNNER_SPEC_METHODS
    if release.async_scheduling_always:
        # 0.34: Model Runner V1 is gone, and with it every rule above (releases/v0_34.py).
        return True, pp + 1
    if not release.async_scheduling_by_default:
        # 0.10: SchedulerConfig.async_scheduling defaults to False (--async-scheduling opts in;
        # kvledger plans the default).
        return False, pp
    if release.async_off_only_on_v1_runner:
        v1_incompatible = method in _NO_ASYNC_SPEC_METHODS or pp > 1
        async_scheduling = v2_runner or not v1_incompatible
    else:
        async_scheduling = method not in _NO_ASYNC_SPEC_METHODS and (pp <= 1 or v2_runner)
    if not async_scheduling:
        return False, pp
    return True, pp + 1 if v2_runner else 2


def _kv_storage(cache_dtype: str, model_dtype: str) -> tuple[str, str]:
    # vLLM ``get_kv_cache_torch_dtype`` / ``get_kv_quant_mode``: "auto" (already resolved
    # against the checkpoint by ``cache_dtype.resolve_cache_dtype``) is the model dtype; fp8
    # variants store uint8 with per-tensor scales; nvfp4 packs fp4 values with fp8 block
    # scales.
    if cache_dtype == "auto":
        return model_dtype, QUANT_NONE
    if cache_dtype.startswith("fp8"):
        return "uint8", QUANT_FP8_PER_TENSOR
    if cache_dtype == "nvfp4":
        return "nvfp4", QUANT_NVFP4
    return cache_dtype, QUANT_NONE


def kv_dtype_name(cache_dtype: str, model_dtype: str) -> str:
    """The element type a cache_dtype string stores, by name (fp8 caches hold fp8_e4m3 or
    fp8_e5m2 values in uint8 storage: vLLM ``STR_DTYPE_TO_TORCH_DTYPE``)."""
    if cache_dtype == "auto":
        return model_dtype
    if cache_dtype in ("fp8", "fp8_e4m3", "fp8_ds_mla"):
        return "fp8_e4m3"
    return resolve_dtype(cache_dtype).name


def _mamba_chunk_size(facts: ModelFacts) -> int:
    """vLLM ``ModelConfig.get_mamba_chunk_size`` (config/model.py): the text config's
    ``mamba_chunk_size`` (Bamba, Falcon-H1, Granite), else ``chunk_size`` (Mamba2,
    Nemotron-H, Zamba), else 2,048 (Mamba1 has no chunk)."""
    text = text_config(facts.config)
    for key in ("mamba_chunk_size", "chunk_size"):
        value = text.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 2048


# vLLM ``MODELS_CONFIG_MAP`` (model_executor/models/config.py): the architectures whose
# ``verify_and_update_config`` sets mamba_ssm_cache_dtype when the option is "auto".
_QWEN35_ARCHS = frozenset({
    "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM",
    "Qwen3_5MoeForConditionalGeneration", "Qwen4ExpForCausalLM",
    "Qwen4ExpForConditionalGeneration",
})
_NEMOTRON_H_ARCHS = frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM"})


def _mamba_ssm_cache_dtype(facts: ModelFacts, release: VllmRelease) -> str:
    """vLLM's per-architecture ``mamba_ssm_cache_dtype`` when the option is "auto".

    - Qwen3.5 (``Qwen3_5ForConditionalGenerationConfig.verify_and_update_config``): the
      text config's ``mamba_ssm_dtype``, when stated.
    - NemotronH (``NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype``): the config's
      ``mamba_ssm_cache_dtype``, float32 when it states none (0.19: float16;
      ``VllmRelease.nemotron_h_ssm_cache_default``).
    - everything else stays "auto" (the conv state dtype).
    """
    text = text_config(facts.config)
    archs = set(facts.architectures)
    if archs & _NEMOTRON_H_ARCHS:
        value = text.get("mamba_ssm_cache_dtype", facts.config.get("mamba_ssm_cache_dtype"))
        return str(value) if isinstance(value, str) else release.nemotron_h_ssm_cache_default
    if archs & _QWEN35_ARCHS:
        value = text.get("mamba_ssm_dtype")
        if isinstance(value, str):
            return value
    return "auto"


def _ssm_dtype(facts: ModelFacts, request: PlanRequest, release: VllmRelease) -> str:
    """``--mamba-ssm-cache-dtype`` as given; at "auto", the architecture's own (the
    ``verify_and_update_config`` rules above apply only when the option is "auto")."""
    given = str(getattr(request.vllm_launch, "mamba_ssm_cache_dtype", "auto"))
    return given if given != "auto" else _mamba_ssm_cache_dtype(facts, release)


def resolve(facts: ModelFacts, request: PlanRequest, release: VllmRelease) -> Resolved:
    """What ``release`` resolves for ``facts`` served with ``request`` (module docstring)."""
    if request.data_parallel_size < 1:  # pragma: no cover - PlanRequest validates
        raise VllmLayoutError("data_parallel_size must be >= 1")
    kinds = {g.layer.kind for g in facts.groups if g.layer.owns_memory}
    has_state = Kind.STATE in kinds
    has_attention = bool(kinds - {Kind.STATE, Kind.NONE})
    has_cross = Kind.CROSS in kinds
    model_dtype = _model_dtype(facts)
    _release_refusals(request, model_dtype, release)
    cache = _model_hook_cache_dtype(facts, request, release,
                                    resolve_cache_dtype(
                                        facts, request.kv_cache_dtype, release,
                                        allow_deprecated=getattr(
                                            request.vllm_launch,
                                            "allow_deprecated_quantization", False)))
    use_mla = Kind.MLA in kinds
    minimax_sparse = _minimax_sparse_layers(facts)
    if minimax_sparse and cache.cache_dtype.startswith("nvfp4"):
        # MiniMaxM3SparseMSANvfp4Backend.customize_spec repacks each head's K and V into
        # slots of packed data + block scales under an LBHNC layout: not modelled here.
        raise VllmLayoutError(
            f"kvledger's vLLM layout does not model {release.short}'s MiniMax-M3 nvfp4 KV layout "
            "(MiniMaxM3SparseMSANvfp4Backend per-head slots); use --kv-cache-dtype fp8 or auto"
        )
    if cache.cache_dtype.startswith("nvfp4") and use_mla:
        # vLLM ``VllmConfig.validate_nvfp4_kv_cache_with_mla`` (config/vllm.py).
        raise VllmRefusesToStart(
            f"{release.short} refuses to start: nvfp4 KV cache is not supported with MLA "
            "(Multi-head Latent Attention) backends; use a different --kv-cache-dtype "
            f"(e.g. 'fp8' or 'auto') for MLA models ({cache.reason})"
        )
    if cache.cache_dtype == "fp8_e5m2" and use_mla:
        # platforms/cuda.py get_attn_backend_cls: no SM90 MLA backend lists fp8_e5m2 in its
        # supported_kv_cache_dtypes (FLASH_ATTN_MLA, FLASHMLA, TRITON_MLA; sparse:
        # FLASH_ATTN_MLA_SPARSE, FLASHMLA_SPARSE, FLASHINFER_MLA_SPARSE_SM90).
        raise VllmRefusesToStart(
            f"{release.short} refuses to start: No valid attention backend found for cuda with "
            "kv_cache_dtype fp8_e5m2 and MLA (no SM90 MLA backend stores fp8_e5m2; use fp8)"
        )
    storage, quant = _kv_storage(cache.cache_dtype, model_dtype)

    max_model_len, length_notes = effective_max_model_len(facts, request, release)

    async_scheduling, concurrent = concurrent_batches(request, release)
    # vLLM ``VllmConfig.max_in_flight_tokens`` = concurrent batches * max_num_batched_tokens;
    # before 0.26 the window specs read one batch (``window_holds_in_flight_batches``).
    in_flight = request.max_num_batched_tokens
    if release.window_holds_in_flight_batches:
        in_flight *= concurrent

    # vLLM ``ModelConfig.is_prefix_caching_supported`` (generative models): on by default,
    # except for encoder-decoder and attention-free models.
    prefix = request.enable_prefix_caching
    if prefix is None:
        prefix = not has_cross and has_attention and (
            release.hybrid_prefix_caching_by_default or not has_state)
    prefix_notes: tuple[str, ...] = ()
    if prefix and has_state and not release.hybrid_prefix_caching:
        # 0.10: MambaModelConfig.verify_and_update_config turns it off for every hybrid.
        prefix = False
        if request.enable_prefix_caching:
            prefix_notes = (f"{release.short} turns prefix caching off for a hybrid or Mamba "
                            "model (MambaModelConfig.verify_and_update_config: \"not yet "
                            "supported\"): planned without it",)
    # vLLM ``MambaModelConfig.verify_and_update_config``: with prefix caching a hybrid
    # model uses mamba_cache_mode "align"; without, "none". To 0.26 a model class with Mamba
    # prefix caching took "all" unless it speculates (``mamba_all_with_prefix_caching``).
    mamba_cache_mode = ("align" if prefix else "none") if has_state else "none"
    # 0.19 takes "all" while speculating too (``mamba_all_with_speculation``).
    speculating = bool(request.num_speculative_tokens) and not release.mamba_all_with_speculation
    if mamba_cache_mode == "align" and not speculating and set(
            facts.architectures) & release.mamba_all_with_prefix_caching:
        mamba_cache_mode = "all"

    # vLLM ``get_kv_cache_configs``: extra_retained_tokens = num_prefill_lookahead_tokens - 1;
    # the lookahead is num_speculative_tokens for multi-module MTP
    # (``SpeculativeConfig.use_multi_module_mtp``: min(MTP modules, speculative tokens) > 1),
    # 1 for other EAGLE-family drafters, 0 without one.
    mtp_modules = len({i for g in facts.groups if g.layer.role is Role.MTP for i in g.indices})
    multi_mtp = (request.speculative_method in MTP_METHODS
                 and min(mtp_modules, request.num_speculative_tokens) > 1)
    extra_retained = request.num_speculative_tokens - 1 if multi_mtp else 0

    return Resolved(
        model_dtype=model_dtype,
        cache_dtype=cache.cache_dtype,
        kv_storage_dtype=storage,
        kv_quant=quant,
        async_scheduling=async_scheduling,
        max_concurrent_batches=concurrent,
        max_in_flight_tokens=in_flight,
        max_model_len=max_model_len,
        max_num_batched_tokens=request.max_num_batched_tokens,
        # vLLM ``SchedulerConfig``: max_num_encoder_input_tokens defaults to
        # max_num_batched_tokens.
        max_num_encoder_input_tokens=request.max_num_batched_tokens,
        enable_prefix_caching=prefix,
        is_hybrid=has_state and has_attention,
        use_mla=use_mla,
        use_sparse=Kind.INDEXER in kinds and not minimax_sparse,
        mamba_cache_mode=mamba_cache_mode,
        mamba_chunk_size=_mamba_chunk_size(facts) if mamba_cache_mode == "all" else 0,
        mamba_cache_dtype=getattr(request.vllm_launch, "mamba_cache_dtype", "auto"),
        mamba_ssm_cache_dtype=_ssm_dtype(facts, request, release) if has_state else "auto",
        requested_block_size=request.block_size,
        release=release,
        default_block_size=rocm_own_standard(facts, request, release, use_mla,
                                              cache.cache_dtype) or release.default_block_size,
        kv_cache_dtype=kv_dtype_name(cache.cache_dtype, model_dtype),
        cache_dtype_source=cache.source,
        cache_dtype_reason=cache.reason,
        extra_retained_tokens=extra_retained,
        minimax_sparse_layers=minimax_sparse,
        **_joined({"notes": length_notes + prefix_notes} if length_notes or prefix_notes
                  else {},
                  _gdn_checkpoint(facts, request, release, mamba_cache_mode),
                  dense_mla_backend(facts, request, release, cache.cache_dtype, use_mla
                                     and Kind.INDEXER not in kinds),
                  sparse_mla_backend(facts, request, release, cache.cache_dtype, model_dtype,
                                      use_mla and Kind.INDEXER in kinds and not minimax_sparse),
                  forced_standard(facts, request, release, use_mla, has_state)),
    )


def effective_max_model_len(facts: ModelFacts, request: PlanRequest,
                            release: VllmRelease) -> tuple[int, tuple[str, ...]]:
    """The ``max_model_len`` ``release`` starts with, and why where it is not the one asked:
    the request's, else the length vLLM derives from every length key of the config
    (Command-R: model_max_length 131,072 over max_position_embeddings 8,192; startup.py), then
    every release rule that lowers it (a shorter draft model: ``_draft_limited``). The one
    place the length is worked out: the plan's resolve, the budget's reserves and the API's
    answers all read it (``VllmEngine.max_model_len``)."""
    from kvledger.plan.engines.vllm.startup import (
        NO_LENGTH_KEY_DEFAULT,
        default_max_model_len,
        derived_max_model_len,
    )

    length = request.max_model_len or default_max_model_len(facts)
    notes: tuple[str, ...] = ()
    if request.max_model_len is None and derived_max_model_len(facts) is None \
            and facts.sentence_max_len is None:
        notes = (f"the config states no maximum length: {release.short} assumes "
                 f"{NO_LENGTH_KEY_DEFAULT:,} tokens (after its RoPE step: "
                 f"{length:,}); pass --max-model-len to plan another",)
    length, draft_note = _draft_limited(request, length, release)
    if draft_note:
        notes = (*notes, draft_note)
    return length, notes


def _draft_limited(request: PlanRequest, max_model_len: int,
                   release: VllmRelease) -> tuple[int, str | None]:
    """vLLM 0.33 ``VllmConfig._limit_max_model_len_to_draft`` (``draft_length.py``): the
    length a shorter separate draft model leaves, and vLLM's warning. Model Runner V2 runs
    every draft-config method (none is in ``_V1_RUNNER_SPEC_METHODS``)."""
    launch = request.vllm_launch
    if launch is None or getattr(launch, "draft_max_model_len", None) is None \
            or not request.num_speculative_tokens:
        return max_model_len, None
    if not release.limits_max_model_len_to_draft:
        return max_model_len, None
    from kvledger.plan.engines.vllm.draft_length import limited_max_model_len

    return limited_max_model_len(max_model_len, (request.speculative_method or "").lower(),
                                 launch.draft_max_model_len, launch.draft_rope_types,
                                 release.short)


def _model_hook_cache_dtype(facts: ModelFacts, request: PlanRequest, release: VllmRelease,
                            cache: CacheDtype) -> CacheDtype:
    """A model-config hook's KV dtype: vLLM 0.33 ``Glm5NextModelConfig.
    verify_and_update_config`` (model_executor/models/config.py) sets ``cache_dtype = "fp8"``
    under ``auto`` on an SM10x CUDA GPU when the text config has ``index_topk``. The CPU
    oracle cannot show it (the hook returns early off CUDA), so this is read from source."""
    if cache.cache_dtype != "auto":
        return cache
    if not set(facts.architectures) & release.fp8_auto_kv_on_sm100:
        return cache
    if text_config(facts.config).get("index_topk") is None:
        return cache
    from kvledger.plan.engines.vllm.hardware import capability

    cap, _ = capability(request.gpu)
    if cap is None or cap[0] != 10:
        return cache
    return CacheDtype("fp8", "model config",
                      f"{release.short} stores an fp8 KV cache for this model on an SM10x GPU "
                      "under --kv-cache-dtype auto (Glm5NextModelConfig: index_topk is set)")


def _joined(*parts: dict[str, Any]) -> dict[str, Any]:
    """Resolved fields from several resolvers, their ``notes`` kept in order, each once."""
    out: dict[str, Any] = {}
    notes: list[str] = []
    for part in parts:
        for key, value in part.items():
            if key == "notes":
                notes.extend(n for n in value if n not in notes)
            else:
                out[key] = value
    if notes:
        out["notes"] = tuple(notes)
    return out


def _release_refusals(request: PlanRequest, model_dtype: str, release: VllmRelease) -> None:
    """Start-up refusals a release added: vLLM 0.33 ``VllmConfig._reject_mismatched_float_kv_
    cache`` (config/vllm.py: an explicit float KV dtype other than the model's, in its words)
    and the speculative methods it dropped (``SpeculativeMethod``, config/speculative.py)."""
    asked = request.kv_cache_dtype
    if asked in release.kv_cache_dtypes_missing:
        raise VllmRefusesToStart(
            f"{release.short} refuses to start: --kv-cache-dtype {asked} is not one of its "
            "CacheDType values (config/cache.py; argument parsing rejects it)")
    if (release.rejects_mismatched_float_kv and asked in ("float16", "bfloat16")
            and asked != model_dtype):
        allowed = "auto" if model_dtype == "float32" else f"auto or {model_dtype}"
        raise VllmRefusesToStart(
            f"{release.short} refuses to start: kv_cache_dtype=\"{asked}\" is incompatible "
            f"with dtype=\"{model_dtype}\". Please set --kv-cache-dtype to {allowed}")
    method = (request.speculative_method or "").lower()
    if method in release.removed_speculative_methods:
        raise VllmRefusesToStart(
            f"{release.short} refuses to start: speculative method {method!r} is no longer "
            f"one of its SpeculativeMethod values (config/speculative.py)")


def _gdn_checkpoint(facts: ModelFacts, request: PlanRequest, release: VllmRelease,
                    mamba_cache_mode: str) -> dict[str, Any]:
    """The release's GDN prefill checkpoint, where it applies: align mode, Qwen GDN layers
    (``GatedDeltaNetState``), and the FlashInfer prefill the GPU's capability selects
    (``hardware.gdn_flashinfer_prefill``)."""
    if not release.gdn_checkpoint_alignment or mamba_cache_mode != "align":
        return {}
    # GatedDeltaNetState (derive/states.py), known by its kind: the states module stays off
    # the path of a model without one.
    gdn: list[Any] = [g.layer for g in facts.groups
                      if getattr(g.layer, "state_kind", "") == "gated_delta_net"]
    if not gdn:
        return {}
    from kvledger.plan.engines.vllm.hardware import capability, gdn_flashinfer_prefill

    cap, why = capability(request.gpu)
    notes = (why,) if why else ()
    if not gdn_flashinfer_prefill(cap, gdn[0].head_k_dim):
        return {"notes": (*notes, f"GDN prefill: Triton on this GPU ({release.short} aligns "
                                  "no prefill checkpoint for it)")}
    return {"gdn_checkpoint_alignment": release.gdn_checkpoint_alignment,
            "gdn_prefill_checkpoint_blocks": release.gdn_prefill_checkpoint_blocks,
            "notes": (*notes, f"GDN prefill: FlashInfer ({release.short} aligns the hybrid "
                              f"block to its {release.gdn_checkpoint_alignment}-token "
                              "checkpoints and charges one checkpoint page a request)")}


def _minimax_sparse_layers(facts: ModelFacts) -> frozenset[int]:
    """Indices of the layers that carry a MiniMax-M3 lightning-indexer cache: vLLM builds
    those as ``MiniMaxM3SparseAttention`` (models/minimax_m3/nvidia/model.py
    ``MiniMaxM3DecoderLayer``: ``layer_id in _sparse_attention_layer_ids(config)``)."""
    if not any(g.layer.kind is Kind.INDEXER for g in facts.groups):
        return frozenset()
    # Imported only for models with an indexer: the family is not on the start-up path.
    from kvledger.derive.families.minimax import IndexCache

    return frozenset(i for g in facts.groups if isinstance(g.layer, IndexCache) for i in g.indices)

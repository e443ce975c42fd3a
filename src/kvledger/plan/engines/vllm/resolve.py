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
from kvledger.plan.engines.vllm.cache_dtype import CacheDtype, resolve_cache_dtype
from kvledger.plan.engines.vllm.errors import VllmLayoutError, VllmRefusesToStart, engine_words
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
            "mamba_cache_mode": self.mamba_cache_mode,
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
    text = _text_config(facts.config)
    for key in ("mamba_chunk_size", "chunk_size"):
        value = text.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 2048


def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    for key in ("text_config", "llm_config", "language_config"):
        sub = config.get(key)
        if isinstance(sub, dict):
            return sub
    return config


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
    text = _text_config(facts.config)
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
                                    resolve_cache_dtype(facts, request.kv_cache_dtype, release))
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
        default_block_size=_rocm_own_standard(facts, request, release, use_mla,
                                              cache.cache_dtype) or release.default_block_size,
        kv_cache_dtype=kv_dtype_name(cache.cache_dtype, model_dtype),
        cache_dtype_source=cache.source,
        cache_dtype_reason=cache.reason,
        extra_retained_tokens=extra_retained,
        minimax_sparse_layers=minimax_sparse,
        **_joined({"notes": length_notes} if length_notes else {},
                  _gdn_checkpoint(facts, request, release, mamba_cache_mode),
                  _dense_mla_backend(facts, request, release, cache.cache_dtype, use_mla
                                     and Kind.INDEXER not in kinds),
                  _sparse_mla_backend(facts, request, release, cache.cache_dtype, model_dtype,
                                      use_mla and Kind.INDEXER in kinds and not minimax_sparse),
                  _forced_standard(facts, request, release, use_mla, has_state)),
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
    if _text_config(facts.config).get("index_topk") is None:
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


def _dense_mla_backend(facts: ModelFacts, request: PlanRequest, release: VllmRelease,
                       cache_dtype: str, dense_mla: bool) -> dict[str, Any]:
    """The dense MLA backend this GPU's capability picks (``mla_backends``), hence the block
    size ``--block-size auto`` takes; a refusal when no backend takes the cache dtype and
    block size (vLLM ``get_attn_backend_cls``: "No valid attention backend found")."""
    if not dense_mla:
        return {}
    from kvledger.plan.engines.vllm.hardware import capability
    from kvledger.plan.engines.vllm.mla_backends import choose

    cap, why = capability(request.gpu)
    notes = (why,) if why else ()
    forced = forced_backend(request)
    if cap is None:
        aiter = bool(getattr(getattr(request, "vllm_launch", None), "rocm_aiter_mla", False))
        return _rocm_dense_mla(forced, cache_dtype, request.block_size, release, aiter)

    if forced is not None:
        return _forced_dense_mla(forced, cap, cache_dtype, _text_config(facts.config),
                                 request.block_size, notes, release)
    chosen = choose(cap, cache_dtype, _text_config(facts.config), request.block_size)
    if chosen is None and request.block_size is not None:
        # No backend splits this block into kernel blocks: the start-up check
        # (startup.check_block_size) refuses it in vLLM's words.
        return {"notes": notes}
    if chosen is None:
        raise VllmRefusesToStart(
            f"{release.short} refuses to start: No valid attention backend found for cuda "
            f"(SM{cap[0]}{cap[1]}) with MLA and kv_cache_dtype {cache_dtype}")
    default = release.default_block_size
    return {"mla_backend": chosen.name, "mla_auto_block": chosen.preferred_block(default),
            "notes": notes}


def _rocm_dense_mla(forced: str | None, cache_dtype: str, block_size: int | None,
                    release: VllmRelease, aiter: bool = False) -> dict[str, Any]:
    """A ROCm GPU (``mla_backends.choose_rocm``): TRITON_MLA under vLLM's default environment,
    ROCM_AITER_MLA first with ``aiter`` (``VLLM_ROCM_USE_AITER=1``). A selected backend is
    checked alone (``get_attn_backend_cls``): TRITON_MLA, or ROCM_AITER_MLA with AITER on."""
    from kvledger.plan.engines.vllm.errors import VllmLayoutError
    from kvledger.plan.engines.vllm.mla_backends import ROCM_AITER_MLA, TRITON_MLA, choose_rocm

    if aiter and forced in (None, "ROCM_AITER_MLA"):
        if cache_dtype not in ROCM_AITER_MLA.cache_dtypes:
            raise VllmRefusesToStart(
                f"{engine_words(release)} refuses to start: No valid attention backend found "
                f"for rocm with MLA and kv_cache_dtype {cache_dtype}")
        return {"mla_backend": ROCM_AITER_MLA.name,
                "mla_auto_block": ROCM_AITER_MLA.preferred_block(release.default_block_size),
                "notes": ("ROCm with VLLM_ROCM_USE_AITER=1: ROCM_AITER_MLA, whose decode "
                          "kernel takes any block size (rocm_aiter_mla.py MultipleOf(1))",)}
    if forced not in (None, "TRITON_MLA"):
        raise VllmLayoutError(
            f"attention backend {forced} on a ROCm GPU: kvledger plans only TRITON_MLA, "
            f"{engine_words(release)}'s choice there unless VLLM_ROCM_USE_AITER=1 "
            "(platforms/rocm.py _get_backend_priorities); drop --attention-backend to plan it")
    chosen = choose_rocm(cache_dtype, block_size)
    # rocm_aiter_mla.py: ROCM_AITER_MLA also takes fp8_e5m2 caches, and any block size.
    if chosen is None and cache_dtype not in TRITON_MLA.cache_dtypes | {"fp8_e5m2"}:
        # get_attn_backend_cls: "No valid attention backend found for rocm with …".
        raise VllmRefusesToStart(
            f"{engine_words(release)} refuses to start: No valid attention backend found for "
            f"rocm with MLA and kv_cache_dtype {cache_dtype}")
    if chosen is None:
        # Without VLLM_ROCM_USE_AITER=1 vLLM stops ("No valid attention backend found for
        # rocm"); with it, ROCM_AITER_MLA takes the configuration.
        raise VllmLayoutError(
            f"MLA on a ROCm GPU with --block-size {block_size} / --kv-cache-dtype "
            f"{cache_dtype}: {engine_words(release)}'s TRITON_MLA takes neither a block that "
            "is not a multiple of 16 nor fp8_e5m2, so without VLLM_ROCM_USE_AITER=1 vLLM finds "
            "no valid attention backend; with it vLLM runs ROCM_AITER_MLA, which kvledger "
            "does not plan. Drop --block-size (block 16, which both backends take) or use "
            "another KV dtype to plan it")
    return {"mla_backend": chosen.name,
            "mla_auto_block": chosen.preferred_block(release.default_block_size),
            "notes": ("ROCm: TRITON_MLA, vLLM's dense MLA backend there without "
                      "VLLM_ROCM_USE_AITER=1 (platforms/rocm.py _get_backend_priorities)",)}


# Standard attention backends vLLM 0.32 / 0.33 offer on CUDA (get_supported_kernel_block_sizes:
# FLASH_ATTN, TRITON_ATTN, FLEX_ATTENTION MultipleOf(16); FLASHINFER 16, 32, 64).
_STANDARD_BACKENDS = frozenset({"FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION"})
_SPARSE_BACKENDS = frozenset({"FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE",
                              "FLASH_ATTN_MLA_SPARSE_FA4", "FLASHINFER_MLA_SPARSE_SM90",
                              "FLASHINFER_MLA_SPARSE_SM120"})


def forced_backend(request: PlanRequest) -> str | None:
    """The attention backend the line selects (``--attention-backend``, or
    ``--attention-config '{"backend": …}'``), None for vLLM's own choice."""
    launch = getattr(request, "vllm_launch", None)
    name = getattr(launch, "attention_backend", None)
    return str(name).upper() if name else None


def _selected_refusal(forced: str, why: list[str],
                      release: VllmRelease | None = None) -> VllmRefusesToStart:
    """platforms/cuda.py ``get_attn_backend_cls``: a selected backend is checked alone."""
    return VllmRefusesToStart(
        f"{engine_words(release)} refuses to start: Selected backend AttentionBackendEnum.{forced} "
        f"is not valid for this configuration. Reason: {why}")


def _forced_dense_mla(forced: str, cap: tuple[int, int], cache_dtype: str,
                      text: dict[str, Any], block_size: int | None,
                      notes: tuple[str, ...], release: VllmRelease) -> dict[str, Any]:
    from kvledger.plan.engines.vllm.mla_backends import BY_NAME, reasons

    backend = BY_NAME.get(forced)
    if backend is None:
        raise _selected_refusal(forced, ["non-sparse not supported"]
                                if forced in _SPARSE_BACKENDS else ["MLA not supported"],
                                release)
    why = reasons(backend, cap, cache_dtype, text, block_size)
    if why:
        raise _selected_refusal(forced, why, release)
    block = backend.preferred_block(release.default_block_size)
    return {"mla_backend": backend.name, "mla_auto_block": block,
            "notes": (*notes, f"attention backend {forced}: selected by the line (block "
                              f"size {block} unless one is given)")}


def _forced_standard(facts: ModelFacts, request: PlanRequest, release: VllmRelease,
                     use_mla: bool, has_state: bool) -> dict[str, Any]:
    """A selected backend on a model without MLA: vLLM refuses an MLA one (they declare
    ``is_mla``: "non-MLA not supported"). A standard one takes the blocks kvledger plans for
    vLLM's own choice — FLASH_ATTN off SM10x, FLASHINFER on SM10x — where its kernel sizes
    are the same: TRITON_ATTN and FLEX_ATTENTION MultipleOf(16), FLASHINFER 16/32/64 (a
    larger block splits into kernel blocks), FLASH_ATTN MultipleOf(16) off SM10x. On SM10x,
    FLASH_ATTN may run FlashAttention 4, whose hd256 / fp8 block sizes
    (flash_attn.py ``_get_fa4_hd256_block_size``) are not modelled."""
    forced = forced_backend(request)
    if forced is None:
        return {}
    from kvledger.plan.engines.vllm.errors import VllmLayoutError
    from kvledger.plan.engines.vllm.hardware import capability
    from kvledger.plan.engines.vllm.mla_backends import BY_NAME

    cap, _ = capability(request.gpu)
    if forced.startswith("ROCM_") and cap is not None:
        raise VllmLayoutError(
            f"attention backend {forced} is a ROCm backend, which vLLM's CUDA build does not "
            "offer; name an AMD GPU with --gpu (MI300X, MI325X, MI355X) or drop "
            "--attention-backend")
    if facts.model_type == "deepseek_v4":
        return _forced_dsv4(forced, request, release)
    if use_mla:
        return {}
    if cap is None:
        return _forced_rocm_standard(facts, forced, request, release, has_state)
    if forced in BY_NAME or forced in _SPARSE_BACKENDS:
        raise _selected_refusal(forced, ["non-MLA not supported"], release)
    if forced not in _STANDARD_BACKENDS or cap is None or (cap[0] == 10
                                                             and forced == "FLASH_ATTN"):
        raise VllmLayoutError(f"attention backend {forced} on this GPU: its kernel block sizes "
                              "are not modelled; drop --attention-backend to plan vLLM's own "
                              "choice")
    return {"notes": (f"attention backend {forced}: selected by the line; its kernel blocks "
                      "take the block sizes vLLM's own choice takes here",)}


# ROCm standard backends kvledger plans when selected (vLLM 0.33 / 0.34
# v1/attention/backends/): all take kernel blocks in multiples of 16 and sinks;
# get_preferred_block_size is the base rule's (the release's default block, 16 here meaning
# "vLLM's usual") for TRITON_ATTN (MultipleOf(16)) and ROCM_AITER_FA (kernel sizes [16, 32],
# which AttentionBackend.supports_block_size accepts in any multiple), and 64 for
# ROCM_AITER_UNIFIED_ATTN. ROCM_AITER_FA takes head sizes 64, 128 and 256 only
# (get_supported_head_sizes) and decoder attention only (supports_attn_type); its shuffle
# layout (VLLM_ROCM_SHUFFLE_KV_CACHE_LAYOUT=1, customize_spec) packs K and V as two head slots
# of heads × head_size each, the same bytes a page. ROCM_ATTN (no sinks, per-head-size
# kernels) is not planned when selected.
_ROCM_STANDARD = {"TRITON_ATTN": 16, "ROCM_AITER_UNIFIED_ATTN": 64, "ROCM_AITER_FA": 16}
_ROCM_AITER_FA_HEADS = frozenset({64, 128, 256})


def _forced_rocm_standard(facts: ModelFacts, forced: str, request: PlanRequest,
                          release: VllmRelease, has_state: bool) -> dict[str, Any]:
    """A backend selected on a ROCm GPU for a model without MLA (platforms/rocm.py
    ``get_attn_backend_cls`` checks the selected backend alone)."""
    from kvledger.derive.layers import Attention
    from kvledger.plan.engines.vllm.errors import VllmLayoutError

    preferred = _ROCM_STANDARD.get(forced)
    if preferred is None:
        raise VllmLayoutError(f"attention backend {forced} on a ROCm GPU: its kernel block "
                              "sizes are not modelled (kvledger plans TRITON_ATTN, "
                              "ROCM_AITER_FA and ROCM_AITER_UNIFIED_ATTN there); drop "
                              "--attention-backend")
    if forced == "ROCM_AITER_FA":
        heads = {layer.k_dim for layer in facts.layers if isinstance(layer, Attention)}
        cross = any(layer.kind is Kind.CROSS for layer in facts.layers)
        why = [*(["head_size not supported"] if heads - _ROCM_AITER_FA_HEADS else []),
               *(["attention type not supported"] if cross else [])]
        if why:
            raise _selected_refusal(forced, why, release)
    block = request.block_size
    if block is not None and block % 16:
        raise _selected_refusal(forced, ["block_size not supported"], release)
    if has_state and preferred != 16:
        raise VllmLayoutError(f"attention backend {forced} beside recurrent layers: the hybrid "
                              "block alignment to its preferred 64 is not modelled; drop "
                              "--attention-backend")
    return {"standard_auto_block": preferred if preferred != 16 else 0,
            "notes": (f"attention backend {forced}: selected by the line; kernel blocks in "
                      f"multiples of 16, {preferred} with --block-size auto",)}


# transformers_utils/model_arch_config_convertor.py is_mm_prefix_lm (vLLM 0.34): the model
# types whose image tokens attend bidirectionally unless the config says otherwise.
_MM_PREFIX_TYPES = frozenset({"bagel", "gemma3", "molmo2", "moondream3", "paligemma"})
# rocm_attn.py RocmAttentionBackend: get_supported_head_sizes, supported_kv_cache_dtypes.
_ROCM_ATTN_HEADS = frozenset({32, 64, 80, 96, 128, 160, 192, 224, 256})
_ROCM_ATTN_KV = frozenset({"auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"})


def _rocm_own_standard(facts: ModelFacts, request: PlanRequest, release: VllmRelease,
                       use_mla: bool, cache_dtype: str) -> int:
    """The block ``--block-size auto`` starts from when vLLM picks ROCM_ATTN itself on a ROCm
    GPU (0: the release's default). platforms/rocm.py ``_get_backend_priorities`` puts
    ROCM_ATTN first for standard attention (unless a KV connector is set); it is taken when
    ``validate_configuration`` finds no reason against it — no attention sinks, no
    multimodal prefix attention, its head sizes and KV dtypes. Every later backend
    (ROCM_AITER_FA, ROCM_AITER_UNIFIED_ATTN, TRITON_ATTN) then prefers the default, so only
    ROCM_ATTN's own preference (the profile's ``rocm_attn_preferred_block``) moves the block.
    Cross-attention layers take another backend, and two backends agree on the default.
    ``--limit-mm-per-prompt`` zeros that disable multimodal input (which also clears the
    prefix mode) are not read here: only ``--language-model-only``."""
    preferred = release.rocm_attn_preferred_block
    if not preferred or use_mla or request.gpu is None or forced_backend(request) is not None:
        return 0  # no --gpu: a CUDA GPU is assumed (hardware.capability)
    from kvledger.derive.layers import Attention
    from kvledger.plan.engines.vllm.hardware import capability

    if capability(request.gpu)[0] is not None:  # a CUDA GPU
        return 0
    launch = request.vllm_launch
    if getattr(launch, "kv_transfer_config", None) is not None:
        return 0
    attention = [layer for layer in facts.layers if isinstance(layer, Attention)]
    if not attention or any(layer.kind is Kind.CROSS for layer in facts.layers):
        return 0
    mm_prefix = (bool(facts.config.get("is_mm_prefix_lm", facts.model_type in _MM_PREFIX_TYPES))
                 and not getattr(launch, "language_model_only", False))
    if (mm_prefix or any(layer.sinks for layer in attention)
            or {layer.k_dim for layer in attention} - _ROCM_ATTN_HEADS
            or cache_dtype not in _ROCM_ATTN_KV):
        return 0
    return preferred


def _forced_dsv4(forced: str, request: PlanRequest, release: VllmRelease) -> dict[str, Any]:
    """DeepSeek-V4 picks its attention class from the selected backend itself (vLLM 0.33
    models/deepseek_v4/nvidia/model.py ``_select_dsv4_attn_cls``): FLASHMLA_SPARSE and
    FLASHMLA_SPARSE_DSV4 are its default FlashMLA class off SM12x (what kvledger plans);
    FlashInfer's generic sparse backends are vLLM's ValueError; the rest are not modelled."""
    from kvledger.plan.engines.vllm.errors import VllmLayoutError
    from kvledger.plan.engines.vllm.hardware import capability

    cap, _ = capability(request.gpu)
    if forced in ("FLASHINFER_MLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM120"):
        raise VllmRefusesToStart(
            f"{engine_words(release)} refuses to start: {forced} is not a DeepSeek V4 attention "
            "backend. Use FLASHINFER_MLA_SPARSE_DSV4 for DeepSeek V4 FlashInfer sparse MLA.")
    if forced in ("FLASHMLA_SPARSE", "FLASHMLA_SPARSE_DSV4") and (cap is None or cap[0] != 12):
        return {"notes": (f"attention backend {forced}: DeepSeek-V4's FlashMLA attention "
                          "class, its default off SM12x",)}
    raise VllmLayoutError(f"attention backend {forced} for DeepSeek-V4: the attention class "
                          "it selects (_select_dsv4_attn_cls) is not modelled; drop "
                          "--attention-backend to plan vLLM's default FlashMLA class")


def _sparse_mla_backend(facts: ModelFacts, request: PlanRequest, release: VllmRelease,
                        cache_dtype: str, model_dtype: str, sparse: bool) -> dict[str, Any]:
    """On an SM10x GPU, the sparse MLA backend vLLM takes (``sparse_mla_backends``); a
    refusal when none takes this model and cache dtype."""
    if not sparse:
        return {}
    from kvledger.plan.engines.vllm.hardware import capability

    cap, _ = capability(request.gpu)
    if cap is None:
        from kvledger.plan.engines.vllm.errors import VllmLayoutError

        # platforms/rocm.py _get_backend_priorities: use_sparse → [ROCM_AITER_MLA_SPARSE]
        # (kernel blocks [1, MultipleOf(16)], align_blocks_to_rows), with its own fp8 rows.
        raise VllmLayoutError(
            f"sparse MLA on a ROCm GPU: {engine_words(release)} serves it only with "
            "ROCM_AITER_MLA_SPARSE, whose block and fp8 row layout kvledger does not model; "
            "name an NVIDIA GPU with --gpu to plan the CUDA layout")
    if cap[0] == 12 and facts.model_type != "deepseek_v4":
        from kvledger.plan.engines.vllm.errors import VllmLayoutError

        # platforms/cuda.py _get_backend_priorities, major 12: [TRITON_MLA,
        # FLASHINFER_MLA_SPARSE_SM120]; its Impl (flashinfer_mla_sparse_sm120.py) takes only
        # the packed fp8_ds_mla rows, and its MultipleOf(64) blocks need index_topk 2048.
        raise VllmLayoutError(
            f"sparse MLA on an SM12x GPU: {engine_words(release)} serves it only with "
            "FLASHINFER_MLA_SPARSE_SM120 (packed fp8_ds_mla rows, index_topk 2048), which "
            "kvledger does not model; name an SM90 or SM10x GPU with --gpu to plan it")
    forced = forced_backend(request)
    if forced is not None and forced not in _SPARSE_BACKENDS:
        raise _selected_refusal(forced, ["sparse not supported"], release)
    if cap is None or cap[0] != 10:
        if forced not in (None, "FLASHMLA_SPARSE"):
            from kvledger.plan.engines.vllm.errors import VllmLayoutError

            raise VllmLayoutError(f"attention backend {forced} off SM10x: not modelled; drop "
                                  "--attention-backend to plan vLLM's own choice")
        return {}
    from kvledger.derive.layers import MLA
    from kvledger.plan.engines.vllm.sparse_mla_backends import choose_sm10x

    text = _text_config(facts.config)
    mla = next(g.layer for g in facts.groups if isinstance(g.layer, MLA))
    heads = int(text.get("num_attention_heads", 0)) // request.tensor_parallel_size
    fa4 = release.fa4_sparse_mla_on_sm10x
    chosen = choose_sm10x(cache_dtype, model_dtype, text, mla.latent_dim + mla.rope_dim, heads,
                          fa4=fa4, forced=forced)
    if chosen is None and forced is not None:
        raise _selected_refusal(forced, ["the configuration not supported (head size, "
                                         "kv_cache_dtype or supports_combination)"], release)
    if chosen is None:
        raise VllmRefusesToStart(
            f"{release.short} refuses to start: No valid attention backend found for cuda "
            f"(SM{cap[0]}{cap[1]}) with sparse MLA and kv_cache_dtype {cache_dtype}")
    return {"sparse_mla": chosen}


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

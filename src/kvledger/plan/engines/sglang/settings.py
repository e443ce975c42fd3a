"""The settings SGLang 0.5.23 resolves before it sizes a pool: KV dtype, page size, context
length, attention TP/DP, the draft layers, the Mamba radix strategy and the ratios, each with
where it came from (``Resolved``).

Apart from ``layout.py`` (which sizes each pipeline stage's pool from these settings and
assembles ``SglangPlan``) because it is a concept of its own: SGLang's server-argument
resolution (``server_args.py``, ``arg_groups/overrides.py``), read from its source, not its
memory arithmetic. ``dsv4_plan.py`` reads the same ``Resolved``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.plan.engines.sglang.backends import HOPPER_LIKE
from kvledger.plan.engines.sglang.model import (
    DEEPSEEK_FAMILY_ARCHS,
    MAMBA_EXTRA_BUFFER_ARCHS,
    SglangLayoutError,
    SglangModel,
)
from kvledger.plan.engines.sglang.options import SglangOptions
from kvledger.plan.engines.sglang.releases.profile import sglang_words
from kvledger.plan.request import DRAFT_MODEL_METHODS, MTP_METHODS, PlanRequest
from kvledger.records import record

if TYPE_CHECKING:
    from kvledger.plan.engines.sglang.backends import Backend
    from kvledger.plan.engines.sglang.dsa_backends import DsaPair
    from kvledger.plan.engines.sglang.releases.profile import SglangRelease

# arg_groups/overrides.py: _MAMBA_RADIX_CACHE_ARCHS (those kvledger has facts for): the
# hybrid models whose radix cache _mamba_radix_cache_resolution resolves a strategy for
# (GraniteMoeHybrid only with a "mamba" layer, which every hybrid of it has). Another hybrid
# takes a path not reproduced here, and is refused.
MAMBA_RADIX_CACHE_ARCHS = frozenset({
    "KimiLinearForCausalLM", "KimiK3ForConditionalGeneration", "Qwen3NextForCausalLM",
    "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM", "Qwen3_5ForCausalLM",
    "MiniCPMV4_6ForConditionalGeneration", "NemotronHForCausalLM", "FalconH1ForCausalLM",
    "GraniteMoeHybridForCausalLM",
    # Text-only LFM2 (not its VL wrapper, below): a radix strategy, but no extra buffer (not
    # in _MAMBA_EXTRA_BUFFER_ARCHS, no linear-attention spec), so "no_buffer" with the
    # overlap scheduler off. Oracle case cov-lfm2-text.
    "Lfm2ForCausalLM",
})
# MAMBA_EXTRA_BUFFER_ARCHS (model.py): "auto" resolves to extra_buffer for them when the
# overlap scheduler is on or pages are > 1; the other radix archs take no_buffer.
# Hybrids whose states SGLang pools (configs/hybrid_arch.py: mamba2_config) but that are in
# neither list above: _mamba_radix_cache_resolution declares nothing for them, so the radix
# cache runs without a Mamba strategy (no extra buffer, the overlap scheduler untouched) and
# _calculate_mamba_ratio keeps its base of 3 slots per request. Oracle case cov-lfm2-vl.
# FalconMamba, Mamba and Mamba2 (no linear-attention spec either) are among them too: oracle
# cases cov-falcon-mamba, cov-mamba and cov-mamba2.
MAMBA_PLAIN_RADIX_ARCHS = frozenset({"Lfm2VlForConditionalGeneration",
                                     "FalconMambaForCausalLM", "MambaForCausalLM",
                                     "Mamba2ForCausalLM"})
# SGLang's --kv-cache-dtype choices kvledger's names map onto (arg_groups/fields/model.py).
KV_DTYPES = {"bfloat16": "bfloat16", "fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3",
             "fp8_e5m2": "fp8_e5m2", "nvfp4": "nvfp4"}


def sm_major(platform: str) -> int:
    """"sm90" → 9, "sm100" → 10, "sm120" → 12."""
    return int(platform[2:-1])


@record(frozen=True)
class Resolved:
    """The settings SGLang resolves before sizing, with where each came from."""

    kv_cache_dtype: str  # storage dtype name (kvledger registry)
    kv_dtype_source: str
    page_size: int
    page_size_source: str
    context_len: int
    attn_tp: int
    attn_dp: int
    draft_layers: int
    swa_full_tokens_ratio: float
    mamba_full_memory_ratio: float
    chunked_prefill_size: int
    overlap: bool
    mamba_strategy: str | None  # "extra_buffer" / "no_buffer" / None (no states)
    max_running_requests: int | None  # --max-running-requests, or 48 with speculation
    dsa_scaled_fp8: bool
    platform: str
    # speculative_num_draft_tokens (the verify width D) when speculating on a recurrent-state
    # model: MambaPool keeps D intermediate states per request (pools.SpecState); else None.
    spec_draft_tokens: int | None = None
    # The attention backend SGLang picks off Hopper (backends.py); None where kvledger's rules
    # do not need it (Hopper, DSA, a given page on an unread Blackwell model).
    attention_backend: str | None = None
    # The DSA prefill / decode pair and why (dsa_backends.py); None for other models.
    dsa_backends: str | None = None
    # What the plan counts of a separate EAGLE / EAGLE3 / STANDALONE draft (draft_layers.py).
    draft_note: str | None = None




def _kv_dtype(model: SglangModel, request: PlanRequest, platform: str,
              release: SglangRelease | None = None) -> tuple[str, str]:
    asked = request.kv_cache_dtype
    if model.dsa is not None and model.architecture in DEEPSEEK_FAMILY_ARCHS:
        # arg_groups/overrides.py: _dsa_kv_cache_dtype_default, by
        # torch.cuda.get_device_capability()'s major (HIP's on ROCm: 9 on gfx9 Instinct GPUs,
        # so bfloat16 there); learnable sinks keep bfloat16 and refuse another dtype.
        from kvledger.plan.engines.sglang.dsa_backends import (
            capability_major,
            has_learnable_sink,
        )

        sinks = has_learnable_sink(model)
        if asked == "auto":
            major = capability_major(platform)
            chosen = "fp8_e4m3" if major >= 10 and not sinks else "bfloat16"
            return chosen, f"DSA default on {platform} (_dsa_kv_cache_dtype_default)"
        name = KV_DTYPES.get(asked)
        if sinks and name != "bfloat16":
            raise SglangLayoutError("SGLang refuses to start: Learnable DSA attention sinks "
                                    f"require a bfloat16 KV cache; got kv_cache_dtype={asked}")
        if name not in ("bfloat16", "fp8_e4m3"):
            raise SglangLayoutError(f"SGLang's DSA KV cache is bfloat16 or fp8_e4m3, not "
                                    f"{asked!r}")
        return name, "option"
    if asked == "auto":
        if model.checkpoint_kv_fp8:
            return "fp8_e4m3", "checkpoint quant config kv_cache_quant_algo FP8"
        return model.model_dtype, "model dtype (auto)"
    name = KV_DTYPES.get(asked)
    if name is None:
        raise SglangLayoutError(
            f"--kv-cache-dtype {asked}: {sglang_words(release)} has no such choice (it takes "
            "auto, "
            "bf16/bfloat16, fp8_e4m3, fp8_e5m2, nvfp4, ...)")
    return name, "option"


def _dsa_pair(model: SglangModel, kv_dtype: str, platform: str, options: SglangOptions,
              release: SglangRelease | None) -> DsaPair | None:
    """The DSA prefill / decode pair (``dsa_backends.resolve_pair``) for a DSA model of the
    DeepSeek family; None otherwise. Given flags on any other model are refused: SGLang
    reads them only for DSA models."""
    from kvledger.plan.engines.sglang.dsa_backends import resolve_pair
    from kvledger.plan.engines.sglang.releases import NEWEST, RELEASES

    dsa = model.dsa is not None and model.architecture in DEEPSEEK_FAMILY_ARCHS
    given = [f"--dsa-{role}-backend" for role in ("prefill", "decode")
             if getattr(options, f"dsa_{role}_backend", None) is not None]
    if not dsa:
        if given:
            raise SglangLayoutError(
                f"{' and '.join(given)} on {model.model}: SGLang reads the DSA backends only "
                "for DeepSeek sparse-attention models; drop the flag")
        return None
    rules = (release if release is not None else RELEASES[NEWEST]).dsa_backends
    if rules is None:
        raise SglangLayoutError(f"DeepSeek sparse attention under {sglang_words(release)}: "
                                "its DSA backend pair is not read for this release")
    return resolve_pair(model, kv_dtype, platform, options, rules)


def platform_backend(model: SglangModel, request: PlanRequest, platform: str,
                     release: SglangRelease | None = None,
                     options: SglangOptions | None = None) -> Backend | None:
    """The attention backend SGLang picks off Hopper (``backends.attention_backend``), or
    ``None`` where kvledger's page rule does not need it: Hopper / Ampere / Ada, a DSA model
    (its own ``dsa`` backend), and on SM10x / SM12x with ``--page-size`` given for a model
    whose backend there is not read (the given page stands, as before). On ROCm an unread
    backend is refused: its memory factor follows it."""
    from kvledger.plan.engines.sglang.backends import attention_backend, is_rocm

    if platform in HOPPER_LIKE:
        return None
    if is_rocm(platform) or request.block_size is None:
        return attention_backend(model, request, platform, release, options)
    try:
        return attention_backend(model, request, platform, release, options)
    except SglangLayoutError:
        return None


def _page_size(model: SglangModel, request: PlanRequest, platform: str,
               backend: Backend | None = None,
               release: SglangRelease | None = None) -> tuple[int, str]:
    if model.dsa is not None and model.architecture in DEEPSEEK_FAMILY_ARCHS:
        from kvledger.plan.engines.sglang.backends import is_rocm

        if is_rocm(platform):
            return _rocm_dsa_page(model, request)
        if request.block_size is not None:
            page = request.block_size
            if page % (64 * model.dsa.index_kpool):
                raise SglangLayoutError(
                    f"page size {page}: SGLang's DSA pool needs 64-token index pages "
                    f"(page = 64 × index_kpool = {64 * model.dsa.index_kpool})")
            return page, "option"
        # model_overrides/deepseek_v2.py: "Setting page size to {64 * index_kpool} for DSA".
        return 64 * model.dsa.index_kpool, "DSA (64 × index_kpool)"
    if backend is not None:
        # backends.py: the page the resolved attention backend takes (Blackwell, ROCm).
        from kvledger.plan.engines.sglang.backends import backend_page_size

        return backend_page_size(backend, request.block_size, release)
    if request.block_size is not None:
        return request.block_size, "option"
    if platform in HOPPER_LIKE:
        # overrides.py _page_size_default: 1 unless a backend forces another; on Hopper the
        # default backends (fa3; MLA fa3) and on Ampere/Ada (flashinfer / triton) keep 1.
        return 1, f"SGLang default on {platform} (fa3 / flashinfer / triton backends)"
    raise SglangLayoutError(
        f"page size auto on {platform}: SGLang picks it from the attention backend there "
        "(trtllm_mha / trtllm_mla: 64, fa4: 128, flashinfer: 1); pass --page-size")


def _rocm_dsa_page(model: SglangModel, request: PlanRequest) -> tuple[int, str]:
    """``model_overrides/deepseek_v2.py`` ``_deepseek_family_overrides`` on ROCm: page 1 when
    ``aiter_can_use_preshuffle_paged_mqa()`` is false (``layers/attention/dsa/utils.py``:
    SGLANG_USE_AITER unset, which is its default, or SGLANG_DSA_HIP_DISABLE_PRESHUFFLE=1, or
    a Triton before 3.5 without AITER_ENABLE_AOT_GLUON_PA_MQA_LOGITS), else 64 × index_kpool.
    The declaration replaces any --page-size, so kvledger reads a given page as which of the
    two paths the deployment takes (the environment and the Triton build are not on a
    line); another page is not one SGLang keeps."""
    preshuffle = 64 * model.dsa.index_kpool if model.dsa is not None else 64
    given = request.block_size
    if given is None:
        return 1, ("DSA on ROCm: 1 without aiter's preshuffle paged MQA (SGLANG_USE_AITER "
                   "unset; deepseek_v2.py); --page-size "
                   f"{preshuffle} plans the aiter preshuffle path (SGLANG_USE_AITER=1 with "
                   "Triton >= 3.5)")
    if given == 1:
        return 1, "option (DSA on ROCm without aiter's preshuffle paged MQA)"
    if given == preshuffle:
        return given, "option (DSA on ROCm with aiter's preshuffle paged MQA, 64 × index_kpool)"
    raise SglangLayoutError(
        f"page size {given} for DSA on ROCm: SGLang replaces it with 1 (no aiter preshuffle "
        f"paged MQA) or {preshuffle} (64 × index_kpool, SGLANG_USE_AITER=1 with Triton >= "
        "3.5), by the runtime (deepseek_v2.py); pass --page-size 1 or "
        f"{preshuffle} for the path the deployment takes")


def context_length(model: SglangModel, request: PlanRequest) -> int:
    """``--context-length`` (kvledger's ``max_model_len``), at most the model's derived length:
    SGLang refuses a longer one unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1
    (``request.allow_long_max_model_len``: configs/model_config.py
    ``_derive_context_length`` then uses the given length)."""
    if request.max_model_len is None:
        return model.context_len
    if request.max_model_len > model.context_len and not request.allow_long_max_model_len:
        raise ValueError(
            f"--context-length {request.max_model_len} exceeds the model's derived context "
            f"length {model.context_len}; SGLang refuses it (unless "
            "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1)")
    return request.max_model_len


def _spec_draft_tokens(request: PlanRequest, options: SglangOptions) -> int:
    """``speculative_num_draft_tokens`` (D): ``--speculative-num-draft-tokens`` when given,
    else a linear chain's ``speculative_num_steps + 1`` (``speculative_hook.py``
    ``_handle_eagle_family``: "speculative_num_draft_tokens is adjusted to
    speculative_num_steps + 1 when speculative_eagle_topk == 1")."""
    if options.speculative_num_draft_tokens is not None:
        return options.speculative_num_draft_tokens
    return request.num_speculative_tokens + 1


def resolve(model: SglangModel, request: PlanRequest, options: SglangOptions,
            platform: str, default_chunked: int,
            release: SglangRelease | None = None) -> Resolved:
    tp, dp = request.tensor_parallel_size, request.data_parallel_size
    if options.enable_dp_attention:
        if tp % dp:
            raise ValueError(f"--enable-dp-attention: tensor_parallel_size {tp} is not a "
                             f"multiple of data_parallel_size {dp}")
        attn_tp, attn_dp = tp // dp, dp
    else:
        attn_tp, attn_dp = tp, 1
    from kvledger.plan.engines.sglang.backends import check_kv_dtype, check_spec_tree

    backend = platform_backend(model, request, platform, release, options)
    kv_dtype, kv_source = _kv_dtype(model, request, platform, release)
    dsa = _dsa_pair(model, kv_dtype, platform, options, release)
    check_kv_dtype(backend, request.kv_cache_dtype)
    page, page_source = _page_size(model, request, platform, backend, release)
    check_spec_tree(backend, page, request, options, release)
    context = context_length(model, request)
    draft = 0
    spec_draft: int | None = None
    draft_note: str | None = None
    if request.num_speculative_tokens > 0:
        method = (request.speculative_method or "").lower()
        from kvledger.plan.engines.sglang.draft_layers import SEPARATE_DRAFT_METHODS

        if method in DRAFT_MODEL_METHODS and method not in SEPARATE_DRAFT_METHODS:
            raise SglangLayoutError(
                f"speculative method {method!r} under --engine sglang: SGLang has no such "
                "speculative algorithm (EAGLE, EAGLE3, STANDALONE, NEXTN, NGRAM, DFLASH); plan "
                "without --speculative-method to size the target alone")
        if method in SEPARATE_DRAFT_METHODS:
            if model.hybrid_swa:
                raise SglangLayoutError(
                    "speculative decoding with a sliding-window pool is not reproduced for "
                    "SGLang: the draft keeps its own SWA layers (eagle_draft_swa_num_layers, "
                    "pool_configurator.py); drop the --speculative-* flags to plan the target "
                    "without speculation (the draft's KV is then not counted)")
            if model.mambaish:
                spec_draft = _spec_draft_tokens(request, options)
            if options.draft_num_layers is None:
                draft_note = (
                    f"speculative method {method!r}: the draft's config was not read, so its "
                    "share of SGLang's KV cell (cell × draft layers / target layers, "
                    "pool_configurator.py) is not counted and the pool is that much too large "
                    "here; give the draft with --draft-config (its config.json, directory or "
                    "Hub id)")
            else:
                draft = options.draft_num_layers
                draft_note = (
                    f"speculative method {method!r}: SGLang counts the draft's "
                    f"{draft} layer{'s' if draft != 1 else ''} at the target's per-layer KV "
                    "size (spec_aux_hidden_state.py, pool_configurator.py), and the draft "
                    "worker's pool holds as many tokens; the draft's weights load after the "
                    "pool is sized, outside it")
        if method in MTP_METHODS:
            if model.hybrid_swa:
                raise SglangLayoutError(
                    "speculative decoding with a sliding-window pool is not reproduced for "
                    "SGLang: its MTP draft keeps its own SWA layers (eagle_draft_swa_num_layers"
                    ", pool_configurator.py); drop the --speculative-* flags to plan the "
                    "target without speculation (the draft's KV is then not counted)")
            if model.mambaish:
                spec_draft = _spec_draft_tokens(request, options)
            # spec_aux_hidden_state.py: a path-less NEXTN/MTP draft takes the target's
            # num_nextn_predict_layers; without it SGLang sizes no draft KV in the cell.
            draft = model.nextn_layers
    strategy: str | None = None
    overlap = not options.disable_overlap_schedule
    if model.mambaish:
        if model.architecture not in MAMBA_RADIX_CACHE_ARCHS | MAMBA_PLAIN_RADIX_ARCHS:
            raise SglangLayoutError(f"{model.model} ({model.architecture}): SGLang's Mamba "
                                    "radix strategy for this architecture is not reproduced")
        if not options.disable_radix_cache and \
                model.architecture not in MAMBA_PLAIN_RADIX_ARCHS:
            # overrides.py _mamba_radix_cache_resolution ("auto"): extra_buffer when the
            # overlap scheduler is on or pages are > 1 and the architecture supports it,
            # else no_buffer (overlap off).
            if (overlap or page > 1) and model.architecture in MAMBA_EXTRA_BUFFER_ARCHS:
                strategy = "extra_buffer"
            else:
                strategy = "no_buffer"
                overlap = False
                # model_hook.py handle_mamba_radix_cache → mamba_hook.py
                # validate_mamba_no_buffer asserts page_size 1 (SGLang's words below) and a
                # backend other than trtllm_mha. Oracle case cov-lfm2-text-page16.
                if page > 1:
                    raise SglangLayoutError(
                        f"{sglang_words(release)} refuses to start: no_buffer only supports "
                        "page_size=1. "
                        f"({model.architecture} takes the no_buffer Mamba radix strategy, "
                        f"page size {page}; --disable-radix-cache avoids it)")
                if platform not in HOPPER_LIKE and (
                        backend is None or backend.name == "trtllm_mha"):
                    raise SglangLayoutError(
                        f"the no_buffer Mamba radix strategy on {platform}: SGLang refuses it "
                        "with the trtllm_mha attention backend (validate_mamba_no_buffer), and "
                        "which backend SGLang picks there is not reproduced; pass "
                        "--disable-radix-cache")
    requested = options.max_running_requests
    if requested is None and request.num_speculative_tokens > 0 and request.speculative_method:
        # speculative_hook.py _handle_eagle_family: "Max running requests is reset to 48 for
        # speculative decoding" unless given (after the memory defaults were resolved).
        requested = 48
    return Resolved(
        max_running_requests=requested,
        kv_cache_dtype=kv_dtype, kv_dtype_source=kv_source, page_size=page,
        page_size_source=page_source, context_len=context, attn_tp=attn_tp, attn_dp=attn_dp,
        draft_layers=draft, swa_full_tokens_ratio=options.swa_ratio,
        mamba_full_memory_ratio=options.mamba_ratio,
        chunked_prefill_size=options.chunked_prefill_size or default_chunked, overlap=overlap,
        mamba_strategy=strategy,
        # calculate_mla_kv_cache_dim: whether the DSA pair keeps the scaled fp8 row
        # (dsa_backends.py).
        dsa_scaled_fp8=dsa is not None and not dsa.raw_fp8_row,
        dsa_backends=dsa.describe() if dsa is not None else None,
        platform=platform,
        attention_backend=backend.name if backend is not None else None,
        spec_draft_tokens=spec_draft,
        draft_note=draft_note,
    )

"""The attention backend SGLang 0.5.23 picks off Hopper (Blackwell SM10x, ROCm), and what it
does to the pool: the page size that backend takes, and ROCm's aiter memory factor.

Read from SGLang 0.5.23's source; the values a later release may move are fields of its
release profile (``releases/profile.py``, set and cited in ``releases/v0_5_23.py``):

* **Which backend** (``arg_groups/model_override_base.py`` ``get_default_attn_backend``, run by
  ``overrides.py`` ``_attention_backend_default`` when ``--attention-backend`` is unset): on
  SM100 an MHA model takes ``trtllm_mha`` (``fa4`` when its K and V rows differ in width,
  ``has_asymmetric_kv``), an MLA model ``flashinfer``; a non-DSA member of the DeepSeek family
  ``trtllm_mla`` (``model_overrides/deepseek_v2.py`` ``_deepseek_family_overrides``). On ROCm
  an MHA model takes ``aiter``, an MLA model ``aiter`` when ``get_num_kv_heads(tp)`` is 16 or
  128 and ``triton`` otherwise.
* **Its page** (``overrides.py`` ``_mla_backend_page_constraints`` / ``_fa4_page_constraint``,
  then ``_page_size_default``): ``trtllm_mla`` keeps a given 32 / 64, else 64; ``trtllm_mha``
  keeps 16 / 32 / 64 / 128, else 64; ``fa4`` is 128 whatever was given; the others keep the
  given page, else 1 (on ROCm 64 only with ``SGLANG_AITER_KV_CACHE_LAYOUT=vectorized_5d``,
  an environment variable kvledger does not read: 1).
* **Its KV dtype check** (``_mla_kv_cache_dtype_checks``): ``trtllm_mla`` takes fp8_e4m3 or
  bf16 (auto) only.
* **ROCm memory** (``attention_hook.py`` ``handle_attention_backend_compatibility``): with
  ``aiter`` and a context above 8192, ``mem_fraction_static`` × 0.85, given or derived
  (unless ``SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION``, not read). The breakable prefill CUDA
  graph is on by default only on CUDA (``model_executor/cuda_graph_config.py``
  ``default_prefill_backend``), so its reserve is not in ROCm's default fraction.

* **The model overrides read** (``model_overrides/<file>.py``, collected by
  ``model_hook.py`` ``handle_model_specific_adjustments`` before
  ``handle_attention_backend_compatibility``, so a backend they declare is the one
  ``_attention_backend_default`` finds set; ``SglangRelease.arch_overrides``): gpt-oss and
  Llama-4 take ``trtllm_mha`` on SM100 and ``aiter`` on ROCm; Gemma-4 ``trtllm_mha`` / ``triton``;
  LFM2 ``flashinfer`` and MiMo-V2 ``fa4`` on SM100; Falcon-H1 ``triton`` on SM100;
  Qwen3-VL none of its own; Qwen3.5 / Qwen3-Next on SM100 ``trtllm_mha`` with page 64 unless
  the Mamba radix strategy is no_buffer (then ``triton``, page 1), the page replacing a given
  one. Each applies only without ``--attention-backend``; their sliding-window and
  recurrent-state pools are then planned as on Hopper, in the backend's page.
* **A given backend** (``SglangOptions.attention_backend``): triton and flashinfer anywhere,
  aiter on ROCm, trtllm_mha on SM100; it skips the overrides and the default, keeps its page
  rule above, and takes aiter's factor only if it is aiter.

* **Speculative decoding on ROCm**: ``get_default_attn_backend``'s ``is_hip`` arms do not
  look at the draft (its topk checks guard the Hopper fa3 and SM100 trtllm_mha arms only), so
  the backend and page above stand; ``_handle_eagle_family`` refuses an EAGLE tree (topk > 1)
  with pages > 1 off flashinfer / fa3 / triton (``check_spec_tree``).

Not read, and refused by name: SM12x; speculative decoding on Blackwell; sliding-window,
recurrent-state and encoder-decoder models off Hopper without a read override (their backend
and page paths differ); the architectures whose platform
override is not read (``SglangRelease.platform_override_archs``); an FP4 KV cache
(trtllm_mha's native NVFP4 scales, ``kv_cache_hook.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.plan.engines.sglang.model import (
    DEEPSEEK_FAMILY_ARCHS,
    MAMBA_EXTRA_BUFFER_ARCHS,
    SglangLayoutError,
)
from kvledger.plan.engines.sglang.releases import NEWEST, RELEASES
from kvledger.records import record

if TYPE_CHECKING:
    from kvledger.plan.engines.sglang.model import SglangModel
    from kvledger.plan.engines.sglang.options import SglangOptions
    from kvledger.plan.engines.sglang.releases.profile import ArchOverride, SglangRelease
    from kvledger.plan.request import PlanRequest

HOPPER_LIKE = ("sm90", "sm80", "sm86", "sm89")
# --attention-backend values kvledger plans off Hopper, and where: their page rule is read
# (backend_page_size) and they change nothing else it sizes.
GIVEN_BACKENDS = {"triton": "any", "flashinfer": "any", "aiter": "rocm", "trtllm_mha": "sm100"}


def is_rocm(platform: str) -> bool:
    """A ROCm platform (``memory.gpu_arch`` gives the preset's gfx name)."""
    return platform.startswith("gfx")


@record(frozen=True)
class Backend:
    """The attention backend SGLang resolves, and why."""

    name: str
    source: str
    # The page a model override declares beside the backend (replacing a given --page-size);
    # the backend's own page rule (backend_page_size) still applies on top.
    page: int | None = None


def _profile(release: SglangRelease | None) -> SglangRelease:
    return release if release is not None else RELEASES[NEWEST]


def _mla_kv_heads(model: SglangModel, tp: int) -> int:
    """``ModelConfig.get_num_kv_heads(tp)`` for an MLA model: the text config's
    ``num_key_value_heads`` (transformers fills it from ``num_attention_heads`` when unset)
    over TP, at least 1."""
    text = model.config.get("text_config") or model.config
    total = text.get("num_key_value_heads") or text.get("num_attention_heads")
    if not isinstance(total, int):
        raise SglangLayoutError(
            f"{model.model}: no num_key_value_heads / num_attention_heads, which SGLang's ROCm "
            "MLA backend choice reads (aiter at 16 or 128 KV heads a rank, else triton)")
    return max(1, total // tp)


def refuse_unread(model: SglangModel, request: PlanRequest, platform: str,
                  release: SglangRelease | None) -> None:
    """Refuse, by name, what kvledger has not read of SGLang's backend choice off Hopper."""
    if platform in HOPPER_LIKE:
        return
    where = "ROCm" if is_rocm(platform) else platform
    if not is_rocm(platform) and platform != "sm100":
        raise SglangLayoutError(
            f"page size auto on {platform}: SGLang picks it from the attention backend there "
            "(trtllm_mha / trtllm_mla: 64, fa4: 128, flashinfer: 1), which kvledger has not "
            "read for this platform; pass --page-size")
    profile = _profile(release)
    if model.architecture in profile.platform_override_archs:
        raise SglangLayoutError(
            f"{model.model} ({model.architecture}) on {where}: SGLang's model override for this "
            "architecture sets its own attention backend / page size there, which kvledger has "
            "not read; pass --page-size")
    if request.num_speculative_tokens > 0 and not is_rocm(platform):
        # On ROCm get_default_attn_backend's is_hip arms do not look at speculation (its
        # topk checks guard only the Hopper fa3 and SM100 trtllm_mha arms), so the backend and
        # page below stand with a draft; check_spec_tree applies the one page check.
        raise SglangLayoutError(
            f"speculative decoding on {where}: which attention backend (and page) SGLang takes "
            "with a draft there (get_default_attn_backend's topk checks) is not read; pass "
            "--page-size")
    override = arch_override(model, profile)
    pools_read = override is not None and override.state_pools and not model.encoder_tokens
    if (model.hybrid_swa or model.mambaish or model.encoder_tokens) and not pools_read:
        kind = "sliding-window" if model.hybrid_swa else \
            "recurrent-state" if model.mambaish else "encoder-decoder"
        raise SglangLayoutError(
            f"a {kind} model on {where}: SGLang's attention backend and page for it there are "
            "not read; pass --page-size")
    if request.kv_cache_dtype in ("nvfp4", "fp4_mx_block16"):
        raise SglangLayoutError(
            f"--kv-cache-dtype {request.kv_cache_dtype} on {where}: SGLang's trtllm_mha keeps "
            "kernel-native FP4 scales there (kv_cache_hook.py), which kvledger has not read")


def _options_of(request: PlanRequest, options: SglangOptions | None) -> SglangOptions | None:
    return options if options is not None else request.sglang


def given_backend(request: PlanRequest, options: SglangOptions | None = None) -> str | None:
    """``--attention-backend`` as given (``SglangOptions.attention_backend``), or None."""
    options = _options_of(request, options)
    return getattr(options, "attention_backend", None) if options is not None else None


def arch_override(model: SglangModel, profile: SglangRelease) -> ArchOverride | None:
    """The read model override registered for the model's architecture, if any."""
    for override in profile.arch_overrides:
        if model.architecture in override.archs:
            return override
    return None


def _given(name: str, platform: str) -> Backend:
    where = GIVEN_BACKENDS.get(name)
    here = "rocm" if is_rocm(platform) else platform
    if where is None or where not in ("any", here):
        readable = ", ".join(f"{n}" + ("" if w == "any" else f" ({w})")
                             for n, w in GIVEN_BACKENDS.items())
        raise SglangLayoutError(
            f"--attention-backend {name} on {platform}: kvledger plans SGLang's {readable} "
            "there; this backend's page and memory rules are not read")
    return Backend(name, "--attention-backend")


def _no_buffer_first(model: SglangModel, request: PlanRequest,
                     options: SglangOptions | None) -> bool:
    """Whether ``_mamba_radix_cache_resolution`` (run by ``handle_mamba_radix_cache`` before
    the model overrides, with the page as given) picks no_buffer with the radix cache on and
    no speculation: the case ``_qwen3_5_hybrid_overrides`` keeps off trtllm_mha."""
    options = _options_of(request, options)
    radix_off = bool(getattr(options, "disable_radix_cache", False))
    overlap = not bool(getattr(options, "disable_overlap_schedule", False))
    paging = request.block_size is not None and request.block_size > 1
    extra = (overlap or paging) and model.architecture in MAMBA_EXTRA_BUFFER_ARCHS
    return not radix_off and not extra and request.num_speculative_tokens == 0


def _override_backend(override: ArchOverride, model: SglangModel, request: PlanRequest,
                      platform: str, default: Backend,
                      options: SglangOptions | None) -> Backend:
    """What ``override`` declares on ``platform`` (``default``: get_default_attn_backend's)."""
    if is_rocm(platform):
        if override.rocm is None:
            return Backend(default.name, f"{default.source}; {override.source} sets none on "
                           "ROCm")
        return Backend(override.rocm, f"{override.source} on ROCm")
    name = override.sm100
    if name is None:
        return Backend(default.name, f"{default.source}; {override.source} sets none on "
                       "sm100")
    source = f"{override.source} on sm100"
    if override.sm100_else is not None and (
            default.name != name or _no_buffer_first(model, request, options)):
        why = f"the default is {default.name}" if default.name != name else \
            "the Mamba radix strategy is no_buffer"
        name, source = override.sm100_else, f"{source} ({why})"
    pages = dict(override.pages)
    return Backend(name, source, pages.get(name))


def attention_backend(model: SglangModel, request: PlanRequest, platform: str,
                      release: SglangRelease | None = None,
                      options: SglangOptions | None = None) -> Backend | None:
    """The backend SGLang resolves on SM100 or ROCm: a given ``--attention-backend``, else
    the architecture's model override (``arch_overrides``), else ``get_default_attn_backend``
    (or the DeepSeek-family override); ``None`` on Hopper / Ampere / Ada (their page rule is
    ``settings.py``'s), and for a DSA model (its own ``dsa`` backend and page)."""
    if platform in HOPPER_LIKE:
        return None
    if model.dsa is not None and model.architecture in DEEPSEEK_FAMILY_ARCHS:
        # settings.py's DSA rules: the dsa attention backend (_deepseek_family_overrides), its
        # page (64 × index_kpool; on ROCm 1 or that by aiter's preshuffle path) and the
        # prefill / decode kernel pair (dsa_backends.py).
        return None
    refuse_unread(model, request, platform, release)
    profile = _profile(release)
    given = given_backend(request, options)
    if given is not None:
        # overrides.py _attention_backend_default fills only an unset backend, and every read
        # model override declares one only when none is given.
        return _given(given, platform)
    default = _default_backend(model, request, platform, profile)
    override = arch_override(model, profile)
    if override is not None:
        return _override_backend(override, model, request, platform, default, options)
    return default


def _default_backend(model: SglangModel, request: PlanRequest, platform: str,
                     profile: SglangRelease) -> Backend:
    """``get_default_attn_backend`` on SM100 / ROCm (the DeepSeek family's override too)."""
    mla = model.attention_arch == "MLA"
    if is_rocm(platform):
        if not mla:
            return Backend(profile.rocm_mha_backend,
                           "ROCm MHA default (get_default_attn_backend)")
        heads = _mla_kv_heads(model, request.tensor_parallel_size)
        if heads in profile.rocm_mla_aiter_kv_heads:
            return Backend(profile.rocm_mha_backend,
                           f"ROCm MLA default at {heads} KV heads a rank "
                           "(get_default_attn_backend)")
        return Backend(profile.rocm_mla_other_backend,
                       f"ROCm MLA default at {heads} KV heads a rank, not "
                       f"{' / '.join(map(str, profile.rocm_mla_aiter_kv_heads))} "
                       "(get_default_attn_backend)")
    if mla and model.architecture in profile.deepseek_family:
        return Backend(profile.sm100_deepseek_backend,
                       "DeepSeek family on sm100 (deepseek_v2.py _deepseek_family_overrides)")
    if mla:
        return Backend(profile.sm100_mla_backend, "sm100 MLA default (get_default_attn_backend)")
    rows = model.heads
    if rows is not None and rows.head_dim != rows.v_head_dim:
        return Backend(profile.sm100_asymmetric_kv_backend,
                       f"sm100 MHA with K {rows.head_dim} ≠ V {rows.v_head_dim} "
                       "(get_default_attn_backend: has_asymmetric_kv)")
    return Backend(profile.sm100_mha_backend, "sm100 MHA default (get_default_attn_backend)")


def backend_page_size(backend: Backend, given: int | None,
                      release: SglangRelease | None = None) -> tuple[int, str]:
    """The page ``backend`` leaves: ``_mla_backend_page_constraints`` / ``_fa4_page_constraint``
    (a page the backend does not take is changed, as SGLang warns), else the given page, else
    ``_page_size_default``'s 1."""
    if backend.page is not None:
        # A model override's page declaration is the page the backend rule then sees.
        if backend.page != given and given is not None:
            changed = f" (--page-size {given} replaced)"
        else:
            changed = ""
        given, declared = backend.page, f"{backend.source} declares {backend.page}{changed}"
    else:
        declared = ""
    page, source = _backend_rule(backend, given, release)
    if declared and source == "option":
        return page, declared
    return page, f"{declared}; {source}" if declared else source


def _backend_rule(backend: Backend, given: int | None,
                  release: SglangRelease | None) -> tuple[int, str]:
    for name, kept, forced in _profile(release).backend_pages:
        if name != backend.name:
            continue
        if given is not None and given in kept:
            return given, "option"
        keeps = f", keeping a given {' / '.join(map(str, kept))}" if kept else " always"
        changed = f" (--page-size {given} changed)" if given is not None else ""
        return forced, (f"{name} backend sets {forced}{keeps}{changed}; {backend.source}")
    if given is not None:
        return given, "option"
    return 1, f"SGLang default with the {backend.name} backend ({backend.source})"


def check_spec_tree(backend: Backend | None, page: int, request: PlanRequest,
                    options: SglangOptions | None, release: SglangRelease | None) -> None:
    """``speculative_hook.py`` ``_handle_eagle_family``: an EAGLE tree (``speculative_eagle_topk``
    > 1) with pages > 1 runs only on flashinfer / fa3 / triton. kvledger sees the tree as a
    verify width other than the chain's steps + 1 (with topk 1 SGLang resets the width to
    steps + 1)."""
    options = _options_of(request, options)
    width = getattr(options, "speculative_num_draft_tokens", None)
    steps = request.num_speculative_tokens
    if backend is None or steps <= 0 or width is None or width == steps + 1 or page <= 1:
        return
    allowed = _profile(release).page_tree_spec_backends
    if backend.name not in allowed:
        raise SglangLayoutError(
            "SGLang refuses to start: speculative_eagle_topk > 1 with page_size > 1 is only "
            f"supported on {', '.join(allowed)}; got attention_backend={backend.name!r} "
            f"(page {page}, {width} draft tokens for {steps} steps: a tree). Use --page-size 1 "
            "or one of those backends")


def check_kv_dtype(backend: Backend | None, asked: str) -> None:
    """``_mla_kv_cache_dtype_checks``: "TensorRT-LLM MLA backend only supports kv-cache-dtype
    of fp8_e4m3, bf16, or auto."."""
    if backend is not None and backend.name == "trtllm_mla" and \
            asked not in ("auto", "fp8", "fp8_e4m3", "bf16", "bfloat16"):
        raise SglangLayoutError(
            "SGLang refuses to start: TensorRT-LLM MLA backend only supports kv-cache-dtype of "
            f"fp8_e4m3, bf16, or auto (--kv-cache-dtype {asked}; trtllm_mla is its sm100 "
            "default for the DeepSeek family)")


def aiter_fraction(fraction: float, backend: Backend | None, context_len: int,
                   release: SglangRelease | None = None) -> float:
    """``handle_attention_backend_compatibility``: aiter with ``context_len`` > 8192 scales
    ``mem_fraction_static`` by 0.85 (a given one too)."""
    profile = _profile(release)
    if backend is not None and backend.name == "aiter" and \
            context_len > profile.aiter_factor_above_context:
        return fraction * profile.aiter_mem_factor
    return fraction

"""Which attention backend vLLM takes for a model on a GPU, and what that backend decides
for the KV cache: the block ``--block-size auto`` starts from, the MLA and sparse-MLA backends
and their page layouts, a backend the line selects (``--attention-backend``) and vLLM's refusal
of one that is not valid. Read by ``resolve.resolve``, whose ``Resolved`` carries the result.

Each rule cites the vLLM source it was read in (``platforms/cuda.py`` / ``platforms/rocm.py``
``_get_backend_priorities``, each backend's ``get_supported_kernel_block_sizes`` /
``get_preferred_block_size`` / ``validate_configuration``).
"""

from __future__ import annotations

from kvledger.derive.layers import Kind, ModelFacts
from kvledger.plan.engines.vllm.errors import VllmLayoutError, VllmRefusesToStart, engine_words
from kvledger.plan.request import PlanRequest

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from kvledger.plan.engines.vllm.releases.profile import VllmRelease


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's config inside a multimodal wrapper (``text_config``,
    ``llm_config`` or ``language_config``), else the config itself."""
    for key in ("text_config", "llm_config", "language_config"):
        sub = config.get(key)
        if isinstance(sub, dict):
            return sub
    return config


def dense_mla_backend(facts: ModelFacts, request: PlanRequest, release: VllmRelease,
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
        return _forced_dense_mla(forced, cap, cache_dtype, text_config(facts.config),
                                 request.block_size, notes, release)
    chosen = choose(cap, cache_dtype, text_config(facts.config), request.block_size)
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


def forced_standard(facts: ModelFacts, request: PlanRequest, release: VllmRelease,
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


def rocm_own_standard(facts: ModelFacts, request: PlanRequest, release: VllmRelease,
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


def sparse_mla_backend(facts: ModelFacts, request: PlanRequest, release: VllmRelease,
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

    text = text_config(facts.config)
    mla = next(g.layer for g in facts.groups if isinstance(g.layer, MLA))
    total_heads = text.get("num_attention_heads")
    if not isinstance(total_heads, int) or isinstance(total_heads, bool) or total_heads <= 0:
        from kvledger.plan.engines.vllm.errors import VllmLayoutError

        # The sparse MLA backends' head limits read the heads a rank holds: not guessed.
        raise VllmLayoutError(f"{facts.model}: sparse MLA on SM10x needs the config's "
                              "num_attention_heads, which it does not state as a positive "
                              "whole number")
    heads = total_heads // request.tensor_parallel_size
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

"""What one SGLang release profile states (``SglangRelease``)."""

from __future__ import annotations

from kvledger.plan.engines.release import Release
from kvledger.records import record


@record(frozen=True, kw_only=True)
class ArchOverride:
    """One ``arg_groups/model_overrides/`` provider's attention choice off Hopper, as data
    (``backends.py`` reads it): the backend it declares on SM100 / ROCm when
    ``--attention-backend`` is unset (None: it declares none there, so
    ``get_default_attn_backend``'s stands), and what else it sets that kvledger sizes."""

    source: str  # file and function in SGLang's source
    archs: frozenset[str]
    sm100: str | None = None
    rocm: str | None = None
    # Qwen3.5's hybrid rule (qwen3_5.py _qwen3_5_hybrid_overrides): on SM100 ``sm100`` only
    # when get_default_attn_backend gives it and the Mamba radix strategy is not no_buffer
    # (radix cache on, no speculation); else this backend.
    sm100_else: str | None = None
    # The page the provider declares with each backend it sets (replacing a given
    # --page-size: declarations are last-writer-wins, overrides.py
    # collect_model_override_declarations); empty: it declares no page.
    pages: tuple[tuple[str, int], ...] = ()
    # Its sliding-window / recurrent-state pools are planned with the backend it resolves
    # (the pools do not depend on the backend; only the page does).
    state_pools: bool = True
    note: str = ""  # what it sets that kvledger does not size, for the plan's source line


@record(frozen=True, kw_only=True)
class DsaBackendRules:
    """How a release resolves DeepSeek sparse attention's prefill / decode kernel pair
    (``--dsa-prefill-backend`` / ``--dsa-decode-backend``) and what the pair does to the pool
    (``dsa_backends.py`` reads it). Each value is cited where ``v0_5_23.py`` sets it."""

    prefill_choices: tuple[str, ...]  # --dsa-prefill-backend's choices
    decode_choices: tuple[str, ...]  # --dsa-decode-backend's choices
    # Unset values, by platform and KV dtype (_dsa_split_backend_resolution): on ROCm both;
    # fp8 on CUDA by capability (SM10x and later / earlier); bf16 on CUDA (prefill, then
    # decode on SM10x and later / earlier).
    rocm_default: str
    fp8_default_blackwell: str
    fp8_default_hopper: str
    bf16_prefill_default: str
    bf16_decode_default_blackwell: str
    bf16_decode_default_hopper: str
    # GlmMoeDsaForCausalLM with an fp8 KV on SM12x (CUDA): both.
    glm_sm12_fp8_default: str
    glm_sm12_arch: str
    # A config with learnable_sink: both must be this one (a bf16 KV).
    sink_backend: str
    # calculate_mla_kv_cache_dim: the raw kv_lora_rank + rope fp8 row (no per-block scales)
    # when either backend is ``raw_either``, on ROCm when either is in ``raw_rocm``, or when
    # both are ``raw_both``; every other fp8 pair keeps the scaled row.
    raw_either: str
    raw_rocm: tuple[str, ...]
    raw_both: str
    # _check_dsa_backend_constraints: values refused off ROCm.
    rocm_only: tuple[str, ...]
    # The values whose platform path kvledger has read, per platform family ("rocm",
    # "cuda"); another choice is refused by name there.
    read_rocm: tuple[str, ...]
    read_cuda: tuple[str, ...]


@record(frozen=True, kw_only=True)
class SglangRelease(Release):
    """One SGLang release, as data.

    The platform rules a later release may move (``backends.py`` reads them): which attention
    backend SGLang picks when none is given, the page sizes that backend takes, and ROCm's
    aiter memory factor. Each default is SGLang 0.5.23's, cited where ``v0_5_23.py`` sets it.
    """

    flag_table: str  # cli/serve/<file>: the release's server flags
    # Blackwell (SM10x) defaults: get_default_attn_backend (arg_groups/model_override_base.py).
    sm100_mha_backend: str = "trtllm_mha"
    sm100_asymmetric_kv_backend: str = "fa4"  # K and V rows of different widths
    sm100_mla_backend: str = "flashinfer"
    # The DeepSeek-family model override (model_overrides/deepseek_v2.py
    # _deepseek_family_overrides): a non-DSA MLA member takes this backend on SM100.
    sm100_deepseek_backend: str = "trtllm_mla"
    deepseek_family: frozenset[str] = frozenset()
    # ROCm defaults (the same function's is_hip arms): MHA aiter; MLA aiter only with these
    # KV heads per rank (get_num_kv_heads(tp)), else triton.
    rocm_mha_backend: str = "aiter"
    rocm_mla_aiter_kv_heads: tuple[int, ...] = (16, 128)
    rocm_mla_other_backend: str = "triton"
    # backend → (page sizes it keeps, the page it sets otherwise): _mla_backend_page_constraints
    # / _fa4_page_constraint (arg_groups/overrides.py). An empty tuple: always the second.
    backend_pages: tuple[tuple[str, tuple[int, ...], int], ...] = ()
    # attention_hook.py handle_attention_backend_compatibility: with the aiter backend and a
    # context above this, mem_fraction_static × the factor (given or derived).
    aiter_mem_factor: float = 0.85
    aiter_factor_above_context: int = 8192
    # Architectures whose model override (arg_groups/model_overrides/) changes the attention
    # backend, page size or KV dtype on Blackwell or ROCm in ways kvledger has not read.
    platform_override_archs: frozenset[str] = frozenset()
    # The model overrides kvledger has read (ArchOverride): their backend and page off Hopper.
    arch_overrides: tuple[ArchOverride, ...] = ()
    # DeepSeek sparse attention's kernel pair (DsaBackendRules); None: not read for the release.
    dsa_backends: DsaBackendRules | None = None
    # The eagle-topk > 1 tree with pages > 1 is refused unless the backend is one of these
    # (speculative_hook.py _handle_eagle_family, _PAGE_TREE_SPEC_BACKENDS).
    page_tree_spec_backends: tuple[str, ...] = ()


def sglang_words(release: SglangRelease | None) -> str:
    """How a message names the release it plans: ``SGLang 0.5.23`` for a bound profile; plain
    ``SGLang`` where a rule is called on its own, without one (a test of one rule)."""
    return release.short if release is not None else "SGLang"

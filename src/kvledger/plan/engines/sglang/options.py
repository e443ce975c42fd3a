"""SGLang's own server arguments that change the KV pool, under SGLang's names.

The options every engine shares (page size = ``block_size``, ``--context-length`` =
``max_model_len``, ``--kv-cache-dtype``, parallel sizes, speculative method and tokens) stay
in ``PlanRequest``; these are the ones only SGLang has. ``None`` means "SGLang's default",
which SGLang resolves from the GPU or the model (see ``memory.py`` and ``layout.py``).

Defaults, each from SGLang 0.5.23's own field declarations:

* ``swa_full_tokens_ratio`` 0.8 — ``arg_groups/fields/schedule.py`` (``fallback=0.8``);
* ``mamba_full_memory_ratio`` 0.9 — ``arg_groups/fields/schedule.py`` (``fallback=0.9``);
* ``disable_radix_cache`` False, ``disable_overlap_schedule`` False — same file.
"""

from __future__ import annotations

import math
from typing import Any

from kvledger.records import record

DEFAULT_SWA_FULL_TOKENS_RATIO = 0.8
DEFAULT_MAMBA_FULL_MEMORY_RATIO = 0.9
MAMBA_SSM_DTYPES = ("float32", "bfloat16", "float16")


def _positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")


def _ratio(name: str, value: Any, *, upper: float | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0 or (upper is not None and value > upper):
        bound = f"(0, {upper:g}]" if upper is not None else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value!r}")


@record(frozen=True)
class SglangOptions:
    """SGLang-only options (``--mem-fraction-static`` and friends), validated once here."""

    # None: SGLang's formula from the GPU's memory (memory.default_mem_fraction_static).
    mem_fraction_static: float | None = None
    max_total_tokens: int | None = None
    # None: SGLang's estimate from the pool (resolve_max_num_reqs).
    max_running_requests: int | None = None
    # None: by GPU memory (2048 / 4096 / 8192 / 16384), as SGLang picks it.
    chunked_prefill_size: int | None = None
    # None: by GPU memory and tensor-parallel size, as SGLang picks it.
    cuda_graph_max_bs: int | None = None
    swa_full_tokens_ratio: float | None = None
    mamba_full_memory_ratio: float | None = None
    disable_radix_cache: bool = False
    disable_overlap_schedule: bool = False
    # --enable-dp-attention: attention runs data-parallel over data_parallel_size groups of
    # tensor_parallel_size / data_parallel_size GPUs each (SGLang's attn_dp_size).
    enable_dp_attention: bool = False
    # --mamba-ssm-dtype: the recurrent state's dtype (None: the config's, else float32).
    mamba_ssm_dtype: str | None = None
    # --speculative-num-draft-tokens: tokens verified per step (None: the linear chain's
    # --num-speculative-tokens + 1); sizes the recurrent states' speculative scratch.
    speculative_num_draft_tokens: int | None = None
    # --enable-hierarchical-cache with --hicache-ratio R / --hicache-size G (GB) /
    # --hicache-mem-layout: HiCache's host tier beside the GPU pool (hicache.py). None: SGLang's
    # default (ratio 2.0 at most, sized to the host; layout page_first).
    enable_hierarchical_cache: bool = False
    hicache_ratio: float | None = None
    hicache_size: float | None = None
    hicache_mem_layout: str | None = None
    # --attention-backend: the backend SGLang is told to use (None: SGLang's choice, the model
    # override's or get_default_attn_backend's). Off Hopper it skips both and sets the page
    # rule and aiter's memory factor (backends.py); on Hopper the page rule is unchanged.
    attention_backend: str | None = None
    # --dsa-prefill-backend / --dsa-decode-backend: DeepSeek sparse attention's kernels (None:
    # SGLang's choice by platform and KV dtype); for an fp8 KV they decide whether the latent
    # row carries per-block scales (dsa_backends.py).
    dsa_prefill_backend: str | None = None
    dsa_decode_backend: str | None = None
    # An EAGLE / EAGLE3 / STANDALONE draft's layer count (--draft-config; draft_layers.py):
    # SGLang's cell gains cell × draft layers / target layers. None: the draft was not read.
    draft_num_layers: int | None = None

    def __post_init__(self) -> None:
        if self.mem_fraction_static is not None:
            _ratio("mem_fraction_static", self.mem_fraction_static, upper=1.0)
        for name in ("max_total_tokens", "max_running_requests", "chunked_prefill_size",
                     "cuda_graph_max_bs", "speculative_num_draft_tokens", "draft_num_layers"):
            value = getattr(self, name)
            if value is not None:
                _positive_int(name, value)
        if self.swa_full_tokens_ratio is not None:
            _ratio("swa_full_tokens_ratio", self.swa_full_tokens_ratio, upper=1.0)
        if self.mamba_full_memory_ratio is not None:
            _ratio("mamba_full_memory_ratio", self.mamba_full_memory_ratio, upper=None)
        for name in ("disable_radix_cache", "disable_overlap_schedule", "enable_dp_attention",
                     "enable_hierarchical_cache"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.hicache_ratio is not None:
            _ratio("hicache_ratio", self.hicache_ratio, upper=None)
        if self.hicache_size is not None and (isinstance(self.hicache_size, bool) or not isinstance(
                self.hicache_size, int | float) or not math.isfinite(self.hicache_size)
                or self.hicache_size < 0):
            raise ValueError(f"hicache_size must be a number of GB >= 0, got "
                             f"{self.hicache_size!r}")
        if self.attention_backend is not None and (
                not isinstance(self.attention_backend, str) or not self.attention_backend):
            raise TypeError(f"attention_backend must be a backend name, got "
                            f"{self.attention_backend!r}")
        for name in ("dsa_prefill_backend", "dsa_decode_backend"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise TypeError(f"{name} must be a backend name, got {value!r}")
        if self.mamba_ssm_dtype is not None and self.mamba_ssm_dtype not in MAMBA_SSM_DTYPES:
            raise ValueError(f"mamba_ssm_dtype must be one of {', '.join(MAMBA_SSM_DTYPES)}, "
                             f"got {self.mamba_ssm_dtype!r}")

    @property
    def swa_ratio(self) -> float:
        return DEFAULT_SWA_FULL_TOKENS_RATIO if self.swa_full_tokens_ratio is None \
            else float(self.swa_full_tokens_ratio)

    @property
    def mamba_ratio(self) -> float:
        return DEFAULT_MAMBA_FULL_MEMORY_RATIO if self.mamba_full_memory_ratio is None \
            else float(self.mamba_full_memory_ratio)

"""What a user asks the planner: engine settings under vLLM's names and defaults.

One frozen value shared by every layout, the CLI and the answers, so that an option means the
same thing everywhere. Validation happens here, once: wrong types are ``TypeError``, out of
range values ``ValueError``, each naming the option.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvledger.plan.sglang.options import SglangOptions

ENGINES = ("native", "vllm", "sglang")
# vLLM's speculative methods (SpeculativeConfig.method). MTP variants draft with layers shipped
# in the checkpoint; eagle/eagle3/draft_model/medusa/mlp_speculator need a separate draft model;
# ngram and suffix keep no KV at all.
MTP_METHODS = (
    "mtp", "deepseek_mtp", "qwen3_next_mtp", "glm4_moe_mtp", "ernie_mtp", "mimo_mtp",
    "longcat_flash_mtp", "pangu_ultra_moe_mtp",
)
DRAFT_MODEL_METHODS = ("eagle", "eagle3", "draft_model", "medusa", "mlp_speculator")
KV_FREE_METHODS = ("ngram", "suffix")
SPECULATIVE_METHODS = (*MTP_METHODS, *DRAFT_MODEL_METHODS, *KV_FREE_METHODS)
KV_CACHE_DTYPES = (
    "auto", "bfloat16", "float16", "float32", "fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4",
)


def _count(name: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


@dataclass(frozen=True)
class PlanRequest:
    """The planner's options, under vLLM's names and defaults, validated once here."""

    engine: str = "native"
    # Budget per GPU, given directly (vLLM's --kv-cache-memory-bytes). None: derive from a GPU.
    kv_cache_memory_bytes: int | None = None
    # None means "auto": the engine picks (vLLM: 16, or what the attention backend needs).
    block_size: int | None = 16
    max_model_len: int | None = None  # None: the config's max_position_embeddings
    kv_cache_dtype: str = "auto"
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    enable_prefix_caching: bool | None = None  # None: the engine's default for the model
    num_speculative_tokens: int = 0
    speculative_method: str | None = None
    # SGLang-only server arguments (--mem-fraction-static, --max-running-requests, ...);
    # None: SGLang's defaults. Page size, context length and the rest are the fields above.
    sglang: SglangOptions | None = None

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.kv_cache_memory_bytes is not None:
            _count("kv_cache_memory_bytes", self.kv_cache_memory_bytes, minimum=0)
        if self.block_size is not None:
            _count("block_size", self.block_size, minimum=1)
        if self.max_model_len is not None:
            _count("max_model_len", self.max_model_len, minimum=1)
        if self.kv_cache_dtype not in KV_CACHE_DTYPES:
            raise ValueError(
                f"kv_cache_dtype must be one of {', '.join(KV_CACHE_DTYPES)}, "
                f"got {self.kv_cache_dtype!r}"
            )
        _count("tensor_parallel_size", self.tensor_parallel_size, minimum=1)
        _count("pipeline_parallel_size", self.pipeline_parallel_size, minimum=1)
        _count("data_parallel_size", self.data_parallel_size, minimum=1)
        _count("max_num_seqs", self.max_num_seqs, minimum=1)
        _count("max_num_batched_tokens", self.max_num_batched_tokens, minimum=1)
        _count("num_speculative_tokens", self.num_speculative_tokens, minimum=0)
        if self.speculative_method is not None and (
            self.speculative_method not in SPECULATIVE_METHODS
        ):
            raise ValueError(
                f"speculative_method must be one of {', '.join(SPECULATIVE_METHODS)}, "
                f"got {self.speculative_method!r}"
            )
        if self.sglang is not None:
            from kvledger.plan.sglang.options import SglangOptions

            if not isinstance(self.sglang, SglangOptions):
                raise TypeError(f"sglang must be SglangOptions, got {self.sglang!r}")
        if self.num_speculative_tokens and not self.speculative_method:
            raise ValueError(
                "num_speculative_tokens > 0 needs a speculative_method (mtp, eagle3, ...)"
            )


def finite_fraction(name: str, value: Any) -> float:
    """A utilization-like fraction in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or not 0 < value <= 1:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    return float(value)

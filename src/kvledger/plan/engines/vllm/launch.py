"""vLLM launch options that change the GPU's non-KV memory or add a CPU KV tier, under vLLM's
names and defaults, validated once here.

- LoRA (``--enable-lora`` and its sizes): ``LoRAConfig`` (vllm/config/lora.py): ``max_loras``
  1 (``ge=1``), ``max_lora_rank`` 16 (one of ``MaxLoRARanks``), ``lora_dtype`` "auto" (the
  model dtype; else float16 / bfloat16), ``fully_sharded_loras`` False, ``max_cpu_loras``
  None = ``max_loras`` (``_validate_lora_config`` refuses one below ``max_loras``). Sized by
  ``lora.py``.
- online quantization (``--quantization`` on an unquantized checkpoint): the methods
  ``online_quant.py`` models.
- ``--cpu-offload-gb`` (``UVAOffloadConfig.cpu_offload_gb``, GiB per GPU, ``ge=0``) and
  ``--kv-offloading-size`` (GiB over all ranks) / ``--kv-offloading-backend`` ("native" or
  "lmcache", ``CacheConfig``): ``offload.py``.
- ``--kv-transfer-config`` (a KV connector: NIXL, Mooncake, LMCache, offloading): its GPU and
  host bytes beside the plan, ``connectors.py``.

- ``--language-model-only`` (``MultiModalConfig.language_model_only``: every modality's limit
  0, so ``_mark_tower_model`` builds no tower and the encoder is not profiled) and
  ``--mm-encoder-tp-mode data`` (each TP rank holds the whole encoder, for the model classes
  with ``supports_encoder_tp_data``; the others fall back to "weights"):
  ``launch_budget.tower_weights``.
- ``-dcp`` / ``--decode-context-parallel-size`` and ``--cp-kv-cache-interleave-size``
  (``ParallelConfig``): how DCP counts a request's blocks, and what it refuses, is ``dcp.py``.
- ``--enable-eplb`` with ``--eplb-config`` (``ParallelConfig``, ``EPLBConfig``): the redundant
  experts and rebalancing state on each GPU, ``eplb.py``.
- the separate draft model's length and RoPE types (``draft_length.py``), which vLLM 0.33
  uses to lower ``max_model_len`` (``limits_max_model_len_to_draft``), and its config, from
  which a DFlash / DSpark draft's KV layers and weights are planned (``parallel_draft.py``).

The rest is the same in vLLM 0.32.0 and 0.33.0 (the files named were compared).
"""

from __future__ import annotations

import math
from typing import Any

from kvledger.records import record

# LoRAConfig's MaxLoRARanks and LoRADType (vllm/config/lora.py).
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
LORA_DTYPES = ("auto", "float16", "bfloat16")
KV_OFFLOADING_BACKENDS = ("native", "lmcache")
MM_ENCODER_TP_MODES = ("weights", "data")  # MMEncoderTPMode (vllm/config/multimodal.py)


def _int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def json_object(text: str, flag: str, error: type[Exception]) -> dict[str, Any]:
    """A JSON-valued launch option (``--kv-transfer-config``, ``--eplb-config``: vLLM parses
    each with ``json.loads``) as the object it must be; ``error`` names the flag otherwise."""
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{flag} is not JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise error(f"{flag} must be a JSON object")
    return value


def _gib(name: str, value: Any, *, positive: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of GiB, got {value!r}")
    if not math.isfinite(value) or value < 0 or (positive and value == 0) or value > 1 << 30:
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be {bound} GiB (and finite), got {value!r}")


# config/cache.py MambaDType (vLLM 0.32 to 0.34).
MAMBA_DTYPES = ("auto", "float32", "float16", "bfloat16")


@record(frozen=True)
class VllmLaunch:
    """The vLLM-only launch options kvledger plans (module docstring)."""

    enable_lora: bool = False
    max_loras: int = 1
    max_lora_rank: int = 16
    lora_dtype: str = "auto"
    fully_sharded_loras: bool = False
    max_cpu_loras: int | None = None  # CPU memory only; None: max_loras
    quantization: str | None = None  # an online method (online_quant.py)
    cpu_offload_gb: float = 0.0
    kv_offloading_size: float | None = None  # GiB, over all ranks; None: no CPU tier
    kv_offloading_backend: str = "native"
    # --kv-transfer-config, as JSON text (connectors.py sizes it); None: no connector.
    kv_transfer_config: str | None = None
    # vLLM 0.34 --enable-extensible-kv-cache / --no-enable-extensible-kv-cache: None (its
    # default) turns it on where VllmConfig._resolve_extensible_kv_cache allows;
    # False sizes the cache as 0.33 did (extensible_budget.py).
    enable_extensible_kv_cache: bool | None = None
    # The separate draft model (--speculative-config model, methods draft_model / eagle /
    # eagle3): the max_model_len vLLM derives for it and its RoPE types
    # (draft_length.draft_fields); None / (): not given.
    draft_max_model_len: int | None = None
    draft_rope_types: tuple[str, ...] = ()
    # The draft's config.json as JSON text (--draft-config): a DFlash / DSpark draft's layers
    # and weights are planned from it (parallel_draft.py); None: not given.
    draft_config: str | None = None
    language_model_only: bool = False
    mm_encoder_tp_mode: str = "weights"  # MMEncoderTPMode: "weights" or "data"
    # --allow-deprecated-quantization (ModelConfig.allow_deprecated_quantization): a
    # checkpoint of a deprecated method (fbgemm_fp8, fp_quant) loads with a warning instead of
    # the start-up refusal (ModelConfig._verify_quantization).
    allow_deprecated_quantization: bool = False
    # AttentionBackendEnum name the line selects (backend_choice.forced_backend); None: vLLM's
    # choice.
    attention_backend: str | None = None
    # VLLM_ROCM_USE_AITER=1 (VLLM_ROCM_USE_AITER_MLA left on): on a ROCm GPU, MLA runs
    # ROCM_AITER_MLA (backend_choice._rocm_dense_mla); no effect on CUDA.
    rocm_aiter_mla: bool = False
    # --mamba-cache-dtype / --mamba-ssm-cache-dtype (config/cache.py MambaDType): the conv
    # (and, at "auto", every) state dtype and the SSM / temporal state dtype of recurrent
    # layers; "auto" keeps vLLM's own choice (resolve._mamba_ssm_cache_dtype, convert.py).
    mamba_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    # -dcp / --decode-context-parallel-size (ParallelConfig, default 1, ge=1): DCP shards the
    # KV cache's tokens over that many of the TP ranks (dcp.py); --cp-kv-cache-interleave-size
    # (default 1): tokens a rank stores before the next, checked against the block only.
    decode_context_parallel_size: int = 1
    cp_kv_cache_interleave_size: int = 1
    # --enable-eplb with --eplb-config (its JSON text; None: EPLBConfig's defaults): the
    # redundant experts and rebalancing state on each GPU (eplb.py).
    enable_eplb: bool = False
    eplb_config: str | None = None
    # Whether FlashInfer's sampler runs (VllmRelease.topk_topp_native_sort: a release with no
    # Triton top-k/top-p kernel sorts without it). None: the release's pip wheel, which leaves
    # FlashInfer an extra; True: installed (vLLM's Docker image), False: not. explain reads it
    # from the log ("Using FlashInfer for top-p & top-k sampling").
    flashinfer_sampler: bool | None = None

    def __post_init__(self) -> None:
        for name in ("mamba_cache_dtype", "mamba_ssm_cache_dtype"):
            if getattr(self, name) not in MAMBA_DTYPES:
                raise ValueError(f"{name} must be one of {', '.join(MAMBA_DTYPES)}, got "
                                 f"{getattr(self, name)!r}")
        if not isinstance(self.enable_lora, bool):
            raise TypeError(f"enable_lora must be a bool, got {self.enable_lora!r}")
        _int("max_loras", self.max_loras, 1)
        _int("max_lora_rank", self.max_lora_rank, 1)
        if self.max_lora_rank not in LORA_RANKS:
            raise ValueError(f"max_lora_rank must be one of {', '.join(map(str, LORA_RANKS))} "
                             f"(vLLM's MaxLoRARanks), got {self.max_lora_rank}")
        if self.lora_dtype not in LORA_DTYPES:
            raise ValueError(f"lora_dtype must be one of {', '.join(LORA_DTYPES)}, got "
                             f"{self.lora_dtype!r}")
        if self.max_cpu_loras is not None:
            _int("max_cpu_loras", self.max_cpu_loras, 1)
            if self.max_cpu_loras < self.max_loras:
                # LoRAConfig._validate_lora_config raises the same.
                raise ValueError(f"max_cpu_loras ({self.max_cpu_loras}) must be >= max_loras "
                                 f"({self.max_loras})")
        if self.quantization is not None and (
                not isinstance(self.quantization, str) or not self.quantization.strip()):
            raise TypeError(f"quantization must be a method name, got {self.quantization!r}")
        _gib("cpu_offload_gb", self.cpu_offload_gb, positive=False)
        if self.kv_offloading_size is not None:
            # OffloadingSpec (v1/kv_offload/cpu/spec.py) refuses a falsy cpu_bytes_to_use.
            _gib("kv_offloading_size", self.kv_offloading_size, positive=True)
        _int("decode_context_parallel_size", self.decode_context_parallel_size, 1)
        _int("cp_kv_cache_interleave_size", self.cp_kv_cache_interleave_size, 1)
        if self.draft_max_model_len is not None:
            _int("draft_max_model_len", self.draft_max_model_len, 1)
        if not isinstance(self.draft_rope_types, tuple) or not all(
                isinstance(t, str) for t in self.draft_rope_types):
            raise TypeError(f"draft_rope_types must be a tuple of names, got "
                            f"{self.draft_rope_types!r}")
        if self.draft_config is not None and not isinstance(self.draft_config, str):
            raise TypeError(f"draft_config must be JSON text, got {self.draft_config!r}")
        for name in ("kv_transfer_config", "eplb_config"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be JSON text, got {getattr(self, name)!r}")
        if self.flashinfer_sampler is not None and not isinstance(self.flashinfer_sampler, bool):
            raise TypeError(f"flashinfer_sampler must be a bool or None, got "
                            f"{self.flashinfer_sampler!r}")
        if not isinstance(self.enable_eplb, bool):
            raise TypeError(f"enable_eplb must be a bool, got {self.enable_eplb!r}")
        if not isinstance(self.language_model_only, bool):
            raise TypeError(f"language_model_only must be a bool, got "
                            f"{self.language_model_only!r}")
        if self.mm_encoder_tp_mode not in MM_ENCODER_TP_MODES:
            raise ValueError("mm_encoder_tp_mode must be one of "
                             f"{', '.join(MM_ENCODER_TP_MODES)}, got {self.mm_encoder_tp_mode!r}")
        if self.kv_offloading_backend not in KV_OFFLOADING_BACKENDS:
            raise ValueError("kv_offloading_backend must be one of "
                             f"{', '.join(KV_OFFLOADING_BACKENDS)}, got "
                             f"{self.kv_offloading_backend!r}")

    @property
    def changes_weights(self) -> bool:
        """Whether the GPU budget differs from the plain one (LoRA, quantization, offload,
        the towers)."""
        return self.enable_lora or self.quantization is not None or self.cpu_offload_gb > 0 \
            or self.language_model_only or self.mm_encoder_tp_mode == "data" \
            or self.enable_eplb

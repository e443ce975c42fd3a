"""What a user asks the planner: one request type for the CLI and the library.

One frozen value shared by every layout, the CLI and the answers, so that an option means the
same thing — with the same default — everywhere: ``kvledger plan`` builds exactly this object
from its flags (``cli.plan_options.build_request``), field for field. Validation happens here,
once: wrong types are ``TypeError``, out of range values ``ValueError``, each naming the
option.

Defaults are the engine's: ``engine="vllm"`` (the number a deployment shows; ``"native"`` is
kvledger's byte-exact layout, for engine builders), ``block_size="auto"`` (the engine picks:
vLLM 16, or what the attention backend needs, e.g. 64 for sparse MLA), for
``max_num_seqs`` / ``max_num_batched_tokens`` not given the launch people use: ``vllm serve``'s
tier for the GPU (``usage_context="llm"``: the offline ``LLM(...)`` class's), 256 / 8192
without a GPU (``kvledger.plan.batch_defaults``; stored resolved: ``replace`` keeps the numbers, and
``batch_defaults`` says which were taken and why), and ``gpu_memory_utilization=None``
meaning the engine's own default (vLLM 0.32: 0.92).

The budget is either ``kv_cache_memory_bytes`` (the KV pool per GPU, given) or ``gpu`` (a
preset name) × utilization − weights − reserves; the three reserves are given here in bytes,
or left ``None`` for kvledger's documented estimates (``kvledger.plan.budget``).

Model-local declarations (seed protocol A) are request fields too:

- ``model_local_kv`` — ``ModelLocalKVSpec`` objects, or ``(owner path, spec)`` pairs as
  ``collect_model_local_kv_specs`` returns them;
- ``model_local_already_charged`` — names of declarations the engine's profiling run already
  paid for (listed in the plan, never subtracted twice);
- ``model_local_stages`` — ``{name: pipeline stage}`` for declarations whose owning module
  runs on another stage than the first (the default: stage 0, where the embedding and most
  omni front-ends live). kvledger does not guess a stage from a module path.

Sizes: every byte amount is at most ``2**60`` (``kvledger.declare.counts.MAX_BYTES``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from kvledger.plan.engines.registry import DEFAULT_ENGINE, engine_names
from kvledger.plan.engines.registry import DEFAULT_MAX_NUM_SEQS as ENGINE_MAX_NUM_SEQS
from kvledger.records import field, record, replace

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

# 1 EiB; kvledger.declare.counts.MAX_BYTES (not imported: this module is on every start-up).
MAX_BYTES = 1 << 60
AUTO = "auto"

# vLLM's speculative methods (SpeculativeConfig.method). MTP variants draft with layers shipped
# in the checkpoint; eagle/eagle3/draft_model/medusa/mlp_speculator need a separate draft model;
# ngram and suffix keep no KV at all.
MTP_METHODS = (
    "mtp", "deepseek_mtp", "qwen3_next_mtp", "glm4_moe_mtp", "ernie_mtp", "mimo_mtp",
    "longcat_flash_mtp", "pangu_ultra_moe_mtp",
)
DRAFT_MODEL_METHODS = ("eagle", "eagle3", "draft_model", "medusa", "mlp_speculator")
KV_FREE_METHODS = ("ngram", "suffix")
# Parallel drafters with a separate draft config (vLLM's DFlash / DSpark: one forward drafts every
# token; the draft's decoder layers add KV to the target's pool). Only the vLLM layout plans
# them (plan/engines/vllm/parallel_draft.py), from the draft's config.json (--draft-config).
PARALLEL_DRAFT_METHODS = ("dflash", "dspark")
SPECULATIVE_METHODS = (*MTP_METHODS, *DRAFT_MODEL_METHODS, *KV_FREE_METHODS,
                       *PARALLEL_DRAFT_METHODS)
# vLLM's default max_num_seqs when none is given (SchedulerConfig.DEFAULT_MAX_NUM_SEQS, and the
# default of get_batch_defaults below 70 GiB of GPU memory), then capped by the token budget:
# EngineArgs._set_default_max_num_seqs_and_batched_tokens_args (vllm/engine/arg_utils.py) sets
# max_num_seqs = min(default, max_num_batched_tokens) only when max_num_seqs was not given. A
# max_num_seqs *given* above max_num_batched_tokens is refused at start-up
# (SchedulerConfig.verify_max_model_len; plan/engines/vllm/startup.py check_scheduler).
DEFAULT_MAX_NUM_SEQS = 256
# SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS, the same rule's token budget.
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192
# The KV element types a request may name (vLLM's --kv-cache-dtype choices that kvledger
# plans): the one list, which the CLI offers as its choices.
KV_CACHE_DTYPES = (
    "auto", "bfloat16", "float16", "float32", "fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4",
)
# Kept for callers that imported the tuple; the registry in kvledger.plan.engines.registry is the
# source.
ENGINES = engine_names()


def _count(name: str, value: Any, *, minimum: int, maximum: int = MAX_BYTES) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if value > maximum:
        digits = len(str(value))
        shown = f"{value:,}" if digits <= 30 else f"a {digits}-digit number"
        bound = f"{maximum:,} (2**60)" if maximum == MAX_BYTES else f"{maximum:,}"
        raise ValueError(f"{name} must be <= {bound}, got {shown}")


# Fields that take a size as the CLI's flags do ("32k", "10GiB", "1e9"): read by the CLI's own
# grammar (kvledger.sizes.size), so the library and the command line accept the same text.
_SIZED_FIELDS = {
    "kv_cache_memory_bytes": ("bytes", 0), "activation_peak_bytes": ("bytes", 0),
    "cuda_graph_bytes": ("bytes", 0), "non_torch_bytes": ("bytes", 0),
    "gpu_total_bytes": ("bytes", 1), "gpu_free_bytes": ("bytes", 0),
    "gpu_memory_in_use": ("bytes", 0), "max_model_len": ("tokens", 1),
    "max_num_batched_tokens": ("tokens", 1),
}


def _sized(name: str, value: Any) -> Any:
    """A text size → its int (``ValueError`` naming the field if it cannot be read); any
    other value is left for the type checks below."""
    if not isinstance(value, str):
        return value
    # Imported only for text: a plain int never pays for the grammar's regexes.
    from kvledger.sizes import SizeError, size

    unit, minimum = _SIZED_FIELDS[name]
    try:
        return size(value, unit=unit, minimum=minimum)
    except SizeError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _block_size(value: Any) -> int | None:
    """``"auto"`` (any case) or None → None (the engine picks); else a count >= 1."""
    if value is None or (isinstance(value, str) and value.strip().lower() == AUTO):
        return None
    if isinstance(value, str):
        raise ValueError(f"block_size must be a positive integer or 'auto', got {value!r}")
    _count("block_size", value, minimum=1, maximum=1 << 20)
    return int(value)


@record(frozen=True)
class PlanRequest:
    """The planner's options, under vLLM's names and defaults, validated once here.

    ``block_size`` accepts an int, ``"auto"`` or None and is stored as the int or None
    ("auto"); the annotation says what is stored.
    """

    engine: str = DEFAULT_ENGINE
    # The engine release to plan as ("0.32" or "0.32.0"); None: the engine's newest. Also
    # given in pip's spelling through ``engine`` ("vllm==0.32"), which sets this field.
    engine_release: str | None = None
    # Budget per GPU, given directly (vLLM's --kv-cache-memory-bytes). None: derive from a GPU.
    kv_cache_memory_bytes: int | None = None
    # None (or "auto"): the engine picks (vLLM: 16, or what the attention backend needs).
    block_size: int | None = None
    max_model_len: int | None = None  # None: the config's max_position_embeddings
    # vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: a max_model_len above the config's is planned
    # (vLLM warns) instead of refused as vLLM refuses it (plan/engines/vllm/startup.py).
    allow_long_max_model_len: bool = False
    kv_cache_dtype: str = "auto"
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    # vLLM's --enable-expert-parallel: each GPU of the DP × TP group holds whole experts
    # (the engine's ``Layout.weight_split``); an engine that does not model it refuses it.
    enable_expert_parallel: bool = False
    # Not given (None): the launch's default (kvledger.plan.batch_defaults: vllm serve's tier
    # for the GPU, then min(that, max_num_batched_tokens)) — resolved here, so the stored value is
    # always the int the engine runs with (module docstring).
    max_num_seqs: int = field(default=None)
    max_num_batched_tokens: int = field(default=None)
    # The launch whose batch defaults apply (vLLM's UsageContext): None or "serve" — vllm serve
    # (the API server); "llm" — the offline LLM(...) class. vLLM only.
    usage_context: str | None = None
    # What the batch defaults came from (a kvledger.plan.batch_defaults.BatchDefaults), set here; a
    # value passed in (``replace``) is kept while the numbers it names are still the request's.
    batch_defaults: Any = field(default=None)
    enable_prefix_caching: bool | None = None  # None: the engine's default for the model
    num_speculative_tokens: int = 0
    speculative_method: str | None = None
    # -- the GPU budget (used when kv_cache_memory_bytes is None) --------------------------
    gpu: str | None = None  # a preset name (kvledger.plan.gpus)
    gpu_memory_utilization: float | None = None  # None: the engine's default (vLLM 0.32: 0.92)
    gpu_total_bytes: int | None = None  # the device's total as it reports it (over the preset)
    activation_peak_bytes: int | None = None  # None: documented estimate
    cuda_graph_bytes: int | None = None  # None: documented estimate
    non_torch_bytes: int | None = None  # None: documented estimate
    # What else holds the GPU when the engine starts (plan/startup_memory.py): the free memory
    # before it starts (nvidia-smi's memory.free), or the bytes other processes hold (another
    # engine beside it). None: nothing else. At most one of the two.
    gpu_free_bytes: int | None = None
    gpu_memory_in_use: int | None = None
    # Apply the engine's free-memory admission at start-up (vLLM refuses when free memory is
    # below ceil(total × utilization)). Off only for a search over hypothetical fractions
    # whose stages another rule admits together (vLLM-Omni's split, plan/omni/admission.py).
    startup_admission: bool = True
    # -- questions ----------------------------------------------------------------------------
    concurrency: int | None = None  # also answer: the longest context N requests can hold
    # -- model-local declarations (seed protocol A; module docstring) ------------------------
    model_local_kv: tuple[Any, ...] = ()
    model_local_already_charged: tuple[str, ...] = ()
    model_local_stages: tuple[tuple[str, int], ...] = ()
    # -- SGLang-only server arguments (--mem-fraction-static, --max-running-requests, ...): a
    # ``SglangOptions`` (kvledger.plan.engines.sglang.options), which the SGLang engine checks
    # when it plans: the request, below every engine, names none of them. None: SGLang's
    # defaults. Page size, context length etc. are the shared fields above.
    sglang: Any = None
    # -- vLLM-only launch options (LoRA slots, online quantization, CPU offload, the CPU KV
    # tier): a ``VllmLaunch`` (kvledger.plan.engines.vllm.launch), which the vLLM engine
    # checks when it plans. None: none of them.
    vllm_launch: Any = None

    def __post_init__(self) -> None:
        for name in _SIZED_FIELDS:
            object.__setattr__(self, name, _sized(name, getattr(self, name)))
        self._check_engine()
        for name in ("kv_cache_memory_bytes", "activation_peak_bytes", "cuda_graph_bytes",
                     "non_torch_bytes"):
            value = getattr(self, name)
            if value is not None:
                _count(name, value, minimum=0)
        if self.gpu_total_bytes is not None:
            _count("gpu_total_bytes", self.gpu_total_bytes, minimum=1)
        for name in ("gpu_free_bytes", "gpu_memory_in_use"):
            if getattr(self, name) is not None:
                _count(name, getattr(self, name), minimum=0)
        if self.gpu_free_bytes is not None and self.gpu_memory_in_use is not None:
            raise ValueError("gpu_free_bytes and gpu_memory_in_use both say what else holds "
                             "the GPU: give one")
        object.__setattr__(self, "block_size", _block_size(self.block_size))
        if self.max_model_len is not None:
            _count("max_model_len", self.max_model_len, minimum=1)
        if not isinstance(self.allow_long_max_model_len, bool):
            raise TypeError("allow_long_max_model_len must be a bool, got "
                            f"{self.allow_long_max_model_len!r}")
        if self.kv_cache_dtype not in KV_CACHE_DTYPES:
            raise ValueError(
                f"kv_cache_dtype must be one of {', '.join(KV_CACHE_DTYPES)}, "
                f"got {self.kv_cache_dtype!r}"
            )
        _count("tensor_parallel_size", self.tensor_parallel_size, minimum=1)
        _count("pipeline_parallel_size", self.pipeline_parallel_size, minimum=1)
        _count("data_parallel_size", self.data_parallel_size, minimum=1)
        if not isinstance(self.enable_expert_parallel, bool):
            raise TypeError("enable_expert_parallel must be a bool, got "
                            f"{self.enable_expert_parallel!r}")
        self._batch_defaults()
        _count("max_num_batched_tokens", self.max_num_batched_tokens, minimum=1)
        _count("max_num_seqs", self.max_num_seqs, minimum=1)
        _count("num_speculative_tokens", self.num_speculative_tokens, minimum=0)
        if self.speculative_method is not None and (
            self.speculative_method not in SPECULATIVE_METHODS
        ):
            raise ValueError(
                f"speculative_method must be one of {', '.join(SPECULATIVE_METHODS)}, "
                f"got {self.speculative_method!r}"
            )
        if self.num_speculative_tokens and not self.speculative_method:
            raise ValueError(
                "num_speculative_tokens > 0 needs a speculative_method (mtp, eagle3, ...)"
            )
        if self.gpu is not None and (not isinstance(self.gpu, str) or not self.gpu.strip()):
            raise TypeError(f"gpu must be a preset name, got {self.gpu!r}")
        if self.gpu_memory_utilization is not None:
            object.__setattr__(self, "gpu_memory_utilization", finite_fraction(
                "gpu_memory_utilization", self.gpu_memory_utilization))
        if self.concurrency is not None:
            _count("concurrency", self.concurrency, minimum=1)
        self._check_model_local()

    def _batch_defaults(self) -> None:
        """``max_num_seqs`` / ``max_num_batched_tokens`` not given: the launch's defaults
        (module docstring; ``kvledger.plan.batch_defaults``)."""
        from kvledger.plan.batch_defaults import (
            SERVE,
            BatchDefaults,
            batch_rule,
            check_usage_context,
        )

        check_usage_context(self.usage_context)
        seqs: int | None = self.max_num_seqs
        tokens: int | None = self.max_num_batched_tokens
        if seqs is not None:
            _count("max_num_seqs", seqs, minimum=1)
        if tokens is not None:
            _count("max_num_batched_tokens", tokens, minimum=1)
        kept = self.batch_defaults
        if kept is not None and not isinstance(kept, BatchDefaults):
            raise TypeError(f"batch_defaults is set by the request itself, got {kept!r}")
        if kept is not None:
            # A replace (another GPU, say): a field the old defaults set and left unchanged is
            # not given, so it takes this request's default.
            if "max_num_seqs" in kept.applied and seqs == kept.resolved[0]:
                seqs = None
            if "max_num_batched_tokens" in kept.applied and tokens == kept.resolved[1]:
                tokens = None
        if seqs is not None and tokens is not None:
            object.__setattr__(self, "batch_defaults", None)
            return
        tier = batch_rule(self.engine)
        if tier is None:
            if self.usage_context is not None:
                raise ValueError("usage_context applies to engine vllm only, got "
                                 f"engine {self.engine!r}")
            # An engine with its own default (registry.DEFAULT_MAX_NUM_SEQS: ATOM's 512) takes
            # it; else vLLM's SchedulerConfig rule.
            tokens = tokens if tokens is not None else DEFAULT_MAX_NUM_BATCHED_TOKENS
            own = ENGINE_MAX_NUM_SEQS.get(self.engine)
            object.__setattr__(self, "max_num_batched_tokens", tokens)
            object.__setattr__(self, "max_num_seqs", seqs if seqs is not None else own
                               if own is not None else min(DEFAULT_MAX_NUM_SEQS, tokens))
            object.__setattr__(self, "batch_defaults", None)
            return
        total, device = self.gpu_total_bytes, None
        if self.gpu is not None and isinstance(self.gpu, str):
            from kvledger.plan.gpus import gpu_preset

            try:
                preset = gpu_preset(self.gpu)
            except ValueError:
                preset = None  # the planner refuses the name, in its own words
            if preset is not None:
                device = preset.name
                total = total if total is not None else preset.total_bytes
        picked = tier(self.usage_context or SERVE, total, device, self.engine_release)
        applied = []
        if tokens is None:
            tokens = picked.max_num_batched_tokens
            applied.append("max_num_batched_tokens")
        if seqs is None:
            seqs = min(picked.max_num_seqs, tokens)
            applied.append("max_num_seqs")
        object.__setattr__(self, "max_num_batched_tokens", tokens)
        object.__setattr__(self, "max_num_seqs", seqs)
        object.__setattr__(self, "batch_defaults", replace(picked, applied=tuple(applied),
                                                           resolved=(seqs, tokens)))

    def _check_engine(self) -> None:
        """``engine`` is a registered name, optionally pinned (``vllm==0.32``); the release
        is stored as given ("0.32") and is the engine's to check (``Layout.release``)."""
        from kvledger.plan.engines.release import split_engine

        name, pinned = split_engine(self.engine)
        names = engine_names()
        if name not in names:
            raise ValueError(f"engine must be one of {', '.join(names)} (optionally with a "
                             f"release, e.g. vllm==0.32), got {self.engine!r}")
        asked = self.engine_release
        if asked is not None and not isinstance(asked, str):
            raise TypeError(f"engine_release must be a version string, got {asked!r}")
        if pinned and asked and pinned != asked:
            raise ValueError(f"engine {self.engine!r} and engine_release {asked!r} disagree")
        # Which releases exist is the engine's to know: the layout checks the release when it
        # plans (``Layout.release``), so the core imports no engine.
        object.__setattr__(self, "engine", name)
        object.__setattr__(self, "engine_release", pinned or asked)

    def _check_model_local(self) -> None:
        """Declarations, charged names and stages: tuples of checked values."""
        local = tuple(self.model_local_kv)
        charged = _names("model_local_already_charged", self.model_local_already_charged)
        stages = _stages(self.model_local_stages)
        object.__setattr__(self, "model_local_kv", local)
        object.__setattr__(self, "model_local_already_charged", charged)
        object.__setattr__(self, "model_local_stages", stages)
        if not (local or charged or stages):
            return
        # Imported only when declarations are given: the protocol is not on the plain path.
        from kvledger.declare.foreign import adopt_item
        from kvledger.declare.model_local import ModelLocalKVSpec

        # vLLM-Omni's own ModelLocalKVSpec objects (same fields) become kvledger's.
        try:
            local = tuple(adopt_item(item) for item in local)
        except TypeError as exc:
            raise TypeError(f"model_local_kv items must be ModelLocalKVSpec or (owner path, "
                            f"ModelLocalKVSpec) pairs: {exc}") from None
        object.__setattr__(self, "model_local_kv", local)
        declared: list[str] = []
        for item in local:
            spec = item[1] if isinstance(item, tuple) and len(item) == 2 else item
            if not isinstance(spec, ModelLocalKVSpec) or (
                isinstance(item, tuple) and not isinstance(item[0], str)
            ):
                raise TypeError(
                    "model_local_kv items must be ModelLocalKVSpec or (owner path, "
                    f"ModelLocalKVSpec) pairs, got {type(item).__name__}"
                )
            declared.append(spec.name)
        for what, names in (("model_local_already_charged", charged),
                            ("model_local_stages", tuple(n for n, _ in stages))):
            unknown = sorted(set(names) - set(declared))
            if unknown:
                raise ValueError(f"{what} names no declaration: {', '.join(unknown)}")
        for name, stage in stages:
            if stage >= self.pipeline_parallel_size:
                raise ValueError(
                    f"model_local_stages: {name!r} on stage {stage}, but there are "
                    f"{self.pipeline_parallel_size} pipeline stage(s) (0-based)"
                )

    def stage_of(self, name: str) -> int:
        """The pipeline stage a declaration's owner runs on (default 0, the first)."""
        return dict(self.model_local_stages).get(name, 0)


def _names(what: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):  # a bare name is one name, not its characters
        value = (value,)
    names = tuple(value)
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"{what} must hold declaration names, got {name!r}")
    return names


def _stages(value: Any) -> tuple[tuple[str, int], ...]:
    pairs: Iterable[Any] = value.items() if isinstance(value, Mapping) else value
    out: list[tuple[str, int]] = []
    for pair in pairs:
        if not (isinstance(pair, tuple | list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise TypeError(f"model_local_stages must map names to stages, got {pair!r}")
        _count(f"model_local_stages[{pair[0]!r}]", pair[1], minimum=0)
        out.append((pair[0], pair[1]))
    return tuple(out)


def finite_fraction(name: str, value: Any) -> float:
    """A utilization-like fraction in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or not 0 < value <= 1:
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    return float(value)

"""One small interface every engine layout implements, and the registry of layouts by name.

``plan_model``, ``fit_model``, ``--concurrency`` (and ``explain`` / ``report``) call a layout
only through ``Layout``; none of them knows an engine's name. What a layout owns:

- ``derive(source, request)`` — the model's facts as this engine serves them (the default:
  ``derive_model`` with the requested KV dtype; native serves a float32 checkpoint in bf16).
- ``check(request)`` — refuse, by name, an option this layout does not reproduce.
- ``pipeline_parallel_refusal(facts)`` — why the engine will not run this model with PP > 1
  ("" when it will; e.g. a model class the engine builds without PP support), so ``fit``
  skips PP for it.
- ``gpu_budget(inp)`` — the KV bytes per GPU from a GPU preset, the engine's own way. Every
  layout states its own rule and its own default utilization; the base computes none (a
  layout without one plans only a given ``kv_cache_memory_bytes``).
- ``budget_notes(preset)`` — what the layout says about a GPU preset's memory as its engine
  reads it (default: nothing).
- ``serving_dtype(facts)`` — the dtype the engine serves the weights in when none is asked
  (``--dtype auto``): the weights line and the engine's own profile both read this one rule.
- ``pools_model_local`` — where model-local declarations (seed A) go. False (the engines):
  the engine does not know them, so the API subtracts their peak bytes from the budget
  *before* calling ``plan`` (one budget line, ``key: model_local_kv``) and the layout plans
  the remainder (``LayoutInput.stage_budgets``). True (native): they are classes of the
  layout's own pools, planned in one ledger (``LayoutInput.model_local``).
- ``plan(inp) -> LayoutPlan`` — per-stage results (``RankResult``: blocks, tokens,
  concurrency, ``PoolRow``s carrying their ``Pool`` kind) and the headline numbers, plus
  ``engine_fields``: the JSON keys only this engine has (a refusal flag, a pool
  size, a log line).
- ``concurrency_at(inp, context)`` — requests of ``context`` tokens that fit on the same
  budget (``--concurrency`` bisects over it); 0.0 when none does.

The registry (``kvledger.plan.engines.registry``, a leaf) is data: name → (``module:Class``,
label). Classes are imported on first use, so planning with one engine never imports another
and the CLI can list engines without importing any.

How a new layout plugs in (SGLang, say):

1. Its planner lives in its own folder, ``plan/engines/sglang/``, and need not know this module
   (e.g. ``plan_sglang(facts, request, available_bytes)``).
2. ``plan/engines/sglang/engine.py`` defines ``class SglangEngine(Layout)`` implementing ``plan``
and
   ``concurrency_at`` (and ``gpu_budget`` / ``check`` where SGLang differs from the defaults).
   ``plan`` reads ``inp.stage_budgets[k]`` (model-local caches already subtracted) for stage
   ``k`` and returns a ``LayoutPlan``; its engine-only JSON keys go in ``engine_fields``.
3. One entry in ``LAYOUTS``: ``"sglang": ("kvledger.plan.engines.sglang.engine:SglangEngine",
   "SGLang 0.5.x's allocator")``. ``PlanRequest``'s validation, the CLI's ``--engine``
   choices, ``fit`` and ``--concurrency`` pick it up from there; nothing else changes.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import MappingProxyType

from kvledger.plan.engines.registry import DEFAULT_ENGINE, LAYOUTS, engine_label, engine_names
from kvledger.plan.engines.release import Release, nearest, pick
from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from kvledger.derive.layers import ModelFacts
    from kvledger.plan.budget import Budget
    from kvledger.plan.gpus import GpuPreset
    from kvledger.plan.request import PlanRequest
    from kvledger.plan.result import RankResult
    from kvledger.plan.weights import Weights, WeightSplit
    from kvledger.source.model_source import ModelSource

# The three carriers below are records (``kvledger.records``): they are built on every
# ``kvledger plan`` start-up, where neither dataclasses nor NamedTuple (typing) are imported.


@record(frozen=True)
class GpuBudgetInput:
    """What a layout needs to compute the KV budget from a GPU preset."""

    facts: ModelFacts
    request: PlanRequest
    preset: GpuPreset
    weights: Weights
    text_config: Mapping[str, Any]  # the (text) config the activation estimate reads


@record(frozen=True)
class LayoutInput:
    """One planning question, as the API hands it to a layout."""

    facts: ModelFacts
    request: PlanRequest
    budget: Budget  # per GPU, as the budget lines show it
    max_model_len: int  # the request's, else the config's
    # KV bytes per GPU of each pipeline stage: the budget less the model-local caches declared
    # on that stage (for layouts that do not pool them). len == pipeline_parallel_size.
    stage_budgets: tuple[int, ...]
    # Declarations the layout plans itself (only when ``pools_model_local``), as the request
    # holds them: specs or (owner path, spec) pairs.
    model_local: tuple[Any, ...] = ()


@record(frozen=True)
class LayoutPlan:
    """What a layout answers: per-stage rows and the headline numbers (per GPU)."""

    ranks: tuple[RankResult, ...]
    block_size: int
    num_blocks: int
    kv_cache_tokens: int
    max_concurrency: float
    max_model_len: int  # the one the engine settled on
    kv_cache_dtype: str  # a dtype name
    layers: tuple[dict[str, Any], ...]
    warnings: tuple[str, ...] = ()
    # The engine would not start (one max_model_len request does not fit).
    refuses_to_start: bool = False
    # Bytes one max_model_len request needs on each stage, engine overheads included (e.g.
    # the request's blocks plus the null block); () when the layout cannot say.
    one_request_bytes: tuple[int, ...] = ()
    # JSON keys only this engine has, emitted as they are.
    engine_fields: Mapping[str, Any] = MappingProxyType({})
    answers: Mapping[str, Any] = MappingProxyType({})
    # Sequences the model-local rows were counted at, when the layout pooled them (native:
    # its STATE slots); None: the request's max_num_seqs.
    model_local_seqs: int | None = None
    # KV pools one replica's TP group holds (SGLang's DP attention: data_parallel_size groups
    # of tp / dp GPUs, each its own pool, inside one replica); 1: one pool per replica.
    attention_dp_size: int = 1
    # KV bytes a token takes in the engine's own pool, where they are not what the layer
    # rows add up to (an engine that slots layers the model does not cache, or caches them
    # another way); None: the rows' sum.
    stored_bytes_per_token: int | None = None


class Layout(ABC):
    """An engine's layout. Subclass, implement ``plan`` and ``concurrency_at``, register."""

    name: str = ""
    pools_model_local: bool = False
    # The engine's releases by full version (its ``releases/`` profiles) and the one planned
    # when none is named; empty for a layout no engine release runs (native).
    releases: Mapping[str, Release] = MappingProxyType({})
    newest: str = ""

    def __init__(self, release: Release | None = None, release_note: str = "") -> None:
        # The release this layout plans as, bound once (``get_layout``): every rule of the
        # engine reads this profile; nothing looks "the release being planned" up elsewhere.
        self.release = release
        # Why ``release`` is not the one asked for ("" when it is): an unknown but well-formed
        # release is planned as the nearest known one (``release.nearest``).
        self.release_note = release_note

    def find_release(self, asked: str | None = None) -> Release | None:
        """The release profile ``asked`` names exactly (``"0.32"``), the newest when None; None
        for a layout without releases. An unknown release is a ``ValueError`` listing the
        known ones (``get_layout`` plans an unknown well-formed one as the nearest instead)."""
        if not self.releases:
            if asked:
                raise ValueError(f"engine {self.name!r} has no releases to choose from "
                                 f"(got {self.name}=={asked})")
            return None
        return pick(self.releases, asked, self.newest)

    def not_served(self, model_type: str) -> str:
        """Why this engine's bound release does not serve ``model_type``, in the engine's
        words; "" when it does or when the layout does not say."""
        return ""

    def derive(self, source: ModelSource, request: PlanRequest) -> ModelFacts:
        """The model's facts with the requested KV dtype (``auto``: the model's own), derived
        once per model and option and reused by later requests (``derive.facts_cache``)."""
        from kvledger.derive import derive_model
        from kvledger.derive.facts_cache import facts_for

        dtype = None if request.kv_cache_dtype == "auto" else request.kv_cache_dtype
        return facts_for(source, dtype, lambda s: derive_model(s, kv_cache_dtype=dtype))

    def check(self, request: PlanRequest) -> None:  # noqa: B027 - a default, not abstract
        """Refuse, naming the option, what this layout does not reproduce. Default: nothing."""

    def max_model_len(self, facts: ModelFacts, request: PlanRequest) -> int | None:
        """The length this engine serves ``request`` with: the one asked, else the engine's
        default, after every rule of its release that lowers it; None: it needs one.
        Default: the asked length, else the config's stated length."""
        return request.max_model_len or facts.max_position_embeddings or None

    def weight_split(self, facts: ModelFacts, request: PlanRequest) -> WeightSplit | None:
        """Where this engine divides the experts over other GPUs than the TP group
        (``kvledger.plan.weights.WeightSplit``); None: every weight is divided by TP × PP.
        Default: None, and expert parallelism refused (not modelled for this layout)."""
        if request.enable_expert_parallel:
            raise ValueError(f"enable_expert_parallel: the {self.name} layout does not model "
                             f"expert parallelism (plan it with --engine {DEFAULT_ENGINE})")
        return None

    def pipeline_parallel_refusal(self, facts: ModelFacts) -> str:
        """Why this engine will not serve ``facts`` with PP > 1 ("" when it will): ``fit``
        then proposes no PP layout for it. Default: no model is refused."""
        return ""

    def default_utilization(self, request: PlanRequest) -> tuple[float, str]:
        """(the ``gpu_memory_utilization`` a request that gives none plans with, whose default
        it is): each layout with a GPU budget states its own; the base states none."""
        raise ValueError(f"the {self.name or type(self).__name__} layout states no default "
                         "gpu_memory_utilization: pass one")

    def gpu_budget(self, inp: GpuBudgetInput) -> Budget:
        """The KV bytes per GPU on ``inp.preset``, this engine's way. The base layout knows no
        engine's rule, so it refuses: each layout states its own (and its own default
        utilization); ``kv_cache_memory_bytes`` plans any layout without one."""
        raise ValueError(f"the {self.name or type(self).__name__} layout computes no budget "
                         "from a GPU preset: pass kv_cache_memory_bytes")

    def budget_notes(self, preset: GpuPreset) -> tuple[str, ...]:
        """What this engine says about ``preset``'s memory as it reads it (e.g. where it takes
        the total from); () by default."""
        return ()

    def serving_dtype(self, facts: ModelFacts) -> str:
        """The dtype this engine serves the weights in when none is asked: the one rule the
        weights line and the engine's own reserves read. Default: the core's
        (``kvledger.plan.weights.serving_dtype``: a 16-bit float as stored, else bfloat16)."""
        from kvledger.plan.weights import serving_dtype

        return serving_dtype(facts.model_dtype)

    @abstractmethod
    def plan(self, inp: LayoutInput) -> LayoutPlan:
        """Plan every pipeline stage on ``inp.stage_budgets`` (or ``inp.budget``)."""

    @abstractmethod
    def concurrency_at(self, inp: LayoutInput, context: int) -> float:
        """Requests of ``context`` tokens that fit on the same budget (0.0 when none)."""


_LOADED: dict[tuple[str, str | None], Layout] = {}


def get_layout(name: str, release: str | None = None) -> Layout:
    """The registered layout ``name`` bound to its release ``release`` ("0.33", "0.34.1";
    None: the engine's newest), imported on first use and kept per (name, release).

    The one place a release is looked up: the layout returned holds its profile
    (``Layout.release``) and every rule reads that. A well-formed release the engine does not
    know is bound to the nearest known one, with ``Layout.release_note`` saying so; a
    malformed one, or any release for a layout without releases, is a ``ValueError``."""
    key = (name, release)
    found = _LOADED.get(key)
    if found is not None:
        return found
    if name not in LAYOUTS:
        raise ValueError(f"engine must be one of {', '.join(LAYOUTS)}, got {name!r}")
    module, _, cls = LAYOUTS[name][0].partition(":")
    __import__(module)  # not importlib.import_module: importing importlib costs start-up
    kind = getattr(sys.modules[module], cls)
    if not (isinstance(kind, type) and issubclass(kind, Layout)):
        raise TypeError(f"{LAYOUTS[name][0]} is not a kvledger.plan.engines.base.Layout")
    profile: Release | None = None
    note = ""
    if kind.releases:
        profile, note = nearest(kind.releases, release, kind.newest)
    elif release:
        raise ValueError(f"engine {name!r} has no releases to choose from "
                         f"(got {name}=={release})")
    layout = kind(profile, note)
    layout.name = name
    _LOADED[key] = layout
    return layout


__all__ = [
    "DEFAULT_ENGINE", "LAYOUTS", "GpuBudgetInput", "Layout", "LayoutInput", "LayoutPlan",
    "engine_label", "engine_names", "get_layout",
]

"""ATOM's plan: the settings the runner resolves, the entry classes per pipeline stage, the
counts ``plan_pools`` gives, and the numbers ``get_num_blocks`` logs.

``plan_atom(facts, request, stage_budgets, budget)`` is the whole of it; ``engine`` adapts it
to ``Layout``. Sizing is kvledger's ``plan_pools`` (seed B), which is ATOM's rule line for line:
STATE classes reserve ``max_num_seqs × entries_per_req`` entries first, the PAGE class takes
``remaining // entry_bytes``; pipeline stages then reconcile to the fewest blocks
(``all_reduce MIN``, ``with_paged_entries``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from kvledger.declare.dtypes import resolve_dtype
from kvledger.declare.pools import InsufficientPoolBudget, PoolPlan, plan_pools
from kvledger.derive.layers import ModelFacts
from kvledger.plan.budget import Budget
from kvledger.plan.engines.atom import served, specs
from kvledger.plan.engines.atom.refusal import (
    AtomRefusesToStart,
    no_block_message,
    state_floor_message,
)
from kvledger.plan.engines.atom.releases import (
    BLOCK_SIZE,
    KV_DTYPES,
    NEWEST,
    V4_BLOCK_SIZE,
    sub_pool_line,
)
from kvledger.plan.engines.atom.releases import budget_line as log_budget_line
from kvledger.plan.request import MTP_METHODS, PlanRequest
from kvledger.records import field, record

# Without an AMD --gpu, the gfx target the two V4 defaults that read it assume (fp8 KV only on
# gfx950 / gfx1250; FP4 indexer except on gfx942); with one, its preset's compute capability.
ASSUMED_GFX = "gfx950"
# atom/config.py SpeculativeConfig._MTP_TYPE_MAP / _MTP_CONFIG: the draft of these types is
# rewritten to one MTP layer (n_predict forced to 1).
MTP_ONE_LAYER = frozenset({"deepseek_v3", "deepseek_v32", "deepseek_v4", "glm_moe_dsa",
                           "qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text",
                           "qwen3_5_moe_text"})
# SpeculativeConfig.__post_init__: a sequential drafter (MTP / Eagle) takes 1..4 tokens.
MAX_SPEC_TOKENS = 4
# Backends whose draft-layer arithmetic ATOM writes as total − num_hidden_layers: with PP the
# stage count makes that negative, which kvledger does not reproduce.
NO_PP_REPRODUCED = (served.GDN, served.KIMI_MLA_GDN, served.MIMO_V2)


class AtomNotReproduced(ValueError):
    """An ATOM setting kvledger does not reproduce (named; kvledger's refusal, not ATOM's)."""


@record(frozen=True)
class StagePlan:
    index: int
    layer_range: tuple[int, int]
    layers: int
    classes: specs.EntryClasses
    pools: PoolPlan
    available_bytes: int


@record(frozen=True)
class AtomPlan:
    backend: str
    block_size: int
    kv_dtype: str
    max_model_len: int
    max_num_seqs: int
    stages: tuple[StagePlan, ...]
    platform: str | None
    warnings: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def num_blocks(self) -> int:
        return min(s.pools.paged_entries for s in self.stages)

    def concurrency_at(self, context: int) -> int:
        """ATOM's "Concurrent capacity" line: ``min(max_num_seqs, blocks // ceil(ctx / B))``."""
        per_req = math.ceil(max(1, context) / self.block_size)
        return min(self.max_num_seqs, self.num_blocks // per_req)

    def log_lines(self) -> list[str]:
        pools = self.stages[-1].pools
        lines = [sub_pool_line(n, pools.entries[n], pools.entry_bytes[n], pools.reserved_bytes[n])
                 for n in sorted(pools.entries)]
        page = pools.entry_bytes[pools.paged_class or ""]
        lines.append(log_budget_line(self.stages[-1].available_bytes, page, self.num_blocks))
        return lines

    def capacity_lines(self) -> list[str]:
        """ATOM's table of concurrency at 10 … 100 % of max_model_len (dcp 1)."""
        out = []
        for pct in (10, 30, 50, 70, 90, 100):
            ctx = max(1, self.max_model_len * pct // 100)
            per_req = math.ceil(ctx / self.block_size)
            bound = self.num_blocks // per_req if per_req > 0 else 0
            conc = min(self.max_num_seqs, bound)
            by = "slots" if conc == self.max_num_seqs < bound else "blocks"
            out.append(f"  {pct:>3}% ({ctx:>7} tok): {per_req:>6} blk/req "
                       f"→ max_concurrent={conc:<5} (bound by {by})")
        return out


def _platform(request: PlanRequest) -> str | None:
    if request.gpu is None:
        return None
    from kvledger.plan.gpus import gpu_preset

    cap = gpu_preset(request.gpu).compute_capability
    return cap if cap and cap.startswith("gfx") else None


def _draft_layers(text: Mapping[str, Any], model_type: str) -> int:
    """``ModelRunner._num_draft_kv_layers`` for serial MTP: the draft config's
    ``num_nextn_predict_layers`` after SpeculativeConfig's rewrite."""
    if model_type in MTP_ONE_LAYER or str(text.get("model_type")) in MTP_ONE_LAYER:
        return 1
    value = text.get("num_nextn_predict_layers")
    if model_type in served.MIMO_MODEL_TYPES:
        return int(value) if isinstance(value, int) else 3
    return int(value) if isinstance(value, int) else 1


def plan_atom(facts: ModelFacts, request: PlanRequest, stage_budgets: Sequence[int],
              budget: Budget) -> AtomPlan:
    served.refuse_unserved(facts.model_type, facts.architectures)
    text = facts.language_config()
    backend = served.backend(text, facts.architectures)
    warnings: list[str] = []
    kv_dtype = KV_DTYPES[request.kv_cache_dtype]
    platform = _platform(request)
    if backend == served.V4:
        block = V4_BLOCK_SIZE
        if request.block_size not in (None, V4_BLOCK_SIZE):
            warnings.append(f"block size {request.block_size} given: ATOM forces 256 for "
                            "DeepSeek-V4 (atom/config.py Config.__post_init__)")
        if platform is None:
            platform = ASSUMED_GFX
            warnings.append(f"no AMD GPU named: DeepSeek-V4's platform defaults read "
                            f"{ASSUMED_GFX} (MI355X); pass --gpu MI300X for gfx942")
        if kv_dtype == "fp8" and platform not in ("gfx950", "gfx1250"):
            warnings.append(f"DeepSeek-V4 --kv_cache_dtype fp8 is only supported on gfx950 / "
                            f"gfx1250; {platform}: ATOM falls back to a bf16 KV cache")
            kv_dtype = "bf16"
    else:
        block = request.block_size or BLOCK_SIZE
    num_hidden = text.get("num_hidden_layers")
    if not isinstance(num_hidden, int) or isinstance(num_hidden, bool):
        raise specs.AtomConfigError("the config has no integer num_hidden_layers")
    pp = request.pipeline_parallel_size
    if num_hidden < pp:
        raise AtomRefusesToStart(f"{NEWEST.label} asserts num_hidden_layers ({num_hidden}) "
                                 f"must be >= pipeline_parallel_size ({pp})")
    if pp > 1 and backend == served.V4:
        raise AtomRefusesToStart(
            f"{NEWEST.label} refuses to start: PAGE-backed state checkpoints do not yet "
            "support pipeline parallelism: every stage must first agree on one atomic "
            "checkpoint/unit ownership transaction (ModelRunner.get_num_blocks)")
    if pp > 1 and backend in NO_PP_REPRODUCED:
        raise AtomNotReproduced(
            f"pipeline parallelism for ATOM's {backend} backend is not reproduced: its sizing "
            "counts draft layers as stage layers − num_hidden_layers (kvledger does not guess "
            "what a negative count allocates)")
    num_spec = request.num_speculative_tokens if request.speculative_method else 0
    draft = _draft_layers(text, facts.model_type) if num_spec else 0
    max_pos = facts.max_position_embeddings or 8192  # getattr(hf, ..., 8192)
    max_len = min(request.max_model_len, max_pos) if request.max_model_len else max_pos
    if request.max_model_len and request.max_model_len > max_pos:
        warnings.append(f"max_model_len {request.max_model_len:,} is above the config's "
                        f"max_position_embeddings: ATOM serves min(max_model_len, "
                        f"max_position_embeddings) = {max_pos:,}")
    dtype_bytes = resolve_dtype(facts.model_dtype).nbytes(1)
    from kvledger.plan.parallel import pp_partition

    ranges = pp_partition(num_hidden, pp)
    stages: list[StagePlan] = []
    for k, (start, end) in enumerate(ranges):
        last = k == pp - 1
        layers = (end - start) + (draft if last else 0)
        # A drafter exists only on the last stage (ModelRunner.__init__: use_spec).
        s = specs.Settings(kv_dtype, block, request.tensor_parallel_size, layers, num_hidden,
                           num_spec if last else 0, dtype_bytes)
        classes = _classes(backend, text, facts, s, platform)
        available = stage_budgets[k]
        try:
            pools = plan_pools(classes.specs, max(0, available), request.max_num_seqs)
        except InsufficientPoolBudget as exc:
            exc.available_bytes = available
            exc.hint = state_floor_message(exc, budget, request.max_num_seqs)
            raise
        stages.append(StagePlan(k, (start, end), layers, classes, pools, available))
    fewest = min(st.pools.paged_entries for st in stages)
    stages = [StagePlan(st.index, st.layer_range, st.layers, st.classes,
                        st.pools.with_paged_entries(fewest), st.available_bytes)
              for st in stages]
    if fewest == 0:
        st = stages[-1]
        page = st.pools.entry_bytes[st.pools.paged_class or ""]
        raise AtomRefusesToStart(no_block_message(block, page, st.available_bytes, budget))
    settings = {
        "backend": served.BACKEND_CLASSES[backend], "kv_cache_dtype": kv_dtype,
        "block_size": block, "physical_block_size": stages[0].classes.physical_block_size,
        "max_num_seqs": request.max_num_seqs, "num_speculative_tokens": num_spec,
        "draft_layers": draft,
    }
    if platform is not None:
        settings["platform"] = platform
    return AtomPlan(backend, block, kv_dtype, max_len, request.max_num_seqs, tuple(stages),
                    platform, tuple(warnings), settings)


def _classes(backend: str, text: Mapping[str, Any], facts: ModelFacts, s: specs.Settings,
             platform: str | None) -> specs.EntryClasses:
    if backend == served.V4:
        from kvledger.plan.engines.atom.v4 import v4

        return v4(text, s, platform=platform or ASSUMED_GFX)
    if backend == served.KIMI_MLA_GDN:
        return specs.kimi_linear(text, s)
    if backend == served.MLA:
        return specs.mla(text, s)
    if backend == served.GDN:
        return specs.gdn(text, s)
    if backend == served.MIMO_V2:
        return specs.mimo_v2(text, s)
    minimax_m3 = any("MiniMaxM3" in a for a in facts.architectures) or \
        "minimax_m3" in str(text.get("model_type", "")).lower()
    return specs.mha(text, s, minimax_m3=minimax_m3)


def check_method(request: PlanRequest) -> None:
    """ATOM's ``--method`` takes mtp, eagle3 or dspark; kvledger reproduces mtp."""
    method = request.speculative_method
    if method is None:
        return
    if method not in MTP_METHODS:
        raise AtomNotReproduced(
            f"speculative method {method!r} with ATOM is not reproduced: ATOM's --method takes "
            "mtp, eagle3 or dspark, and kvledger plans mtp only (an eagle3 / dspark draft "
            "brings its own config)")
    if not 1 <= request.num_speculative_tokens <= MAX_SPEC_TOKENS:
        raise AtomRefusesToStart(
            f"{NEWEST.label} refuses to start: num_speculative_tokens must be between 1 and "
            f"{MAX_SPEC_TOKENS}, got {request.num_speculative_tokens}.")

"""The ATOM layout as the API sees it (``--engine atom``): ``AtomEngine(Layout)``.

* ``derive`` — the model's facts with ATOM's KV element type (``--kv_cache_dtype`` bf16 by
  default, whatever the checkpoint's dtype), after refusing an architecture ATOM's model
  registry lacks (``served``).
* ``check`` — refuse, by name, what ATOM does not take or kvledger does not reproduce: KV dtypes
  other than bf16 / fp8, SGLang options, speculative methods other than MTP.
* ``gpu_budget`` — ``get_num_blocks``' ``available_for_kv`` on a GPU preset (``budget``).
  With ``--kv-cache-memory-bytes`` the bytes are ``available_for_kv`` (ATOM has no such flag;
  it is the number its own log line prints).
* ``plan`` — ``layout.plan_atom``; the JSON keys only ATOM has are ``atom_log_line`` (the tail
  of ATOM's "Memory budget" line), ``atom_log_lines`` (its "sub-pool ..." lines), its
  concurrency table, the entry-class arithmetic and the resolved settings.
* ``concurrency_at`` — ATOM's own capacity rule at a context length: ``min(max_num_seqs,
  blocks // ceil(context / block_size))``.

``max_num_seqs``: ATOM's default is 512 (the CLI uses it for ``--engine atom``: registry
``DEFAULT_MAX_NUM_SEQS``); a ``PlanRequest`` built in Python carries its own value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvledger import records
from kvledger.plan.engines.atom.releases import (
    GPU_MEMORY_UTILIZATION,
    KV_DTYPES,
    NEWEST,
    RELEASES,
)
from kvledger.plan.engines.base import GpuBudgetInput, Layout, LayoutInput, LayoutPlan
from kvledger.plan.result import PoolRow, RankResult, stored_summary

if TYPE_CHECKING:
    from collections.abc import Callable

    from kvledger.derive.layers import LayerCache, ModelFacts
    from kvledger.plan.budget import Budget
    from kvledger.plan.engines.atom.layout import AtomPlan
    from kvledger.plan.engines.release import Release
    from kvledger.plan.request import PlanRequest
    from kvledger.source.model_source import ModelSource


def _fields(plan: AtomPlan) -> dict[str, Any]:
    lines = plan.log_lines()
    return {
        "atom_release": {"commit": NEWEST.commit, "date": NEWEST.date},
        "atom_log_line": lines[-1],
        "atom_log_lines": lines,
        "atom_capacity_lines": plan.capacity_lines(),
        "atom_entry_terms": [dict(st.classes.terms) for st in plan.stages],
        "atom_resolved": plan.settings,
    }


def _not_cached(inp: LayoutInput, plan: AtomPlan) -> Callable[[LayerCache], str]:
    """ATOM sizes a serial MTP drafter's layers only when speculating, ``draft_layers`` of
    them (``ModelRunner._num_draft_kv_layers``): the checkpoint's other MTP layers hold
    nothing."""
    from kvledger.derive.layers import Role

    draft = int(plan.settings.get("draft_layers") or 0)
    mtp = sorted(layer.index for layer in inp.facts.layers if layer.role is Role.MTP)
    cached = set(mtp[:draft])

    def why(layer: LayerCache) -> str:
        if layer.role is Role.MTP and layer.index not in cached:
            return "MTP layer: cached only when speculating with MTP"
        return ""

    return why


class AtomEngine(Layout):
    """ATOM's KV pools (``kvledger.plan.engines.atom``)."""

    releases = RELEASES
    newest = NEWEST.version

    def default_utilization(self, request: PlanRequest) -> tuple[float, str]:
        release = self.release if self.release is not None else NEWEST
        return GPU_MEMORY_UTILIZATION, f"{release.label}'s default"

    def __init__(self, release: Release | None = None, release_note: str = "") -> None:
        super().__init__(release, release_note)
        self._last: tuple[LayoutInput, AtomPlan] | None = None

    def derive(self, source: ModelSource, request: PlanRequest) -> ModelFacts:
        from kvledger.plan.engines.atom.served import refuse_unserved

        config = source.config
        inner = config.get("text_config")
        text: dict[str, Any] = inner if isinstance(inner, dict) else {}
        refuse_unserved(str(config.get("model_type") or text.get("model_type") or "?"),
                        tuple(config.get("architectures") or ()))
        kv = "fp8_e4m3" if KV_DTYPES.get(request.kv_cache_dtype) == "fp8" else "bfloat16"
        if any("DeepseekV4" in str(a) for a in config.get("architectures") or ()):
            # The facts only describe the layers here (ATOM's V4 row space is priced in
            # ``v4``); kvledger's fp8 V4 facts are vLLM's packed layout, so derive them in bf16.
            kv = "bfloat16"
        return super().derive(source, records.replace(request, kv_cache_dtype=kv))

    def check(self, request: PlanRequest) -> None:
        from kvledger.plan.engines.atom.layout import AtomNotReproduced, check_method

        if request.kv_cache_dtype not in KV_DTYPES:
            raise AtomNotReproduced(
                f"kv_cache_dtype {request.kv_cache_dtype!r}: ATOM's --kv_cache_dtype takes bf16 "
                "or fp8 (atom/model_engine/arg_utils.py)")
        if request.sglang is not None:
            raise AtomNotReproduced("SGLang options apply to --engine sglang only")
        check_method(request)

    def gpu_budget(self, inp: GpuBudgetInput) -> Budget:
        from kvledger.plan.engines.atom.budget import atom_gpu_budget

        return atom_gpu_budget(inp)

    def _planned(self, inp: LayoutInput) -> AtomPlan:
        from kvledger.plan.engines.atom.layout import plan_atom

        if self._last is None or self._last[0] is not inp:
            self._last = (inp, plan_atom(inp.facts, inp.request, inp.stage_budgets, inp.budget))
        return self._last[1]

    def plan(self, inp: LayoutInput) -> LayoutPlan:
        from kvledger.plan.engines.atom.releases import KV_DTYPE_NAMES

        plan = self._planned(inp)
        conc = float(plan.concurrency_at(plan.max_model_len))
        ranks = []
        for st in plan.stages:
            p = st.pools
            order = sorted(p.entries, key=lambda n: (n != p.paged_class, n))
            rows = tuple(PoolRow(n, p.pools[n], p.entries[n], p.entry_bytes[n],
                                 p.entries_per_req.get(n, 0), p.reserved_bytes[n])
                         for n in order)
            ranks.append(RankResult(st.index, st.layer_range, st.layers, plan.block_size,
                                    p.paged_entries, p.paged_entries * plan.block_size, conc,
                                    st.available_bytes, p.total_reserved_bytes, rows))
        warnings = list(plan.warnings)
        if conc < 1:
            warnings.append(f"no {plan.max_model_len:,}-token request fits in "
                            f"{plan.num_blocks:,} blocks of {plan.block_size} tokens (ATOM "
                            "starts; such a request waits forever)")
        return LayoutPlan(
            ranks=tuple(ranks), block_size=plan.block_size, num_blocks=plan.num_blocks,
            kv_cache_tokens=plan.num_blocks * plan.block_size, max_concurrency=conc,
            max_model_len=plan.max_model_len, kv_cache_dtype=KV_DTYPE_NAMES[plan.kv_dtype],
            layers=tuple(stored_summary(inp.facts, inp.request.tensor_parallel_size,
                                        KV_DTYPE_NAMES[plan.kv_dtype], _not_cached(inp, plan))),
            warnings=tuple(warnings), engine_fields=_fields(plan),
            answers={"state_slots": plan.max_num_seqs} if any(
                "state" in st.pools.entries for st in plan.stages) else {},
        )

    def concurrency_at(self, inp: LayoutInput, context: int) -> float:
        return float(self._planned(inp).concurrency_at(context))

"""The checks of a vLLM start-up log: each logged number against kvledger's vLLM plan.

Rules (vLLM source, 0.32 on disk unless said otherwise):

- blocks = available bytes // bytes per block (``get_kv_cache_config_from_groups``);
- "GPU KV cache size" = ``int(max_concurrency × max_model_len)`` and "Maximum concurrency" =
  blocks ÷ blocks one ``max_model_len`` request needs (``get_kv_cache_capacity``,
  ``get_max_concurrency_for_kv_cache_config``). The early V1 releases (0.7.3–0.8, PR #13596)
  logged ``blocks × block_size`` and ``that ÷ max_model_len`` instead; the two agree whenever
  ``max_model_len`` is a multiple of the block size and the model has one KV group. Both are
  tried and ``why`` says which one the log follows;
- every worker sizes its cache from its own budget and all use the smallest block count
  (``get_kv_cache_configs``), so with several workers the binding figure is the smallest one.

The weights and the budget are checked in ``memory_checks``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvledger.report.budget_checks import budget_line_checks, startup_checks
from kvledger.report.findings import Check, Context, gib
from kvledger.report.logparse import Gib
from kvledger.report.memory_checks import (
    NOT_LOGGED,
    available_check,
    unlogged_budget,
    unlogged_weights,
    weights_check,
)

if TYPE_CHECKING:
    from kvledger.plan.result import PlanResult

def _fmt(n: int) -> str:
    return f"{n:,}"


def vllm_checks(ctx: Context) -> list[Check]:
    f = ctx.log.figures
    budget = _logged_budget(ctx)
    # The four headline checks are always present; one the log did not print has logged null
    # and kvledger's number alone (a partial log still gets the whole picture).
    checks: list[Check] = [
        weights_check(ctx) if "weights_gib" in f else unlogged_weights(ctx),
        available_check(ctx) if "available_kv_gib" in f else unlogged_budget(ctx),
        _tokens_check(ctx, budget) if "kv_cache_tokens" in f else _unlogged(
            ctx, budget, "kv_cache_tokens"),
        _concurrency_check(ctx, budget) if "max_concurrency" in f else _unlogged(
            ctx, budget, "max_concurrency"),
    ]
    if "num_gpu_blocks" in f:
        checks.append(_blocks_check(ctx, budget))
    if "needed_kv_gib" in f:
        checks.extend(_refused_checks(ctx, budget))
    checks.extend(budget_line_checks(ctx))
    checks.extend(startup_checks(ctx))
    ctx.notes.extend(_group_notes(ctx, budget))
    return checks


def _group_notes(ctx: Context, budget: tuple[int, int, int, str] | None) -> list[str]:
    """The caches each of vLLM's KV cache groups holds, where the plan names them (the vLLM
    layout's ``kv_cache_groups``: DeepSeek-V4)."""
    plans = _plans(ctx, budget)
    if isinstance(plans, str):
        return []
    groups = plans[0].engine_fields.get("kv_cache_groups") or ()
    return [f"vLLM KV cache group {k}: {g['spec']}, {g['num_layers']} layers, block "
            f"{g['block_size']}, page {g['page_size_bytes']:,} B, {g['blocks_per_request']:,} "
            f"blocks a request — {g['caches']}" for k, g in enumerate(groups)]


def _unlogged(ctx: Context, budget: tuple[int, int, int, str] | None, name: str) -> Check:
    plans = _plans(ctx, budget)
    if isinstance(plans, str):
        return Check(name, None, None, None, f"{NOT_LOGGED}; not derived: {plans}")
    mid = plans[0]
    value: Any = mid.kv_cache_tokens if name == "kv_cache_tokens" else round(
        mid.max_concurrency, 4)
    assert budget is not None
    return Check(name, None, value, None,
                 f"{NOT_LOGGED}; kvledger's plan on {budget[3]}: {mid.num_blocks:,} blocks "
                 f"of {mid.block_size} tokens, {mid.kv_cache_tokens:,} tokens, "
                 f"{mid.max_concurrency:.2f} requests of {mid.max_model_len:,} tokens")


def _logged_budget(ctx: Context) -> tuple[int, int, int, str] | None:
    """(nominal, low, high, how) bytes of the KV budget the log states, or None."""
    avail = ctx.log.figures.get("available_kv_gib")
    if isinstance(avail, Gib):
        return (avail.bytes, avail.low, avail.high,
                f"the logged {avail} ({avail.value - avail.half_width:.3f}–"
                f"{avail.value + avail.half_width:.3f} GiB before rounding)")
    given = ctx.log.settings.get("kv_cache_memory_bytes")
    if isinstance(given, int) and given > 0:
        return (given, given, given, f"kv_cache_memory_bytes={given:,}")
    return None


def _plans(
    ctx: Context, budget: tuple[int, int, int, str] | None
) -> tuple[PlanResult, PlanResult, PlanResult] | str:
    """(nominal, low, high) plans, or the reason there are none."""
    if budget is None:
        return "the log states no KV budget ('Available KV cache memory')"
    if not ctx.ready:
        return ctx.why_not()
    plans = [ctx.plan(b) for b in budget[:3]]
    if any(p is None for p in plans):
        return ctx.why_not()
    mid, lo, hi = plans
    assert mid is not None and lo is not None and hi is not None
    return mid, lo, hi


# -- tokens, concurrency, blocks ---------------------------------------------------------------


def _old_rule(plan: PlanResult, length: int) -> tuple[int, float]:
    """Early V1 (PR #13596): tokens = blocks × block_size; concurrency = tokens / length."""
    tokens = plan.num_blocks * plan.block_size
    return tokens, tokens / length


def _tokens_check(ctx: Context, budget: tuple[int, int, int, str] | None) -> Check:
    logged = int(ctx.log.figures["kv_cache_tokens"])
    plans = _plans(ctx, budget)
    if isinstance(plans, str):
        return Check("kv_cache_tokens", logged, None, None, f"not derived: {plans}")
    assert budget is not None
    mid, lo, hi = plans
    length = mid.max_model_len
    new = (lo.kv_cache_tokens, hi.kv_cache_tokens)
    old = (_old_rule(lo, length)[0], _old_rule(hi, length)[0])
    where = f"{_fmt(new[0])}–{_fmt(new[1])}" if new[0] != new[1] else _fmt(new[0])
    base = (f"tokens follow from {budget[3]}: {where} tokens ({mid.num_blocks:,} blocks of "
            f"{mid.block_size} tokens at the printed value)")
    if new[0] <= logged <= new[1]:
        return Check("kv_cache_tokens", logged, mid.kv_cache_tokens, True,
                     f"{base}; the log's {_fmt(logged)} is inside", new)
    if old[0] <= logged <= old[1]:
        return Check("kv_cache_tokens", logged, _old_rule(mid, length)[0], True,
                     f"tokens follow from {budget[3]} by the early-V1 rule, blocks × block "
                     f"size: {_fmt(old[0])}–{_fmt(old[1])}; the log's {_fmt(logged)} is inside "
                     f"(today's rule, int(concurrency × max_model_len), gives {where})", old)
    delta = logged - mid.kv_cache_tokens
    return Check("kv_cache_tokens", logged, mid.kv_cache_tokens, False,
                 f"{base}; the log has {_fmt(logged)} ({delta:+,}, "
                 f"{delta / max(1, mid.kv_cache_tokens):+.1%}). "
                 f"{_token_cause(ctx, mid, budget, logged)}".rstrip(), new)


def _token_cause(ctx: Context, plan: PlanResult, budget: tuple[int, int, int, str],
                 logged: int) -> str:
    """The likely cause of a token mismatch, from the bytes per token the log implies."""
    facts = ctx.facts
    tp = ctx.request.tensor_parallel_size if ctx.request else 1
    if facts is None or logged <= 0:
        return ""
    layers = [layer.split(tp) if tp > 1 else layer for layer in facts.layers]
    owning = [ly for ly in layers if ly.owns_memory and ly.bytes_per_token() > 0]
    if any(ly.bytes_per_request() for ly in layers if ly.owns_memory) or not owning:
        return ("The model keeps per-request state besides its KV, so bytes per token are "
                "not comparable; check max_num_seqs and the block size the log used.")
    plan_bpt = sum(ly.bytes_per_token() for ly in owning)
    per_layer = plan_bpt / len(owning)
    implied = (budget[1] / (logged + plan.block_size), budget[2] / logged)
    extra = ((implied[0] - plan_bpt) / per_layer, (implied[1] - plan_bpt) / per_layer)
    say = (f"The log's tokens imply {implied[0]:,.0f}–{implied[1]:,.0f} B of KV per token "
           f"per GPU; kvledger's plan has {plan_bpt:,} B ({len(owning)} layers × "
           f"{per_layer:,.0f} B).")
    causes: list[str] = []
    for k in (1, 2, 3):
        if extra[0] - 0.02 <= k <= extra[1] + 0.02:
            causes.append(
                f"exactly {k} more layer{'s' if k > 1 else ''} of the same size: a "
                "speculative draft (EAGLE / MTP) layer the log's settings do not show, or a "
                "model with more layers than the config kvledger read")
            break
    if implied[0] * 0.98 <= 2 * plan_bpt <= implied[1] * 1.02:
        causes.append("twice the plan: the cache is 16-bit where the plan has 8")
    if implied[0] * 0.98 <= plan_bpt / 2 <= implied[1] * 1.02:
        causes.append("half the plan: the cache is fp8 where the plan has 16-bit")
    workers = tp * (ctx.request.pipeline_parallel_size if ctx.request else 1)
    if logged < plan.kv_cache_tokens and workers > 1:
        need = logged * plan_bpt
        causes.append(
            f"{workers} workers each log their own budget and vLLM sizes all of them to the "
            f"smallest: the logged tokens need only {gib(need)}, so another worker may have "
            f"had ~{gib(budget[0] - need)} less than the one shown")
    if not causes:
        return say
    return f"{say} Likely: " + "; or ".join(causes) + "."


def _concurrency_check(ctx: Context, budget: tuple[int, int, int, str] | None) -> Check:
    f = ctx.log.figures
    logged_x: Gib = f["max_concurrency"]
    length = int(f.get("concurrency_length") or 0)
    plans = _plans(ctx, budget)
    if isinstance(plans, str):
        return Check("max_concurrency", logged_x.value, None, None, f"not derived: {plans}")
    mid, lo, hi = plans
    if length and length != mid.max_model_len:
        return Check("max_concurrency", logged_x.value, None, None,
                     f"the log's concurrency is for {length:,} tokens but the plan's "
                     f"max_model_len is {mid.max_model_len:,}")
    half = logged_x.half_width
    new = (lo.max_concurrency, hi.max_concurrency)
    old = (_old_rule(lo, mid.max_model_len)[1], _old_rule(hi, mid.max_model_len)[1])
    x = logged_x.value
    rng = (round(new[0], 4), round(new[1], 4))
    if new[0] - half <= x <= new[1] + half:
        return Check("max_concurrency", x, round(mid.max_concurrency, 4), True,
                     f"{mid.num_blocks:,} blocks ÷ {mid.pools[0].entries_per_req:,} blocks per "
                     f"{mid.max_model_len:,}-token request = {mid.max_concurrency:.4f}; the "
                     f"rounding interval gives {new[0]:.4f}–{new[1]:.4f}, printed as "
                     f"{x:.2f}", rng)
    if old[0] - half <= x <= old[1] + half:
        return Check("max_concurrency", x, round(_old_rule(mid, mid.max_model_len)[1], 4),
                     True, "the log divides blocks × block size by max_model_len (vLLM's rule "
                     f"before the capacity rule): {old[0]:.4f}–{old[1]:.4f}",
                     (round(old[0], 4), round(old[1], 4)))
    return Check("max_concurrency", x, round(mid.max_concurrency, 4), False,
                 f"kvledger: {new[0]:.4f}–{new[1]:.4f} requests of {mid.max_model_len:,} "
                 f"tokens from {budget[3] if budget else 'the budget'}; the log has {x:.2f} "
                 "(see kv_cache_tokens for the cause)", rng)


def _blocks_check(ctx: Context, budget: tuple[int, int, int, str] | None) -> Check:
    logged = int(ctx.log.figures["num_gpu_blocks"])
    plans = _plans(ctx, budget)
    if isinstance(plans, str):
        return Check("num_gpu_blocks", logged, None, None, f"not derived: {plans}")
    mid, lo, hi = plans
    ok = lo.num_blocks <= logged <= hi.num_blocks
    bpb = mid.pools[0].entry_bytes if mid.pools else 0
    return Check("num_gpu_blocks", logged, mid.num_blocks, ok,
                 f"budget ÷ {bpb:,} B per block (all layers' pages of one block id) = "
                 f"{lo.num_blocks:,}–{hi.num_blocks:,} blocks over the rounding interval",
                 (lo.num_blocks, hi.num_blocks))


# -- a refused start ---------------------------------------------------------------------------


def _refused_checks(ctx: Context, budget: tuple[int, int, int, str] | None) -> list[Check]:
    f = ctx.log.figures
    needed: Gib = f["needed_kv_gib"]
    out: list[Check] = []
    plans = _plans(ctx, budget)
    if isinstance(plans, str):
        out.append(Check("needed_kv_bytes", needed.bytes, None, None, f"not derived: {plans}"))
        return out
    mid = plans[0]
    pool = mid.pools[0]
    need = pool.entries_per_req * pool.entry_bytes
    out.append(Check(
        "needed_kv_bytes", needed.bytes, need, needed.low <= need <= needed.high,
        f"one {mid.max_model_len:,}-token request needs {pool.entries_per_req:,} blocks × "
        f"{pool.entry_bytes:,} B = {gib(need)}; the log says {needed}"))
    logged_len = f.get("estimated_max_model_len")
    if isinstance(logged_len, int) and budget is not None:
        lo_len = _longest_fitting(ctx, budget[1], mid.max_model_len)
        hi_len = _longest_fitting(ctx, budget[2], mid.max_model_len)
        out.append(Check(
            "estimated_max_model_len", logged_len, _longest_fitting(ctx, budget[0],
                                                                    mid.max_model_len),
            lo_len <= logged_len <= hi_len,
            f"the longest request whose blocks fit {budget[3]}: {lo_len:,}–{hi_len:,} tokens "
            "(vLLM's estimate_max_model_len: a bisection on max_model_len)",
            (lo_len, hi_len)))
    return out


def _longest_fitting(ctx: Context, budget: int, top: int) -> int:
    def fits(length: int) -> bool:
        plan = ctx.plan(budget, max_model_len=length)
        if plan is None or not plan.pools:
            return False
        pool = plan.pools[0]
        return pool.entries_per_req * pool.entry_bytes <= budget

    if not fits(1):
        return 0
    lo, hi = 1, top
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo

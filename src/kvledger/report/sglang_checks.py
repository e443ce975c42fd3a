"""The checks of an SGLang start-up log.

What kvledger can check without an SGLang layout: the weights (engine-neutral estimate) and
the pool's own arithmetic — "KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB"
must be N + page_size slots (SGLang keeps one padding page: ``MHATokenToKVPool`` /
``MLATokenToKVPool`` allocate ``size + page_size`` rows per layer, ``mem_cache/memory_pool.py``)
times the per-layer K and V bytes of one rank, which are kvledger's derived facts. How many
tokens SGLang gives a budget (``mem_fraction_static``, its pool sizing) is the SGLang
layout's rule; until that layout exists the token and budget checks say so and stay null.
"""

from __future__ import annotations

from kvledger import records
from kvledger.report.findings import Check, Context, gib
from kvledger.report.logparse import GIB, Gib
from kvledger.report.memory_checks import unlogged_weights, weights_check


def sglang_checks(ctx: Context) -> list[Check]:
    f = ctx.log.figures
    checks: list[Check] = []
    if "weights_gib" in f:
        checks.append(weights_check(ctx))
    else:
        checks.append(unlogged_weights(ctx))
    tokens = f.get("kv_cache_tokens", f.get("max_total_num_tokens"))
    budget = _logged_budget(ctx)
    if isinstance(budget, tuple):
        low, mid, high, how = budget
        tail = "the tokens are checked against it (kv_cache_tokens)"
        checks.append(Check("available_kv_bytes", mid, None, None, f"{how}; {tail}",
                            (low, high)))
    else:
        checks.append(Check("available_kv_bytes", None, None, None,
                            f"the log does not print it ({budget})"))
    if isinstance(tokens, int):
        checks.append(_tokens_check(ctx, tokens, budget))
    checks.append(Check("max_concurrency", None, None, None,
                        "SGLang prints no concurrency at the context length (max_running_"
                        "requests is a scheduler cap, not a KV figure)"))
    if isinstance(tokens, int) and any(k in f for k in ("k_size_gib", "kv_size_gib")):
        checks.append(_pool_bytes_check(ctx, tokens))
    from kvledger.report.sglang_budget_checks import sglang_budget_checks

    checks.extend(sglang_budget_checks(ctx))
    return checks


def _logged_budget(ctx: Context) -> tuple[int, int, int, str] | str:
    """SGLang's KV budget as its own log states it: the free memory after the weights less
    ``(1 − mem_fraction_static)`` of the free memory before them (``profile_max_num_token``:
    ``rest = available − total × (1 − mem_fraction_static)``; 0.4.3 and 0.5.23 alike). Both
    figures were printed with two decimals, so this is an interval."""
    f = ctx.log.figures
    before, after = f.get("load_begin_avail_gib"), f.get("load_end_avail_gib")
    fraction = ctx.log.settings.get("mem_fraction_static")
    if not isinstance(before, Gib) or not isinstance(after, Gib):
        return "the log lacks 'Load weight begin/end. avail mem'"
    if not isinstance(fraction, float):
        return "the log states no mem_fraction_static"
    keep = 1.0 - fraction
    low = after.low - int(before.high * keep)
    mid = after.bytes - int(before.bytes * keep)
    high = after.high - int(before.low * keep)
    how = (f"the log's budget: {after} free after the weights − {before} × (1 − {fraction:g})"
           f" = {low / GIB:.3f}–{high / GIB:.3f} GiB")
    return low, mid, high, how


def _tokens_check(
    ctx: Context, logged: int, budget: tuple[int, int, int, str] | str
) -> Check:
    from kvledger.plan.engines.sglang.layout import plan_sglang
    from kvledger.plan.engines.sglang.options import SglangOptions

    if isinstance(budget, str):
        return Check("kv_cache_tokens", logged, None, None, f"not derived: {budget}")
    if ctx.facts is None or ctx.request is None:
        return Check("kv_cache_tokens", logged, None, None, f"not derived: {ctx.why_not()}")
    s = ctx.log.settings
    try:
        options = SglangOptions(
            mem_fraction_static=s.get("mem_fraction_static"),
            max_running_requests=s.get("max_running_requests"),
            disable_radix_cache=bool(s.get("disable_radix_cache", False)))
        request = records.replace(ctx.request, engine="sglang",
                                      block_size=s.get("block_size"))
        plans = [plan_sglang(ctx.facts, request, b, options=options)
                 for b in budget[:3]]
    except (TypeError, ValueError) as exc:
        return Check("kv_cache_tokens", logged, None, None, f"not derived: {exc}")
    low, mid, high = (int(p.kv_cache_tokens) for p in plans)
    ok = low <= logged <= high
    cell = plans[1].cell_bytes_per_token
    return Check("kv_cache_tokens", logged, mid, ok,
                 f"tokens follow from {budget[3]}: ÷ {cell:,.0f} B per token (SGLang's cell: "
                 f"all layers' K and V on one GPU; kvledger's SGLang layout) = {low:,}–"
                 f"{high:,}; the log's {logged:,} is {'inside' if ok else 'outside'}",
                 (low, high))


def _pool_bytes_check(ctx: Context, tokens: int) -> Check:
    f = ctx.log.figures
    parts = [f[k] for k in ("k_size_gib", "v_size_gib", "kv_size_gib") if isinstance(f.get(k),
                                                                                   Gib)]
    low = sum(p.low for p in parts)
    high = sum(p.high for p in parts)
    logged = sum(p.bytes for p in parts)
    if ctx.facts is None:
        return Check("kv_pool_bytes", logged, None, None, f"not derived: {ctx.why_not()}")
    from kvledger.derive.layers import Kind, Role

    tp = ctx.request.tensor_parallel_size if ctx.request else 1
    layers = [ly.split(tp) if tp > 1 else ly for ly in ctx.facts.layers
              if ly.role is Role.DECODER]
    kinds = {ly.kind for ly in layers if ly.owns_memory}
    if not kinds <= {Kind.FULL, Kind.MLA}:
        return Check("kv_pool_bytes", logged, None, None,
                     "not derived: layers of kinds " + ", ".join(sorted(str(k) for k in kinds))
                     + " are pooled by SGLang's own layout (not available yet)")
    page = int(ctx.log.settings.get("block_size") or 1)
    per_token = sum(ly.bytes_per_token() for ly in layers if ly.owns_memory)
    derived = (tokens + page) * per_token
    ok = low <= derived <= high
    count = sum(1 for ly in layers if ly.owns_memory)
    why = (f"({tokens:,} tokens + {page} padding slot{'s' if page > 1 else ''}) × "
           f"{per_token:,} B per token per GPU ({count} layers, {ctx.facts.kv_dtype}"
           f"{f', TP {tp}' if tp > 1 else ''}) = {gib(derived)}; the log has "
           f"{' + '.join(str(p) for p in parts)} = {logged / GIB:.2f} GiB")
    if not ok:
        ratio = logged / derived if derived else 0.0
        why += f" (×{ratio:.2f}: the KV dtype or the layer count differs from the config)"
    return Check("kv_pool_bytes", logged, derived, ok, why, (low, high))

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

from kvledger.report.explain import Check, Context, gib
from kvledger.report.logparse import GIB, Gib
from kvledger.report.vllm_checks import weights_check

NO_LAYOUT = ("not derived: the SGLang layout is not available yet in kvledger (the pool "
             "sizing from mem_fraction_static is its rule)")


def sglang_checks(ctx: Context) -> list[Check]:
    f = ctx.log.figures
    checks: list[Check] = []
    if "weights_gib" in f:
        checks.append(weights_check(ctx))
    tokens = f.get("kv_cache_tokens", f.get("max_total_num_tokens"))
    if isinstance(tokens, int):
        checks.append(Check("kv_cache_tokens", tokens, None, None, NO_LAYOUT))
        if any(k in f for k in ("k_size_gib", "kv_size_gib")):
            checks.append(_pool_bytes_check(ctx, tokens))
    if "load_end_avail_gib" in f:
        avail: Gib = f["load_end_avail_gib"]
        checks.append(Check("available_kv_bytes", avail.bytes, None, None,
                            f"{NO_LAYOUT}; the log had {avail} free after loading the weights"))
    return checks


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

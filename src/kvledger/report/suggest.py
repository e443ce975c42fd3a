"""What to change, with numbers: each suggestion is a re-plan of the log's settings.

Starting point: the KV budget the log printed (not kvledger's estimate of it), so the effect
of a change is measured against what the user actually got. A suggestion that changes
nothing (prefix caching on a plain-attention model, fp8 on an fp8 cache) is not shown.

- fp8 KV cache: same budget, ``--kv-cache-dtype fp8``;
- a shorter max_model_len: same budget, half the length (more requests fit at once);
- higher utilization: ``--gpu-memory-utilization 0.95`` adds (0.95 − U) × the GPU's total to
  the budget (needs the total: from the log, or ``--gpu``);
- more tensor parallelism: twice the GPUs; each holds half the weights (the logged figure), so
  its budget grows by that half, and the KV heads split (per-GPU numbers);
- prefix caching: toggled, where the layout says it changes the cache (hybrid models).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvledger.report.findings import Context, Suggestion
from kvledger.report.logparse import Gib

if TYPE_CHECKING:
    from kvledger.plan.result import PlanResult


def _effect(before: PlanResult, after: PlanResult, *, per_gpu: bool = False) -> str:
    tok = f"{before.kv_cache_tokens:,} → {after.kv_cache_tokens:,} tokens"
    if before.kv_cache_tokens:
        tok += f" (×{after.kv_cache_tokens / before.kv_cache_tokens:.2f})"
    conc = (f"max concurrency {before.max_concurrency:.2f} → {after.max_concurrency:.2f} at "
            f"{after.max_model_len:,} tokens")
    if after.max_model_len != before.max_model_len:
        conc = (f"max concurrency {before.max_concurrency:.2f} at {before.max_model_len:,} "
                f"tokens → {after.max_concurrency:.2f} at {after.max_model_len:,}")
    per = " (per GPU)" if per_gpu else ""
    if after.kv_cache_tokens == before.kv_cache_tokens:
        return f"{conc}{per}"
    return f"{tok}; {conc}{per}"


def vllm_suggestions(ctx: Context) -> list[Suggestion]:
    f = ctx.log.figures
    avail = f.get("available_kv_gib")
    if not isinstance(avail, Gib) or ctx.request is None or ctx.facts is None:
        return []
    budget = avail.bytes
    base = ctx.plan(budget)
    if base is None:
        return []
    out: list[Suggestion] = []
    req = ctx.request
    if not req.kv_cache_dtype.startswith("fp8") and req.kv_cache_dtype != "nvfp4":
        fp8 = ctx.plan(budget, kv_cache_dtype="fp8")
        if fp8 is not None and fp8.kv_cache_tokens != base.kv_cache_tokens:
            out.append(Suggestion("--kv-cache-dtype fp8", _effect(base, fp8)))
    if base.max_model_len >= 8192:
        half = ctx.plan(budget, max_model_len=base.max_model_len // 2)
        if half is not None:
            out.append(Suggestion(f"--max-model-len {base.max_model_len // 2}",
                                  _effect(base, half)))
    from kvledger.report.memory_checks import logged_utilization

    util, _ = logged_utilization(ctx)
    if ctx.gpu is not None and util < 0.95:
        extra = int(ctx.gpu.total_bytes * 0.95) - int(ctx.gpu.total_bytes * util)
        more = ctx.plan(budget + extra)
        if more is not None:
            out.append(Suggestion(
                "--gpu-memory-utilization 0.95",
                f"+{extra / (1 << 30):.2f} GiB of KV budget: {_effect(base, more)} (if the "
                "GPU has no other tenants)"))
    weights = f.get("weights_gib")
    tp = req.tensor_parallel_size
    if isinstance(weights, Gib):
        wider = ctx.plan(budget + weights.bytes // 2, tensor_parallel_size=tp * 2)
        if wider is not None:
            out.append(Suggestion(
                f"--tensor-parallel-size {tp * 2}",
                f"each GPU frees half its {weights} of weights for KV: "
                f"{_effect(base, wider, per_gpu=True)}; twice the GPUs"))
    prefix = _prefix_caching(ctx, budget, base)
    if prefix is not None:
        out.append(prefix)
    return out


def _prefix_caching(ctx: Context, budget: int, base: PlanResult) -> Suggestion | None:
    """Toggle prefix caching where the layout says it changes the cache (vLLM aligns a hybrid
    model's recurrent state to the attention block when prefix caching is on)."""
    on = ctx.plan(budget, enable_prefix_caching=True)
    off = ctx.plan(budget, enable_prefix_caching=False)
    if on is None or off is None or (on.kv_cache_tokens, on.block_size) == (
            off.kv_cache_tokens, off.block_size):
        return None
    current = ctx.request.enable_prefix_caching if ctx.request else None
    if current is None:
        current = (on.kv_cache_tokens, on.block_size) == (base.kv_cache_tokens, base.block_size)
    after = off if current else on
    flag = "--no-enable-prefix-caching" if current else "--enable-prefix-caching"
    note = " (and no prefix reuse)" if current else " (and prefix reuse)"
    blocks = (f"block size {base.block_size} → {after.block_size}; "
              if after.block_size != base.block_size else "")
    return Suggestion(flag, f"{blocks}{_effect(base, after)}{note}")

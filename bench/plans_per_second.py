"""Plans per second for a 100-layer hybrid model, with every layout, and a sweep.

The model is the bundled Qwen3-Next-80B config (Gated DeltaNet + full attention, one full
layer every ``full_attention_interval`` = 4) stretched to 100 layers: 75 recurrent-state layers
and 25 attention layers. Why a real family's config rather than facts built by hand: the
derive path validates it exactly as it would a user's model, so the numbers measure what a
user pays.

Three rows per layout (every name ``kvledger.plan.engines.registry.engine_names()`` lists), each as
plans
per wall-clock second and per CPU second of this process (the two agree on an idle machine;
on a loaded one the CPU figure is the code's own cost):
- "plan only": ``plan_model(facts, request)`` from already-derived ``ModelFacts`` — what a
  caller that derives once and plans many requests pays;
- "derive+plan": ``plan_model(config_dict, request)`` from the raw config each time. Derived
  facts are reused across calls for an unchanged config (``kvledger.derive.facts_cache``),
  so this is a caller who hands kvledger the same model again and again;
- "derive+plan, cold": the same call with that cache emptied before each call: derivation
  from scratch every time.

The sweep: one catalog model planned on every GPU preset (``kvledger.plan.gpus``) × tensor
parallel {1, 2, 4, 8} × 32 context lengths with the vLLM layout and the GPU budget (weights
and reserves), ``plan_model(facts, request)`` each time; a combination that does not fit is
an answer too (the planner raises, and the sweep counts it apart).

Usage: python bench/plans_per_second.py [--seconds S] [--sweep-model ID]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

MODEL = "Qwen/Qwen3-Next-80B-A3B-Thinking"  # a catalog id: its config, widened below
LAYERS = 100
SWEEP_MODEL = "meta-llama/Meta-Llama-3.1-70B"
SWEEP_TP = (1, 2, 4, 8)
# 32 context lengths from 1k to 128k tokens, in equal steps of 4k (the first is 1k).
SWEEP_CONTEXTS = tuple([1024] + [4096 * k for k in range(1, 32)])


def hybrid_config() -> dict[str, Any]:
    from kvledger.source.resolve import load_source

    config: dict[str, Any] = load_source(MODEL).config
    config["num_hidden_layers"] = LAYERS
    if isinstance(config.get("layer_types"), list):
        interval = int(config.get("full_attention_interval", 4))
        config["layer_types"] = [
            "full_attention" if (i + 1) % interval == 0 else "linear_attention"
            for i in range(LAYERS)
        ]
    return config


def rate(fn: Callable[[], object], seconds: float) -> tuple[float, float, int]:
    """(plans per wall-clock second, plans per CPU second of this process, plans)."""
    fn()  # warm-up: imports, caches
    count = 0
    start, cpu = time.perf_counter(), time.process_time()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        fn()
        count += 1
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return count / wall, count / max(cpu, 1e-9), count


def _clear_facts_cache() -> None:
    try:
        from kvledger.derive import facts_cache
    except ImportError:  # a kvledger without the cache: every call derives anyway
        return
    facts_cache.clear()


def sweep(model: str) -> None:
    from kvledger.derive import derive_model
    from kvledger.plan import api
    from kvledger.plan.gpus import gpu_names
    from kvledger.plan.request import PlanRequest

    facts = derive_model(model)
    gpus = gpu_names()
    planned = refused = 0
    start, cpu = time.perf_counter(), time.process_time()
    for gpu in gpus:
        for tp in SWEEP_TP:
            for context in SWEEP_CONTEXTS:
                request = PlanRequest(engine="vllm", gpu=gpu, tensor_parallel_size=tp,
                                      max_model_len=context)
                try:
                    api.plan_model(facts, request)
                except ValueError:  # BudgetTooSmall, a split that does not divide, ...
                    refused += 1
                else:
                    planned += 1
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    total = planned + refused
    print(f"\nsweep: {model}, {len(gpus)} GPU presets × TP {{{', '.join(map(str, SWEEP_TP))}}} "
          f"× {len(SWEEP_CONTEXTS)} context lengths = {total} plans (vLLM layout, GPU budget)")
    print(f"  {elapsed:.2f} s wall, {cpu:.2f} s CPU ({total / elapsed:,.0f} plans/s; {planned} "
          f"planned, {refused} refused: the model does not fit)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    parser.add_argument("--sweep-model", default=SWEEP_MODEL, help="catalog id for the sweep")
    parser.add_argument("--no-sweep", action="store_true")
    args = parser.parse_args()

    from kvledger.derive import Kind, derive_model
    from kvledger.plan import api
    from kvledger.plan.engines.registry import engine_names
    from kvledger.plan.request import PlanRequest

    plan_model = api.plan_model

    config = hybrid_config()
    facts = derive_model(config)
    kinds: dict[str, int] = {}
    for layer in facts.layers:
        kinds[str(layer.kind)] = kinds.get(str(layer.kind), 0) + 1
    print(f"model: Qwen3-Next config stretched to {LAYERS} layers → {len(facts.layers)} cache "
          f"layers {kinds}")
    assert kinds.get(str(Kind.STATE), 0) and kinds.get(str(Kind.FULL), 0), "not a hybrid"

    def cold(request: PlanRequest) -> object:
        _clear_facts_cache()
        return plan_model(config, request)

    # Wall-clock rates swing with the load of a shared machine; the CPU rate (plans per second
    # of this process's CPU time) is what the code costs, and equals the wall rate when idle.
    print(f"{'layout':<8}{'what':<19}{'plans/s':>10}{'plans/CPU-s':>13}{'ms/plan':>10}{'n':>8}")
    for engine in engine_names():
        request = PlanRequest(
            engine=engine, kv_cache_memory_bytes=40 * 2**30, max_model_len=32768,
            block_size=16 if engine == "native" else None,
        )
        cases: list[tuple[str, Callable[[], object]]] = [
            ("plan only", lambda r=request: plan_model(facts, r)),
            ("derive+plan", lambda r=request: plan_model(config, r)),
            ("derive+plan, cold", lambda r=request: cold(r)),
        ]
        for what, fn in cases:
            try:
                per_s, per_cpu_s, n = rate(fn, args.seconds)
            except Exception as exc:  # report, keep going: a bench is not a test
                print(f"{engine:<8}{what:<19}  failed: {type(exc).__name__}: {exc}")
                continue
            print(f"{engine:<8}{what:<19}{per_s:>10.0f}{per_cpu_s:>13.0f}"
                  f"{1e3 / per_s:>10.3f}{n:>8}")
    if not args.no_sweep:
        sweep(args.sweep_model)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Plans per second for a 100-layer hybrid model, with both layouts.

The model is the bundled Qwen3-Next-80B config (Gated DeltaNet + full attention, one full
layer every ``full_attention_interval`` = 4) stretched to 100 layers: 75 recurrent-state layers
and 25 attention layers. Why a real family's config rather than facts built by hand: the
derive path validates it exactly as it would a user's model, so the numbers measure what a
user pays.

Two figures per layout:
- "derive+plan": ``plan_model(config_dict, request)`` from the raw config each time;
- "plan only": ``plan_model(facts, request)`` from already-derived ``ModelFacts`` (skipped if
  the planner does not accept facts).

Usage: python bench/plans_per_second.py [--seconds S]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CATALOG = Path(__file__).resolve().parents[1] / "src" / "kvledger" / "derive" / "catalog"
CONFIG = CATALOG / "Qwen--Qwen3-Next-80B-A3B-Thinking.json"
LAYERS = 100


def hybrid_config() -> dict[str, Any]:
    config: dict[str, Any] = json.loads(CONFIG.read_text())
    config["num_hidden_layers"] = LAYERS
    if isinstance(config.get("layer_types"), list):
        interval = int(config.get("full_attention_interval", 4))
        config["layer_types"] = [
            "full_attention" if (i + 1) % interval == 0 else "linear_attention"
            for i in range(LAYERS)
        ]
    return config


def rate(fn: Callable[[], object], seconds: float) -> tuple[float, int]:
    fn()  # warm-up: imports, caches
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        fn()
        count += 1
    return count / (time.perf_counter() - start), count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    args = parser.parse_args()

    from kvledger.derive import Kind, derive_model
    from kvledger.plan import api
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

    print(f"{'layout':<8}{'what':<14}{'plans/s':>12}{'ms/plan':>10}{'n':>8}")
    for engine in ("native", "vllm"):
        request = PlanRequest(
            engine=engine, kv_cache_memory_bytes=40 * 2**30, max_model_len=32768,
            block_size=None if engine == "vllm" else 16,
        )
        cases: list[tuple[str, Callable[[], object]]] = [
            ("derive+plan", lambda r=request: plan_model(config, r)),
            ("plan only", lambda r=request: plan_model(facts, r)),
        ]
        for what, fn in cases:
            try:
                per_s, n = rate(fn, args.seconds)
            except Exception as exc:  # report, keep going: a bench is not a test
                print(f"{engine:<8}{what:<14}  failed: {type(exc).__name__}: {exc}")
                continue
            print(f"{engine:<8}{what:<14}{per_s:>12.1f}{1e3 / per_s:>10.2f}{n:>8}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

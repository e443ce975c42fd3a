"""Native layout vs the vLLM layout: KV tokens held at an equal budget, per catalog model.

Issue #4 requires the native layout (no page padding, windows as per-request rings, states
sized ``1 + num_speculative_tokens``) to hold at least as many tokens as vLLM's on every
catalog model. This prints, for each bundled model, the ``kv_cache_tokens`` of both layouts
at the same ``--kv-cache-memory-bytes`` and their ratio; models kvledger does not support (or
cannot plan with these settings) are listed with the one-line reason.

Settings: 40 GiB per GPU, TP 1, block size 16 (vLLM's ``auto`` where its backend refuses 16),
``max_model_len`` = min(the config's, 32768), max_num_seqs 256, ``--kv-cache-dtype auto`` for
both; the KV dtype each layout resolved is printed, because a ratio that comes from a different
element type (a checkpoint KV scheme one layout honours and the other does not) is not a
layout saving. These go through the CLI
(``main([...])``), so what is measured is what a user sees.

Usage: python bench/native_vs_vllm.py [--kv-cache-memory-bytes N] [--max-model-len L]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from typing import Any


def _plan(
    model: str, engine: str, budget: int, max_len: int | None, block_size: str = "16"
) -> dict[str, Any] | str:
    from kvledger.cli.main import main as cli

    argv = ["plan", model, "--engine", engine, "--kv-cache-memory-bytes", str(budget), "--json",
            "--block-size", block_size]
    if max_len is not None:
        argv += ["--max-model-len", str(max_len)]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli(argv)
    if code != 0:
        return err.getvalue().strip() or f"exit {code}"
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


def _max_len(model: str, cap: int) -> int | None:
    from kvledger.derive import derive_model

    try:
        facts = derive_model(model)
    except Exception:
        return None  # the plan call reports why
    known = facts.max_position_embeddings
    return min(known, cap) if known else cap


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kv-cache-memory-bytes", type=int, default=40 * 2**30)
    parser.add_argument("--max-model-len", type=int, default=32768, help="cap on the context")
    args = parser.parse_args()

    from kvledger.derive import catalog_ids

    budget = args.kv_cache_memory_bytes
    print(f"budget {budget:,} B per GPU ({budget / 2**30:.1f} GiB), TP 1")
    print(f"{'model':<50}{'max_len':>9}{'native tokens':>15}{'vllm tokens':>14}"
          f"{'native/vllm':>12}  kv dtype (native / vllm)")
    below: list[str] = []
    skipped: list[tuple[str, str]] = []
    for model in catalog_ids():
        max_len = _max_len(model, args.max_model_len)
        native = _plan(model, "native", budget, max_len)
        vllm = _plan(model, "vllm", budget, max_len)
        if isinstance(vllm, str) and "--block-size auto" in vllm:
            # Sparse-MLA backends need blocks of 64: what vLLM picks by itself with `auto`.
            vllm = _plan(model, "vllm", budget, max_len, block_size="auto")
        if isinstance(native, str) or isinstance(vllm, str):
            reason = native if isinstance(native, str) else vllm
            assert isinstance(reason, str)
            skipped.append((model, reason))
            continue
        n_tok, v_tok = native["kv_cache_tokens"], vllm["kv_cache_tokens"]
        ratio = n_tok / v_tok if v_tok else float("inf")
        n_dt, v_dt = native.get("kv_cache_dtype"), vllm.get("kv_cache_dtype")
        dtypes = f"{n_dt}" if n_dt == v_dt else f"{n_dt} / {v_dt}  (differ!)"
        flag = "  < 1 !" if ratio < 1 else ""
        if ratio < 1:
            below.append(model)
        print(f"{model:<50}{native['max_model_len']:>9,}{n_tok:>15,}{v_tok:>14,}"
              f"{ratio:>12.3f}  {dtypes}{flag}")
    if skipped:
        print("\nnot compared:")
        for model, reason in skipped:
            print(f"  {model}: {reason}")
    if below:
        print(f"\nnative holds FEWER tokens than vLLM on: {', '.join(below)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

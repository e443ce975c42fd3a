"""``kvledger plan MODEL --omni-deploy DEPLOY.yaml --gpu NAME``: a vLLM-Omni deployment.

The flags are ``plan``'s; the deploy file sets each stage's fraction, ``max_num_seqs`` and
the rest (``kvledger.plan.omni``). ``--model-local-kv-stage NAME=K`` names the deployment's
stage K (not a pipeline-parallel stage). Text, or ``--json``: one object with ``stages``,
``admission`` and, with ``--concurrency N``, ``split``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kvledger.cli.errors import UsageError

GIB = 1 << 30


def run(ns: argparse.Namespace, emit_json: Any) -> int:
    data = omni_plan(ns)
    if ns.json:
        emit_json(data)
    else:
        from kvledger.cli.terminal import output_width, wrap_lines

        sys.stdout.write("\n".join(wrap_lines(text_lines(data), output_width(sys.stdout)))
                         + "\n")
    return 0


def omni_plan(ns: argparse.Namespace) -> dict[str, Any]:
    """The deployment's plan (``OmniPlan.to_json``) for the command line's flags."""
    command = f"kvledger {getattr(ns, 'command_name', 'plan')}"
    if ns.kv_cache_memory_bytes is not None:
        raise UsageError(f"{command}: error: --omni-deploy sizes each stage as a fraction "
                         "of its device, not a given KV pool",
                         hint="drop --kv-cache-memory-bytes; pass --gpu NAME")
    if ns.gpu is None and getattr(ns, "gpu_total_bytes", None) is None:
        raise UsageError(f"{command}: error: --omni-deploy needs the device",
                         hint="pass --gpu NAME (e.g. --gpu H100-80GB) or --gpu-total-bytes N")
    if ns.gpu_memory_utilization is not None:
        raise UsageError(f"{command}: error: --gpu-memory-utilization: the deploy file "
                         "sets each stage's fraction",
                         hint="edit the deploy file's gpu_memory_utilization to try another "
                              "split, or ask --concurrency N for one")
    from kvledger.cli.model_local import parse_stage
    from kvledger.cli.plan_options import build_request
    from kvledger.cli.source_args import model_source
    from kvledger.plan.omni import plan_omni

    stages = dict(parse_stage(text, command) for text in ns.model_local_kv_stage)
    request = build_request(ns, model_local_stages=())
    plan = plan_omni(model_source(ns), ns.omni_deploy, request, model_local_kv_stages=stages,
                     platform=ns.omni_platform)
    return plan.to_json()


def _b(n: int) -> str:
    return f"{n:,} B ({n / GIB:.2f} GiB)"


def text_lines(data: dict[str, Any]) -> list[str]:
    """The plan as lines of text (also the report's section)."""
    out = [f"vLLM-Omni deployment {data['omni_deploy']}  ·  pipeline {data['pipeline']}  ·  "
           f"platform {data['platform']}  ·  {data['gpu']} {_b(data['capacity_bytes'])} a "
           f"device  ·  stages planned as vLLM {data['engine_release']}", ""]
    for s in data["stages"]:
        part = s["model_part"] or "the whole config"
        devices = ",".join(map(str, s["devices"])) or "0 (not stated)"
        flags = [f"max_num_seqs {s['max_num_seqs']}",
                 f"max_num_batched_tokens {s['max_num_batched_tokens']:,}",
                 "prefix caching " + {True: "on", False: "off", None: "engine default"}[
                     s["enable_prefix_caching"]],
                 "eager" if s["enforce_eager"] else "CUDA graphs"]
        out.append(f"stage {s['stage_id']}  {s['role']} ({part})  ·  devices {devices}  ·  "
                   f"gpu_memory_utilization {s['gpu_memory_utilization']} "
                   f"({s['utilization_source']})  ·  " + "  ·  ".join(flags))
        plan = s["plan"]
        if plan is None:
            out.append(f"  no plan: {s['reason']}")
            for d in s.get("model_local_kv", ()):
                out.append(f"  model-local {d['name']}: {d['row_count']} {d['rows']} row(s) × "
                           f"{d['bytes_per_row']:,} B = {d['peak_bytes']:,} B (inside the "
                           "stage's fraction; vLLM-Omni counts none of it)")
            continue
        out.append(f"  KV budget {_b(plan['available_bytes'])}  ·  {plan['num_blocks']:,} "
                   f"blocks × {plan['block_size']} = {plan['kv_cache_tokens']:,} tokens  ·  "
                   f"max_model_len {plan['max_model_len']:,}  ·  max concurrency "
                   f"{plan['max_concurrency']:.2f}")
        for row in plan.get("model_local_kv", ()):
            out.append(f"  model-local {row['name']}: {row['row_count']} {row['rows']} row(s) "
                       f"× {row['bytes_per_row']:,} B = {row['peak_bytes']:,} B ({row['status']})")
    out += ["", "admission per device (vLLM-Omni's stage_admission: Σ capacity × utilization "
            "+ 2 GiB a stage capturing CUDA graphs + 1 GiB external + 1 GiB margin ≤ capacity)"]
    for a in data["admission"]:
        verdict = "ok" if a["ok"] else "OVER: vLLM-Omni refuses to start"
        out.append(f"  device {a['device']} (stages {', '.join(map(str, a['stages']))}): "
                   f"{a['kv_budget_bytes']:,} + graphs {a['graph_reserve_bytes']:,} + "
                   f"{a['external_reserve_bytes']:,} + {a['safety_margin_bytes']:,} = "
                   f"{a['required_bytes']:,} B of {a['capacity_bytes']:,} B: {verdict}")
    for sp in data.get("split", ()):
        if sp is data["split"][0]:
            out += ["", f"split for {sp['concurrency']} concurrent requests (the smallest "
                    "fraction each stage needs; stages without paged KV as deployed)"]
        shares = ", ".join(f"stage {k} {v:g}" for k, v in sp["fractions"].items())
        if sp["ok"]:
            out.append(f"  device {sp['device']}: {shares} → {sp['required_bytes']:,} B of "
                       f"{sp['capacity_bytes']:,} B: fits, {sp['spare_fraction']:g} of the "
                       "device spare")
        else:
            out.append(f"  device {sp['device']}: no split: " + "; ".join(sp["reasons"]))
    out += [f"warning: {w}" for w in data["warnings"]]
    return out

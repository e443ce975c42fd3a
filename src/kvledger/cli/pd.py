"""``kvledger pd --prefill LINE --decode LINE --gpu NAME``: a disaggregated deployment.

Each LINE is a serve line, as ``kvledger plan -- LINE`` takes it (``vllm serve MODEL …`` with
``--kv-transfer-config``, or ``python -m sglang.launch_server … --disaggregation-mode
prefill|decode``). Each is planned by its engine's layout exactly as ``plan`` would; then
``kvledger.plan.disagg`` sets the two side by side. ``kvledger pd-fit`` takes the same lines
with ``--requests N --context L`` and answers how many decode instances (and GPUs) hold N
requests of L tokens for the given prefill layout, printing both serve lines.

Why two serve lines, not a deploy file: a P/D deployment (llm-d, Dynamo) is launched as two
such lines, so they can be pasted as they are; a YAML file would be a third spelling of the
same flags to keep in step with both engines.

SGLang flags read here (not by the ``plan`` translation): ``--disaggregation-mode``,
``--disaggregation-transfer-backend``, ``--disaggregation-decode-extra-slots``,
``--disaggregation-decode-enable-radix-cache``, ``--enable-hierarchical-cache``,
``--hicache-ratio``, ``--hicache-size``, ``--hicache-mem-layout``; and, moving no KV bytes,
``--disaggregation-bootstrap-port``, ``--disaggregation-ib-device``, ``--hicache-write-policy``,
``--hicache-io-backend``. Any other SGLang flag goes to the translation, which refuses those
it does not model by name.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from typing import Any

from kvledger.cli.errors import UsageError

GIB = 1 << 30
_SG_VALUES = {
    "--disaggregation-mode": "mode", "--disaggregation-transfer-backend": "transfer_backend",
    "--disaggregation-decode-extra-slots": "decode_extra_slots",
    "--hicache-ratio": "hicache_ratio", "--hicache-size": "hicache_size",
    "--hicache-mem-layout": "hicache_mem_layout",
    "--disaggregation-bootstrap-port": "", "--disaggregation-ib-device": "",
    "--hicache-write-policy": "", "--hicache-io-backend": "",
}
_SG_SWITCHES = {"--enable-hierarchical-cache": "enable_hierarchical_cache",
                "--enable-hicache": "enable_hierarchical_cache",
                "--disaggregation-decode-enable-radix-cache": "decode_enable_radix_cache"}
_NUMBERS = {"decode_extra_slots": int, "hicache_ratio": float, "hicache_size": float}


def fill(p: argparse.ArgumentParser, *, for_fit: bool = False) -> None:
    p.add_argument("--prefill", required=True, metavar="LINE",
                   help="the prefill instance's serve line, quoted")
    p.add_argument("--decode", required=True, metavar="LINE",
                   help="the decode instance's serve line, quoted")
    p.add_argument("--gpu", default=None, metavar="NAME",
                   help="the GPU both instances run on (e.g. H100-80GB)")
    p.add_argument("--engine", default=None, metavar="ENGINE[==RELEASE]",
                   help="the release the lines of that engine run (vllm==0.33); default: the "
                   "newest release of each line's engine kvledger knows")
    p.add_argument("--gpu-total-bytes", type=int, default=None, metavar="N",
                   help="the GPU's total memory, instead of --gpu")
    p.add_argument("--context", type=int, required=for_fit, default=None, metavar="L",
                   help="tokens per request (prompt + output); default: the decode line's "
                   "max_model_len")
    if for_fit:
        p.add_argument("--requests", type=int, required=True, metavar="N",
                       help="concurrent requests the decode instances must hold")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--offline", action="store_true", default=None,
                   help="never ask the Hub: paths, the local HF cache and the catalog only")


def run(ns: argparse.Namespace, emit_json: Any, *, command: str,
        plan_parser: Callable[[], argparse.ArgumentParser]) -> int:
    for name in ("context", "requests"):
        value = getattr(ns, name, None)
        if value is not None and value < 1:
            raise UsageError(f"kvledger {command}: error: --{name} must be >= 1")
    if ns.gpu is None and ns.gpu_total_bytes is None:
        raise UsageError(f"kvledger {command}: error: no GPU given",
                         hint="pass --gpu NAME (e.g. --gpu H100-80GB) or --gpu-total-bytes N")
    from kvledger.plan.disagg import pair

    prefill = _role("prefill", ns.prefill, ns, plan_parser)
    decode = _role("decode", ns.decode, ns, plan_parser)
    data = pair(prefill, decode, context=ns.context, requests=getattr(ns, "requests", None))
    if ns.json:
        emit_json(data)
    else:
        sys.stdout.write("\n".join(text_lines(data)) + "\n")
    return 0


def _split(line: str, role: str) -> list[str]:
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"kvledger pd: error: --{role}: {exc}") from None
    if not words:
        raise UsageError(f"kvledger pd: error: --{role} is empty",
                         hint="give a serve line such as 'vllm serve MODEL ...'")
    return words


def _sglang_settings(words: list[str], role: str) -> tuple[list[str], Any]:
    """The SGLang flags this module reads (module docstring), taken out of the line."""
    from kvledger.plan.engines.sglang.disaggregation import SglangHostSettings

    kept: list[str] = []
    got: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i]
        flag, eq, value = word.partition("=")
        if flag in _SG_SWITCHES and not eq:
            got[_SG_SWITCHES[flag]] = True
        elif flag in _SG_VALUES:
            if not eq:
                if i + 1 >= len(words):
                    raise UsageError(f"kvledger pd: error: --{role}: {flag} needs a value")
                i += 1
                value = words[i]
            key = _SG_VALUES[flag]
            if key:
                try:
                    got[key] = _NUMBERS.get(key, str)(value)
                except ValueError:
                    raise UsageError(f"kvledger pd: error: --{role}: {flag} {value!r} is not "
                                     "a number") from None
        else:
            kept.append(word)
        i += 1
    return kept, SglangHostSettings(**got)


def _role(role: str, line: str, ns: argparse.Namespace,
          plan_parser: Callable[[], argparse.ArgumentParser]) -> dict[str, Any]:
    from kvledger.cli.plan_options import build_request
    from kvledger.cli.serve.cli import plan_args
    from kvledger.cli.source_args import model_source
    from kvledger.plan.api import plan_model
    from kvledger.plan.disagg import DisaggError, role_summary

    words = _split(line, role)
    settings = None
    if any("sglang" in w for w in words[:4]):
        words, settings = _sglang_settings(words, role)
        if settings.mode != role:
            raise DisaggError(f"the {role} line sets --disaggregation-mode "
                              f"{settings.mode or 'null (the default)'}; give "
                              f"--disaggregation-mode {role}")
        if role == "decode" and not settings.decode_enable_radix_cache \
                and "--disable-radix-cache" not in words:
            words.append("--disable-radix-cache")  # pd_disaggregation_hook turns it off
    before: list[str] = []
    pinned = getattr(ns, "engine", None)
    line_engine = "sglang" if settings is not None else "vllm"
    if pinned is not None and pinned.partition("==")[0].strip().lower() == line_engine:
        before += ["--engine", pinned]  # the release pin applies to lines of its engine
    if ns.gpu is not None:
        before += ["--gpu", ns.gpu]
    if ns.gpu_total_bytes is not None:
        before += ["--gpu-total-bytes", str(ns.gpu_total_bytes)]
    if ns.offline:
        before.append("--offline")
    args, translation = plan_args([*before, "--", *words], plan_parser)
    plan_ns = plan_parser().parse_args(args)
    plan = plan_model(model_source(plan_ns), build_request(plan_ns)).to_json()
    transfer: dict[str, Any] | None
    if settings is not None:
        transfer = _sglang_transfer(role, plan, settings)
    else:
        transfer = plan.get("kv_transfer")
        wanted = {"prefill": ("kv_producer", "kv_both"), "decode": ("kv_consumer", "kv_both")}
        if transfer is None:
            raise DisaggError(f"the {role} line has no --kv-transfer-config: vLLM would not "
                              "move its KV; add a connector such as "
                              "'{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'")
        if transfer["kv_role"] not in wanted[role]:
            raise DisaggError(f"the {role} line's kv_role is {transfer['kv_role']}; give "
                              f"{' or '.join(wanted[role])}")
    summary = role_summary(role, plan, transfer, shlex.join(_split(line, role)))
    summary["serve_line_notes"] = list(translation.summary())
    return summary


def _sglang_transfer(role: str, plan: dict[str, Any], settings: Any) -> dict[str, Any]:
    from kvledger.plan.disagg import DisaggError
    from kvledger.plan.engines.sglang.disaggregation import plan_role

    if int(plan.get("data_parallel_size") or 1) > 1:
        raise DisaggError(f"the {role} line uses data parallelism: SGLang's per-rank "
                          "disaggregation buffers are not modelled for it")
    kinds = sorted({layer["kind"] for layer in plan.get("layers") or []} - {"full", "mla"})
    if kinds:
        # e.g. DSA: SGLang picks the indexer's KV layout by the role's own backend
        # (kv_cache_configurator.py), which kvledger's plan does not follow.
        raise DisaggError(f"the {role} line's model has {', '.join(kinds)} layers: SGLang's "
                          "per-role KV layout for them is not modelled in a P/D role")
    pools = plan.get("pools") or []
    memory = plan_role(settings, pool_tokens=int(plan["kv_cache_tokens"]),
                       bytes_per_token=int(plan.get("cell_bytes_per_token")
                                           or plan["bytes_per_token"]),
                       page_size=int(plan["block_size"]), context_len=int(plan["max_model_len"]),
                       max_running_requests=int(plan["max_running_requests"]),
                       single_pool=len(pools) == 1 and not plan.get("swa_tokens"))
    return memory.to_json()


def _b(n: int) -> str:
    return f"{n:,} B ({n / GIB:.2f} GiB)"


def text_lines(data: dict[str, Any], width: int | None = None) -> list[str]:
    """The pair for a person, sized to ``width`` columns (the terminal's): sentences wrap at
    spaces, serve lines are cut at flags with `` \\`` so they still paste whole."""
    from kvledger.cli.terminal import output_width, wrap_lines

    width = width or output_width(sys.stdout)
    lines = [f"{data['model']} — disaggregated on {data['engine']} {data['engine_release']}"]
    context = data["decode_requests_at_context"]["context"]
    for r in data["roles"]:
        t = r["transfer"] or {}
        name = t.get("connector") or t.get("transfer_backend")
        lines += [
            "",
            f"{r['role']}: {r['gpus']} GPU(s):",
            *_command(r["serve_line"], width, "  "),
            f"  KV pool, each GPU its share of every token: {r['num_blocks']:,} blocks of "
            f"{r['block_size']} = {r['kv_cache_tokens']:,} tokens at "
            f"{r['bytes_per_token']:,} B/token per GPU (budget {_b(r['kv_budget_per_gpu'] or 0)})",
            f"  transfer: {name}; beyond the pool: {_b(r['gpu_bytes_beyond_pool_per_gpu'])} "
            f"per GPU, host {_b(r['host_bytes'])} for the instance",
        ]
        for tier in t.get("tiers") or []:
            per = "per GPU" if tier["per"] == "gpu" else "for the instance"
            lines.append(f"  {tier['tier']} tier: {_b(tier['bytes'])} {per} holds "
                         f"{tier['tokens']:,} tokens ({tier['chunks']:,} chunks of "
                         f"{tier['tokens_per_chunk']} tokens): {tier['prefixes_at_context']:,} "
                         f"prefixes of {context:,} tokens")
        pool = t.get("host_pool")
        if pool:
            lines.append(f"  host pool ({pool['pool']}): {pool['tokens']:,} tokens, "
                         f"{_b(pool['bytes_per_gpu'])} per GPU: {pool['prefixes_at_context']:,} "
                         f"prefixes of {context:,} tokens")
        lines += [f"  note: {n}" for n in [*(t.get("notes") or []), *r["serve_line_notes"]]]
        lines += [f"  warning: {w}" for w in r["warnings"] if w.startswith(r["role"])]
    at = data["decode_requests_at_context"]
    lines += ["", f"decode holds {at['requests']:,} request(s) of {at['context']:,} tokens "
              f"(pool: {at['requests_by_pool']:,}, batch cap: {at['batch_cap']:,})",
              f"host memory, both instances: {_b(data['host_bytes'])}"]
    fit = data.get("fit")
    if fit:
        lines += ["", f"{fit['requests']:,} requests of {fit['context']:,} tokens: "
                  f"{fit['decode_instances']} decode instance(s) = {fit['decode_gpus']} GPU(s) "
                  f"+ {fit['prefill_gpus']} prefill GPU(s) = {fit['gpus']} GPU(s)",
                  "  prefill:",
                  *_command(fit["serve_lines"]["prefill"], width, "    "),
                  f"  decode (× {fit['decode_instances']}):",
                  *_command(fit["serve_lines"]["decode"], width, "    ")]
    # Serve lines are cut at flags already (_command marks them): never re-wrapped, so they
    # paste whole; every other line wraps at spaces.
    return [line[1:] if line.startswith(_CMD) else wrapped
            for line in lines
            for wrapped in ([line] if line.startswith(_CMD) else wrap_lines([line], width))]


_CMD = "\0"  # marks a line of a serve line cut by _command


def _command(line: str, width: int, indent: str) -> list[str]:
    from kvledger.cli.terminal import wrapped_command

    return [_CMD + part for part in wrapped_command(shlex.split(line), width, indent)]

"""Run serve lines through an engine's own parser and record what it parsed (or refused).

Research tool, run with the engine's interpreter; its output is committed as the test oracle
for kvledger's serve-line scanner (``tests/serve/test_scan_oracle.py``):

    /work/oracle/vllm-venv/bin/python scripts/serve_parse_cases.py vllm \\
        < tests/serve/vllm-parse-lines.jsonl > tests/serve/vllm-parse-cases.jsonl
    VLLM_TARGET_DEVICE=cpu /work/venvs/vllm033/bin/python scripts/serve_parse_cases.py vllm \\
        < tests/serve/vllm-parse-lines.jsonl > tests/serve/vllm-0.33-parse-cases.jsonl
    /work/oracle/sglang/venv/bin/python scripts/serve_parse_cases.py sglang \\
        < tests/serve/sglang-parse-lines.jsonl > tests/serve/sglang-parse-cases.jsonl

Each input line is a JSON list: the argv after ``vllm serve`` (vLLM: parsed by the real
top-level ``vllm`` parser with the ``serve`` subcommand, so vLLM's own pre-processing runs) or
the argv of ``python -m sglang.launch_server`` (SGLang: ``ServerArgs.add_cli_args``). Output:
``{"argv", "parsed": {dest: value}}`` for the dests in KEYS, or ``{"argv", "error"}``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from typing import Any

KEYS = {
    "vllm": [
        "model_tag", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
        "max_model_len", "gpu_memory_utilization", "kv_cache_memory_bytes", "kv_cache_dtype",
        "block_size", "max_num_seqs", "max_num_batched_tokens", "enable_prefix_caching",
        "speculative_config", "spec_method", "spec_tokens", "enforce_eager", "dtype",
        "optimization_level", "hf_overrides", "api_key", "port", "quantization",
        "cpu_offload_gb",
    ],
    "sglang": [
        "model_path", "tp_size", "pp_size", "dp_size", "context_length", "page_size",
        "kv_cache_dtype", "mem_fraction_static", "max_running_requests", "max_total_tokens",
        "chunked_prefill_size", "cuda_graph_max_bs_decode", "disable_radix_cache",
        "speculative_algorithm", "speculative_num_steps", "port", "api_key",
    ],
}


def vllm_parser() -> Any:
    import vllm.entrypoints.cli.serve as serve_mod
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    top = FlexibleArgumentParser(prog="vllm")
    sub = top.add_subparsers(required=False, dest="subparser")
    for cmd in serve_mod.cmd_init():
        cmd.subparser_init(sub)
    return lambda argv: top.parse_args(["serve", *argv])


def sglang_parser() -> Any:
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    return parser.parse_args


def main() -> None:
    engine = sys.argv[1]
    parse = vllm_parser() if engine == "vllm" else sglang_parser()
    for line in sys.stdin:
        if not line.strip():
            continue
        argv = json.loads(line)
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                ns = parse(argv)
        except SystemExit:
            print(json.dumps({"argv": argv, "error": err.getvalue().strip().splitlines()[-1]}))
            continue
        except Exception as exc:  # vLLM raises ValueError for some lines
            print(json.dumps({"argv": argv, "error": f"{type(exc).__name__}: {exc}"}))
            continue
        parsed = {}
        for key in KEYS[engine]:
            value = getattr(ns, key, None)
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError):
                value = {"repr": repr(value)}
            parsed[key] = value
        print(json.dumps({"argv": argv, "parsed": parsed}))


if __name__ == "__main__":
    main()

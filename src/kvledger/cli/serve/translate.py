"""A serve line, end to end: text → launcher → engine argv → kvledger ``plan`` options.

Pure: nothing here reads a model or the environment; ``Context`` carries what the rest of the
kvledger command line says (a given KV budget, the GPU for the engine's GPU-dependent
defaults, the KV dtypes kvledger plans).
"""

from __future__ import annotations

from kvledger.cli.serve import line as serve_line
from kvledger.cli.serve import scan as scanner
from kvledger.cli.serve import sglang_map, vllm_map
from kvledger.cli.serve.table import load
from kvledger.cli.serve.translation import Context, Translation


def translate(words: list[str], ctx: Context | None = None) -> Translation:
    """``words``: the serve line as argv (or one string holding it)."""
    ctx = ctx or Context()
    parsed = serve_line.read(words)
    name, _, version = ctx.engine_spec.partition("==")
    table = load(parsed.engine, version.strip() or None
                 if name.strip().lower() == parsed.engine else None)
    if parsed.engine == "vllm":
        args = scanner.vllm_preprocess(parsed.args, parsed.launcher,
                                       serve=parsed.launcher == "vllm serve")
        scanned = scanner.scan(args, table, parsed.launcher)
        out = vllm_map.translate(scanned, table, parsed.launcher, parsed.env, ctx)
    else:
        args = list(parsed.args)
        if parsed.launcher == "sglang serve" and args and not args[0].startswith("-"):
            # sglang/cli/serve.py _normalize_positional_model_path: `sglang serve MODEL`.
            args = ["--model-path", args[0], *args[1:]]
        scanned = scanner.scan(args, table, parsed.launcher)
        out = sglang_map.translate(scanned, table, parsed.launcher, parsed.env, ctx)
    out.notes[:0] = scanned.warnings
    if parsed.dropped_shell:
        out.notes.append(f"shell after the command ignored: {parsed.dropped_shell}")
    return out

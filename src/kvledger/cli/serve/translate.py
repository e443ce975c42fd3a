"""A serve line, end to end: text → launcher → engine argv → kvledger ``plan`` options.

Pure: nothing here reads a model or the environment; ``Context`` carries what the rest of the
kvledger command line says (a given KV budget, the GPU for the engine's GPU-dependent
defaults, the KV dtypes kvledger plans).
"""

from __future__ import annotations

from kvledger.cli.serve import line as serve_line
from kvledger.cli.serve import scan as scanner
from kvledger.cli.serve import sglang_flags, sglang_map, vllm_flags, vllm_map
from kvledger.cli.serve.shell_vars import settle
from kvledger.cli.serve.table import load
from kvledger.cli.serve.translation import Context, Translation


def translate(words: list[str], ctx: Context | None = None) -> Translation:
    """``words``: the serve line as argv (or one string holding it)."""
    ctx = ctx or Context()
    parsed = serve_line.read(words)
    if parsed.rocm_image:
        _check_rocm_gpu(parsed.rocm_image, ctx)
    name, _, version = ctx.engine_spec.partition("==")
    table = load(parsed.engine, version.strip() or None
                 if name.strip().lower() == parsed.engine else None)
    if parsed.engine == "vllm":
        args = scanner.vllm_preprocess(parsed.args, parsed.launcher,
                                       serve=parsed.launcher == "vllm serve")
        scanned = scanner.scan(args, table, parsed.launcher)
        unset = settle(scanned, vllm_flags.RULES, parsed.launcher)
        out = vllm_map.translate(scanned, table, parsed.launcher, parsed.env, ctx)
    else:
        args = list(parsed.args)
        if parsed.launcher == "sglang serve" and args and not args[0].startswith("-"):
            # sglang/cli/serve.py _normalize_positional_model_path: `sglang serve MODEL`.
            args = ["--model-path", args[0], *args[1:]]
        scanned = scanner.scan(args, table, parsed.launcher)
        unset = settle(scanned, sglang_flags.RULES, parsed.launcher)
        out = sglang_map.translate(scanned, table, parsed.launcher, parsed.env, ctx)
    out.notes[:0] = [*scanned.warnings, *unset]
    out.warnings[:0] = scanned.renamed
    if parsed.dropped_shell:
        out.notes.append(f"shell after the command ignored: {parsed.dropped_shell}")
    if parsed.joined_lines:
        out.notes.append(
            f"the command goes on over {parsed.joined_lines} more line(s) after a line break "
            "with no backslash before it (or after a comment line): read as one command, as "
            "it was likely meant, but a shell would end the command at that break and run "
            "the rest as commands of their own")
    return out


def _check_rocm_gpu(image: str, ctx: Context) -> None:
    """vLLM's ROCm image plans on an AMD ``--gpu`` only: its attention backends are ROCm's
    (plan/engines/vllm/resolve.py reads them for an AMD preset)."""
    from kvledger.cli.serve.errors import ServeLineError

    vendor = ""
    if ctx.gpu_name:
        from kvledger.plan.gpus import gpu_preset

        try:
            vendor = gpu_preset(ctx.gpu_name).vendor
        except (KeyError, ValueError):
            vendor = ""
    if vendor != "amd":
        raise ServeLineError(
            f"docker run {image}: this image runs vLLM's ROCm build; name an AMD GPU with "
            "--gpu (MI300X, MI325X, MI355X) to plan it there, or paste 'vllm serve' and the "
            "words after the image to plan the same flags on an NVIDIA GPU")

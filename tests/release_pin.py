"""A CLI command as the vLLM release a test's numbers were worked for.

``--engine vllm`` plans the newest release kvledger knows, which moves with every release; a
test that checks numbers names its release instead (``--engine vllm==0.33``). ``as_release``
does that for a test file's command helper: it names the release where the command says
``--engine vllm`` or names no engine (vLLM is the default), and leaves other engines alone.
"""

from __future__ import annotations

from collections.abc import Sequence

SUBCOMMANDS = ("plan", "fit", "report")


def as_release(argv: Sequence[str], release: str = "vllm==0.33") -> list[str]:
    out = list(argv)
    if "--engine" in out:
        at = out.index("--engine") + 1
        if at < len(out) and out[at] == "vllm":
            out[at] = release
        return out
    if out and out[0] in SUBCOMMANDS and "--help" not in out:
        return [out[0], "--engine", release, *out[1:]]
    return out

"""A pasted serve command → its environment, its launcher and the engine's own argv.

Accepted, as people paste them:

- argv after ``--`` (``kvledger plan -- vllm serve M -tp 4``) or one quoted string
  (``kvledger plan -- "vllm serve M -tp 4"``), split with shell rules (``shlex``), a leading
  ``$ `` prompt and backslash-newline continuations removed;
- leading ``NAME=value`` assignments (and ``env NAME=value``), recorded — they can change
  memory (``VLLM_ALLOW_LONG_MAX_MODEL_LEN``, ``PYTORCH_CUDA_ALLOC_CONF``, …);
- ``nohup`` / ``exec`` / ``time`` in front, and a trailing ``| tee log``, ``> log``, ``&``:
  shell around the command, not part of it;
- launchers: ``vllm serve``, ``python -m vllm.entrypoints.openai.api_server``,
  ``python -m vllm.entrypoints.cli.main serve``, ``python -m sglang.launch_server``,
  ``sglang serve`` (any ``python``, ``python3``, ``python3.12`` or a path to one; ``vllm`` and
  ``sglang`` also as a path: ``.venv/bin/vllm serve``);
- a ``docker run [docker options] IMAGE [command]`` wrapper (``docker.py``): the command the
  container runs, with its ``-e NAME=value`` as the environment.
"""

from __future__ import annotations

import re
import shlex

from kvledger.cli.serve.errors import ServeLineError
from kvledger.records import field, record

_PROGRAM = re.compile(r"(?:.*/)?(vllm|sglang)")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"(?:.*/)?python(?:\d+(?:\.\d+)?)?")
_WRAPPERS = frozenset({"nohup", "exec", "time", "command"})
_SHELL_STOP = frozenset({"|", "||", "&&", ";", "&", "|&"})
_REDIRECT = re.compile(r"\d*>>?(?:&\d+)?\S*|&>>?\S*")

# (words that start the command, engine, launcher label, positional model allowed)
_LAUNCHERS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("vllm", "serve"), "vllm", "vllm serve"),
    (("-m", "vllm.entrypoints.openai.api_server"), "vllm",
     "python -m vllm.entrypoints.openai.api_server"),
    (("-m", "vllm.entrypoints.cli.main", "serve"), "vllm", "vllm serve"),
    (("-m", "sglang.launch_server"), "sglang", "python -m sglang.launch_server"),
    (("sglang", "serve"), "sglang", "sglang serve"),
)
EXPECTED = ("expected a serve line such as 'vllm serve MODEL --tensor-parallel-size 4' or "
            "'python -m sglang.launch_server --model-path MODEL --tp 4'")


@record()
class ServeLine:
    engine: str  # "vllm" or "sglang"
    launcher: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    dropped_shell: str = ""  # what followed a '|', '>', '&&' …


def split(words: list[str]) -> list[str]:
    """argv after ``--``; one word holding a whole command is split with shell rules."""
    if len(words) == 1 and (" " in words[0].strip() or "\n" in words[0]):
        text = words[0].replace("\\\r\n", " ").replace("\\\n", " ").strip()
        text = text.removeprefix("$ ").removeprefix("# ").strip()
        try:
            return shlex.split(text, comments=False)
        except ValueError as exc:
            raise ServeLineError(f"cannot split the serve line: {exc}") from None
    return list(words)


def read(words: list[str]) -> ServeLine:
    """Split a pasted command into environment, launcher and the engine's argv."""
    words = split(words)
    env: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word):
            name, _, value = word.partition("=")
            env[name] = value
        elif word not in _WRAPPERS and word != "env":
            break
        i += 1
    rest = words[i:]
    if rest[:2] == ["docker", "run"] or rest[:3] == ["sudo", "docker", "run"]:
        from kvledger.cli.serve.docker import unwrap

        inner, docker_env = unwrap(rest[rest.index("run") + 1:])
        parsed = read(inner)
        return ServeLine(parsed.engine, parsed.launcher, parsed.args,
                         {**env, **docker_env, **parsed.env}, parsed.dropped_shell)
    if rest and _PYTHON.fullmatch(rest[0]):
        rest = rest[1:]
    elif rest and (program := _PROGRAM.fullmatch(rest[0])):
        rest = [program.group(1), *rest[1:]]  # .venv/bin/vllm serve: the same launcher
    for start, engine, launcher in _LAUNCHERS:
        if tuple(rest[:len(start)]) == start:
            args, dropped = _cut_shell(rest[len(start):])
            return ServeLine(engine, launcher, args, env, dropped)
    shown = " ".join(words[:3]) or "nothing"
    raise ServeLineError(f"{EXPECTED} (got {shown!r})")


def _cut_shell(args: list[str]) -> tuple[list[str], str]:
    for i, word in enumerate(args):
        if word in _SHELL_STOP or _REDIRECT.fullmatch(word):
            return args[:i], " ".join(args[i:])
    return args, ""

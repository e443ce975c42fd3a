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
  ``sglang`` also as a path: ``.venv/bin/vllm serve``, and run by an interpreter:
  ``/usr/bin/python3 /usr/local/bin/vllm serve``);
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
    rocm_image: str = ""  # docker run of vLLM's ROCm image (docker.unwrap)
    # Lines the paste continued the command on without a trailing backslash: read as one
    # command, though a shell would run the first line alone.
    joined_lines: int = 0


def split(words: list[str]) -> list[str]:
    """argv after ``--``; one word holding a whole command is split with shell rules."""
    return _statements(words)[0]


def _statements(
    words: list[str],
) -> tuple[list[str], dict[str, str], dict[str, str], int]:
    """(the command's words, shell variables set on earlier lines, those of them exported,
    how many lines the command goes on over with no backslash before the break).

    A paste may set variables on lines before the command (``MODEL=org/name`` or
    ``export TP=8``, one or more to a line; ``#`` comment lines between are skipped): as in
    the shell, the command's ``$NAME`` / ``${NAME}`` words are expanded with them, and the
    exported ones are also the process's environment. A ``NAME=value`` prefix on the command
    line itself is only the environment: the shell does not expand it in that command's
    arguments, so ``$NAME`` stays as the engine would receive it.

    Comments are dropped as the shell drops them: from a word that starts with ``#`` to the
    end of its physical line, outside quotes — a comment line inside a backslash
    continuation or after a flag included (the lines around it still form one command)."""
    if not (len(words) == 1 and (" " in words[0].strip() or "\n" in words[0])):
        return list(words), {}, {}, 0
    text = words[0].strip()
    for prompt in ("$ ", "# "):  # a shell prompt pasted with the first line
        text = text.removeprefix(prompt)
    text = _strip_comments(text)
    text = text.replace("\\\r\n", " ").replace("\\\n", " ").strip()
    lines = [line.strip() for line in text.splitlines()]
    shell: dict[str, str] = {}
    exported: dict[str, str] = {}
    while len(lines) > 1:
        line = lines[0].removeprefix("$ ").strip()
        if not line or line.startswith("#"):
            lines.pop(0)
            continue
        assigned = _assignments(line)
        if assigned is None:
            break
        names, export = assigned
        shell.update(names)
        if export:
            exported.update(names)
        lines.pop(0)
    # Lines left after the command's first, past a break with no backslash (or a comment line
    # inside a continuation): joined as the paste likely meant, though a shell ends there.
    joined = max(0, len([line for line in lines if line]) - 1)
    command = " ".join(lines).removeprefix("$ ").removeprefix("# ").strip()
    try:
        out = shlex.split(command, comments=False)
    except ValueError as exc:
        raise ServeLineError(f"cannot split the serve line: {exc}") from None
    return [_expand(word, shell) for word in out], shell, exported, joined


def _strip_comments(text: str) -> str:
    """``text`` without its shell comments (``_statements``), newlines kept."""
    out: list[str] = []
    quote = ""
    word_start = True
    i = 0
    while i < len(text):
        char = text[i]
        if quote:
            out.append(char)
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"' and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
        elif char in "'\"":
            quote = char
            out.append(char)
            word_start = False
        elif char == "\\" and i + 1 < len(text):
            out += [char, text[i + 1]]
            i += 1
            word_start = text[i] == "\n"
        elif char == "#" and word_start:
            end = text.find("\n", i)
            if end < 0:
                break
            i = end
            continue
        else:
            out.append(char)
            word_start = char.isspace()
        i += 1
    return "".join(out)


def _assignments(line: str) -> tuple[dict[str, str], bool] | None:
    """``[export] A=1 B=2`` → ({A: 1, B: 2}, exported); None for any other statement."""
    try:
        parts = shlex.split(line, comments=True)
    except ValueError:
        return None
    export = bool(parts) and parts[0] == "export"
    parts = parts[1:] if export else parts
    if not parts or not all(_ASSIGNMENT.match(part) for part in parts):
        return None
    return {name: value for name, _, value in (p.partition("=") for p in parts)}, export


_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def _expand(word: str, shell: dict[str, str]) -> str:
    """``$NAME`` / ``${NAME}`` replaced where an earlier line set NAME; others kept."""
    if "$" not in word or not shell:
        return word
    return _VARIABLE.sub(lambda m: shell.get(m.group(1) or m.group(2), m.group(0)), word)


def read(words: list[str]) -> ServeLine:
    """Split a pasted command into environment, launcher and the engine's argv."""
    words, _, exported, joined = _statements(words)
    env: dict[str, str] = dict(exported)
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

        inner, docker_env, rocm_image = unwrap(rest[rest.index("run") + 1:])
        parsed = read(inner)
        return ServeLine(parsed.engine, parsed.launcher, parsed.args,
                         {**env, **docker_env, **parsed.env}, parsed.dropped_shell, rocm_image,
                         joined_lines=joined)
    if rest and _PYTHON.fullmatch(rest[0]):
        rest = rest[1:]  # python -m …, or the interpreter running the launcher script
    if rest and (program := _PROGRAM.fullmatch(rest[0])):
        # .venv/bin/vllm serve, and python3 /usr/local/bin/vllm serve (how ps shows a running
        # server): the same launcher
        rest = [program.group(1), *rest[1:]]
    for start, engine, launcher in _LAUNCHERS:
        if tuple(rest[:len(start)]) == start:
            args, dropped = _cut_shell(rest[len(start):])
            return ServeLine(engine, launcher, args, env, dropped,
                             joined_lines=joined)
    shown = " ".join(words[:3]) or "nothing"
    raise ServeLineError(f"{EXPECTED} (got {shown!r})")


def _cut_shell(args: list[str]) -> tuple[list[str], str]:
    for i, word in enumerate(args):
        if word in _SHELL_STOP or _REDIRECT.fullmatch(word):
            return args[:i], " ".join(args[i:])
    return args, ""

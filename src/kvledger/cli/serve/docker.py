"""``docker run [options] IMAGE [args]`` → the command the container runs, and its ``-e``.

What each image runs (the image's own ``ENTRYPOINT``):

- ``vllm/vllm-openai[:TAG]``: ``ENTRYPOINT ["vllm", "serve"]`` (vLLM's ``docker/Dockerfile``,
  ``vllm-openai`` stage), so everything after the image is ``vllm serve``'s argv (a model
  positional or ``--model``); ``vllm serve`` repeated after the image is vLLM's own error
  ``unrecognized arguments: serve``.
- ``lmsysorg/sglang[:TAG]``: no serving entrypoint; the words after the image are the
  command (``python3 -m sglang.launch_server …``); ``bash -c "…"`` / ``sh -c "…"`` is split.
- vLLM's ROCm and CPU images (``vllm/vllm-openai-rocm``, ``vllm/vllm-openai-cpu``) and an
  SGLang ROCm tag run another platform's build: refused by name (kvledger plans CUDA GPUs).
- any other image: its entrypoint is not known here, so the words after it must be a serve
  command.

Docker's own options (``docker run --help``): the ones below take no value; every other
option takes one (``--gpus all``, ``-p 8000:8000``, ``--shm-size 16g``), unless written
``--opt=value``.
"""

from __future__ import annotations

import re
import shlex

from kvledger.cli.serve.errors import ServeLineError

_SWITCHES = frozenset({
    "--rm", "-d", "--detach", "-i", "--interactive", "-t", "--tty", "--privileged", "--init",
    "--read-only", "--no-healthcheck", "--oom-kill-disable", "-P", "--publish-all", "-q",
    "--quiet", "--disable-content-trust", "--help",
})
_SHORT_CLUSTER = re.compile(r"-[itdPq]{2,}")  # -it, -itd, -dit
_ENV = frozenset({"-e", "--env"})
_VLLM_IMAGE = re.compile(r"(?:[\w.:-]+/)?vllm/vllm-openai(-[\w]+)?(?::[\w.-]+)?(?:@\S+)?")
_SGLANG_IMAGE = re.compile(r"(?:[\w.:-]+/)?lmsysorg/sglang(?::([\w.-]+))?(?:@\S+)?")
_SHELLS = frozenset({"bash", "sh", "/bin/bash", "/bin/sh"})


def unwrap(args: list[str]) -> tuple[list[str], dict[str, str]]:
    """``args`` after ``docker run`` → (the container's command as words, its environment)."""
    env: dict[str, str] = {}
    i = 0
    while i < len(args) and args[i].startswith("-"):
        word = args[i]
        name, eq, value = word.partition("=")
        if word in _SWITCHES or _SHORT_CLUSTER.fullmatch(word):
            i += 1
            continue
        if name in _ENV and eq:  # --env=NAME=value
            _set(env, value)
            i += 1
            continue
        if eq and name.startswith("--"):
            i += 1
            continue
        if i + 1 >= len(args):
            break
        if word in _ENV:
            _set(env, args[i + 1])
        i += 2
    if i >= len(args):
        raise ServeLineError("docker run: no image named; paste the serve command the "
                             "container runs (vllm serve MODEL …)")
    image, rest = args[i], args[i + 1:]
    vllm = _VLLM_IMAGE.fullmatch(image)
    if vllm:
        flavour = (vllm.group(1) or "").lstrip("-")
        if flavour in ("rocm", "cpu", "xpu", "tpu"):
            raise ServeLineError(
                f"docker run {image}: this image runs vLLM's {flavour.upper()} build, whose "
                "attention backends and block sizes kvledger does not model (it plans CUDA "
                "GPUs); to plan the same flags on an NVIDIA GPU, paste 'vllm serve' and the "
                "words after the image")
        if rest[:1] == ["serve"] or rest[:2] == ["vllm", "serve"]:
            raise ServeLineError(f"docker run {image}: the image's entrypoint is already "
                                 "'vllm serve', so vLLM stops with 'unrecognized arguments: "
                                 "serve'; drop 'vllm serve' after the image")
        return ["vllm", "serve", *rest], env
    sglang = _SGLANG_IMAGE.fullmatch(image)
    if sglang and "rocm" in (sglang.group(1) or ""):
        raise ServeLineError(
            f"docker run {image}: this image runs SGLang's ROCm build, whose attention "
            "backends kvledger does not model (it plans CUDA GPUs); to plan the same flags on "
            "an NVIDIA GPU, paste the command after the image")
    if len(rest) >= 3 and rest[0] in _SHELLS and rest[1] == "-c":
        rest = shlex.split(rest[2])
    if not rest:
        raise ServeLineError(f"docker run {image}: the line gives no command and kvledger "
                             "does not know this image's entrypoint; paste the serve command "
                             "the container runs")
    return rest, env


def _set(env: dict[str, str], assignment: str) -> None:
    name, eq, value = assignment.partition("=")
    if eq:  # `-e NAME` alone passes the host's value, which the line does not show
        env[name] = value

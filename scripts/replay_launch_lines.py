"""Replay a corpus of pasted launch lines through ``kvledger plan --gpu G -- LINE`` and count.

    python scripts/replay_launch_lines.py CORPUS_FILE [--gpu H200] [--configs DIR]
        [--one-gpu] [-v]

The corpus is a text file of blocks separated by blank lines; each block is one launch line as
people paste it (backslash continuations, ``docker run`` wrappers, env prefixes), with
``# source: URL`` comment lines that are not part of the command, and optionally a
``# gpu: NAME`` line (a ``kvledger gpus`` preset): the hardware its recipe names, on which
that line is replayed. ``--gpu`` is the GPU of the lines without one (``--one-gpu``: of every
line). Each line runs in-process
through the CLI's own ``main`` (so parsing, translation and planning are exactly what a user
gets), offline. The table counts:

- planned                 exit 0;
- refused: CAUSE          exit 2 with a one-line reason, grouped by the reason's first words
                          (after the launcher's "cannot plan this line:");
- internal error          an "unexpected" error (a kvledger bug) or an exception escaping
                          ``main`` (printed with its traceback).

A model id that is neither a catalog id nor on this machine cannot be read offline. With
``--configs DIR`` (a folder of ``org--name.json`` configs, such as the team's shared configs),
such an id is replaced by a temporary folder holding that config (and
``org--name.hf_quant_config.json`` as ``hf_quant_config.json`` when present); the table says
how many lines were read that way.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shutil
import sys
import tempfile
import traceback
from collections import Counter
from pathlib import Path

_MODEL_ID = re.compile(r"(?<![\w./-])([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?![\w./-])")
_CAUSE_WORDS = 7


def blocks(text: str) -> list[tuple[str, str, str]]:
    """(source, gpu, command) for every block; comment lines starting with ``# source`` /
    ``# gpu`` are the source and the recipe's GPU ("" when none), other whole-line comments
    outside a continuation are dropped."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        source, gpu, kept = "", "", list[str]()
        for line in block.splitlines():
            stripped = line.strip()
            if stripped.startswith("# source:"):
                source = stripped.removeprefix("# source:").strip()
            elif stripped.startswith("# gpu:"):
                gpu = stripped.removeprefix("# gpu:").strip()
            elif stripped.startswith("#") and not (kept and kept[-1].rstrip().endswith("\\")):
                continue
            elif stripped:
                kept.append(line)
        if kept:
            out.append((source, gpu, "\n".join(kept)))
    return out


def _catalog_ids() -> set[str]:
    import json

    from kvledger.source import catalog

    path = Path(catalog.__file__).with_name("catalog.json")
    models = json.loads(path.read_text())["models"]
    return {i.lower() for model in models for i in model["ids"]}


def substitute(command: str, configs: Path | None, catalog: set[str], work: Path) -> str:
    """Each model id not in the catalog → a folder with its config from ``configs``."""
    if configs is None:
        return command

    def swap(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.lower() in catalog:
            return name
        stem = name.replace("/", "--")
        config = configs / f"{stem}.json"
        if not config.is_file():
            return name
        folder = work / stem
        if not folder.is_dir():
            folder.mkdir(parents=True)
            shutil.copy(config, folder / "config.json")
            quant = configs / f"{stem}.hf_quant_config.json"
            if quant.is_file():
                shutil.copy(quant, folder / "hf_quant_config.json")
        return str(folder)

    return _MODEL_ID.sub(swap, command)


def cause(message: str) -> str:
    """The refusal's first words, after the launcher's own prefix."""
    text = message.strip().splitlines()[0] if message.strip() else "(no message)"
    text = text.split("cannot plan this line:", 1)[-1]
    text = re.sub(r"^error:\s*", "", text.strip())
    text = re.sub(r"\(hint:.*", "", text)
    words = re.sub(r"[\d,]+(?:\.\d+)?", "N", text).split()
    return " ".join(words[:_CAUSE_WORDS])


def replay(command: str, gpu: str) -> tuple[str, str]:
    """('planned' | 'refused' | 'error', message)."""
    from kvledger.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["plan", "--gpu", gpu, "--", command])
    except BaseException:  # a traceback out of main is what is counted
        return "error", traceback.format_exc()
    message = err.getvalue().strip()
    if code == 0:
        return "planned", ""
    if "unexpected" in message and "kvledger bug" in message:
        return "error", message
    return "refused", message


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--gpu", default="H200",
                        help="the GPU of lines without a '# gpu:' line (default H200)")
    parser.add_argument("--one-gpu", action="store_true",
                        help="replay every line on --gpu, ignoring '# gpu:' lines")
    parser.add_argument("--configs", type=Path, default=None,
                        help="folder of org--name.json configs for ids not in the catalog")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print every line's outcome")
    args = parser.parse_args(argv)
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    catalog = _catalog_ids()
    counts: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    errors: list[tuple[str, str]] = []
    swapped = 0
    gpus: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for source, own_gpu, command in blocks(args.corpus.read_text()):
            line = substitute(command, args.configs, catalog, work)
            swapped += line != command
            gpu = args.gpu if args.one_gpu or not own_gpu else own_gpu
            gpus[gpu] += 1
            outcome, message = replay(line, gpu)
            counts[outcome] += 1
            if outcome == "refused":
                causes[cause(message)] += 1
            elif outcome == "error":
                errors.append((source, message))
            if args.verbose:
                shown = " ".join(command.replace("\\\n", " ").split())
                first = message.splitlines()[0] if message else ""
                print(f"[{outcome}] ({gpu}) {shown}\n    {first}\n    {source}")
    total = sum(counts.values())
    on = ", ".join(f"{gpu} {n}" for gpu, n in gpus.most_common())
    print(f"{total} lines, on {on}" +
          (f" ({swapped} read from --configs)" if args.configs else ""))
    print(f"{counts['planned']:4d}  planned")
    print(f"{counts['refused']:4d}  refused")
    for text, n in causes.most_common():
        print(f"{n:8d}  {text}")
    print(f"{counts['error']:4d}  internal error")
    for source, message in errors:
        print(f"      {source}\n{message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

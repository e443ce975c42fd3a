"""MODEL and where it comes from, for every command that takes one (plan, fit, inspect).

The flags are huggingface_hub's words: ``--revision`` (a branch, tag or commit; default main)
and ``--offline`` (as ``HF_HUB_OFFLINE=1``: only paths, the local HF cache and the bundled
catalog). The token, endpoint and cache folder come from the environment as huggingface_hub
reads it (``HF_TOKEN`` or the saved login, ``HF_ENDPOINT``, ``HF_HOME`` / ``HF_HUB_CACHE``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    import argparse
    from typing import Any



def add_model(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model",
        metavar="MODEL",
        help="a config.json, a model directory (its hf_quant_config.json and safetensors "
        "headers are read too), a local HF cache folder (.../hub/models--org--name), a "
        "catalog id (see 'kvledger models'), or any Hugging Face model id (local HF cache "
        "first, then the Hub)",
    )
    p.add_argument("--revision", default=None, metavar="REV",
                   help="branch, tag or commit of a Hub id or cache folder (default: main); "
                        "with a catalog id, reads the Hub's files instead of the bundled copy")
    p.add_argument("--offline", action="store_true", default=None,
                   help="never ask the Hub (as HF_HUB_OFFLINE=1): paths, the local HF cache "
                        "and the bundled catalog only")


def model_source(ns: argparse.Namespace) -> Any:
    """The ``ModelSource`` for the command line's MODEL, ``--revision`` and ``--offline``
    (a pasted Hub address or a trailing slash read as the model id: ``model_id``)."""
    from kvledger.source.resolve import load_source

    model, note = model_id(ns.model)
    if note:
        import sys

        sys.stderr.write(f"note: {note}\n")
    return load_source(model, revision=ns.revision, offline=ns.offline)


_HUB_PREFIXES = ("https://huggingface.co/", "http://huggingface.co/", "huggingface.co/",
                 "https://hf.co/", "hf.co/")


def model_id(text: str) -> tuple[str, str]:
    """(the MODEL to resolve, a note or ""). A Hub page address pasted from the browser
    (``https://huggingface.co/org/name``, or a page under it such as ``.../tree/main``) is
    read as the id ``org/name``; a trailing slash on something that is not a local folder is
    dropped. Each says so in the note, so the reader knows what was planned."""
    import os

    for prefix in _HUB_PREFIXES:
        if text.lower().startswith(prefix):
            parts = [p for p in text[len(prefix):].split("/") if p]
            if len(parts) >= 2:
                repo = f"{parts[0]}/{parts[1]}"
                return repo, f"read the Hub address {text} as the model id {repo}"
    if text.endswith("/") and len(text) > 1 and not os.path.exists(text):
        stripped = text.rstrip("/")
        return stripped, f"read {text} as {stripped} (no such folder; the trailing slash " \
            "dropped)"
    return text, ""

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
    """The ``ModelSource`` for the command line's MODEL, ``--revision`` and ``--offline``."""
    from kvledger.source.resolve import load_source

    return load_source(ns.model, revision=ns.revision, offline=ns.offline)

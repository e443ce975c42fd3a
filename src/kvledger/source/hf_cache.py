"""The local Hugging Face cache, read with ``os`` only (no ``huggingface_hub`` import).

Layout (huggingface_hub's ``file_download.py``: ``repo_folder_name``,
``try_to_load_from_cache``): ``<cache>/models--<org>--<name>/refs/<revision>`` holds a commit
sha; ``snapshots/<sha>/<file>`` are the files; ``.no_exist/<sha>/<file>`` records a file the
Hub said does not exist. The cache folder is resolved as ``huggingface_hub/constants.py``
does: ``HF_HUB_CACHE``, else the legacy ``HUGGINGFACE_HUB_CACHE``, else ``HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``.

Why not call huggingface_hub's ``try_to_load_from_cache``: importing huggingface_hub costs
about 0.2 s, and the cache is consulted on every plan of a name that is not a path.
"""

from __future__ import annotations

import os

_TRUE = {"1", "ON", "YES", "TRUE"}  # huggingface_hub constants.ENV_VARS_TRUE_VALUES
_HEX = frozenset("0123456789abcdef")
DEFAULT_REVISION = "main"


def is_commit(text: str) -> bool:
    """A full commit sha (40 lowercase hex digits), as huggingface_hub's REGEX_COMMIT_HASH."""
    return len(text) == 40 and _HEX.issuperset(text)


def _expand(path: str) -> str:
    return os.path.expandvars(os.path.expanduser(path))


def cache_dir() -> str:
    """The hub cache folder huggingface_hub would use in this environment."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return _expand(explicit)
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "huggingface")
    return os.path.join(_expand(home), "hub")


def offline_from_env() -> bool:
    """``HF_HUB_OFFLINE`` (or transformers' ``TRANSFORMERS_OFFLINE``) set to a true value."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
    return value is not None and value.upper() in _TRUE


def endpoint() -> str:
    """``HF_ENDPOINT`` as huggingface_hub reads it (``constants.ENDPOINT``)."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def repo_folder(repo_id: str) -> str:
    return "--".join(("models", *repo_id.split("/")))


class Snapshot:
    """One cached revision of a repository: its commit and its folder.

    A plain class, not a dataclass: this module is on every catalog plan's start-up path, and
    generating a dataclass costs more than the rest of the module.
    """

    __slots__ = ("commit", "directory", "ref", "repo_id")

    def __init__(self, repo_id: str, commit: str, directory: str, ref: str) -> None:
        self.repo_id = repo_id
        self.commit = commit
        self.directory = directory
        self.ref = ref  # the revision asked for (a branch, a tag or the commit itself)


def _read_ref(repo_dir: str, revision: str) -> str | None:
    try:
        with open(os.path.join(repo_dir, "refs", revision)) as fh:
            return fh.read().strip()
    except (OSError, ValueError):
        return None


def snapshot_in(repo_dir: str, repo_id: str, revision: str | None) -> Snapshot | None:
    """The snapshot of ``revision`` (default main) in a ``models--org--name`` folder."""
    ref = revision or DEFAULT_REVISION
    commit = _read_ref(repo_dir, ref) if "/.." not in f"/{ref}" else None
    if commit is None and is_commit(ref):
        commit = ref
    if commit is None or not is_commit(commit):
        return None
    directory = os.path.join(repo_dir, "snapshots", commit)
    if not os.path.isfile(os.path.join(directory, "config.json")):
        return None
    return Snapshot(repo_id, commit, directory, ref)


def find(repo_id: str, revision: str | None, root: str | None = None) -> Snapshot | None:
    """The cached snapshot of ``repo_id`` at ``revision`` holding a config.json, or None."""
    repo_dir = os.path.join(root or cache_dir(), repo_folder(repo_id))
    if not os.path.isdir(repo_dir):
        return None
    return snapshot_in(repo_dir, repo_id, revision)


def cached_refs(repo_id: str) -> list[str]:
    """The refs (then the commits) cached for ``repo_id``: what a revision could have been."""
    repo_dir = os.path.join(cache_dir(), repo_folder(repo_id))
    found: list[str] = []
    for sub in ("refs", "snapshots"):
        try:
            found.extend(sorted(os.listdir(os.path.join(repo_dir, sub))))
        except OSError:
            continue
    return [name[:12] if is_commit(name) else name for name in found]


def repo_of_folder(path: str) -> str | None:
    """``org/name`` when ``path`` is a cache folder ``.../models--org--name``, else None."""
    name = os.path.basename(os.path.normpath(path))
    if not name.startswith("models--"):
        return None
    parts = name[len("models--"):].split("--")
    if not 1 <= len(parts) <= 2 or not all(parts):
        return None
    return "/".join(parts)


def snapshot_of_path(directory: str) -> Snapshot | None:
    """The repository and commit when ``directory`` is ``.../models--org--name/snapshots/<sha>``."""
    directory = os.path.normpath(os.path.abspath(directory))
    commit = os.path.basename(directory)
    snapshots = os.path.dirname(directory)
    repo_id = repo_of_folder(os.path.dirname(snapshots))
    if repo_id is None or os.path.basename(snapshots) != "snapshots" or not is_commit(commit):
        return None
    return Snapshot(repo_id, commit, directory, commit)


def file_state(snapshot: Snapshot, filename: str) -> str:
    """``present``, ``absent`` (the cache knows the Hub has no such file) or ``unknown``.

    Absent when huggingface_hub recorded it in ``.no_exist``, when its tree listing of the
    commit (``trees/<sha>.json``, huggingface_hub 2.x ``_tree_cache.py``) lacks it, or when the
    snapshot is a full download (it holds weight files): a heuristic, since one can download
    single files, but a weights download without its small companion files is rare.
    """
    if os.path.isfile(os.path.join(snapshot.directory, filename)):
        return "present"
    repo_dir = os.path.dirname(os.path.dirname(snapshot.directory))
    if os.path.isfile(os.path.join(repo_dir, ".no_exist", snapshot.commit, filename)):
        return "absent"
    listed = _tree_listing(repo_dir, snapshot.commit)
    if listed is not None:
        return "absent" if filename not in listed else "unknown"
    try:
        names = os.listdir(snapshot.directory)
    except OSError:
        return "unknown"
    if any(n.endswith((".safetensors", ".bin", ".pt", ".gguf")) for n in names):
        return "absent"
    return "unknown"


def _tree_listing(repo_dir: str, commit: str) -> set[str] | None:
    import json

    try:
        with open(os.path.join(repo_dir, "trees", f"{commit}.json"), encoding="utf-8") as fh:
            files = json.loads(fh.read()).get("files")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return set(files) if isinstance(files, dict) else None

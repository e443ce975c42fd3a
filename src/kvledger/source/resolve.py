"""``load_source``: MODEL (a string, a path, a dict or a config object) → ``ModelSource``.

A MODEL string is looked for in this order, and the first that has it wins:

1. **a path**: a config file, a model directory (its ``hf_quant_config.json`` and
   safetensors headers are read too), or a local HF cache folder ``.../hub/models--org--name``
   (the snapshot of ``revision``, default ``main``). A config file brings its companion as a
   directory does: ``<stem>.hf_quant_config.json`` beside it (``org--name.json`` +
   ``org--name.hf_quant_config.json``, the naming of ../shared/configs), or, for a file named
   ``config.json``, the folder's ``hf_quant_config.json``. A model directory, a
   ``config.json``'s folder and a snapshot also bring a sentence-transformers config, whose
   ``max_seq_length`` sets vLLM's length (``source/sentence.py``);
2. **the local HF cache** (``HF_HUB_CACHE`` / ``HF_HOME``): the snapshot ``refs/<revision>``
   points to — no network, and no ``huggingface_hub`` import;
3. **the bundled catalog** (case-insensitive), unless a ``revision`` is given;
4. **the Hub** through ``huggingface_hub`` (``HF_ENDPOINT``, ``HF_TOKEN`` or the saved login),
   unless offline (``offline=True``, the CLI's ``--offline``, or ``HF_HUB_OFFLINE=1``).

Otherwise one line says what was tried, with "did you mean" for a near catalog id.

Why the catalog comes before the Hub: a catalog id is also a Hub id, and the bundled config
holds the values of that model's real ``config.json`` that kvledger reads (source/catalog.py).
Planning it needs no network, gives the same answer on every machine, and is the CLI's measured
start-up path (``bench/startup.py``: no ``huggingface_hub`` import, no request that could hang
on a machine without network — the README's first command). The rejected order (Hub first,
catalog as an offline fallback) would make the same command answer differently with and without
network, and spend up to a timeout before planning offline. To plan the Hub's current files of
a catalog model — and its exact weights — pass a revision (``--revision main``); if the Hub
then cannot be reached, the error says to drop ``--revision`` for the bundled copy rather than
silently falling back to it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kvledger.errors import ConfigError
from kvledger.source import hf_cache
from kvledger.source.catalog import catalog_entry, is_catalog_id
from kvledger.source.config_file import read_json
from kvledger.source.model_source import ModelSource

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

QUANT_FILE = "hf_quant_config.json"
# huggingface_hub's validate_repo_id: [org/]name of word characters, "-" and ".", at most 96
# characters each, no "--" or "..". A pattern, compiled by ``re`` only when a name goes to the
# Hub (not on a catalog plan's start-up path).
_REPO_ID = r"^(?:[\w.-]{1,96}/)?[\w.-]{1,96}$"


def _error(message: str, hint: str = "") -> Exception:
    from kvledger.errors import SourceError

    return SourceError(message, hint=hint)


def _may_be_on_disk(text: str) -> bool:
    """False only when ``Path(text).expanduser()`` certainly names nothing on disk.

    Without ``~``, empty, ``.`` or empty components (``Path`` drops the last two, and turns
    ``""`` into ``"."``), ``Path`` normalization only merges repeated slashes, which ``stat``
    ignores; if ``lstat`` then finds nothing, ``Path.is_dir()`` and ``is_file()`` find nothing
    either. Anything else takes the ``pathlib`` road.
    """
    parts = text.replace(os.sep, "/").split("/")
    if text.startswith("~") or "" in parts or "." in parts:
        return True
    return os.path.lexists(text)


def _looks_like_path(text: str) -> bool:
    """A string no Hub id can be: a path the user mistyped, not a model to look up online."""
    return (text.startswith((".", "/", "~")) or "\\" in text or text.count("/") > 1
            or text.endswith(".json"))


def is_repo_id(text: str) -> bool:
    import re

    return bool(re.match(_REPO_ID, text)) and "--" not in text and ".." not in text and \
        not text.endswith(".git")


def companion_of(config_path: Path) -> Path | None:
    """The ``hf_quant_config.json`` that belongs to a config file, if there is one.

    Why both names: a model directory holds ``config.json`` + ``hf_quant_config.json`` (what
    vLLM reads); a folder of several models' configs (``../shared/configs``)
    names them ``org--name.json`` + ``org--name.hf_quant_config.json``. A config planned
    without its companion silently loses a ModelOpt KV scheme (fp8 instead of bf16: half the
    tokens). The folder-wide ``hf_quant_config.json`` is taken only for a ``config.json``:
    beside ``org--name.json`` it would belong to whichever model the folder is for.
    """
    if config_path.name.endswith(".hf_quant_config.json"):
        return None
    stem = config_path.with_name(config_path.name.removesuffix(".json") + "." + QUANT_FILE)
    if stem.is_file():
        return stem
    if config_path.name == "config.json" and (config_path.parent / QUANT_FILE).is_file():
        return config_path.parent / QUANT_FILE
    return None


def _sentence_note(found: tuple[str, dict[str, Any]] | None) -> tuple[str, ...]:
    return (f"{found[0]} found beside config.json",) if found else ()


def _from_file(path: Path, label: str, quant: dict[str, Any] | None) -> ModelSource:
    """A config file; ``quant`` (given by the caller) wins over a companion on disk. A file
    named ``config.json`` also brings its folder's sentence-transformers config."""
    from kvledger.source.sentence import in_directory

    notes: tuple[str, ...] = ()
    if quant is None:
        companion = companion_of(path)
        if companion is not None:
            quant = read_json(companion)
            notes = (f"{companion.name} found beside {path.name}",)
    sentence = in_directory(path.parent) if path.name == "config.json" else None
    return ModelSource(label, read_json(path), quant, notes=(*notes, *_sentence_note(sentence)),
                       kind="path", location=str(path.resolve()), sentence_config=sentence)


def _from_directory(directory: Path, label: str,
                    given: dict[str, Any] | None = None) -> ModelSource:
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise ConfigError(f"{directory}: no config.json in this directory")
    quant_path = directory / QUANT_FILE
    quant = given if given is not None else (
        read_json(quant_path) if quant_path.is_file() else None)
    notes = ("hf_quant_config.json found beside config.json",) if quant and given is None else ()
    from kvledger.source.sentence import in_directory

    sentence = in_directory(directory)
    snap = hf_cache.snapshot_of_path(str(directory))
    return ModelSource(
        label, read_json(config_path), quant, directory, (*notes, *_sentence_note(sentence)),
        kind="path", revision=snap.commit if snap else None,
        location=str(directory.resolve()), repo_id=snap.repo_id if snap else None,
        offline=True, sentence_config=sentence,
    )


def _from_snapshot(snap: hf_cache.Snapshot, kind: str, offline: bool) -> ModelSource:
    from pathlib import Path

    directory = Path(snap.directory)
    warnings: list[str] = []
    state = hf_cache.file_state(snap, QUANT_FILE)
    if state == "unknown" and not offline:
        from kvledger.errors import SourceError
        from kvledger.source.hub import fetch_companion

        try:
            state = "present" if fetch_companion(snap, QUANT_FILE) else "absent"
        except SourceError:
            warnings.append(f"could not ask {hf_cache.endpoint()} whether {snap.repo_id} has "
                            f"{QUANT_FILE} (the local HF cache does not say); planned "
                            "without it")
    elif state == "unknown":
        warnings.append(f"offline: the local HF cache does not say whether {snap.repo_id} has "
                        f"{QUANT_FILE}; planned without it")
    quant = read_json(directory / QUANT_FILE) if state == "present" else None
    location = f"{hf_cache.endpoint()}/{snap.repo_id}" if kind == "hub" else snap.directory
    notes = [f"config.json of {snap.repo_id} at commit {snap.commit}"
             + (" (from the local HF cache)" if kind == "hf-cache" else "")]
    if quant is not None:
        notes.append("hf_quant_config.json found beside config.json")
    from kvledger.source.sentence import in_snapshot

    sentence, sentence_warnings = in_snapshot(snap, offline)
    notes.extend(_sentence_note(sentence))
    warnings.extend(sentence_warnings)
    return ModelSource(
        snap.repo_id, read_json(directory / "config.json"), quant, directory,
        (*notes, *warnings), kind=kind, revision=snap.commit, location=location,
        repo_id=snap.repo_id, offline=offline, warnings=tuple(warnings),
        sentence_config=sentence,
    )


def _from_cache_folder(path: Path, repo_id: str, revision: str | None,
                       offline: bool) -> ModelSource:
    snap = hf_cache.snapshot_in(str(path), repo_id, revision)
    if snap is None:
        refs = sorted(os.listdir(path / "refs")) if (path / "refs").is_dir() else []
        shas = sorted(os.listdir(path / "snapshots")) if (path / "snapshots").is_dir() else []
        raise _error(
            f"{path}: no snapshot of revision {revision or hf_cache.DEFAULT_REVISION!r} with a "
            f"config.json in this cache folder (refs: {', '.join(refs) or 'none'}; snapshots: "
            f"{', '.join(s[:12] for s in shas) or 'none'})",
            hint="pass --revision with one of its refs or commits, or the snapshot folder")
    return _from_snapshot(snap, "hf-cache", offline)


def _from_catalog(model_id: str) -> ModelSource | None:
    found = catalog_entry(model_id)
    if found is None:
        return None
    listed, config, quant, _ = found
    return ModelSource(listed, config, quant, None, ("bundled catalog config",),
                       kind="catalog", location=f"kvledger catalog ({listed})", offline=True)


def _rebuilt(model_id: str) -> str:
    """What the catalog row of ``model_id`` says it rebuilt ("" for a checkpoint's own file)."""
    from kvledger.source.catalog import catalog_rebuilt

    return catalog_rebuilt(model_id)


def _rebuilt_row(found: ModelSource, rebuilt: str, why: str) -> ModelSource:
    note = (f"the bundled config of {found.label} is {rebuilt}; planned from it ({why}); the "
            "checkpoint's own config.json (a model directory, or the Hub online) plans the "
            "model as the engine loads it")
    return ModelSource(found.label, found.config, found.hf_quant_config, None,
                       (*found.notes, note), kind="catalog", location=found.location,
                       offline=True)


def _not_found(text: str) -> Exception:
    return _error(f"{text!r}: no such file or directory, and not a model id",
                  hint="MODEL is a config.json, a model directory, a bundled catalog id "
                       "('kvledger models') or a Hugging Face model id")


def _from_text(text: str, quant: dict[str, Any] | None, revision: str | None,
               offline: bool | None) -> ModelSource:
    off = hf_cache.offline_from_env() if offline is None else bool(offline)
    if _may_be_on_disk(text):
        from pathlib import Path

        path = Path(text).expanduser()
        if path.is_dir():
            repo_id = hf_cache.repo_of_folder(str(path))
            if repo_id is not None and (path / "snapshots").is_dir():
                return _from_cache_folder(path, repo_id, revision, off)
            if revision is not None:
                raise _error(f"--revision {revision} does not apply to the directory {text}",
                             hint="--revision picks a snapshot of a Hub id or of a cache "
                                  "folder (.../hub/models--org--name)")
            return _from_directory(path, text, quant)
        if path.is_file():
            if revision is not None:
                raise _error(f"--revision {revision} does not apply to the file {text}",
                             hint="--revision picks a snapshot of a Hub id or of a cache "
                                  "folder (.../hub/models--org--name)")
            return _from_file(path, text, quant)
    if _looks_like_path(text):
        raise _not_found(text)
    snap = hf_cache.find(text, revision)
    if snap is not None:
        return _from_snapshot(snap, "hf-cache", off)
    if revision is None:
        found = _from_catalog(text)
        if found is not None:
            rebuilt = _rebuilt(text)
            if not rebuilt:
                return found
            # The bundled row is a rebuild, not the checkpoint's config.json: the Hub's file
            # first, the row only where the Hub cannot be asked or reached.
            if off:
                return _rebuilt_row(found, rebuilt, "offline")
            from kvledger.errors import SourceError
            from kvledger.source.hub import fetch

            try:
                return _from_snapshot(fetch(text, None), "hub", off)
            except SourceError as exc:
                return _rebuilt_row(found, rebuilt, f"the Hub did not answer: {exc}")
    if not is_repo_id(text):
        raise _not_found(text)
    if off:
        from kvledger.source.catalog import did_you_mean

        cached = hf_cache.cached_refs(text)
        if cached:  # the model is cached, at other revisions: the revision is the problem
            raise _error(
                f"{text}: the local HF cache ({hf_cache.cache_dir()}) holds no revision "
                f"{revision!r} of it (it has: {', '.join(cached)}) and the Hub was not asked "
                "(offline: --offline or HF_HUB_OFFLINE=1)",
                hint="pass one of the cached revisions, or run once online")
        bundled = is_catalog_id(text)
        # A catalog id at a --revision: the id is right, only the revision is not bundled.
        near = "" if bundled else did_you_mean(text)
        raise _error(
            f"{text!r} is not in the local HF cache ({hf_cache.cache_dir()}) and the Hub was "
            f"not asked (offline: --offline or HF_HUB_OFFLINE=1){near}",
            hint=("drop --revision to plan the bundled catalog copy" if bundled else
                  "run once online to cache it, or pass a config.json or model directory; "
                  "'kvledger models' lists the bundled ids"))
    from kvledger.errors import SourceError
    from kvledger.source.hub import fetch

    try:
        snap = fetch(text, revision)
    except SourceError as exc:
        if revision is not None and is_catalog_id(text):
            exc.hint = f"{exc.hint}; or drop --revision to plan the bundled catalog copy"
        raise
    return _from_snapshot(snap, "hub", off)


def load_source(
    model: Any,
    *,
    hf_quant_config: Mapping[str, Any] | None = None,
    revision: str | None = None,
    offline: bool | None = None,
) -> ModelSource:
    """Resolve ``model`` to a config (see the module docstring for the order).

    Accepts: a ``ModelSource``; a dict; an object with ``to_dict()`` (a transformers
    ``PretrainedConfig``, duck-typed so transformers is never imported); a path to a
    ``config.json``; a model directory; a local HF cache folder; a catalog id such as
    ``meta-llama/Meta-Llama-3.1-8B``; or any Hugging Face model id. ``revision`` (a branch, tag
    or commit) and ``offline`` (default: ``HF_HUB_OFFLINE``) apply to ids and cache folders.
    """
    if isinstance(model, ModelSource):
        return model
    quant = dict(hf_quant_config) if hf_quant_config is not None else None
    if isinstance(model, Mapping):
        return ModelSource("<dict>", dict(model), quant, location="<dict>")
    to_dict = getattr(model, "to_dict", None)
    if callable(to_dict):
        data = to_dict()
        if not isinstance(data, Mapping):
            raise ConfigError("config object's to_dict() did not return a mapping")
        label = str(data.get("_name_or_path") or type(model).__name__)
        return ModelSource(label, dict(data), quant, location=type(model).__name__)
    from_text = isinstance(model, str)
    if not from_text:
        from pathlib import Path

        from_text = isinstance(model, Path)
    if from_text:
        return _from_text(str(model), quant, revision, offline)
    raise ConfigError(
        f"cannot read a model config from a {type(model).__name__}; pass a path, a directory, "
        "a dict, a config object, a catalog id or a Hub id"
    )

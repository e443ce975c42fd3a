"""Find a checkpoint's exact weight bytes for a ``ModelSource``, wherever they can be read.

In order: the safetensors files in the model's directory; kvledger's cache of headers read
before (for a Hub snapshot, keyed by repository and commit: a commit never changes, so
neither do its headers); the Hub, by HTTP range requests (online only); the local index's
``metadata.total_size`` (exact in total, without dtypes). Nothing found → the caller
estimates, and says why with the reason returned here.

The header cache lives in ``$KVLEDGER_CACHE`` (default ``$XDG_CACHE_HOME/kvledger``, else
``~/.cache/kvledger``), not in the HF cache, whose layout belongs to huggingface_hub. Without
it, a second (or offline) run of a Hub id would either read every shard header again or fall
back to an estimate, and two runs of one command would disagree.
"""

from __future__ import annotations

import json
import os

from kvledger.source import hf_cache
from kvledger.source.headers import SafetensorsTotals, index_totals, local_totals

# 2: ``aux_by_dtype`` (quantization companions) beside ``by_dtype``. A format-1 entry is still
# read when it describes an unquantized checkpoint: it has no companions to tell apart.
# 3: ``groups`` / ``group_aux`` (bytes per decoder layer and of MTP-named tensors). An older
# entry is read without them: its MTP layers cannot be told apart, and the weights line says so.
_FORMAT = 3


def cache_root() -> str:
    explicit = os.environ.get("KVLEDGER_CACHE")
    if explicit:
        return os.path.expanduser(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kvledger")


def _cache_path(repo_id: str, commit: str) -> str:
    return os.path.join(cache_root(), "safetensors", hf_cache.repo_folder(repo_id),
                        f"{commit}.json")


def _load_cached(repo_id: str, commit: str) -> SafetensorsTotals | None:
    try:
        with open(_cache_path(repo_id, commit), encoding="utf-8") as fh:
            data = json.loads(fh.read())
        by_dtype = data["by_dtype"]
        fmt = data.get("format")
        aux = data.get("aux_by_dtype", {}) if fmt in (2, _FORMAT) else {}
        groups = data.get("groups") if fmt == _FORMAT else None
        group_aux = data.get("group_aux", {}) if fmt == _FORMAT else {}
        if fmt not in (1, 2, _FORMAT) or not _sizes(by_dtype) or not _sizes(aux) or \
                (groups is not None and not _grouped(groups)) or not _grouped(group_aux):
            return None
        found = SafetensorsTotals(
            sum(by_dtype.values()), dict(by_dtype), int(data["files"]), str(data["how"]),
            dict(aux), None if groups is None else {k: dict(v) for k, v in groups.items()},
            {k: dict(v) for k, v in group_aux.items()})
        if data.get("format") == 1 and found.quantized:
            return None  # its scales were not told apart: read the headers again
        return found
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None  # absent or damaged: read the headers again


def _grouped(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and _sizes(v) for k, v in value.items())


def _sizes(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for k, v in value.items())


def _store(repo_id: str, commit: str, totals: SafetensorsTotals) -> None:
    path = _cache_path(repo_id, commit)
    data = {"format": _FORMAT, "repo_id": repo_id, "commit": commit, "files": totals.files,
            "how": totals.how, "by_dtype": totals.by_dtype, "aux_by_dtype": totals.aux_by_dtype,
            **({"groups": totals.groups, "group_aux": totals.group_aux}
               if totals.groups is not None else {})}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home: the headers are read again next time


def find_safetensors(
    *, directory: str | None, repo_id: str | None, revision: str | None, offline: bool,
    kind: str, catalog_id: str | None = None,
) -> tuple[SafetensorsTotals | None, str]:
    """(exact totals or None, why None) for a model's files: its ``directory``, the Hub
    snapshot ``repo_id`` at commit ``revision`` (not asked when ``offline``), and where the
    config came from (``kind``, as ``ModelSource.kind``; for a bundled catalog config,
    ``catalog_id`` names it and its checkpoint's recorded facts are used: ``catalog_totals``)."""
    if directory is not None:
        found = local_totals(directory)
        if found is not None:
            return found, ""
    commit = revision
    if repo_id is not None and commit is not None and hf_cache.is_commit(commit):
        cached = _load_cached(repo_id, commit)
        if cached is not None:
            return cached, ""
        if not offline:
            from kvledger.errors import SafetensorsError, SourceError
            from kvledger.source.hub import remote_totals

            try:
                found = remote_totals(repo_id, commit)
            except SafetensorsError:
                raise  # a malformed header is an answer, and not an exact one
            except SourceError as exc:  # the config is at hand; only the weights degrade
                return index_totals(directory) if directory else None, \
                    f"the Hub's safetensors headers of {repo_id} could not be read: {exc}"
            if found is not None:
                _store(repo_id, commit, found)
                return found, ""
            return None, f"{repo_id} has no safetensors checkpoint"
    if directory is not None:
        from_index = index_totals(directory)
        if from_index is not None:
            return from_index, ""
    if kind == "catalog":
        found = catalog_totals(catalog_id) if catalog_id else None
        if found is not None:
            return found, ""
        return None, "no index or header of this catalog model's checkpoint is recorded in " \
                     "kvledger's catalog; a Hub id or a model directory with safetensors " \
                     "makes them exact"
    if repo_id is not None and offline and kind in ("hf-cache", "hub"):
        return None, f"offline, and the safetensors headers of {repo_id} were never read; " \
                     "one online run caches them"
    if directory is not None:
        return None, f"no safetensors in {directory}"
    return None, "no checkpoint given; a Hub id or a model directory with safetensors makes " \
                 "them exact"


def catalog_totals(catalog_id: str) -> SafetensorsTotals | None:
    """The checkpoint totals recorded for a bundled catalog model (``catalog_weights.json``:
    a real index's ``metadata.total_size``, and bytes per dtype where they are known), named
    with the file they were read from; None when none are recorded.

    With ``mtp_by_dtype`` the MTP layers' bytes are one group (``"mtp"``), so the plan leaves
    them out unless the engine speculates with them, as it does for headers read from files.
    """
    from kvledger.source.catalog import catalog_weight_facts

    facts = catalog_weight_facts(catalog_id)
    if facts is None:
        return None
    src = facts["source"]
    revision = f" at revision {facts['revision']}" if facts.get("revision") else ""
    how = (f"index of {facts['checkpoint']}{revision} from {src['repo']} {src['path']} "
           f"@{src['commit'][:8]}, recorded in kvledger's catalog")
    by_dtype: dict[str, int] = dict(facts.get("by_dtype") or {})
    mtp = facts.get("mtp_by_dtype")
    return SafetensorsTotals(int(facts["total_size"]), by_dtype, 0, how, {},
                             {"mtp": dict(mtp)} if mtp else None)

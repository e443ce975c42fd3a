"""The Hugging Face Hub, through ``huggingface_hub`` (imported here only, when first asked).

What is fetched, and nothing more: ``config.json``, ``hf_quant_config.json`` and a
sentence-transformers config (``source/sentence.py``; into the local HF cache, where the next
run finds them without the network, or their absence recorded), and the checkpoint's
safetensors headers by HTTP range requests (``HfApi.parse_safetensors_file_metadata``: the
first 100 kB of each file, a second range only for a larger header). Weights are never
downloaded.

Each file's size (a ``HEAD``) bounds what its header may claim. Each network step first makes
one ``HEAD`` request without retries
(``get_hf_file_metadata``) with a timeout: ``hf_hub_download`` retries a refused connection
five times with back-off (about 23 s measured) and prints every retry, and the client has no
timeout of its own, so a Hub that cannot be reached must be recognised before it is called.

Why not ``HfApi.get_safetensors_metadata``: it runs the same steps (``model.safetensors``,
else the index and each shard it names), but it downloads the index into the default cache
folder rather than the one this call resolved, shows a progress bar, and when one shard's
header is malformed its error does not say which. Here each shard is read with the same
huggingface_hub call and checked by ``headers.bytes_by_dtype``, naming the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from kvledger.source import hf_cache
from kvledger.source.headers import (
    MAX_HEADER_BYTES,
    SafetensorsTotals,
    add,
    bytes_by_dtype,
    index_files,
    malformed,
)

TIMEOUT_S = 10.0  # huggingface_hub's own default for metadata and header requests
# The first request of a fetch (a HEAD of config.json) asks whether the Hub is there at all: a
# Hub that takes longer than this to answer a HEAD is treated as unreachable, so a dead
# endpoint (one that accepts the connection and never answers) fails within 5 s, not 10.
PROBE_TIMEOUT_S = 4.0
# A Hub read that takes longer than this says so on stderr, once, so a person is not left
# looking at a silent terminal.
PROGRESS_AFTER_S = 1.0
CONFIG = "config.json"
QUANT = "hf_quant_config.json"
SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
TOKEN_HINT = "set HF_TOKEN=hf_... or run 'hf auth login'"
PATH_FORMS = ("pass a config.json, a model directory or a local cache folder "
              "(.../hub/models--org--name) instead, or --offline to use only the local cache "
              "and the bundled catalog ('kvledger models')")


# What "the Hub cannot be reached" looks like: httpx2's transport errors, an OSError (also
# huggingface_hub's FileMetadataError: an endpoint that is not a Hub), huggingface_hub's
# offline and cache-miss errors; an HTTP status of 429 or 5xx is handled by its number.
_UNREACHABLE = {"TransportError", "TimeoutException", "NetworkError", "OSError",
                "ConnectionError", "LocalEntryNotFoundError", "OfflineModeIsEnabled",
                "RevisionResolutionError"}


def _api() -> Any:
    from huggingface_hub import HfApi

    from kvledger.version import __version__

    return HfApi(endpoint=hf_cache.endpoint(), library_name="kvledger",
                 library_version=__version__)


@contextmanager
def _quiet() -> Iterator[None]:
    """No progress bars on stderr while we fetch (the CLI prints one line or a result)."""
    from huggingface_hub.utils.tqdm import (
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    was = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was:
            enable_progress_bars()


def _has_token() -> bool:
    from huggingface_hub import get_token

    try:
        return get_token() is not None
    except Exception:  # an OIDC exchange that fails is the token's problem, not ours
        return False


def _short(exc: BaseException) -> str:
    """The root cause in a few words (``Connection refused``, ``503``)."""
    for _ in range(10):  # the chain's root, with a bound (a context chain can loop)
        inner = exc.__cause__ or exc.__context__
        if inner is None:
            break
        exc = inner
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def hub_error(exc: Exception, repo_id: str, revision: str | None, what: str) -> Exception:
    """One line for a failed Hub call, naming the model and the way out."""
    from kvledger.errors import SourceError
    from kvledger.source.catalog import did_you_mean

    names = _names(exc)
    where = hf_cache.endpoint()
    rev = revision or hf_cache.DEFAULT_REVISION
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if "GatedRepoError" in names:
        if _has_token():
            return SourceError(
                f"{repo_id} is gated on {where} and your token has no access to it",
                hint=f"request access at {where}/{repo_id}, or use a token that has it "
                     f"({TOKEN_HINT})")
        return SourceError(
            f"{repo_id} is gated on {where}: it needs a token with access to it",
            hint=f"request access at {where}/{repo_id}, then {TOKEN_HINT}")
    if "RevisionNotFoundError" in names:
        return SourceError(f"{repo_id} has no revision {rev!r} on {where}",
                           hint="pass a branch, a tag or a commit of the repository with "
                                "--revision (default: main)")
    if "RepositoryNotFoundError" in names or "DisabledRepoError" in names:
        private = "" if status == 404 and _has_token() else \
            f"; if it is private or gated, {TOKEN_HINT}"
        return SourceError(
            f"{repo_id}: no such model on {where}{did_you_mean(repo_id)}",
            hint=f"check the id{private}; 'kvledger models' lists the bundled ids")
    if "RemoteEntryNotFoundError" in names:
        return SourceError(f"{repo_id} has no {what} at revision {rev!r} on {where}",
                           hint="kvledger needs the repository's config.json; pass a local "
                                "config.json instead")
    if status in (401, 403):
        return SourceError(f"{repo_id}: {where} refused the request ({status})",
                           hint=f"check your token ({TOKEN_HINT})")
    if status is not None and status < 500 and status != 429:
        return SourceError(f"{repo_id}: {where} answered {status} for {what} ({_short(exc)})",
                           hint=PATH_FORMS)
    if status is None and not names & _UNREACHABLE:
        return exc  # not the Hub's answer nor the network: a bug, reported as one
    return SourceError(
        f"{repo_id} is not in the local HF cache ({hf_cache.cache_dir()}) and {where} "
        f"cannot be reached ({_short(exc)}){did_you_mean(repo_id)}",
        hint=PATH_FORMS)


def _head(repo_id: str, filename: str, revision: str, *, timeout: float = TIMEOUT_S) -> Any:
    """One ``HEAD`` of a file, no retries: its commit, or the Hub's typed error."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(repo_id, filename, revision=revision, endpoint=hf_cache.endpoint())
    return get_hf_file_metadata(url, timeout=timeout, endpoint=hf_cache.endpoint())


@contextmanager
def _progress(what: str) -> Iterator[None]:
    """One line on stderr if the block takes over ``PROGRESS_AFTER_S``; nothing otherwise.
    Only for a person at a terminal: a script reading stderr (a ``--json`` error is one JSON
    object there) gets no progress line."""
    import sys
    import threading

    if not sys.stderr.isatty():
        yield
        return
    timer = threading.Timer(PROGRESS_AFTER_S, lambda: sys.stderr.write(
        f"kvledger: reading {what} from {hf_cache.endpoint()} ...\n"))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _exists(repo_id: str, filename: str, commit: str) -> bool:
    """Whether the Hub has ``filename`` at ``commit`` (``False`` is recorded in the cache)."""
    try:
        _head(repo_id, filename, commit)
    except Exception as exc:
        if "RemoteEntryNotFoundError" not in _names(exc):
            raise
        _record_absent(repo_id, commit, filename)
        return False
    return True


def _record_absent(repo_id: str, commit: str, filename: str) -> None:
    """``.no_exist/<commit>/<file>``, as hf_hub_download records a file the Hub lacks, so an
    offline run knows the file is absent rather than unknown. Best effort."""
    path = os.path.join(hf_cache.cache_dir(), hf_cache.repo_folder(repo_id), ".no_exist",
                        commit, filename)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a"):
            pass
    except OSError:
        pass


def _download(repo_id: str, filename: str, revision: str) -> str:
    api = _api()
    with _quiet():
        path: str = api.hf_hub_download(repo_id, filename, revision=revision,
                                        cache_dir=hf_cache.cache_dir(), etag_timeout=TIMEOUT_S)
    return path


def fetch(repo_id: str, revision: str | None) -> hf_cache.Snapshot:
    """Fetch ``config.json`` (and ``hf_quant_config.json`` when the repository has one) at
    ``revision`` into the local HF cache; the snapshot they landed in."""
    rev = revision or hf_cache.DEFAULT_REVISION
    with _progress(f"{repo_id}'s config"):
        try:
            commit = _head(repo_id, CONFIG, rev, timeout=PROBE_TIMEOUT_S).commit_hash
            if not commit or not hf_cache.is_commit(commit):
                raise OSError(f"{hf_cache.endpoint()} sent no X-Repo-Commit header: not a Hub")
            # By name, not by commit: hf_hub_download then records refs/<rev> -> commit,
            # which is how the next run (and an offline one) finds this snapshot.
            config_path = _download(repo_id, CONFIG, rev)
        except Exception as exc:
            raise hub_error(exc, repo_id, revision, CONFIG) from None
        directory = os.path.dirname(config_path)
        snapshot = hf_cache.Snapshot(repo_id, os.path.basename(directory), directory, rev)
        fetch_companion(snapshot, QUANT)
    return snapshot


def fetch_companion(snapshot: hf_cache.Snapshot, filename: str) -> bool:
    """Fetch ``filename`` of the snapshot's commit when the Hub has it; whether it does."""
    try:
        if not _exists(snapshot.repo_id, filename, snapshot.commit):
            return False
        _download(snapshot.repo_id, filename, snapshot.commit)
    except Exception as exc:
        raise hub_error(exc, snapshot.repo_id, snapshot.commit, filename) from None
    return True


def remote_totals(repo_id: str, commit: str) -> SafetensorsTotals | None:
    """Exact tensor bytes per dtype from the Hub's safetensors headers at ``commit``, or None
    when the repository has no safetensors (``model.safetensors`` nor an index)."""
    with _progress(f"{repo_id}'s safetensors headers"):
        return _remote_totals(repo_id, commit)


def _remote_totals(repo_id: str, commit: str) -> SafetensorsTotals | None:
    try:
        if _exists(repo_id, SINGLE, commit):
            files = [SINGLE]
            how = "safetensors header of model.safetensors"
        elif _exists(repo_id, INDEX, commit):
            files = index_files(_download(repo_id, INDEX, commit))
            if not files:
                return None
            how = f"safetensors headers of {len(files)} files"
        else:
            return None
    except Exception as exc:
        if "SourceError" in _names(exc):
            raise
        raise hub_error(exc, repo_id, commit, "safetensors headers") from None
    api = _api()

    Parts = tuple[dict[str, int], dict[str, int], dict[str, dict[str, int]],
                  dict[str, dict[str, int]]]

    def read(filename: str) -> Parts:
        where = f"{repo_id}@{commit[:12]}/{filename}"
        try:
            size = _head(repo_id, filename, commit).size
            meta = api.parse_safetensors_file_metadata(repo_id, filename, revision=commit,
                                                       timeout=TIMEOUT_S)
        except Exception as exc:
            names = _names(exc)
            if names & {"SafetensorsParsingError", "TypeError", "ValueError", "KeyError",
                        "IndexError", "AttributeError", "RecursionError"} and \
                    "HfHubHTTPError" not in names:
                raise malformed(where, _short(exc)) from None
            raise hub_error(exc, repo_id, commit, filename) from None
        tensors = [(name, t.dtype, t.shape, t.data_offsets) for name, t in meta.tensors.items()]
        aux: dict[str, int] = {}
        groups: dict[str, dict[str, int]] = {}
        group_aux: dict[str, dict[str, int]] = {}
        found = bytes_by_dtype(tensors, where, metadata=meta.metadata or None, aux=aux,
                               groups=groups, group_aux=group_aux)
        # The file's size (HEAD) bounds its data: 8 bytes of length, a header of 2 ("{}") to
        # MAX_HEADER_BYTES bytes, then exactly the tensors. A truncated upload, or a header
        # claiming absurd sizes with consistent offsets, falls outside.
        data = sum(found.values())
        if size is not None and not size - 8 - MAX_HEADER_BYTES <= data <= size - 10:
            raise malformed(where, f"its tensors need {data:,} bytes but the file holds "
                                   f"{size:,} (truncated, or not the file of this header)")
        return found, aux, groups, group_aux

    with ThreadPoolExecutor(max_workers=min(8, len(files))) as pool:
        parts = list(pool.map(read, files))
    by_dtype: dict[str, int] = {}
    aux_by_dtype: dict[str, int] = {}
    all_groups: dict[str, dict[str, int]] = {}
    all_group_aux: dict[str, dict[str, int]] = {}
    for part, aux_part, groups_part, group_aux_part in parts:
        add(by_dtype, part)
        add(aux_by_dtype, aux_part)
        for key, sizes in groups_part.items():
            add(all_groups.setdefault(key, {}), sizes)
        for key, sizes in group_aux_part.items():
            add(all_group_aux.setdefault(key, {}), sizes)
    return SafetensorsTotals(sum(by_dtype.values()), by_dtype, len(files),
                             f"{how}, read from the Hub", aux_by_dtype, all_groups,
                             all_group_aux)

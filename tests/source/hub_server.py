"""A loopback Hugging Face Hub for the tests: stdlib ``http.server`` in a thread.

It answers what huggingface_hub 2.4 asks (read in its source: ``file_download.py``
``get_hf_file_metadata`` / ``hf_hub_download`` / ``hf_hub_url``, ``hf_api.py`` ``model_info``
/ ``parse_safetensors_file_metadata``, ``utils/_http.py`` ``hf_raise_for_status``):

- ``HEAD`` and ``GET /{repo}/resolve/{revision}/{file}`` with ``X-Repo-Commit``, ``ETag`` and
  ``Content-Length`` (huggingface_hub refuses a response without the first two), ``Range:
  bytes=a-b`` answered ``206`` with ``Content-Range`` (safetensors header reads);
- ``GET /api/models/{repo}[/revision/{revision}]`` (model info: ``id`` and ``sha``);
- errors as the Hub words them, in ``X-Error-Code``: ``GatedRepo`` (401, or 403 with a token
  that has no access), ``RepoNotFound`` (404), ``RevisionNotFound`` (404), ``EntryNotFound``
  (404, with ``X-Repo-Commit``).

Every request is logged (method, path, Range header), so a test can check that no weight
file was ever downloaded whole.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit


@dataclass
class Repo:
    """A repository: commits (sha → files) and refs (branch or tag → sha)."""

    commits: dict[str, dict[str, bytes]]
    refs: dict[str, str]
    gated: bool = False
    tokens: frozenset[str] = frozenset()  # tokens with access to a gated repo


@dataclass
class FakeHub:
    repos: dict[str, Repo] = field(default_factory=dict)
    log: list[tuple[str, str, str | None]] = field(default_factory=list)

    def commit_of(self, repo: Repo, revision: str) -> str | None:
        if revision in repo.commits:
            return revision
        return repo.refs.get(revision)


def _split(hub: FakeHub, path: str) -> tuple[str, str] | None:
    """``org/name/rest`` → (repo id, rest) for a repo the hub knows, else None."""
    for repo_id in sorted(hub.repos, key=len, reverse=True):
        if path.startswith(repo_id + "/"):
            return repo_id, path[len(repo_id) + 1:]
    return None


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub  # set on the subclass made per server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str, extra: dict[str, str] | None = None,
               ) -> None:
        body = json.dumps({"error": message}).encode()
        self._send(status, {"X-Error-Code": code, "X-Error-Message": message,
                            "Content-Type": "application/json", **(extra or {})}, body)

    def do_HEAD(self) -> None:
        self._route()

    def do_GET(self) -> None:
        self._route()

    def _route(self) -> None:
        path = urlsplit(self.path).path
        self.hub.log.append((self.command, path, self.headers.get("Range")))
        if path.startswith("/api/models/"):
            self._model_info(path[len("/api/models/"):])
            return
        found = _split(self.hub, path.lstrip("/"))
        if found is None or "/resolve/" not in "/" + found[1]:
            self._error(404, "RepoNotFound", "Repository not found")
            return
        repo_id, rest = found
        _, revision_and_file = rest.split("resolve/", 1)
        revision, filename = revision_and_file.split("/", 1)
        self._resolve(repo_id, unquote(revision), unquote(filename))

    def _model_info(self, rest: str) -> None:
        found = _split(self.hub, rest + "/")
        if found is None:
            self._error(404, "RepoNotFound", "Repository not found")
            return
        repo_id, tail = found
        repo = self.hub.repos[repo_id]
        revision = unquote(tail[len("revision/"):].rstrip("/")) if tail.startswith("revision/") \
            else "main"
        commit = self.hub.commit_of(repo, revision)
        if commit is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return
        body = json.dumps({"id": repo_id, "modelId": repo_id, "sha": commit,
                           "gated": "manual" if repo.gated else False, "private": False,
                           "siblings": [{"rfilename": f} for f in repo.commits[commit]]})
        self._send(200, {"Content-Type": "application/json"}, body.encode())

    def _resolve(self, repo_id: str, revision: str, filename: str) -> None:
        repo = self.hub.repos[repo_id]
        if repo.gated:
            auth = self.headers.get("Authorization") or ""
            token = auth.removeprefix("Bearer ").strip()
            if token not in repo.tokens:
                status = 403 if token else 401
                self._error(status, "GatedRepo", f"Access to model {repo_id} is restricted.")
                return
        commit = self.hub.commit_of(repo, revision)
        if commit is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return
        data = repo.commits[commit].get(filename)
        if data is None:
            self._error(404, "EntryNotFound", f"{filename} does not exist on \"{revision}\"",
                        {"X-Repo-Commit": commit})
            return
        headers = {"X-Repo-Commit": commit, "ETag": f'"{hashlib.sha256(data).hexdigest()}"',
                   "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        wanted = self.headers.get("Range")
        if wanted and wanted.startswith("bytes="):
            first, _, last = wanted[len("bytes="):].partition("-")
            start = int(first)
            end = min(int(last) if last else len(data) - 1, len(data) - 1)
            if start >= len(data):
                self._send(416, {**headers, "Content-Range": f"bytes */{len(data)}"})
                return
            part = data[start:end + 1]
            self._send(206, {**headers, "Content-Range": f"bytes {start}-{end}/{len(data)}"},
                       part)
            return
        self._send(200, headers, data)


@contextmanager
def serve(hub: FakeHub) -> Iterator[str]:
    """Run ``hub`` on 127.0.0.1 (a free port) for the duration; yields its endpoint URL."""
    handler = type("Handler", (_Handler,), {"hub": hub})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

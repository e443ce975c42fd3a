"""``ModelSource``: a loaded config, its companion files, and where it came from."""

from __future__ import annotations

from kvledger.records import field, record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from kvledger.source.headers import SafetensorsTotals

# Where a config came from (the JSON ``source.kind``). "object" is a dict or config object
# handed to the library; the CLI never produces it.
KINDS = ("path", "hf-cache", "hub", "catalog", "object")


@record(frozen=True)
class ModelSource:
    """A loaded config plus the companion files that change cache sizing.

    ``repo_id`` and ``revision`` (a commit sha) are set when the files are a Hub repository's
    snapshot (fetched now, found in the local cache, or a cache snapshot given as a path):
    then the checkpoint's safetensors headers can be read even when the weights were never
    downloaded. ``offline`` forbids that remote read.
    """

    label: str
    config: dict[str, Any]
    hf_quant_config: dict[str, Any] | None = None
    directory: Path | None = None
    notes: tuple[str, ...] = field(default=())
    kind: str = "object"
    revision: str | None = None
    location: str | None = None
    repo_id: str | None = None
    offline: bool = False
    # Things the plan must show (a companion file whose presence could not be checked).
    warnings: tuple[str, ...] = ()
    # (file name, contents) of the sentence-transformers config beside config.json, when there
    # is one: its max_seq_length sets vLLM's max_model_len (source/sentence.py).
    sentence_config: tuple[str, dict[str, Any]] | None = None
    # Memo of the (possibly remote) header read: fit plans many layouts of one source.
    _memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def describe(self) -> dict[str, Any]:
        """The JSON ``source`` object: kind, revision (commit sha or null), location."""
        return {"kind": self.kind, "revision": self.revision, "location": self.location}

    def safetensors(self) -> SafetensorsTotals | None:
        """Exact checkpoint bytes from its safetensors headers, or None when there are none.

        Local files first, then kvledger's cache of headers read before, then (online, for a
        Hub snapshot) the Hub by HTTP range requests. Raises ``SafetensorsError`` for a
        malformed header: such bytes are never called exact.
        """
        if "totals" not in self._memo:
            from kvledger.source.weights import find_safetensors

            self._memo["totals"], self._memo["why"] = find_safetensors(
                directory=None if self.directory is None else str(self.directory),
                repo_id=self.repo_id, revision=self.revision, offline=self.offline,
                kind=self.kind, catalog_id=self.label if self.kind == "catalog" else None)
        totals: SafetensorsTotals | None = self._memo["totals"]
        return totals

    def weights_note(self) -> str:
        """Why ``safetensors()`` found nothing (for the "weights estimated" warning)."""
        self.safetensors()
        return str(self._memo.get("why") or "no safetensors headers")

"""What an audit returns: one row per declaration, one per undeclared cache, and verdicts.

Kept apart from the logic (``audit.py``) and the rendering (``report.py``) so a caller can
build its own view (the CLI's JSON, a dashboard) from plain frozen data.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kvledger.declare.model_local import ModelLocalKVSpec


class Verdict(StrEnum):
    OK = "ok"
    UNDER_DECLARED = "under-declared"  # measured > declared peak
    OVER_DECLARED = "over-declared"  # declared - measured > tolerance × declared
    DEAD = "dead"  # declared, but the run left nothing allocated
    UNDECLARED = "undeclared"  # a cache object no declaration covers


class Basis(StrEnum):
    """Which measured number a verdict compares with the declared peak."""

    LOGICAL = "logical"  # elements the cache holds (what a declaration describes)
    PINNED = "pinned"  # storage the allocator cannot reclaim (views pin their base)


@dataclass(frozen=True)
class DeclarationAudit:
    """One declaration's measured vs declared bytes.

    ``group`` names every declaration of the same owner this one was compared *together* with
    (itself included); a group of one is the common case. ``declared_bytes`` and the measured
    numbers are the group's totals when the group is larger than one — see ``audit.audit``.
    """

    owner_path: str
    spec: ModelLocalKVSpec
    verdict: Verdict
    declared_bytes: int
    logical_bytes: int
    pinned_bytes: int
    bookkeeping_bytes: int
    holdings: tuple[str, ...]
    group: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.owner_path or '<root>'}:{self.spec.name}"


@dataclass(frozen=True)
class UndeclaredCache:
    path: str
    kind: str
    logical_bytes: int
    pinned_bytes: int
    reason: str
    verdict: Verdict = Verdict.UNDECLARED


@dataclass(frozen=True)
class AuditResult:
    max_num_seqs: int
    tolerance: float
    basis: Basis
    samples: int
    declarations: tuple[DeclarationAudit, ...]
    undeclared: tuple[UndeclaredCache, ...]

    @property
    def ok(self) -> bool:
        return not self.undeclared and all(d.verdict is Verdict.OK for d in self.declarations)

    def verdicts(self) -> dict[str, Verdict]:
        """``owner:name`` → verdict, plus ``path`` → ``undeclared`` for unclaimed caches."""
        out = {d.label: d.verdict for d in self.declarations}
        out.update({u.path or "<root>": u.verdict for u in self.undeclared})
        return out

    def report(self) -> str:
        from kvledger.check.report import render_report

        return render_report(self)

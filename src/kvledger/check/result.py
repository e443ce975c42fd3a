"""What an audit returns: one row per declaration, one per undeclared cache, and verdicts.

Kept apart from the logic (``audit.py``) so a caller can build its own view (the CLI's JSON, a
dashboard) from plain frozen data; ``AuditResult.report()`` is the plain-text view
(``render_report``): one line per declaration, one per undeclared cache, and a note wherever
pinned storage exceeds the declaration even though the verdict's basis (logical bytes) does
not — a view keeping a larger tensor alive is real memory that a reader deserves to see, even
when the declaration describes what the cache means to hold.
"""

from __future__ import annotations

from enum import StrEnum

from kvledger.declare.model_local import ModelLocalKVSpec
from kvledger.records import record


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


@record(frozen=True)
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


@record(frozen=True)
class UndeclaredCache:
    path: str
    kind: str
    logical_bytes: int
    pinned_bytes: int
    reason: str
    verdict: Verdict = Verdict.UNDECLARED


@record(frozen=True)
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

    @property
    def checked_nothing(self) -> bool:
        """No declaration and no cache held: ``ok`` is then vacuous (a wrong target, or a run
        that never filled a cache), so the CLI says so and does not pass it."""
        return not self.declarations and not self.undeclared

    def verdicts(self) -> dict[str, Verdict]:
        """``owner:name`` → verdict, plus ``path`` → ``undeclared`` for unclaimed caches."""
        out = {d.label: d.verdict for d in self.declarations}
        out.update({u.path or "<root>": u.verdict for u in self.undeclared})
        return out

    def report(self) -> str:
        return render_report(self)


def _b(n: int) -> str:
    return f"{n:,} B"


def render_report(result: AuditResult) -> str:
    lines = [
        f"kvledger audit at max_num_seqs={result.max_num_seqs} "
        f"(basis={result.basis}, over-declared tolerance={result.tolerance:.0%}, "
        f"{result.samples} sample(s))",
    ]
    if not result.declarations and not result.undeclared:
        lines.append("  no declarations and no reachable caches")
    for d in result.declarations:
        spec = d.spec
        rows = (
            f"FIXED {spec.rows_fixed}"
            if spec.rows == "fixed"
            else f"MAX_NUM_SEQS ({spec.row_count(result.max_num_seqs)})"
        )
        shared = f" [compared jointly with {', '.join(d.group)}]" if len(d.group) > 1 else ""
        lines.append(
            f"  {d.verdict.value.upper():<15} {d.label}: declared {_b(d.declared_bytes)}, "
            f"measured logical {_b(d.logical_bytes)} / pinned {_b(d.pinned_bytes)}{shared}"
        )
        lines.append(
            f"      spec: {spec.layers} layers × {spec.kv_heads} kv heads × {spec.head_dim} "
            f"× {spec.physical_capacity_positions} positions, {spec.dtype}, rows {rows}, "
            f"scope {spec.scope.value}"
        )
        if d.holdings:
            lines.append(f"      held at: {', '.join(d.holdings)}")
        if d.verdict is Verdict.DEAD:
            lines.append("      nothing was allocated: the run never filled this cache")
        if d.pinned_bytes > d.declared_bytes and d.verdict is not Verdict.UNDER_DECLARED:
            lines.append(
                f"      note: views pin {_b(d.pinned_bytes - d.declared_bytes)} beyond the "
                "declaration (a slice keeps its whole base tensor alive)"
            )
    for u in result.undeclared:
        lines.append(
            f"  {u.verdict.value.upper():<15} {u.path or '<root>'} ({u.kind}): logical "
            f"{_b(u.logical_bytes)} / pinned {_b(u.pinned_bytes)}; {u.reason}"
        )
    bad = sum(d.verdict is not Verdict.OK for d in result.declarations) + len(result.undeclared)
    lines.append("result: ok" if result.ok else f"result: {bad} problem(s)")
    return "\n".join(lines)

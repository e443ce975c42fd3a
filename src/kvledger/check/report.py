"""Plain-text rendering of an ``AuditResult``: one line per declaration, one per undeclared
cache, and a note wherever pinned storage exceeds the declaration even though the verdict's
basis (logical bytes) does not — a view keeping a larger tensor alive is real memory that a
reader deserves to see, even when the declaration describes what the cache means to hold."""

from __future__ import annotations

from kvledger.check.result import AuditResult, Verdict


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

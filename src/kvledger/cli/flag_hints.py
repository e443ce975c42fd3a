"""The nearest flag to a mistyped one, for ``did you mean`` (kvledger's parser and a pasted
serve line's engine flags alike).

difflib alone ranks by spelling, so ``--tp-size`` came out as ``--page-size`` (same length,
same ending). People abbreviate the parallel sizes the way launch lines and papers do — TP,
PP, DP, EP — so those words are expanded first (``--tp-size`` → ``--tensor-parallel-size``),
then a flag that starts with the expanded words wins, and only then does spelling decide.
The answer names the flag's short spellings too (``--tensor-parallel-size (-tp)``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

# Abbreviations people type for a word of a flag's name.
_WORDS = {
    "tp": "tensor-parallel", "pp": "pipeline-parallel", "dp": "data-parallel",
    "ep": "expert-parallel", "mem": "memory", "util": "utilization", "len": "len",
    "seqs": "seqs", "gpu-mem": "gpu-memory", "kv": "kv",
}


def _expanded(flag: str) -> str:
    words = flag.lstrip("-").lower().replace("_", "-").split("-")
    return "--" + "-".join(_WORDS.get(w, w) for w in words)


def closest_flag(flag: str, spellings: Iterable[Sequence[str]]) -> str | None:
    """``--tensor-parallel-size (-tp)`` for ``--tp-size``, given each option's spellings
    (an argparse action's option strings); None when nothing is close."""
    import difflib

    groups = [tuple(g) for g in spellings if g]
    longs = {o: g for g in groups for o in g if o.startswith("--")}
    name = flag.partition("=")[0]
    wanted = _expanded(name)
    if wanted in longs and wanted != name:
        found = wanted
    else:
        # "--tensor-parallel" (from --tp) → the one flag that starts with it.
        starts = sorted(o for o in longs if o.startswith(wanted) and wanted != "--")
        if len(starts) == 1:
            found = starts[0]
        else:
            close = difflib.get_close_matches(wanted, list(longs), n=1, cutoff=0.75)
            if not close and wanted != name:
                close = difflib.get_close_matches(name, list(longs), n=1, cutoff=0.75)
            if not close:
                return None
            found = close[0]
    shorts = [o for o in longs[found] if not o.startswith("--")]
    return found + (f" ({', '.join(shorts)})" if shorts else "")

"""An engine release as data, and how a user names one (``vllm``, ``vllm==0.32``).

Each engine keeps one profile per release it reproduces (``engines/<engine>/releases/``):
the version, the defaults that release ships, and the words its messages use. User-visible
text that names a release takes it from the profile (``Release.short`` / ``label``), so a new
release is a new profile, not an edit across the tree.

Spelling, as pip writes a pin: ``vllm`` (the engine's newest known release, or the installed
one where the engine says so), ``vllm==0.32`` or ``vllm==0.32.0``. A well-formed release
kvledger does not know (``vllm==0.34.1``, ``vllm==0.35``) is planned as the nearest one it knows,
with a note naming both (``nearest``); a malformed one (``vllm==banana``) is a ``ValueError``
that lists the known ones.
"""

from __future__ import annotations

from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TypeVar

    R = TypeVar("R", bound="Release")


@record(frozen=True, kw_only=True)
class Release:
    """What every engine release profile states."""

    engine: str  # the registry name: "vllm"
    product: str  # how people write it: "vLLM"
    version: str  # the full release: "0.32.0"

    @property
    def label(self) -> str:
        """``vLLM 0.32.0``."""
        return f"{self.product} {self.version}"

    @property
    def short(self) -> str:
        """``vLLM 0.32`` (a ``.0`` patch level dropped), as messages name the release."""
        return f"{self.product} {self.version.removesuffix('.0')}"

    @property
    def pin(self) -> str:
        """``vllm==0.32.0``: the spelling ``--engine`` takes back."""
        return f"{self.engine}=={self.version}"


def split_engine(spec: str) -> tuple[str, str | None]:
    """``"vllm==0.32"`` → ``("vllm", "0.32")``; ``"vllm"`` → ``("vllm", None)``."""
    if not isinstance(spec, str):
        raise TypeError(f"engine must be a name such as 'vllm' or 'vllm==0.32', got {spec!r}")
    name, sep, version = spec.strip().partition("==")
    name = name.strip().lower()
    version = version.strip()
    if sep and not version:
        raise ValueError(f"engine {spec!r}: no release after '=='")
    return name, (version or None)


def _same(asked: str, version: str) -> bool:
    """``0.32`` names ``0.32.0``; ``0.32.0`` names itself."""
    a = asked.removeprefix("v").split(".")
    v = version.split(".")
    return a == v or (len(a) == 2 and v[:2] == a and v[2:] == ["0"])


def version_key(version: str) -> tuple[int, ...] | None:
    """``"0.34.1"`` → ``(0, 34, 1)``; ``"v0.35"`` → ``(0, 35, 0)``; None for anything that is
    not two or three dot-separated numbers (a pre-release or local tag after the numbers,
    ``0.34.1rc1`` / ``0.33.0+cpu``, is read as its numbers)."""
    text = version.strip().removeprefix("v")
    end = 0
    while end < len(text) and (text[end].isdigit() or text[end] == "."):
        end += 1
    tail = text[end:]
    if tail and not tail.startswith(("rc", "a", "b", "+", "dev", ".dev", "post", ".post")):
        return None
    parts = text[:end].rstrip(".").split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        return None
    numbers = tuple(int(p) for p in parts)
    return numbers + (0,) * (3 - len(numbers))


def _known(releases: Mapping[str, Release], default: str) -> str:
    engine = releases[default].engine  # one profile: the others may be imported lazily
    return ", ".join(f"{engine}=={v}" for v in releases)


def pick(releases: Mapping[str, R], asked: str | None, default: str) -> R:
    """The profile ``asked`` names exactly (``default`` when None), or a ``ValueError``
    listing the releases known for this engine."""
    if asked is None:
        return releases[default]
    for version in releases:
        if _same(asked, version):
            return releases[version]
    some = releases[default]
    raise ValueError(f"{some.product} {asked} is not a release kvledger knows "
                     f"(known: {_known(releases, default)})")


def nearest(releases: Mapping[str, R], asked: str | None, default: str) -> tuple[R, str]:
    """(the profile to plan ``asked`` with, a note; "" when it is a known release).

    A known release is itself. A well-formed unknown one is planned as the known release
    nearest to it: the same minor release (``0.34.1`` → ``0.34.0``, ``0.10`` → ``0.10.2``),
    else the known release the fewest minor releases away, the one below on a tie (``0.35`` →
    the newest, ``0.29`` → ``0.28.0`` rather than ``0.30.0``, ``0.18`` → ``0.19.0`` rather
    than ``0.10.2``), else — older than every known release — the oldest known. Its KV rules
    are that release's, which a later patch release rarely moves and a later minor release
    may: the note says which was used and how to pin a known one. A malformed version
    (``banana``) is a ``ValueError`` listing the known releases."""
    if asked is None:
        return releases[default], ""
    for version in releases:
        if _same(asked, version):
            return releases[version], ""
    some = releases[default]
    key = version_key(asked)
    if key is None:
        raise ValueError(f"{some.product} {asked!r} is not a release version (known: "
                         f"{_known(releases, default)}; write it as pip does, e.g. "
                         f"{some.engine}=={default.removesuffix('.0')})")
    ordered = sorted(releases, key=lambda v: version_key(v) or (0, 0, 0))
    below = [v for v in ordered if (version_key(v) or (0, 0, 0)) <= key]
    above = [v for v in ordered if v not in below]
    same_minor = [v for v in ordered if (version_key(v) or (0, 0))[:2] == key[:2]]

    def minors(v: str) -> int:  # minor releases between v and the asked one
        have = version_key(v) or (0, 0, 0)
        return abs((have[0] - key[0]) * 1000 + have[1] - key[1])

    if same_minor:
        # The nearest patch at or below it, else the first above (0.10 → 0.10.2).
        version = ([v for v in same_minor if v in below] or same_minor[:1])[-1]
        why = "a patch release of it"
    elif below and (not above or minors(below[-1]) <= minors(above[0])):
        version = below[-1]
        why = ("the newest release kvledger knows" if not above else
               f"the nearest known release before it (the next known is "
               f"{releases[above[0]].label})")
    else:
        # Nearer to the next known release than to the last one before it (0.18 → 0.19, not
        # 0.10): rules accumulate release by release, so the fewer releases apart the better.
        version = above[0]
        why = ("the oldest release kvledger knows" if not below else
               f"the nearest known release after it (the last known before it is "
               f"{releases[below[-1]].label})")
    release = releases[version]
    note = (f"{some.product} {asked} is not a release kvledger knows: planned as "
            f"{release.label}, {why}; its numbers may differ where {some.product} {asked} "
            f"changed a rule (known: {_known(releases, default)})")
    return release, note

"""An engine release as data, and how a user names one (``vllm``, ``vllm==0.32``).

Each engine keeps one profile per release it reproduces (``engines/<engine>/releases/``):
the version, the defaults that release ships, and the words its messages use. User-visible
text that names a release takes it from the profile (``Release.short`` / ``label``), so a new
release is a new profile, not an edit across the tree.

Spelling, as pip writes a pin: ``vllm`` (the engine's newest known release, or the installed
one where the engine says so), ``vllm==0.32`` or ``vllm==0.32.0``. A release kvledger does not
know is a ``ValueError`` that lists the known ones.
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


def pick(releases: Mapping[str, R], asked: str | None, default: str) -> R:
    """The profile ``asked`` names (``default`` when None), or a ``ValueError`` listing the
    releases known for this engine."""
    if asked is None:
        return releases[default]
    for version, release in releases.items():
        if _same(asked, version):
            return release
    some = next(iter(releases.values()))
    known = ", ".join(f"{some.engine}=={v}" for v in releases)
    raise ValueError(f"{some.product} {asked} is not a release kvledger knows (known: {known})")

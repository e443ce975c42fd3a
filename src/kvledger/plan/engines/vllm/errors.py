"""The errors the vLLM layout raises (their own module so every part can import them)."""

from __future__ import annotations

from kvledger.errors import EngineStartupRefusal, PlanError

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.plan.engines.vllm.releases.profile import VllmRelease


class VllmLayoutError(PlanError):
    """The vLLM layout cannot plan this model or these options (names the reason)."""


class VllmRefusesToStart(VllmLayoutError, EngineStartupRefusal):
    """vLLM itself would refuse to start with these settings: the message is its reason, in
    its words, after "vLLM 0.32 refuses to start"."""


def engine_words(release: VllmRelease | None) -> str:
    """How a message names the release it plans: ``vLLM 0.33`` for a bound profile; plain
    ``vLLM`` where a rule is called on its own, without one (a test of one rule)."""
    return release.short if release is not None else "vLLM"

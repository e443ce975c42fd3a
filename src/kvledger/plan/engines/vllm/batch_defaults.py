"""The ``max_num_seqs`` / ``max_num_batched_tokens`` an engine runs with when a launch sets
neither: the launch people use is the default.

vLLM ``EngineArgs.get_batch_defaults`` (``vllm/engine/arg_utils.py``; the same tiers from 0.28
to 0.34; 0.26 and older, ``_set_default_args``, have no 160 GiB tier: a device that large takes
the 70 GiB one, ``VllmRelease.batch_tier_160gib``) tiers by the device's total memory and the
usage context the engine was built in:

====================  ==========================  ==========================
device memory         ``vllm serve``              ``LLM(...)`` (offline)
                      (OPENAI_API_SERVER)         (LLM_CLASS)
====================  ==========================  ==========================
≥ 160 GiB             1024 / 16384                1024 / 16384
≥ 70 GiB, not A100    1024 / 8192                 1024 / 16384
otherwise             256 / 2048                  256 / 8192
====================  ==========================  ==========================

Then ``_set_default_max_num_seqs_and_batched_tokens_args``: an unset ``max_num_seqs`` is
``min(default, max_num_batched_tokens)``. (0.33 also keeps a GB10 — DGX Spark, compute
capability 12.1 — on the small tier whatever its memory; kvledger has no GB10 preset, so no
plan meets that branch: a preset added for it needs the release's profile to say so.)

Without a GPU (a byte budget only) no tier can be picked: the plan then uses
``SchedulerConfig``'s own defaults, 256 / 8192 (``DEFAULT_MAX_NUM_SEQS``,
``DEFAULT_MAX_NUM_BATCHED_TOKENS``: the offline class's small tier), and says so. Another
engine keeps its own defaults (ATOM: ``max_num_seqs`` 512, ``registry.DEFAULT_MAX_NUM_SEQS``).

Every choice is described by ``BatchDefaults.to_json()`` (the plan's ``batch_defaults``;
the record and the lookup by engine: ``kvledger.plan.batch_defaults``).
"""

from __future__ import annotations

from kvledger.plan.batch_defaults import LLM, SERVE, BatchDefaults, check_usage_context

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from kvledger.plan.engines.vllm.releases.profile import VllmRelease

GIB = 1 << 30

# (least device memory, excludes A100s, {usage context: (max_num_seqs, max_num_batched_tokens)})
# from the largest tier down: get_batch_defaults' branches, in its order.
_TIERS: tuple[tuple[int, bool, dict[str, tuple[int, int]]], ...] = (
    (160 * GIB, False, {SERVE: (1024, 16384), LLM: (1024, 16384)}),
    (70 * GIB, True, {SERVE: (1024, 8192), LLM: (1024, 16384)}),
    (0, False, {SERVE: (256, 2048), LLM: (256, 8192)}),
)
_LAUNCH = {SERVE: "vllm serve", LLM: "LLM(...)"}


def vllm_tier(usage_context: str, total_bytes: int | None, device_name: str | None,
              release: str | None = None) -> BatchDefaults:
    """The tier ``get_batch_defaults`` picks for the device (module docstring); without a
    device (``total_bytes`` None) ``SchedulerConfig``'s defaults, as the profile of vLLM
    ``release`` (the newest when None) states them (``default_max_num_seqs``,
    ``default_max_num_batched_tokens``)."""
    check_usage_context(usage_context)
    launch = _LAUNCH[usage_context]
    if total_bytes is None:
        profile = _profile(release)
        return BatchDefaults(profile.default_max_num_seqs,
                             profile.default_max_num_batched_tokens,
                             usage_context, f"no GPU named, so no {launch} tier of vLLM's "
                             "EngineArgs.get_batch_defaults: SchedulerConfig's defaults")
    name = (device_name or "").lower()
    # 0.26 and older have no 160 GiB tier (VllmRelease.batch_tier_160gib).
    tiers = _TIERS if _profile(release).batch_tier_160gib else _TIERS[1:]
    for least, not_a100, picks in tiers:
        if total_bytes >= least and not (not_a100 and "a100" in name):
            seqs, tokens = picks[usage_context]
            where = device_name or "the given GPU total"
            tier = f"≥ {least // GIB} GiB" + (", not an A100" if not_a100 else "") if least \
                else "below the 70 GiB tier" if "a100" not in name or total_bytes < 70 * GIB \
                else "an A100, kept off the 70 GiB tier"
            return BatchDefaults(seqs, tokens, usage_context,
                                 f"{launch} on {where} ({tier}): vLLM's "
                                 "EngineArgs.get_batch_defaults")
    raise AssertionError("the last tier takes every device")  # pragma: no cover


def _profile(release: str | None) -> VllmRelease:
    """The profile of the release the request names, bound as the engine binds it."""
    from kvledger.plan.engines.base import get_layout

    layout: Any = get_layout("vllm", release)  # a VllmEngine (it imports the rules)
    profile: VllmRelease = layout.profile
    return profile

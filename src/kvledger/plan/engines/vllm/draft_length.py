"""The ``max_model_len`` a release plans when a separate draft model is shorter than the target.

vLLM 0.33 ``config/vllm.py VllmConfig._limit_max_model_len_to_draft`` (called from
``VllmConfig.__post_init__``; absent from 0.32) lowers ``model_config.max_model_len`` to the
draft model's, with a warning, when all of these hold:

- a draft model config exists (``speculative_config.draft_model_config``: the methods that
  load one — ``draft_model`` and the EAGLE family; kvledger's ``eagle`` / ``eagle3``);
- the V2 model runner is in use (``VllmConfig.use_v2_model_runner``: the default wherever
  Triton is, i.e. on a CUDA GPU, unless ``VLLM_USE_V2_MODEL_RUNNER=0`` or a feature MRV2
  lacks — ``_get_v2_model_runner_unsupported_features``: the methods ``suffix`` /
  ``custom_class``, P-EAGLE parallel drafting, a heterogeneous-vocabulary draft);
- the draft does not share the target's positions
  (``SpeculativeConfig.draft_shares_target_positions``: true for a method other than
  ``draft_model`` whose draft config's RoPE types are all in ``_CACHE_ONLY_ROPE_TYPES`` —
  default, linear, llama3, ntk, proportional — whose ``max_position_embeddings``
  ``_maybe_override_draft_max_position_embeddings`` raises to the target's instead);
- the draft's ``max_model_len`` (its own derived length, then
  ``_maybe_override_draft_max_model_len``: min(draft, target)) is below the target's.

The vLLM CPU oracle cannot show this: its tool takes no draft model, and a CPU platform has
no Triton, so ``use_v2_model_runner`` is false there. The rule is read from source only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# config/speculative.py _CACHE_ONLY_ROPE_TYPES.
CACHE_ONLY_ROPE_TYPES = frozenset({"default", "linear", "llama3", "ntk", "proportional"})
# The methods whose SpeculativeConfig builds a draft_model_config (kvledger's names; 0.33 no
# longer accepts medusa / mlp_speculator). 0.34's DFlash / DSpark configs derive from
# DraftModelSpeculatorConfig (v1/worker/gpu/spec_decode/dflash/config.py, dspark/config.py), whose
# ``max_model_len`` _limit_max_model_len_to_draft reads, with shares_target_positions True.
DRAFT_CONFIG_METHODS = frozenset({"draft_model", "eagle", "eagle3", "dflash", "dspark"})


def shares_target_positions(method: str, rope_types: Iterable[str]) -> bool:
    """``SpeculativeConfig.draft_shares_target_positions`` (``_rope_only_sizes_cache``: a
    config without RoPE parameters has none to check, so it shares)."""
    return method != "draft_model" and all(t in CACHE_ONLY_ROPE_TYPES for t in rope_types)


def limited_max_model_len(target_len: int, method: str | None, draft_len: int | None,
                          rope_types: Iterable[str], short: str) -> tuple[int, str | None]:
    """(the length planned, vLLM's warning when it lowered it) for a release that limits
    ``max_model_len`` to the draft's (the caller checks the release and the runner)."""
    if not method or method not in DRAFT_CONFIG_METHODS or draft_len is None:
        return target_len, None
    if shares_target_positions(method, rope_types):
        return target_len, None
    draft = min(draft_len, target_len)  # _maybe_override_draft_max_model_len
    if draft >= target_len:
        return target_len, None
    return draft, (
        f"{short}: The draft model's max_model_len ({draft}) is smaller than the target "
        f"model's ({target_len}) and the V2 model runner can't skip speculation for longer "
        f"sequences; reducing max_model_len to {draft}. (config/vllm.py "
        "_limit_max_model_len_to_draft)")


def draft_fields(config: Mapping[str, Any]) -> dict[str, Any]:
    """``VllmLaunch``'s draft fields from the draft's config.json: the ``max_model_len`` vLLM
    derives for it (``startup.default_max_model_len``, as for any model) and its RoPE types
    (``iter_rope_parameters``; "default" when it states none)."""
    from kvledger.derive import derive_model
    from kvledger.plan.engines.vllm.startup import default_max_model_len, rope_types

    facts = derive_model(dict(config))
    return {"draft_max_model_len": default_max_model_len(facts),
            "draft_rope_types": rope_types(facts.config) or ("default",)}

"""A ``vllm serve`` line's ``--speculative-config`` (and ``--spec-*``) → kvledger ``plan``
options: the method and token count, the draft's config (``--draft-config``: a local
directory's config.json or a Hub id), and the SpeculativeConfig fields that do or do not size
KV. Part of ``vllm_map.py``'s translation."""

from __future__ import annotations

from typing import Any

from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.translation import Context, Translation

# SpeculativeConfig fields (vllm/config/speculative.py) that cannot change the target's KV.
_SPEC_INERT = frozenset({
    "model", "prompt_lookup_max", "prompt_lookup_min", "disable_padded_drafter_batch",
    "disable_eagle_block_drop", "use_local_argmax_reduction", "use_heterogeneous_vocab",
    "suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
    "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob", "rejection_sample_method",
    "synthetic_acceptance_rates", "synthetic_acceptance_length", "enable_adaptive_verification",
    "draft_sample_method", "dspark_draft_topk", "code_revision", "moe_backend", "enforce_eager",
    "draft_load_config", "revision",
})
# Fields that size the draft's own KV or its parallelism: not modelled.
_SPEC_REFUSED = frozenset({
    "kv_cache_dtype", "max_model_len", "quantization",
    "attention_backend", "num_speculative_tokens_per_batch_size",
    "parallel_drafting", "index_share_for_mtp_iteration",
})
# Methods whose draft is built with its own parallel config (``draft_parallel_config``): the
# draft_model speculator (v1/spec_decode/draft_model.py, and from 0.32
# v1/worker/gpu/spec_decode/standalone_ar/speculator.py load_draft_model) and, from 0.32, the
# DSpark draft (v1/worker/gpu/spec_decode/dspark/utils.py). Every other model-based method
# loads its draft with the target's VllmConfig (0.34: eagle/utils.py load_eagle_model,
# dflash/utils.py load_dflash_model), so draft_tensor_parallel_size changes nothing there.
_OWN_PARALLEL_DRAFTS = frozenset({"draft_model", "dspark"})

def map_speculative(values: dict[str, Any], out: Translation, ctx: Context) -> None:
    """``--speculative-config`` / ``--spec-*`` as ``EngineArgs.create_speculative_config``
    merges them (a key in both is vLLM's "mutually exclusive" error)."""
    config = values.get("speculative_config")
    if config is not None and not isinstance(config, dict):
        raise ServeLineError(f"{out.launcher}: --speculative-config must be a JSON object")
    spec: dict[str, Any] = {str(k).replace("-", "_"): v for k, v in (config or {}).items()}
    for flag, key, dest in (("--spec-method", "method", "spec_method"),
                            ("--spec-model", "model", "spec_model"),
                            ("--spec-tokens", "num_speculative_tokens", "spec_tokens")):
        if values.get(dest) is None:
            continue
        if key in spec:
            raise ServeLineError(f"{out.launcher}: {flag} and --speculative-config['{key}'] "
                                 "are mutually exclusive")
        spec[key] = values[dest]
    if not spec:
        return
    unknown = sorted(set(spec) - _SPEC_INERT - _SPEC_REFUSED - {
        "method", "num_speculative_tokens", "draft_tensor_parallel_size", "tensor_parallel_size"})
    if unknown:
        raise ServeLineError(f"{out.launcher}: --speculative-config: {', '.join(unknown)} "
                             f"is not a {out.engine_label} SpeculativeConfig field")
    for key in sorted(set(spec) & _SPEC_REFUSED):
        out.refused.append(f"--speculative-config {key} sizes the draft's own KV or "
                           "parallelism, which kvledger does not model")
    method, tokens = spec.get("method"), spec.get("num_speculative_tokens")
    if "tensor_parallel_size" in spec:
        # SpeculativeConfig._verify_args (0.19 … 0.34): a ValueError naming the right key.
        raise ServeLineError(f"{out.launcher}: --speculative-config has no plain tensor-"
                             "parallel key (vllm refuses it too, SpeculativeConfig."
                             "_verify_args); pass 'draft_tensor_parallel_size' instead")
    if spec.get("draft_tensor_parallel_size") is not None:
        _draft_tensor_parallel(spec["draft_tensor_parallel_size"], method, values, out)
    if not method:
        # 0.34: speculator_config.py _resolve_checkpoint_config_class detects the method from
        # the draft checkpoint's config (its declared speculator, then each method's matches);
        # older releases also looked at the draft's name (SpeculativeConfig.__post_init__).
        out.refused.append("--speculative-config without a method: vLLM detects it from the "
                           "draft checkpoint, which kvledger does not read; give method "
                           "(mtp, eagle3, dflash, …)")
        return
    if method == "dflash" and not spec.get("model"):
        # DFlashSpeculatorConfig inherits DraftModelSpeculatorConfig.default_model
        # (v1/worker/gpu/spec_decode/speculator_config.py).
        out.refused.append(f"--speculative-config method dflash without a model: "
                           f"{out.engine_label} stops ('num_speculative_tokens was provided but "
                           "without speculative model'); give the draft's model")
        return
    if tokens is None:
        out.refused.append("--speculative-config without num_speculative_tokens: vLLM takes "
                           "it from the draft's config; give it explicitly")
        return
    out.options["--speculative-method"] = str(method)
    out.options["--num-speculative-tokens"] = str(tokens)
    if spec.get("model"):
        _draft_model(str(spec["model"]), str(method), out, ctx)


def _draft_tensor_parallel(size: Any, method: Any, values: dict[str, Any],
                           out: Translation) -> None:
    """``draft_tensor_parallel_size``: SpeculativeConfig._verify_and_get_draft_tp (the same
    from 0.19 to 0.34) takes only 1 or the target's TP; where the draft shares the target's
    parallel config (every method but ``_OWN_PARALLEL_DRAFTS``) either value leaves its KV
    sharded as the target's."""
    tp = int(values.get("tensor_parallel_size") or 1)
    try:
        draft_tp = int(size)
    except (TypeError, ValueError):
        raise ServeLineError(f"{out.launcher}: --speculative-config draft_tensor_parallel_size "
                             f"must be a whole number, not {size!r}") from None
    if draft_tp not in (1, tp):
        out.refused.append(
            f"--speculative-config draft_tensor_parallel_size {draft_tp}: vLLM refuses to start "
            f"('speculative_draft_tensor_parallel_size={draft_tp} cannot be other value than 1 "
            f"or target model tensor_parallel_size', here {tp}); use 1 or {tp}")
    elif draft_tp != tp and str(method) in _OWN_PARALLEL_DRAFTS:
        out.refused.append(
            f"--speculative-config draft_tensor_parallel_size 1 with method {method}: vLLM "
            f"builds this draft unsharded on each of the {tp} GPUs (its own parallel config), "
            "which kvledger does not model; drop the key to plan the draft sharded as the "
            "target")
    elif draft_tp != tp:
        out.notes.append(
            f"--speculative-config draft_tensor_parallel_size 1: the {method} draft is built "
            "with the target's parallel config (the key sizes only draft_model and dspark "
            f"drafts), so its KV is sharded over TP {tp} as planned")


def config_readable(model_id: str) -> bool:
    """Whether a model id's config can be read now (catalog, HF cache, or the Hub)."""
    from kvledger.errors import KvledgerError
    from kvledger.source.resolve import load_source

    try:
        load_source(model_id)
    except KvledgerError:
        return False
    return True


def _draft_model(model: str, method: str, out: Translation, ctx: Context) -> None:
    """``--speculative-config`` ``model``: a separate draft (``draft_length.py``'s methods) in
    a local directory becomes ``--draft-config DIR/config.json`` and a hub id ``--draft-config
    ID`` (read as a model id is), so that 0.33's Model Runner V2 limit (a shorter draft lowers
    ``max_model_len``) applies and a DFlash / DSpark draft's layers are planned."""
    from pathlib import Path

    from kvledger.plan.engines.vllm.draft_length import DRAFT_CONFIG_METHODS

    if method not in DRAFT_CONFIG_METHODS:
        return  # MTP and ngram-like methods build no separate draft config
    where = Path(model).expanduser()
    if where.is_dir():
        config = where / "config.json"
        if not config.is_file():
            out.refused.append(f"--speculative-config model {model}: the directory has no "
                               "config.json (vLLM reads the draft's config from it)")
            return
        out.options["--draft-config"] = str(config)
        return
    if where.exists():
        out.refused.append(f"--speculative-config model {model}: not a directory; vLLM loads "
                           "a draft model from a directory or a hub id")
        return
    if ctx.draft_config_given:
        return  # kvledger's own --draft-config, given before '--', is the draft's config
    from kvledger.source.resolve import is_repo_id

    if is_repo_id(model):
        # Read as the target is (the catalog, the local HF cache, then the Hub unless
        # offline): a DFlash / DSpark draft's layers and weights and any draft's length limit
        # come from its config (parallel_draft.py, draft_length.py). A DFlash / DSpark draft
        # cannot be planned without it (its read fails in one line); another draft's config
        # only caps max_model_len, so an unreadable one leaves a note, as before.
        if method not in ("dflash", "dspark") and not config_readable(model):
            out.notes.append(f"--speculative-config model {model}: its config is neither in "
                             "the local HF cache nor read from the Hub, so a shorter draft's "
                             "limit on max_model_len (Model Runner V2) is not applied; give "
                             "--draft-config CONFIG_JSON before '--'")
            return
        out.options["--draft-config"] = model
        return
    out.refused.append(f"--speculative-config model {model}: neither a local directory nor a "
                       "hub id; vLLM loads a draft model from one of them")

"""A scanned SGLang launch line → kvledger ``plan --engine sglang`` options (SGLang's names).

kvledger's SGLang options are SGLang's own (``--mem-fraction-static``, ``--page-size`` …, see
``ARCHITECTURE.md``); the shared ones use kvledger's spelling (``--max-model-len`` for
``--context-length``, ``--block-size`` for ``--page-size``), which the SGLang layout reads as
the same request fields.
"""

from __future__ import annotations

import json
from typing import Any

from kvledger.cli.serve import sglang_flags
from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.rules import MAPPED
from kvledger.cli.serve.scan import Scanned
from kvledger.cli.serve.table import FlagTable
from kvledger.cli.serve.translation import Context, Translation, classify

_COPY = {
    "tp_size": "--tensor-parallel-size",
    "pp_size": "--pipeline-parallel-size",
    "dp_size": "--data-parallel-size",
    "context_length": "--max-model-len",
    "page_size": "--block-size",
    "mem_fraction_static": "--mem-fraction-static",
    "max_running_requests": "--max-running-requests",
    "max_total_tokens": "--max-total-tokens",
    "chunked_prefill_size": "--chunked-prefill-size",
    "cuda_graph_max_bs_decode": "--cuda-graph-max-bs",
    "swa_full_tokens_ratio": "--swa-full-tokens-ratio",
    "mamba_full_memory_ratio": "--mamba-full-memory-ratio",
    "mamba_ssm_dtype": "--mamba-ssm-dtype",
    "revision": "--revision",
}
_SWITCHES = {
    "disable_radix_cache": "--disable-radix-cache",
    "disable_overlap_schedule": "--disable-overlap-schedule",
    "enable_dp_attention": "--enable-dp-attention",
}
# SGLang --kv-cache-dtype names → kvledger's.
_KV_DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp8_e4m3": "fp8_e4m3",
              "fp8_e5m2": "fp8_e5m2", "nvfp4": "nvfp4"}


def translate(scanned: Scanned, table: FlagTable, launcher: str, env: dict[str, str],
              ctx: Context) -> Translation:
    out = Translation(engine="sglang", engine_label=table.label, launcher=launcher)
    if scanned.positionals:
        raise ServeLineError(f"{launcher}: unrecognized arguments: "
                             f"{' '.join(scanned.positionals)}")
    values = {item.flag.dest: item.value for item in scanned.given}
    if "config" in values:
        out.refused.append("--config FILE: kvledger does not read the YAML file; paste its "
                           "flags into the line")
    model = values.get("model_path")
    if not model:
        raise ServeLineError(f"{launcher}: the line names no model (--model-path)")
    out.model = str(model)
    for dest, flag in _COPY.items():
        if values.get(dest) is not None:
            out.options[flag] = str(values[dest])
    for dest, flag in _SWITCHES.items():
        if values.get(dest):
            out.options[flag] = None
    _kv_dtype(values, out, ctx)
    _dp_attention(values, out)
    _speculative(values, out, ctx)
    for key in ("dtype", "quantization"):
        value = values.get(key)
        if value is not None and value != "auto":
            out.requires[key] = {"half": "float16", "float": "float32"}.get(value, str(value))
    _environment(env, out)
    kv_budget = ctx.kv_budget_given
    mapped = {dest for dest, rule in sglang_flags.RULES.items() if rule.cls == MAPPED}
    ep, tp = values.get("ep_size"), values.get("tp_size") or 1
    if isinstance(ep, int) and ep >= 1 and tp % ep == 0:
        # runtime_context.py: moe_tp_size = tp_size // moe_ep_size // moe_dp_size, so each GPU
        # holds E / ep whole experts cut in tp / ep slices: 1 / tp of the expert bytes, as
        # plain TP (with DP attention too, whose tp_size counts every GPU of the replica).
        # --moe-dp-size (replicated experts) stays refused by its own rule.
        mapped.add("ep_size")
        out.notes.append(f"--ep-size {ep} with --tp-size {tp}: each GPU holds 1/{ep} of the "
                         f"experts in {tp // ep} tensor-parallel slices, 1/{tp} of the expert "
                         "bytes: the same bytes per GPU as tensor parallelism alone")
    _hicache(values, out, mapped)
    _attention_backend(values, out, mapped)
    _dsa_backends(values, out, mapped)
    _rope_override(values, out, mapped)
    classify(scanned, sglang_flags.RULES, out, kv_budget_given=kv_budget, skip=mapped,
             fraction_given=values.get("mem_fraction_static") is not None)
    out.raise_refusals()
    return out


# Backends that run on every CUDA GPU and force no page size (overrides.py
# _page_size_constraints changes it only for flashmla, trtllm_mla, cutedsl_mla, trtllm_mha,
# hpc_ops, fa4 and intel_xpu): the page stays SGLang's default (1 on CUDA, 64 x index_kpool for
# DSA models) and the pool is the one kvledger plans. The planner's own page-size rule applies
# (it asks for --page-size where the default depends on the default backend, off Hopper).
_PAGE_ONE_BACKENDS = ("triton", "flashinfer")


# HiCache's host tier (plan/engines/sglang/hicache.py): the flags that size it, and those
# that move no bytes (the write policy, the I/O kernel).
_HICACHE = {"hicache_ratio": "--hicache-ratio", "hicache_size": "--hicache-size",
            "hicache_mem_layout": "--hicache-mem-layout"}
_HICACHE_INERT = ("hicache_write_policy", "hicache_io_backend")


def _hicache(values: dict[str, Any], out: Translation, mapped: set[str]) -> None:
    """``--enable-hierarchical-cache`` and its sizes → kvledger's SGLang options; the other
    HiCache flags (storage backends, host-memory fraction) stay refused by their rule."""
    if values.get("enable_hierarchical_cache"):
        out.options["--enable-hierarchical-cache"] = None
        mapped.add("enable_hierarchical_cache")
    for dest, flag in _HICACHE.items():
        if values.get(dest) is not None:
            out.options[flag] = str(values[dest])
            mapped.add(dest)
    mapped.update(dest for dest in _HICACHE_INERT if dest in values)


def _attention_backend(values: dict[str, Any], out: Translation, mapped: set[str]) -> None:
    backend = values.get("attention_backend")
    if backend not in _PAGE_ONE_BACKENDS or any(
            values.get(k) is not None for k in ("prefill_attention_backend",
                                                "decode_attention_backend")):
        return
    mapped.add("attention_backend")
    # Carried: off Hopper it replaces SGLang's own choice (a model override's or
    # get_default_attn_backend's), so the page and ROCm's aiter factor follow it (backends.py).
    out.options["--attention-backend"] = str(backend)
    out.notes.append(f"--attention-backend {backend}: it forces no page size, so SGLang's "
                     "default stays (overrides.py _page_size_default); off Hopper it replaces "
                     "the backend SGLang would pick")


def _dsa_backends(values: dict[str, Any], out: Translation, mapped: set[str]) -> None:
    """``--dsa-prefill-backend`` / ``--dsa-decode-backend`` → the same kvledger options: the
    planner resolves the pair and its fp8 row as SGLang does, and refuses by name a value
    whose path it has not read on the GPU (plan/engines/sglang/dsa_backends.py)."""
    for dest in ("dsa_prefill_backend", "dsa_decode_backend"):
        value = values.get(dest)
        if value is None:
            continue
        mapped.add(dest)
        out.options["--" + dest.replace("_", "-")] = str(value)


# json_model_override_args keys that change neither a cache shape nor a weight: RoPE settings.
_ROPE_KEYS = frozenset({"rope_scaling", "rope_theta"})


def _rope_override(values: dict[str, Any], out: Translation, mapped: set[str]) -> None:
    """``--json-model-override-args`` that only sets RoPE keys is planned as the model's own
    config when the derived context length cannot change: SGLang's ``get_context_length``
    (utils/hf_transformers/common.py) multiplies the length by ``rope_scaling.factor`` unless
    the scaling names ``original_max_position_embeddings`` or is ``llama3``. Anything else
    stays refused by the flag's rule."""
    raw = values.get("json_model_override_args")
    if raw is None:
        return
    try:
        override = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return
    if not isinstance(override, dict) or not override or set(override) - _ROPE_KEYS:
        return
    scaling = override.get("rope_scaling")
    if scaling is not None and not (
            isinstance(scaling, dict) and ("original_max_position_embeddings" in scaling
                                           or scaling.get("rope_type") == "llama3")):
        return
    mapped.add("json_model_override_args")
    out.notes.append(f"--json-model-override-args sets only {', '.join(sorted(override))}: no "
                     "cache or weight changes, and SGLang derives the same context length "
                     "(get_context_length)")


def _kv_dtype(values: dict[str, Any], out: Translation, ctx: Context) -> None:
    dtype = values.get("kv_cache_dtype")
    if dtype is None or dtype == "auto":
        return
    mapped = _KV_DTYPES.get(str(dtype))
    if mapped is None or (ctx.kv_cache_dtypes and mapped not in ctx.kv_cache_dtypes):
        out.refused.append(f"--kv-cache-dtype {dtype} is not a KV dtype kvledger plans")
        return
    out.options["--kv-cache-dtype"] = mapped


def _dp_attention(values: dict[str, Any], out: Translation) -> None:
    """``--attn-dp-size N`` is SGLang's newer spelling of DP attention over N groups; kvledger
    plans DP attention over ``--dp-size`` groups (H4's ``enable_dp_attention``)."""
    attn_dp = values.get("attn_dp_size")
    if attn_dp is None or attn_dp == 1:
        return
    if attn_dp != (values.get("dp_size") or 1):
        out.refused.append(f"--attn-dp-size {attn_dp} differs from --dp-size; kvledger plans DP "
                           "attention over the --dp-size groups only")
        return
    out.options["--enable-dp-attention"] = None


def _speculative(values: dict[str, Any], out: Translation, ctx: Context) -> None:
    algorithm = values.get("speculative_algorithm")
    if not algorithm:
        return
    path = values.get("speculative_draft_model_path")
    method = sglang_flags.speculative_method(str(algorithm), path)
    if path and method in ("eagle", "eagle3", "draft_model") and not ctx.draft_config_given:
        _draft_path(str(path), out)
    tokens = values.get("speculative_num_steps") or values.get("speculative_num_draft_tokens")
    if tokens is None:
        tokens = 1
        out.notes.append("SGLang picks the speculative step count itself; kvledger plans the "
                         "draft's KV, which does not depend on it")
    out.options["--speculative-method"] = method
    out.options["--num-speculative-tokens"] = str(tokens)
    # speculative_hook.py _handle_eagle_family: with --speculative-eagle-topk 1 SGLang sets
    # the verify width to steps + 1 (kvledger's default); a tree (topk > 1) keeps the given
    # --speculative-num-draft-tokens, which sizes the recurrent states' speculative scratch.
    width, topk = values.get("speculative_num_draft_tokens"), values.get("speculative_eagle_topk")
    if width is not None and topk is not None and topk != 1:
        out.options["--speculative-num-draft-tokens"] = str(width)


def _draft_path(path: str, out: Translation) -> None:
    """``--speculative-draft-model-path``: SGLang reads the draft's layer count from its
    config (``sglang/draft_layers.py``), so a local directory becomes ``--draft-config
    DIR/config.json`` and a hub id ``--draft-config ID`` when its config can be read now; an
    unreadable one leaves a note and the plan says what it then leaves out."""
    from pathlib import Path

    from kvledger.cli.serve.vllm_speculative import config_readable
    from kvledger.source.resolve import is_repo_id

    where = Path(path).expanduser()
    if where.is_dir() and (where / "config.json").is_file():
        out.options["--draft-config"] = str(where / "config.json")
    elif not where.exists() and is_repo_id(path) and config_readable(path):
        out.options["--draft-config"] = path
    else:
        out.notes.append(f"--speculative-draft-model-path {path}: its config is neither in the "
                         "local HF cache nor read from the Hub; give --draft-config "
                         "CONFIG_JSON before '--' to count the draft's layers")


def _environment(env: dict[str, str], out: Translation) -> None:
    """The variables SGLang 0.5.23 reads that change what kvledger plans.

    ``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN`` (srt/environ.py, an ``EnvBool``: "true",
    "1", "yes", "y" / "false", "0", "no", "n", any case; anything else is a ValueError):
    set, a ``--context-length`` above the model's derived length is used with a warning
    instead of refused (configs/model_config.py ``_derive_context_length``)."""
    for name, value in env.items():
        if name != "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN":
            out.env_ignored.append(name)
            continue
        text = value.lower()
        if text not in ("true", "1", "yes", "y", "false", "0", "no", "n"):
            raise ServeLineError(f"{name}={value!r}: SGLang reads it as a boolean and stops "
                                 "at start-up ('is not a valid boolean value')")
        out.env[name] = value
        if text in ("true", "1", "yes", "y"):
            out.options["--allow-long-max-model-len"] = None
            out.notes.append(f"{name}={value}: a --context-length above the model's derived "
                             "length is planned, as SGLang accepts it (with a warning)")

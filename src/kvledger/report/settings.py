"""A log's settings under the planner's names: every engine spelling (vLLM's config line and
non-default args, SGLang's ServerArgs, a pasted command's flags) of a setting kvledger uses,
mapped once in a table, with the value converted to the planner's type.
"""

from __future__ import annotations

import shlex
from typing import Any

from kvledger.report.pyrepr import ReprError, parse_literal

# Every engine spelling (config line, non-default args, CLI flag without dashes) of a setting
# kvledger uses, mapped to PlanRequest's / the engine's canonical name.
_ALIASES: dict[str, str] = {
    "max_seq_len": "max_model_len", "max_model_len": "max_model_len",
    "tensor_parallel_size": "tensor_parallel_size", "tp": "tensor_parallel_size",
    "tp_size": "tensor_parallel_size", "tensor_parallel": "tensor_parallel_size",
    "pipeline_parallel_size": "pipeline_parallel_size", "pp": "pipeline_parallel_size",
    "pp_size": "pipeline_parallel_size", "pipeline_parallel": "pipeline_parallel_size",
    "data_parallel_size": "data_parallel_size", "dp": "data_parallel_size",
    "dp_size": "data_parallel_size", "data_parallel": "data_parallel_size",
    "kv_cache_dtype": "kv_cache_dtype", "cache_dtype": "kv_cache_dtype", "dtype": "dtype",
    "block_size": "block_size", "page_size": "block_size",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "mem_fraction_static": "mem_fraction_static",
    "enable_prefix_caching": "enable_prefix_caching",
    "disable_radix_cache": "disable_radix_cache",
    "max_num_seqs": "max_num_seqs", "max_running_requests": "max_running_requests",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "chunked_prefill_size": "chunked_prefill_size", "max_total_tokens": "max_total_tokens",
    "context_length": "max_model_len", "quantization": "quantization",
    "kv_cache_memory_bytes": "kv_cache_memory_bytes", "kv_cache_memory": "kv_cache_memory_bytes",
    "enforce_eager": "enforce_eager", "cpu_offload_gb": "cpu_offload_gb",
    "speculative_algorithm": "speculative_method",
    "speculative_num_draft_tokens": "num_speculative_tokens",
    "num_speculative_tokens": "num_speculative_tokens",
    "model": "model", "model_path": "model", "hf_config_path": "hf_config_path",
    "attention_backend": "attention_backend",
}
_INTS = {"max_model_len", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
         "block_size", "max_num_seqs", "max_running_requests", "max_num_batched_tokens",
         "chunked_prefill_size", "max_total_tokens", "kv_cache_memory_bytes",
         "num_speculative_tokens"}
_FLOATS = {"gpu_memory_utilization", "mem_fraction_static", "cpu_offload_gb"}
_BOOLS = {"enable_prefix_caching", "disable_radix_cache", "enforce_eager"}


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", ""):
        return True
    if text in ("false", "0", "no"):
        return False
    return None


def normalize(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = _ALIASES.get(key)
        if name is None:
            if key == "speculative_config":
                out.update(_speculative(value))
            continue
        if value is None:
            continue
        try:
            if name in _INTS:
                value = int(str(value).replace(",", "").replace("_", ""))
            elif name in _FLOATS:
                value = float(value)
            elif name in _BOOLS:
                value = _as_bool(value)
                if value is None:
                    continue
            elif name in ("dtype", "kv_cache_dtype"):
                value = str(value).removeprefix("torch.")
            elif name in ("model", "quantization", "speculative_method", "attention_backend",
                          "hf_config_path"):
                value = str(value)
        except (TypeError, ValueError):
            continue
        out[name] = value
    return out


def _speculative(value: Any) -> dict[str, Any]:
    """vLLM's speculative_config: a dict (non-default args) or SpeculativeConfig(...) repr."""
    if isinstance(value, str):
        try:
            value = parse_literal(value)
        except ReprError:
            return {}
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {}
    method = value.get("method")
    tokens = value.get("num_speculative_tokens", value.get("num_spec_tokens"))
    if method:
        out["speculative_method"] = str(method)
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        out["num_speculative_tokens"] = tokens
    if value.get("model") and "mtp" not in str(method or "").lower():
        out["speculative_model"] = str(value["model"])  # a separate draft model
    return out


def command_settings(body: str) -> dict[str, Any]:
    """``MODEL --flag value --other=value --switch`` (a pasted ``vllm serve`` / launch_server
    command; backslash continuations already joined) → raw settings."""
    try:
        words = shlex.split(body.replace("\\\n", " "), comments=False)
    except ValueError:
        words = body.split()
    out: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("-"):
            out.setdefault("model", word)  # the first positional word: the model
            i += 1
            continue
        name, _, inline = word.lstrip("-").partition("=")
        key = name.replace("-", "_")
        if inline:
            out[key] = inline
            i += 1
        elif i + 1 < len(words) and not words[i + 1].startswith("--"):
            out[key] = words[i + 1]
            i += 2
        else:
            out[key] = True
            if key.startswith("no_"):
                out[key[3:]] = False
            i += 1
    if "model_path" in out:
        out["model"] = out.pop("model_path")
    return out

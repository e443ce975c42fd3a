"""A scanned ``vllm serve`` line → kvledger ``plan --engine vllm`` options.

Each mapping cites the vLLM 0.32 code whose behaviour it reproduces. The flags not mapped here
are classified in ``vllm_flags.py``.
"""

from __future__ import annotations

from typing import Any

from kvledger.cli.serve import vllm_flags
from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.rules import ESTIMATE, INERT, KV, MAPPED
from kvledger.cli.serve.scan import Scanned
from kvledger.cli.serve.table import FlagTable
from kvledger.cli.serve.translation import Context, Translation, classify
from kvledger.cli.serve.vllm_launch_map import map_launch
from kvledger.cli.serve.vllm_speculative import map_speculative

_AUTO_FIT = (
    "--max-model-len -1/auto: vLLM fits the length to the KV memory at start-up "
    "(kv_cache_utils._auto_fit_max_model_len), which kvledger does not model; give a length"
)


def translate(scanned: Scanned, table: FlagTable, launcher: str, env: dict[str, str],
              ctx: Context) -> Translation:
    out = Translation(engine="vllm", engine_label=table.label, launcher=launcher)
    values = {item.flag.dest: item.value for item in scanned.given}  # last one wins
    kv_budget_given = ctx.kv_budget_given or bool(values.get("kv_cache_memory_bytes"))
    _model(scanned, values, out, launcher)
    if "config" in values:
        out.refused.append("--config FILE: kvledger does not read the YAML file; paste its "
                           "flags into the line")
    _simple(values, out, ctx)
    map_speculative(values, out, ctx)
    _async_scheduling(values, out)
    if values.get("attention_backend"):
        _attention_backend(str(values["attention_backend"]), out,
                           f"--attention-backend {values['attention_backend']}")
    _attention_config(values, out)
    _limit_mm_per_prompt(values, out)
    _dtype_and_quantization(values, out)
    _batch_defaults(values, out, ctx)
    _environment(env, table, out)
    mapped = {dest for dest, rule in vllm_flags.RULES.items() if rule.cls == MAPPED}
    mapped |= map_launch(values, out, env)  # LoRA, offload, KV offload and connectors
    classify(scanned, vllm_flags.RULES, out, kv_budget_given=kv_budget_given, skip=mapped)
    media = values.get("media_io_kwargs")
    if media and "pynvvideocodec" in str(media).lower():
        out.refused.append("--media-io-kwargs with the pynvvideocodec video backend reserves "
                           "GPU memory from the KV budget (gpu_ipc_memory.py), which kvledger "
                           "does not model")
    out.raise_refusals()
    return out


def _model(scanned: Scanned, values: dict[str, Any], out: Translation, launcher: str) -> None:
    """``vllm serve MODEL`` (``--model`` is moved there by vLLM's parser)."""
    if len(scanned.positionals) > 1:
        extra = " ".join(scanned.positionals[1:])
        raise ServeLineError(f"{launcher}: unrecognized arguments: {extra}")
    model = scanned.positionals[0] if scanned.positionals else None
    if launcher.endswith("api_server"):
        # entrypoints/launchers/api_server.main parses without the `serve` step that moves
        # --model to the positional slot, and serves args.model; a positional is ignored.
        if model is not None:
            raise ServeLineError(f"{launcher}: give the model as --model (this entry point "
                                 "ignores a positional model)")
        model = values.get("model")
    if not model:
        raise ServeLineError(f"{launcher}: the line names no model (vLLM would serve its "
                             "default, Qwen/Qwen3-0.6B); name it")
    out.model = model


def _simple(values: dict[str, Any], out: Translation, ctx: Context) -> None:
    copy = {
        "tensor_parallel_size": "--tensor-parallel-size",
        "pipeline_parallel_size": "--pipeline-parallel-size",
        "data_parallel_size": "--data-parallel-size",
        "gpu_memory_utilization": "--gpu-memory-utilization",
        "block_size": "--block-size",
        "max_num_seqs": "--max-num-seqs",
        "max_num_batched_tokens": "--max-num-batched-tokens",
    }
    for dest, flag in copy.items():
        if values.get(dest) is not None:
            out.options[flag] = str(values[dest])
    if values.get("allow_deprecated_quantization"):
        # ModelConfig._verify_quantization: a deprecated method (fbgemm_fp8) then loads.
        out.options["--allow-deprecated-quantization"] = None
    if values.get("enable_expert_parallel"):
        # Whole experts over the DP × TP GPUs (plan/engines/vllm/experts.py).
        out.options["--enable-expert-parallel"] = None
    if values.get("revision") is not None:  # the config is read at that revision (source/)
        out.options["--revision"] = str(values["revision"])
    length = values.get("max_model_len")
    if length == -1:
        out.refused.append(_AUTO_FIT)
    elif length is not None:
        out.options["--max-model-len"] = str(length)
    budget = values.get("kv_cache_memory_bytes")
    if budget:
        out.options["--kv-cache-memory-bytes"] = str(budget)
    elif budget == 0:
        out.notes.append("--kv-cache-memory-bytes 0 means 'not set' to vLLM (gpu_worker.py: "
                         "`if kv_cache_memory_bytes := …`): the GPU budget applies")
    dtype = values.get("kv_cache_dtype")
    if dtype is not None and dtype != "auto":
        if ctx.kv_cache_dtypes and dtype not in ctx.kv_cache_dtypes:
            out.refused.append(f"--kv-cache-dtype {dtype} is not a KV dtype kvledger plans "
                               f"({', '.join(ctx.kv_cache_dtypes)})")
        else:
            out.options["--kv-cache-dtype"] = str(dtype)
    caching = values.get("enable_prefix_caching")
    if caching is not None:
        out.options["--enable-prefix-caching" if caching else "--no-enable-prefix-caching"] = None
    if values.get("enforce_eager"):
        # gpu_worker.determine_available_memory: no CUDA graphs → no graph estimate is taken
        # from the KV budget.
        out.options["--cuda-graph-bytes"] = "0"
        out.notes.append("--enforce-eager: no CUDA graphs, so no graph memory is reserved")
    if values.get("enable_chunked_prefill") is False and values.get(
            "max_num_batched_tokens") is None:
        out.refused.append(
            "--no-enable-chunked-prefill without --max-num-batched-tokens: vLLM then raises "
            "max_num_batched_tokens to max_model_len (arg_utils._set_default_max_num_seqs_and_"
            "batched_tokens_args); give --max-num-batched-tokens explicitly"
        )


def _async_scheduling(values: dict[str, Any], out: Translation) -> None:
    """``--async-scheduling``: what vLLM 0.32 / 0.33 do by default wherever it is allowed
    (config/vllm.py ``VllmConfig.__post_init__``: ``async_scheduling`` None becomes True
    unless an incompatible option is set), so it changes no memory kvledger plans. Given
    explicitly with an incompatible option, vLLM stops ("Async scheduling is not supported
    by the V1 model runner with …"); ``--no-async-scheduling`` keeps one batch in flight
    instead of two or pp + 1 (``max_concurrent_batches``), which kvledger does not plan."""
    from kvledger.plan.engines.vllm.resolve import _NO_ASYNC_SPEC_METHODS

    given = values.get("async_scheduling")
    if given is None:
        return
    if given is False:
        out.refused.append("--no-async-scheduling keeps one batch in flight instead of the "
                           "two (or pp + 1) vLLM overlaps by default (max_concurrent_batches), "
                           "which kvledger does not plan; drop it to plan vLLM's default")
        return
    method = str(out.options.get("--speculative-method") or "")
    if method in _NO_ASYNC_SPEC_METHODS and method != "ngram":
        # 0.32 and 0.33 alike: these methods run on the V1 model runner (medusa,
        # mlp_speculator, suffix) or turn async scheduling off (0.32's ngram).
        out.refused.append(f"--async-scheduling with speculative method {method}: vLLM stops "
                           f"('Async scheduling is not supported by the V1 model runner with "
                           f"{method}-based speculative decoding'); drop --async-scheduling")
        return
    out.ignore("default", "--async-scheduling")
    out.notes.append("--async-scheduling: vLLM's default where allowed (VllmConfig turns it "
                     "on unless an option forbids it); no memory changes")


# vLLM 0.33 config/attention.py AttentionConfig: its fields and defaults (a @config dataclass
# with pydantic extra="forbid", config/utils.py, so any other key stops vLLM at start-up).
_ATTENTION_DEFAULTS: dict[str, Any] = {
    "backend": None, "minimax_m3_msa_decode_backend": None, "backend_per_kind": {},
    "flash_attn_version": None, "flash_attn_max_num_splits_for_cuda_graph": 32,
    "tokenspeed_mla_min_split_kv": 1, "tq_max_kv_splits_for_cuda_graph": 32,
    "use_trtllm_attention": None, "disable_flashinfer_q_quantization": False,
    "mla_prefill_backend": None, "use_prefill_query_quantization": False,
    "trtllm_ragged_backend": "trtllm-gen", "indexer_kv_dtype": "auto",
    "indexer_sparse_logits": False, "indexer_tp_shard_min_rows": 65536,
    "minimax_m3_indexer_cp": False, "hisparse_config": None, "use_non_causal": False,
    "sparse_mla_force_mqa": False, "sparse_mla_prefill_workspace_factor": None,
    "flex_attn_block_m": None, "flex_attn_block_n": None, "flex_attn_q_block_size": None,
    "flex_attn_kv_block_size": None,
}
# Of those, the ones that change the KV cache's layout or size (the rest pick kernels or
# their workspaces: reserves kvledger estimates).
_ATTENTION_KV = {
    "backend_per_kind": "selects attention backends per layer kind, whose block sizes and "
                        "KV layouts vLLM then uses",
    "indexer_kv_dtype": "stores the sparse-attention indexer's K cache in another dtype",
    "hisparse_config": "offloads sparse-MLA KV to host memory (HiSparse)",
}
# Keys older releases had, with what replaced them.
_ATTENTION_RENAMED = {"use_fp4_indexer_cache": "indexer_kv_dtype"}


def _bool_text(value: Any) -> Any:
    """A dotted ``--attention-config.key False`` arrives as the string "False"."""
    if isinstance(value, str) and value in ("True", "False", "true", "false"):
        return value.lower() == "true"
    return value


def _attention_backend(name: str, out: Translation, given: str) -> None:
    """A selected backend (``--attention-backend`` / ``--attention-config.backend``; vLLM
    0.33 arg_utils: both set ``AttentionConfig.backend``): planned with its block sizes
    (the engine checks it as vLLM does), except another platform's backends."""
    upper = name.upper()
    if upper.startswith("XPU_") or upper == "TORCH_SDPA":
        # ROCm backends go to the planner: planned on an AMD --gpu, refused on CUDA.
        platform = "XPU" if upper.startswith("XPU_") else "CPU"
        out.refused.append(f"{given}: a {platform} backend, whose kernels and block sizes "
                           "kvledger does not model (it plans CUDA and ROCm GPUs); drop it "
                           "to plan vLLM's own choice")
        return
    if "--attention-backend" in out.options:
        # EngineArgs.create_engine_config, even when the two name the same backend.
        raise ServeLineError(f"{out.launcher}: vLLM stops: 'attention_backend and "
                             "attention_config.backend are mutually exclusive'; keep one")
    out.options["--attention-backend"] = upper


def _attention_config(values: dict[str, Any], out: Translation) -> None:
    """``--attention-config`` / ``--attention-config.KEY V`` (``-ac``), key by key."""
    config = values.get("attention_config")
    if config is None:
        return
    if not isinstance(config, dict):
        raise ServeLineError(f"{out.launcher}: --attention-config must be a JSON object")
    for key, raw in config.items():
        key = str(key).replace("-", "_")
        value = _bool_text(raw)
        if key not in _ATTENTION_DEFAULTS:
            instead = _ATTENTION_RENAMED.get(key)
            hint = f" ({instead} replaced it)" if instead else ""
            out.refused.append(
                f"--attention-config {key}: not an AttentionConfig field in "
                f"{out.engine_label}{hint}; vLLM stops at start-up ('Extra inputs are not "
                "permitted'); drop it")
        elif value == _ATTENTION_DEFAULTS[key]:
            out.ignore("default", f"--attention-config.{key}")
        elif key == "backend":
            _attention_backend(str(value), out, f"--attention-config backend {value}")
        elif key in _ATTENTION_KV:
            out.refused.append(f"--attention-config {key} {_ATTENTION_KV[key]}, which "
                               "kvledger does not model")
        else:
            out.ignore(ESTIMATE, f"--attention-config.{key}")


def _limit_mm_per_prompt(values: dict[str, Any], out: Translation) -> None:
    """``--limit-mm-per-prompt``: vLLM 0.33 sizes the encoder's profiling run from these
    limits (``MultiModalConfig.get_limit_per_prompt``: an unlisted modality is 999), which
    changes only the activation peak kvledger estimates. Only zeros change the weights: a
    tower is not built when every modality it serves has limit 0
    (model_executor/models/interfaces.py ``_mark_tower_model``; the vision tower serves
    image and video), as ``--language-model-only`` does for all of them."""
    limits = values.get("limit_mm_per_prompt")
    if limits is None:
        return
    if not isinstance(limits, dict):
        raise ServeLineError(f"{out.launcher}: --limit-mm-per-prompt must be a JSON object")

    def count(value: Any) -> Any:
        return value.get("count", 999) if isinstance(value, dict) else value

    zero = {str(k) for k, v in limits.items() if count(v) == 0}
    dropped = [name for name, served in (("vision", {"image", "video"}),
                                         ("audio", {"audio"})) if served <= zero]
    if dropped:
        # 0.34 config/multimodal.py MultiModalConfig.language_model_only: "Equivalent to
        # setting `--limit-mm-per-prompt` to 0 for every modality". Whether these zeros are
        # every modality of the model is known once its config is read (checks.py).
        out.options["--language-model-only"] = None
        out.requires["mm_zero"] = ",".join(sorted(zero))
        out.requires["mm_dropped_towers"] = ",".join(dropped)
        return
    out.ignore(ESTIMATE, "--limit-mm-per-prompt")


def _dtype_and_quantization(values: dict[str, Any], out: Translation) -> None:
    """Checked against the model once its config is read (``checks.py``)."""
    dtype = values.get("dtype")
    if dtype is not None and dtype != "auto":
        # ModelConfig dtype names: "half" = float16, "float" = float32.
        out.requires["dtype"] = {"half": "float16", "float": "float32"}.get(dtype, str(dtype))
    quantization = values.get("quantization")
    if quantization is not None:
        out.requires["quantization"] = str(quantization)


def _batch_defaults(values: dict[str, Any], out: Translation, ctx: Context) -> None:
    """vLLM's own defaults where kvledger's differ, applied unless the user sets them.

    Not ``gpu_memory_utilization``: kvledger's default is already vLLM 0.32's (0.92,
    CacheConfig), and left unset the budget line says it is the default, not a given value."""
    tp, pp = values.get("tensor_parallel_size") or 1, values.get("pipeline_parallel_size") or 1
    picked = vllm_flags.batch_defaults(ctx.gpu_total_bytes, ctx.gpu_name, tp * pp)
    mode = values.get("performance_mode")
    if mode not in (None, "balanced"):
        out.ignore(ESTIMATE, "--performance-mode")  # CUDA-graph sizes follow the mode
    doubled = mode == "throughput"
    unset = [d for d in ("max_num_seqs", "max_num_batched_tokens") if values.get(d) is None]
    if not unset:
        return
    if picked is None:
        out.notes.append(
            "vLLM picks " + " and ".join("--" + d.replace("_", "-") for d in unset) +
            " from the GPU (256/2048 below 70 GiB or on an A100, 1024/8192 from 70 GiB, "
            "1024/16384 from 160 GiB; ×2 with --performance-mode throughput); kvledger's "
            "defaults are used — give --gpu or set them in the line")
        return
    factor = 2 if doubled else 1
    seqs, tokens = picked
    given_tokens = values.get("max_num_batched_tokens")
    if values.get("max_num_seqs") is None:
        # EngineArgs._set_default_max_num_seqs_and_batched_tokens: an unset max_num_seqs is
        # min(default, max_num_batched_tokens), so a small given token budget is no refusal.
        batched = given_tokens if isinstance(given_tokens, int) else tokens * factor
        out.defaults["--max-num-seqs"] = str(min(seqs * factor, batched))
    if given_tokens is None:
        out.defaults["--max-num-batched-tokens"] = str(tokens * factor)


def _environment(env: dict[str, str], table: FlagTable, out: Translation) -> None:
    for name, value in env.items():
        rule = vllm_flags.ENV_RULES.get(name)
        if rule is None:
            if name.startswith("VLLM_") and name not in table.env:
                out.notes.append(f"{name} is not a {table.label} environment variable")
            out.env_ignored.append(name)
            continue
        if value in rule.same:
            out.env_ignored.append(name)
            continue
        out.env[name] = value
        if rule.cls == KV:
            out.refused.append(f"{name}={value} {rule.why}, which kvledger does not model")
        elif rule.cls == ESTIMATE:
            out.ignore(ESTIMATE, name)
        elif rule.cls == INERT:  # pragma: no cover - no inert rows today
            out.env_ignored.append(name)
        elif name == "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS":
            try:
                applied = bool(int(value))  # envs.py: bool(int(os.getenv(..., "1")))
            except ValueError:
                raise ServeLineError(f"{name}={value!r}: vLLM reads it with int() and would "
                                     "fail to start") from None
            if not applied:
                out.options.setdefault("--cuda-graph-bytes", "0")
                out.notes.append(f"{name}=0: the CUDA-graph estimate is not taken from the "
                                 "KV budget")
        elif name in ("VLLM_ROCM_USE_AITER", "VLLM_ROCM_USE_AITER_MLA"):
            # envs.py: os.getenv(NAME, default).lower() in ("true", "1"); AITER_MLA defaults
            # to "True". rocm_aiter_ops.is_mla_enabled: both on.
            aiter = env.get("VLLM_ROCM_USE_AITER", "False").lower() in ("true", "1")
            mla = env.get("VLLM_ROCM_USE_AITER_MLA", "True").lower() in ("true", "1")
            if aiter and mla:
                out.options["--rocm-aiter-mla"] = None
            else:
                out.options.pop("--rocm-aiter-mla", None)
        elif name == "HF_HUB_OFFLINE":
            if value.strip().lower() in ("1", "true", "yes", "on"):
                out.options["--offline"] = None
        elif name == "VLLM_ALLOW_LONG_MAX_MODEL_LEN":
            # envs.py reads it as os.environ.get(...).strip().lower() in ("1", "true").
            if value.strip().lower() not in ("1", "true"):
                continue
            out.options["--allow-long-max-model-len"] = None
            out.notes.append(f"{name}={value}: a --max-model-len above the config's is "
                             "planned, as vLLM accepts it (with a warning)")

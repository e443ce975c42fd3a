"""A planned ``PlanRequest`` → the engine's launch line that plans the same (``fit``'s
answer to paste): the reverse of ``vllm_map`` / ``sglang_map``.

Every flag is looked up in the engine's own flag table (``table.load``: the release's parser
dump), so the line spells it as that release does; a flag the table lacks is an error, not
a guess. What the request holds that no engine flag carries (kvledger's reserve estimates,
model-local declarations) is listed in ``Line.kvledger_options``: pass those to
``kvledger plan`` before ``--`` to plan the same again.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from kvledger.cli.serve.table import FlagTable, load
from kvledger.records import field, record

# vLLM flags of the fields a serve line carries (vllm_map._simple reads them back), with the
# value that means "not set" (omitted).
_VLLM_FIELDS = (
    ("tensor_parallel_size", 1), ("pipeline_parallel_size", 1), ("data_parallel_size", 1),
    ("max_model_len", None), ("max_num_seqs", None), ("gpu_memory_utilization", None),
    ("block_size", None), ("kv_cache_dtype", "auto"),
)
# SGLang server arguments → the request's shared field (sglang_map._COPY, reversed).
_SGLANG_SHARED = (("tp_size", "tensor_parallel_size", 1), ("pp_size", "pipeline_parallel_size", 1),
                  ("dp_size", "data_parallel_size", 1), ("context_length", "max_model_len", None),
                  ("page_size", "block_size", None))
_SGLANG_OPTIONS = ("mem_fraction_static", "max_running_requests", "max_total_tokens",
                   "chunked_prefill_size", "swa_full_tokens_ratio", "mamba_full_memory_ratio",
                   "mamba_ssm_dtype", "hicache_ratio", "hicache_size", "hicache_mem_layout",
                   "attention_backend", "dsa_prefill_backend", "dsa_decode_backend")
_SGLANG_SWITCHES = ("disable_radix_cache", "disable_overlap_schedule", "enable_dp_attention",
                    "enable_hierarchical_cache")
_RESERVES = (("activation_peak_bytes", "--activation-peak-bytes"),
             ("cuda_graph_bytes", "--cuda-graph-bytes"), ("non_torch_bytes", "--non-torch-bytes"))


class EmitError(ValueError):
    """The request holds something the engine's line cannot say."""


@record(frozen=True)
class Line:
    argv: tuple[str, ...]  # the launch command, environment assignments first
    kvledger_options: tuple[str, ...] = ()  # to pass before '--' (module docstring)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def text(self) -> str:
        return shlex.join(self.argv)

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "argv": list(self.argv),
                "kvledger_options": list(self.kvledger_options), "notes": list(self.notes)}


def _flag(table: FlagTable, dest: str, *, negative: bool = False) -> str:
    found = table.by_dest.get(dest)
    if found is None:
        raise EmitError(f"{table.label} has no flag for {dest}")
    if negative:
        # The release's own spelling: vLLM 0.33's --disable-x (EnableDisableAction, listed
        # before the hidden --no-enable-x), 0.32's --no-x.
        spelled = ([o for o in found.options if o in found.negatives]
                   if found.kind == "enable_disable"
                   else [o for o in found.options if o.startswith("--no-")])
        if not spelled:
            raise EmitError(f"{table.label} has no negative flag for {dest}")
        return spelled[0]
    return found.name


def serve_line(model: str, request: Any, gpu_total_bytes: int | None = None,
               gpu_name: str | None = None) -> Line:
    """The line for ``request.engine`` (vllm or sglang); ``EmitError`` for another."""
    if request.engine == "vllm":
        return _vllm(model, request, gpu_total_bytes, gpu_name)
    if request.engine == "sglang":
        return _sglang(model, request)
    raise EmitError(f"engine {request.engine!r} has no launch line kvledger writes")


def _common_kvledger(request: Any) -> list[str]:
    out: list[str] = []
    for name, flag in _RESERVES:
        value = getattr(request, name)
        if value is not None and not (name == "cuda_graph_bytes" and value == 0 and
                                      request.engine == "vllm"):
            out += [flag, str(value)]
    if request.model_local_kv:
        out.append("--model-local-kv … (the declarations fit was given)")
    return out


def _vllm(model: str, request: Any, total: int | None, name: str | None) -> Line:
    from kvledger.cli.serve.vllm_flags import batch_defaults

    table = load("vllm", request.engine_release)
    env: list[str] = []
    argv = ["vllm", "serve", model]
    for dest, unset in _VLLM_FIELDS:
        value = getattr(request, dest)
        if value is not None and value != unset:
            argv += [_flag(table, dest), f"{value:g}" if isinstance(value, float) else str(value)]
    if request.enable_expert_parallel:
        argv.append(_flag(table, "enable_expert_parallel"))
    if request.enable_prefix_caching is not None:
        argv.append(_flag(table, "enable_prefix_caching",
                          negative=not request.enable_prefix_caching))
    picked = batch_defaults(total, name, request.tensor_parallel_size *
                            request.pipeline_parallel_size)
    if picked is None or picked[1] != request.max_num_batched_tokens:
        argv += [_flag(table, "max_num_batched_tokens"), str(request.max_num_batched_tokens)]
    if request.speculative_method:
        config = {"method": request.speculative_method,
                  "num_speculative_tokens": request.num_speculative_tokens}
        argv += [_flag(table, "speculative_config"), json.dumps(config, separators=(",", ":"))]
    if request.cuda_graph_bytes == 0:  # vllm_map: --enforce-eager → no CUDA-graph reserve
        argv.append(_flag(table, "enforce_eager"))
    argv += _vllm_connector(table, getattr(request, "vllm_launch", None))
    if request.allow_long_max_model_len:
        env.append("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
    return Line((*env, *argv), tuple(_common_kvledger(request)))


def _vllm_connector(table: FlagTable, launch: Any) -> list[str]:
    """The KV connector and CPU tier the plan sized (``--kv-transfer-config``,
    ``--kv-offloading-size``/``--kv-offloading-backend``) and the extensible-cache switch that
    decides the budget beside a connector (vllm_launch_map reads them back)."""
    if launch is None:
        return []
    out: list[str] = []
    if launch.kv_transfer_config is not None:
        # The JSON as given, compacted (vLLM parses it with json.loads).
        try:
            text = json.dumps(json.loads(launch.kv_transfer_config), separators=(",", ":"))
        except json.JSONDecodeError:
            text = launch.kv_transfer_config
        out += [_flag(table, "kv_transfer_config"), text]
    if launch.kv_offloading_size is not None:
        out += [_flag(table, "kv_offloading_size"), f"{launch.kv_offloading_size:g}"]
        if launch.kv_offloading_backend != "native":
            out += [_flag(table, "kv_offloading_backend"), launch.kv_offloading_backend]
    extensible = getattr(launch, "enable_extensible_kv_cache", None)
    if extensible is not None:
        out.append(_flag(table, "enable_extensible_kv_cache", negative=not extensible))
    return out


def _sglang(model: str, request: Any) -> Line:
    from kvledger.cli.serve.sglang_map import _KV_DTYPES

    table = load("sglang", request.engine_release)
    argv = ["python", "-m", "sglang.launch_server", _flag(table, "model_path"), model]
    notes: list[str] = []
    for dest, attr, unset in _SGLANG_SHARED:
        value = getattr(request, attr)
        if value is not None and value != unset:
            argv += [_flag(table, dest), str(value)]
    if request.kv_cache_dtype != "auto":
        spelled = next((k for k, v in _KV_DTYPES.items() if v == request.kv_cache_dtype), None)
        if spelled is None:
            raise EmitError(f"SGLang has no --kv-cache-dtype for {request.kv_cache_dtype}")
        argv += [_flag(table, "kv_cache_dtype"), spelled]
    options = request.sglang
    for dest in _SGLANG_OPTIONS if options is not None else ():
        value = getattr(options, dest)
        if value is not None:
            argv += [_flag(table, dest), f"{value:g}" if isinstance(value, float) else str(value)]
    if options is not None and options.cuda_graph_max_bs is not None:
        # kvledger's --cuda-graph-max-bs is SGLang 0.5.23's decode one (sglang_map._COPY).
        argv += [_flag(table, "cuda_graph_max_bs_decode"), str(options.cuda_graph_max_bs)]
    for dest in _SGLANG_SWITCHES if options is not None else ():
        if getattr(options, dest):
            argv.append(_flag(table, dest))
    if request.speculative_method:
        notes.append("speculative decoding is planned but not written into the line: add "
                     "SGLang's --speculative-algorithm and its draft flags")
    return Line(tuple(argv), tuple(_common_kvledger(request)), tuple(notes))

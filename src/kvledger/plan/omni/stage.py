"""One vLLM-Omni stage as one vLLM plan: its part of the checkpoint, its request, its plan
(``kvledger.plan.omni.planner`` says the rules; ``split`` plans the same way)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger import records
from kvledger.errors import ConfigError, KvledgerError
from kvledger.plan.omni.deploy import StageDeploy
from kvledger.plan.omni.pipelines import StagePart
from kvledger.plan.omni.result import LocalDeclaration
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PlanResult

CARRIED_KEYS = ("quantization_config", "torch_dtype")


def stage_part(config: Mapping[str, Any], part: StagePart) -> dict[str, Any]:
    """The sub-config ``part`` builds from, with the checkpoint's carried keys."""
    if part.hf_config_name is None:
        return dict(config)
    sub = config.get(part.hf_config_name)
    if not isinstance(sub, Mapping):
        raise ConfigError(f"stage {part.stage_id} ({part.role}) builds from the checkpoint's "
                          f"{part.hf_config_name}, which its config does not hold")
    out = dict(sub)
    for key in CARRIED_KEYS:
        if key in config and key not in out:
            out[key] = config[key]
    return out


def stage_request(base: PlanRequest, stage: StageDeploy, release: str, local: list[Any],
                   max_num_seqs: int | None = None, util: float | None = None) -> PlanRequest:
    charged = tuple(n for n in base.model_local_already_charged
                    if any((x[1] if isinstance(x, tuple) else x).name == n for x in local))
    given: dict[str, Any] = {
        "engine": "vllm", "engine_release": release,
        "gpu_memory_utilization": util if util is not None else stage.gpu_memory_utilization,
        "max_num_seqs": max_num_seqs or stage.max_num_seqs,
        "max_num_batched_tokens": stage.max_num_batched_tokens,
        "max_model_len": stage.max_model_len,
        "enable_prefix_caching": stage.enable_prefix_caching,
        "kv_cache_dtype": stage.kv_cache_dtype,
        "tensor_parallel_size": stage.tensor_parallel_size,
        "concurrency": None,
    }
    given = {k: v for k, v in given.items() if v is not None}
    if stage.enforce_eager or stage.cudagraph_none:
        given["cuda_graph_bytes"] = 0  # no graphs are captured
    fields = {f.name: getattr(base, f.name) for f in records.fields(base)}
    fields.update(given)
    fields.update(model_local_kv=tuple(local), model_local_already_charged=charged,
                  model_local_stages=())
    if "max_num_seqs" not in given:  # resolved again from the stage's token budget
        fields["max_num_seqs"] = None
    return PlanRequest(**fields)


def plan_stage(part: dict[str, Any], request: PlanRequest,
               label: str = "<dict>") -> tuple[PlanResult | None, str]:
    """The stage's plan (``label``: the checkpoint and its part, as the plan names its model),
    or None with the refusal's words."""
    from kvledger.plan.api import plan_model
    from kvledger.source.model_source import ModelSource

    try:
        return plan_model(ModelSource(label, part, location=label), request), ""
    except (KvledgerError, ValueError) as exc:
        return None, f"refused: {exc}"


def no_kv_rows(local: list[Any], max_num_seqs: int) -> tuple[LocalDeclaration, ...]:
    rows = []
    for item in local:
        spec = item[1] if isinstance(item, tuple) else item
        rows.append(LocalDeclaration(spec.name, str(spec.rows), spec.row_count(max_num_seqs),
                                     spec.bytes_per_row, spec.peak_bytes(max_num_seqs)))
    return tuple(rows)

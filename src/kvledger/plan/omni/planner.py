"""``plan_omni``: every stage of a vLLM-Omni deployment planned as the vLLM engine it is.

A vLLM-Omni deployment (``kvledger.plan.omni.deploy``) runs one vLLM engine per stage, each
with its own ``gpu_memory_utilization`` *as a fraction of the whole device*. For each stage:

1. **Its model part** — the checkpoint's sub-config the stage builds from
   (``kvledger.plan.omni.pipelines``: thinker_config, talker_config, …). The checkpoint's
   top-level ``quantization_config`` and ``torch_dtype`` are carried into a part that states
   none (vLLM reads both from the whole config).
2. **Its plan** — ``plan_model`` (vLLM's layout, its public entry point) at the stage's device,
   fraction, ``max_num_seqs``, ``max_num_batched_tokens``, ``max_model_len``, prefix caching
   and tensor parallel size; no CUDA-graph reserve for an eager stage. The release: vLLM-Omni
   0.30 runs on vLLM 0.30, which kvledger reproduces (releases/v0_30.py), so the stages are
   planned as 0.30 (a release the caller pins is kept).
   ``llm_generation`` stages hold no paged KV: ``plan`` is None with the reason.
3. **Its model-local declarations** (seed A) — inside that stage's budget, the
   ``MAX_NUM_SEQS`` rows counted at the stage's own ``max_num_seqs``: vLLM-Omni itself only
   reports them (``vllm_omni/worker/gpu_model_runner.py`` ``_report_model_local_kv``) and
   subtracts nothing. A declaration sits on the stage ``model_local_kv_stages`` names, else
   on stage 0, with a warning.

Then the per-device admission check (``kvledger.plan.omni.admission``) and, with
``concurrency``, per device the smallest fraction (in hundredths, as deploy files write them)
of each stage that plans at least that many ``max_model_len`` requests — and whether those
fractions, with the reserves, fit the device.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvledger.errors import DeployFileError
from kvledger.plan.omni.admission import Demand, admit, graph_reserve
from kvledger.plan.omni.deploy import OmniDeploy, StageDeploy, load_deploy
from kvledger.plan.omni.pipelines import LLM_AR, Pipeline, StagePart, find_pipeline
from kvledger.plan.omni.result import DeviceSplit, LocalDeclaration, OmniPlan, StagePlan
from kvledger.plan.omni.stage import no_kv_rows, plan_stage, stage_part, stage_request
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PlanResult

# The vLLM release the vllm-omni 0.30.0 package runs on (its requirement as the team's issue
# states it; the package metadata was not re-read here).
OMNI_VLLM = "0.30.0"


# -- inputs ------------------------------------------------------------------------------------


def _config(model: Any) -> tuple[dict[str, Any], str]:
    if isinstance(model, Mapping):
        return dict(model), str(model.get("_name_or_path") or "config")
    from kvledger.source.model_source import ModelSource
    from kvledger.source.resolve import load_source

    if isinstance(model, ModelSource):
        return dict(model.config), model.label
    source = load_source(model)
    return dict(source.config), source.label


def _release(request: PlanRequest) -> tuple[str, list[str]]:
    """The vLLM release to plan stages with, and the warning that says why."""
    from kvledger.plan.engines.base import get_layout

    layout = get_layout("vllm", request.engine_release)
    if request.engine_release is not None:
        assert layout.release is not None  # vLLM has releases
        note = (f"{layout.release_note}; every stage is planned as {layout.release.short}"
                if layout.release_note else "")
        return layout.release.version, [note] if note else []
    if OMNI_VLLM in layout.releases:  # vLLM-Omni's own base, a release kvledger reproduces
        return OMNI_VLLM, []
    oldest = min(layout.releases.values(),
                 key=lambda r: tuple(int(p) for p in r.version.split(".") if p.isdigit()))
    return oldest.version, [
        f"vLLM-Omni 0.30 runs on vLLM {OMNI_VLLM}, which kvledger does not reproduce; every "
        f"stage is planned as {oldest.short}, the oldest (closest) release it knows — pin "
        "another with --engine vllm==X"]


def _capacity(request: PlanRequest) -> tuple[int, str, str]:
    """(device total bytes, its name, the vLLM-Omni platform it runs as)."""
    if request.gpu is not None:
        from kvledger.plan.gpus import gpu_preset

        preset = gpu_preset(request.gpu)
        return preset.total_bytes, preset.name, "rocm" if preset.vendor == "amd" else "cuda"
    if request.gpu_total_bytes is not None:
        return request.gpu_total_bytes, "GPU", "cuda"
    raise ValueError("--omni-deploy sizes each stage as a fraction of its device: pass a GPU "
                     "(gpu preset or gpu_total_bytes)")


def _check_request(request: PlanRequest) -> None:
    if request.engine != "vllm":
        raise ValueError(f"every vLLM-Omni stage is a vLLM engine: engine must be vllm, got "
                         f"{request.engine!r}")
    if request.kv_cache_memory_bytes is not None:
        raise ValueError("a vLLM-Omni deployment gives each stage a fraction of its device "
                         "(gpu_memory_utilization in the deploy file), not a KV pool: drop "
                         "kv_cache_memory_bytes and name the GPU")
    if request.gpu_memory_utilization is not None:
        raise ValueError("the deploy file sets each stage's gpu_memory_utilization: drop the "
                         "request's (edit the deploy file to try another split)")


def _local_by_stage(request: PlanRequest, stages: Mapping[str, int], known: Sequence[int],
                    warnings: list[str]) -> dict[int, list[Any]]:
    from kvledger.plan.model_local import declarations

    out: dict[int, list[Any]] = {}
    names = set()
    for owner, spec in declarations(request):
        names.add(spec.name)
        stage = stages.get(spec.name)
        if stage is None:
            stage = known[0]
            warnings.append(f"model-local declaration {spec.name!r} placed on stage {stage} "
                            f"(the first); --model-local-kv-stage {spec.name}=K places it on "
                            "stage K")
        elif stage not in known:
            raise ValueError(f"model-local declaration {spec.name!r} is placed on stage "
                             f"{stage}, which the deploy file does not define (stages "
                             f"{', '.join(map(str, known))})")
        out.setdefault(stage, []).append(spec if owner is None else (owner, spec))
    unknown = sorted(set(stages) - names)
    if unknown:
        raise ValueError(f"--model-local-kv-stage names no declaration: {', '.join(unknown)}")
    return out


# -- the entry point ---------------------------------------------------------------------------


def plan_omni(
    model: Any,
    deploy: str | OmniDeploy,
    request: PlanRequest | None = None,
    *,
    model_local_kv_stages: Mapping[str, int] | None = None,
    platform: str | None = None,
) -> OmniPlan:
    """Plan every stage of ``deploy`` (a path or an ``OmniDeploy``) for ``model`` (catalog id,
    config path, model directory or config dict) on the GPU ``request`` names
    (``request.concurrency`` asks for the split). The module docstring says how."""
    request = request or PlanRequest()
    _check_request(request)
    capacity, gpu_name, gpu_platform = _capacity(request)
    if not isinstance(deploy, OmniDeploy):
        deploy = load_deploy(deploy, platform=platform or gpu_platform)
    config, label = _config(model)
    pipeline = find_pipeline(config, deploy.pipeline)
    release, warnings = _release(request)
    known = [s.stage_id for s in deploy.stages]
    local = _local_by_stage(request, dict(model_local_kv_stages or {}), known, warnings)
    stages: list[StagePlan] = []
    for stage in deploy.stages:
        stages.append(_one_stage(config, label, pipeline, stage, request, release,
                                 local.get(stage.stage_id, []), capacity, warnings))
    admission = admit([Demand(s.stage_id, _devices(s, warnings), s.gpu_memory_utilization,
                              s.graph_reserve_bytes) for s in stages], capacity)
    split: tuple[DeviceSplit, ...] = ()
    if request.concurrency is not None:
        from kvledger.plan.omni.split import split_for

        split = split_for(config, label, pipeline, deploy, request, release, local, capacity,
                          stages, request.concurrency)
    return OmniPlan(model=label, deploy=deploy.path, pipeline=pipeline.name,
                    platform=deploy.platform, gpu=gpu_name, capacity_bytes=capacity,
                    engine_release=release, stages=tuple(stages), admission=admission,
                    split=split, warnings=tuple(dict.fromkeys(warnings)))


def _devices(stage: StagePlan, warnings: list[str]) -> tuple[int, ...]:
    if stage.devices:
        return stage.devices
    warnings.append(f"stage {stage.stage_id} states no devices: counted on device 0 "
                    "(vLLM-Omni's first visible device)")
    return (0,)


def _one_stage(config: Mapping[str, Any], label: str, pipeline: Pipeline, stage: StageDeploy,
               base: PlanRequest, release: str, local: list[Any], capacity: int,
               warnings: list[str]) -> StagePlan:
    part = pipeline.stage(stage.stage_id)
    if part is None:
        raise DeployFileError(f"the deploy file's stage {stage.stage_id} is not a stage of "
                              f"the {pipeline.name} pipeline (stages "
                              f"{', '.join(str(s.stage_id) for s in pipeline.stages)})")
    if stage.num_replicas != 1:
        raise ValueError(f"stage {stage.stage_id}: num_replicas {stage.num_replicas}: kvledger "
                         "does not read how vLLM-Omni places replicas on devices")
    request = stage_request(base, stage, release, local)
    util, util_source = _utilization(stage, request)
    if stage.devices and len(stage.devices) != stage.tensor_parallel_size:
        warnings.append(f"stage {stage.stage_id}: {len(stage.devices)} device(s) for "
                        f"tensor_parallel_size {stage.tensor_parallel_size}; admission counts "
                        "the stated devices, the plan the tensor-parallel ranks")
    plan: PlanResult | None = None
    reason: str | None = None
    rows: tuple[LocalDeclaration, ...] = ()
    if part.execution_type == LLM_AR:
        warnings.append("each stage's weights are estimated from its part's parameter count "
                        "(kvledger does not split the checkpoint's tensors by stage)")
        plan, refused = plan_stage(stage_part(config, part), request, _part_label(label, part))
        reason = refused or None
    else:
        reason = (f"{part.role} runs as {part.execution_type} and holds no paged KV: "
                  + (part.no_kv_basis or "assumed, not read from its model file (a "
                     "generation stage's model usually builds no vLLM Attention layer)"))
        rows = no_kv_rows(local, request.max_num_seqs)
        declared = sum(r.peak_bytes for r in rows)
        if declared > int(capacity * util):
            warnings.append(f"stage {stage.stage_id}'s model-local caches ({declared:,} B) "
                            f"exceed its fraction of the device ({int(capacity * util):,} B)")
    return StagePlan(
        stage_id=stage.stage_id, role=part.role, execution_type=part.execution_type,
        model_part=part.hf_config_name, devices=stage.devices, gpu_memory_utilization=util,
        utilization_source=util_source, max_num_seqs=request.max_num_seqs,
        max_num_batched_tokens=request.max_num_batched_tokens,
        enable_prefix_caching=stage.enable_prefix_caching, enforce_eager=stage.enforce_eager,
        graph_reserve_bytes=graph_reserve(stage.enforce_eager, stage.cudagraph_none),
        plan=plan, reason=reason, model_local_kv=rows,
    )


def _part_label(label: str, part: StagePart) -> str:
    """``config.json (talker_config)``: the checkpoint and the part a stage plans."""
    return f"{label} ({part.hf_config_name or 'whole config'})"


def _utilization(stage: StageDeploy, request: PlanRequest) -> tuple[float, str]:
    if stage.gpu_memory_utilization is not None:
        return stage.gpu_memory_utilization, "deploy file"
    from kvledger.plan.engines.base import get_layout

    return get_layout("vllm", request.engine_release).default_utilization(request)

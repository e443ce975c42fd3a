"""A vLLM-Omni deploy file (``vllm_omni/deploy/<model>.yaml``) read as vLLM-Omni reads it.

The schema is vLLM-Omni's own, read from ``vllm_omni/config/stage_config.py`` (commit
001275f297ac769319507f3b0bb7965f057e4eaa): ``DeployConfig`` (top level: ``stages``,
``platforms``, ``pipeline``, and the pipeline-wide engine settings ``dtype``,
``quantization``, ``enable_prefix_caching``, … applied to every stage), ``StageDeployConfig``
(per stage: ``stage_id``, ``devices``, ``num_replicas``, ``tensor_parallel_size``,
``gpu_memory_utilization``, ``max_num_seqs``, ``max_num_batched_tokens``, ``max_model_len``,
``enforce_eager``, ``compilation_config``; every field ``None`` when omitted, i.e. vLLM's own
default), ``_parse_stage_deploy`` (a stage's ``engine_args`` mapping merged into its flat keys,
``runtime.devices`` / ``runtime.num_replicas`` over the flat ones; keys it does not model pass
through as engine arguments — ``enable_prefix_caching`` in a stage is one) and
``_merge_stage_lists`` / ``_deep_merge_stage`` (a ``platforms.<platform>.stages`` overlay
merged by ``stage_id``, the overlay's field winning).

Where a stage and the top level both set a pipeline-wide key, the stage's own value is taken
(it is the more specific statement; vLLM-Omni's deploy files set them per stage). Nothing
here plans: ``kvledger.plan.omni.planner`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvledger.errors import DeployFileError
from kvledger.records import record

# DeployConfig's pipeline-wide engine settings that change what kvledger plans.
PIPELINE_WIDE = ("dtype", "quantization", "enable_prefix_caching", "kv_cache_dtype")
# The platforms a deploy file's ``platforms:`` block names (vLLM-Omni's current_omni_platform).
PLATFORMS = ("cuda", "rocm", "npu", "xpu", "musa")


@record(frozen=True)
class StageDeploy:
    """One stage of a deploy file, after the platform overlay and the pipeline-wide keys."""

    stage_id: int
    devices: tuple[int, ...]  # physical device ids ("0,1" → (0, 1)); () when not stated
    num_replicas: int
    tensor_parallel_size: int
    gpu_memory_utilization: float | None  # None: vLLM's default
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    max_model_len: int | None
    enforce_eager: bool
    cudagraph_none: bool  # compilation_config.cudagraph_mode NONE: no graphs captured
    enable_prefix_caching: bool | None
    kv_cache_dtype: str | None
    dtype: str | None


@record(frozen=True)
class OmniDeploy:
    """A deploy file: its stages in ``stage_id`` order, the pipeline it names, the platform."""

    path: str
    stages: tuple[StageDeploy, ...]
    pipeline: str | None
    platform: str
    async_chunk: bool


def load_deploy(path: str | Path, *, platform: str = "cuda") -> OmniDeploy:
    """Read ``path`` (YAML) and resolve its stages for ``platform``; ``DeployFileError`` (one line
    naming the file and the field) for anything vLLM-Omni would not read."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise DeployFileError(f"{where}: cannot read the deploy file: "
                              f"{exc.strerror or exc}") from None
    import yaml  # lazily: only a deploy file needs it

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise DeployFileError(f"{where}: not valid YAML{at} ({problem})") from None
    return deploy_from_mapping(data, where=where, platform=platform)


def deploy_from_mapping(data: Any, *, where: str = "deploy", platform: str = "cuda") -> OmniDeploy:
    """The parsed YAML (a mapping) → ``OmniDeploy`` (``load_deploy`` says the rules)."""
    if platform not in PLATFORMS:
        raise DeployFileError(f"{where}: platform must be one of {', '.join(PLATFORMS)}, "
                          f"got {platform!r}")
    if not isinstance(data, Mapping):
        raise DeployFileError(f"{where}: a deploy file is a mapping with a 'stages' list, got "
                          f"{type(data).__name__}")
    stages = data.get("stages")
    if not isinstance(stages, list) or not stages:
        raise DeployFileError(f"{where}: 'stages' must be a non-empty list of stage mappings")
    base = [_stage_mapping(s, where, i) for i, s in enumerate(stages)]
    ids = [s["stage_id"] for s in base]
    if len(set(ids)) != len(ids):
        raise DeployFileError(f"{where}: duplicate stage_id in 'stages' ({ids})")
    merged = _merge_stages(base, _platform_stages(data, platform, where), where)
    wide = {k: data[k] for k in PIPELINE_WIDE if data.get(k) is not None}
    resolved = tuple(sorted((_stage(s, wide, where) for s in merged),
                            key=lambda s: s.stage_id))
    pipeline = data.get("pipeline")
    if pipeline is not None and not isinstance(pipeline, str):
        raise DeployFileError(f"{where}: 'pipeline' must be a name, got {pipeline!r}")
    return OmniDeploy(path=where, stages=resolved, pipeline=pipeline, platform=platform,
                      async_chunk=bool(data.get("async_chunk", True)))


def _stage_mapping(item: Any, where: str, index: int) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        raise DeployFileError(f"{where}: stage {index} must be a mapping, got "
                              f"{type(item).__name__}")
    sid = item.get("stage_id")
    if isinstance(sid, bool) or not isinstance(sid, int) or sid < 0:
        raise DeployFileError(f"{where}: stage {index} needs an integer stage_id >= 0, got {sid!r}")
    flat = {k: v for k, v in item.items() if k not in ("engine_args", "runtime")}
    engine_args = item.get("engine_args") or {}
    runtime = item.get("runtime") or {}
    for name, block in (("engine_args", engine_args), ("runtime", runtime)):
        if not isinstance(block, Mapping):
            raise DeployFileError(f"{where}: stage {sid}: '{name}' must be a mapping")
    flat.update(engine_args)  # _parse_stage_deploy: engine_args over the flat keys
    for key in ("devices", "num_replicas"):
        if key in runtime:
            flat[key] = runtime[key]
    return flat


def _platform_stages(data: Mapping[str, Any], platform: str, where: str) -> list[dict[str, Any]]:
    platforms = data.get("platforms") or {}
    if not isinstance(platforms, Mapping):
        raise DeployFileError(f"{where}: 'platforms' must be a mapping of platform names")
    block = platforms.get(platform) or {}
    if not isinstance(block, Mapping):
        raise DeployFileError(f"{where}: platforms.{platform} must be a mapping")
    stages = block.get("stages") or []
    if not isinstance(stages, list):
        raise DeployFileError(f"{where}: platforms.{platform}.stages must be a list")
    return [_stage_mapping(s, f"{where} (platforms.{platform})", i) for i, s in enumerate(stages)]


def _merge_stages(base: list[dict[str, Any]], overlay: list[dict[str, Any]],
                  where: str) -> list[dict[str, Any]]:
    by_id = {s["stage_id"]: dict(s) for s in base}
    for over in overlay:
        sid = over["stage_id"]
        if sid not in by_id:
            raise DeployFileError(f"{where}: platform overlay names stage {sid}, which 'stages' "
                              "does not define")
        by_id[sid].update(over)
    return list(by_id.values())


def _stage(s: Mapping[str, Any], wide: Mapping[str, Any], where: str) -> StageDeploy:
    sid = s["stage_id"]
    label = f"{where}: stage {sid}"

    def get(key: str) -> Any:
        return s[key] if s.get(key) is not None else wide.get(key)

    util = s.get("gpu_memory_utilization")
    if util is not None and (isinstance(util, bool) or not isinstance(util, int | float)
                             or not 0 < util <= 1):
        raise DeployFileError(f"{label}: gpu_memory_utilization must be a fraction in (0, 1], "
                          f"got {util!r}")
    comp = s.get("compilation_config") or {}
    mode = comp.get("cudagraph_mode") if isinstance(comp, Mapping) else None
    return StageDeploy(
        stage_id=sid,
        devices=_devices(s.get("devices"), label),
        num_replicas=_count(s, "num_replicas", label) or 1,
        tensor_parallel_size=_count(s, "tensor_parallel_size", label) or 1,
        gpu_memory_utilization=None if util is None else float(util),
        max_num_seqs=_count(s, "max_num_seqs", label),
        max_num_batched_tokens=_count(s, "max_num_batched_tokens", label),
        max_model_len=_count(s, "max_model_len", label),
        enforce_eager=_flag(s.get("enforce_eager"), "enforce_eager", label) or False,
        # stage_admission.py _cudagraph_disabled: str(mode).upper().endswith("NONE")
        cudagraph_none=mode is not None and str(mode).upper().endswith("NONE"),
        enable_prefix_caching=_flag(get("enable_prefix_caching"), "enable_prefix_caching",
                                    label),
        kv_cache_dtype=_text(get("kv_cache_dtype"), "kv_cache_dtype", label),
        dtype=_text(get("dtype"), "dtype", label),
    )


def _devices(value: Any, label: str) -> tuple[int, ...]:
    """``"0,1,2,3"`` / ``0`` / ``[0, 1]`` → physical ids (vLLM-Omni's ``devices`` string)."""
    if value is None:
        return ()
    parts: list[Any]
    if isinstance(value, int):  # a bool too: refused below
        parts = [value]
    elif isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, list):
        parts = list(value)
    else:
        parts = [value]
    out: list[int] = []
    for part in parts:
        if isinstance(part, str) and part.isdigit():
            part = int(part)
        if isinstance(part, bool) or not isinstance(part, int) or part < 0:
            raise DeployFileError(f"{label}: devices must be device ids such as \"0,1\", got "
                              f"{value!r}")
        out.append(part)
    if len(set(out)) != len(out):
        raise DeployFileError(f"{label}: devices names a device twice ({value!r})")
    return tuple(out)


def _count(s: Mapping[str, Any], key: str, label: str) -> int | None:
    value = s.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DeployFileError(f"{label}: {key} must be an integer >= 1, got {value!r}")
    return value


def _flag(value: Any, key: str, label: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise DeployFileError(f"{label}: {key} must be true or false, got {value!r}")


def _text(value: Any, key: str, label: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise DeployFileError(f"{label}: {key} must be a name, got {value!r}")

"""``kvledger explain``: re-derive every KV number a start-up log printed, and say why.

``explain_log(text, model=None, gpu=None) -> Explanation``. The log is parsed
(``logparse``), its settings become a ``PlanRequest``, and each logged figure is derived again
with kvledger's plan for that engine: ``checks`` say match / mismatch, by how much, and the
likely cause; ``suggestions`` are re-planned (never guessed) changes with their effect.

The central check is the one people ask about — "why this many tokens?" — and it starts from
the memory the log itself printed, so it isolates the KV layout from the budget estimate: the
logged "Available KV cache memory" was rounded to 0.01 GiB, so the derivation runs on both
ends of that interval and the logged token count must fall inside the resulting range. The
budget itself is checked separately (``available_kv_bytes``), against kvledger's estimate.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kvledger import records
from kvledger.records import field, record
from kvledger.report.findings import Check, Context, Suggestion
from kvledger.report.logparse import Gib, ParsedLog, parse_log

if TYPE_CHECKING:
    from kvledger.plan.gpus import GpuPreset
    from kvledger.plan.request import PlanRequest


@record(frozen=True)
class Explanation:
    """What ``kvledger explain --json`` prints."""

    engine: str
    engine_version: str | None
    model: str | None
    settings: dict[str, Any]
    checks: tuple[Check, ...]
    suggestions: tuple[Suggestion, ...]
    figures: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    # The release the log was replayed as ("vLLM 0.31.0"): the one its version line names,
    # else the nearest known (a note says so), else the newest; None for a log not replayed
    # with an engine release (SGLang's figures are its own).
    engine_release: str | None = None

    def check(self, name: str) -> Check:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "engine_version": self.engine_version,
            "engine_release": self.engine_release,
            "model": self.model,
            "settings": dict(self.settings),
            "checks": [c.to_json() for c in self.checks],
            "suggestions": [s.to_json() for s in self.suggestions],
            "logged": dict(self.figures),
            "notes": list(self.notes),
        }


_KV_DTYPES = {
    "auto": "auto", "bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16",
    "half": "float16", "fp16": "float16", "float32": "float32", "fp8": "fp8",
    "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "nvfp4": "nvfp4",
}


def release_for(log: ParsedLog, engine: str) -> str | None:
    """The engine release to replay the log with: the one its version line names, else the
    closest release kvledger reproduces (a note says so); None (the newest) when the log
    names no version."""
    from kvledger.plan.engines.base import get_layout
    from kvledger.report.vllm_defaults import version_tuple

    releases = get_layout(engine).releases
    logged = log.engine_version
    wanted = version_tuple(logged)
    if not releases or wanted is None or log.engine not in (None, engine):
        return None  # another engine's version (an SGLang log's) names none of these
    for version in releases:
        if version_tuple(version) == wanted:
            return version

    def distance(version: str) -> tuple[int, ...]:
        have = version_tuple(version) or (0, 0, 0)
        return tuple(abs(a - b) for a, b in zip(have, wanted, strict=True))

    # Equally near two (a 0.24 log between 0.20 and 0.28): the newer, so the choice does not
    # hang on the order the releases are listed in.
    closest = min(releases, key=lambda v: (distance(v),
                                           tuple(-p for p in version_tuple(v) or ())))
    log.notes.append(f"the log's {releases[closest].product} {logged} is not a release "
                     f"kvledger reproduces: replayed as the closest, "
                     f"{releases[closest].label}")
    return closest


def _replayed_as(log: ParsedLog, request: PlanRequest | None) -> str | None:
    """The label of the vLLM release the log is replayed as (``release_for``'s choice, the
    newest when the log names none); None for another engine's log."""
    if log.engine != "vllm":
        return None
    from kvledger.plan.engines.base import get_layout

    release = get_layout("vllm", request.engine_release if request else None).release
    return release.label if release is not None else None


def build_request(log: ParsedLog, engine: str, problems: list[str],
                  gpu: str | None = None) -> PlanRequest | None:
    """The log's settings as kvledger's ``PlanRequest`` (its names are vLLM's)."""
    from kvledger.plan.request import SPECULATIVE_METHODS, PlanRequest

    s = log.settings
    kv = str(s.get("kv_cache_dtype", "auto")).lower()
    if kv not in _KV_DTYPES:
        problems.append(f"kv_cache_dtype {kv!r} is not one kvledger plans")
        return None
    kv = _KV_DTYPES[kv]
    if kv == "auto" and str(s.get("dtype", "")).lower() == "float32":
        kv = "float32"  # vLLM: cache dtype "auto" follows the model dtype
    # The log shows vLLM ran with these settings, so a max_model_len above the config's was
    # allowed there (VLLM_ALLOW_LONG_MAX_MODEL_LEN): replay it, do not refuse it.
    fields: dict[str, Any] = {"engine": engine, "kv_cache_dtype": kv, "block_size": None,
                              "allow_long_max_model_len": True,
                              "engine_release": release_for(log, engine)}
    for name in ("max_model_len", "block_size", "tensor_parallel_size",
                 "pipeline_parallel_size", "data_parallel_size", "max_num_seqs",
                 "max_num_batched_tokens", "enable_prefix_caching"):
        if s.get(name) is not None:
            fields[name] = s[name]
    # The device sets vLLM's batch defaults (EngineArgs.get_batch_defaults by total memory and
    # device), so the request names it as `plan` would: the --gpu preset, else the log's total.
    total = log.figures.get("gpu_total_gib")
    if gpu is not None:
        fields["gpu"] = gpu
    elif isinstance(total, Gib):
        fields["gpu_total_bytes"] = total.bytes
        # Kernels follow the device's family (sparse MLA rows, block strides): where a vLLM
        # log names a backend of one family only, plan that family's, not the SM90 assumed else.
        if engine == "vllm":
            from kvledger.plan.engines.vllm.hardware import family_from_backends

            implied = family_from_backends(log.figures.get("attention_backends") or ())
            if implied is not None:
                fields["gpu"] = implied[0]
                log.notes.append(implied[1])
    quantization = str(s.get("quantization") or "").replace("-", "_").lower()
    from kvledger.plan.engines.vllm.online_quant import ONLINE

    launch: dict[str, Any] = {}
    if engine == "vllm" and quantization in ONLINE:
        # The method vLLM ran with, when it is one kvledger sizes online: on an unquantized
        # checkpoint it changes the weights the budget subtracts (plan's --quantization,
        # engines/vllm/launch_budget.py); on the checkpoint's own method nothing moves. Any
        # other method is the checkpoint's own, or one budget_checks says it cannot size.
        launch["quantization"] = quantization
    sampler = log.figures.get("flashinfer_sampler")
    if engine == "vllm" and isinstance(sampler, bool):
        launch["flashinfer_sampler"] = sampler  # the sampler the run took (0.10's choice)
    if launch:
        from kvledger.plan.engines.vllm.launch import VllmLaunch

        fields["vllm_launch"] = VllmLaunch(**launch)
    length = log.figures.get("concurrency_length") or log.figures.get("refused_length")
    if "max_model_len" not in fields and isinstance(length, int):
        fields["max_model_len"] = length
    method = s.get("speculative_method")
    tokens = s.get("num_speculative_tokens")
    if method and tokens:
        if str(method).lower() in SPECULATIVE_METHODS:
            fields["speculative_method"] = str(method).lower()
            fields["num_speculative_tokens"] = int(tokens)
        else:
            log.notes.append(
                f"speculative method {method!r} is not one kvledger models: its draft's KV "
                "cache is not in the derived numbers")
    try:
        return PlanRequest(**fields)
    except (TypeError, ValueError) as exc:
        problems.append(f"the log's settings are not a valid plan request: {exc}")
        return None


def _load_model(
    ctx: Context, model: Any, request: PlanRequest | None
) -> None:
    from kvledger.plan.api import load_facts
    from kvledger.plan.request import PlanRequest

    if model is None:
        ctx.problems.append("the log names no model; pass --model (a catalog id or config.json)")
        return
    try:
        ctx.facts, ctx.source = load_facts(model, request or PlanRequest(engine="vllm"))
    except (ValueError, OSError, KeyError) as exc:  # ConfigError / UnsupportedArchitecture
        ctx.problems.append(f"model {model!s} could not be loaded ({exc}); pass --model")
        return
    if ctx.facts is not None and request is not None:
        from kvledger.plan.speculative import check_speculation

        try:
            ctx.notes.extend(check_speculation(ctx.facts, request))
        except ValueError as exc:
            ctx.problems.append(str(exc))
            ctx.facts = None


@contextmanager
def _dev_build(ctx: Context) -> Iterator[None]:
    """A vLLM development build (``0.28.1rc1.dev580+g385dce36b``: commits past a release) that
    served an architecture its base release's registry lacks: the log shows the cache sized, so
    the build registered it. The checks run with the base release's profile less that
    refusal, bound for the block (``plan/engines/bound_release.bound``, as ``kvledger diff``
    binds a mix), and a note says so; anything else runs as it is."""
    log, request, facts = ctx.log, ctx.request, ctx.facts
    version = log.engine_version or ""
    if (log.engine != "vllm" or request is None or facts is None or "dev" not in version
            or "available_kv_gib" not in log.figures or not facts.architectures):
        yield
        return
    from kvledger.plan.engines.base import get_layout
    from kvledger.plan.engines.bound_release import bound

    layout = get_layout("vllm", request.engine_release)
    release: Any = layout.release  # a VllmRelease: the engine is vLLM
    missing = frozenset(facts.architectures)
    if release is None or not missing <= release.unregistered_architectures:
        yield
        return
    ctx.notes.append(
        f"vLLM {version} is a development build after {release.label}: it served "
        f"{', '.join(sorted(missing))}, which {release.short}'s registry lacks (a later "
        f"release adds it); replayed with {release.short}'s rules and that architecture "
        "registered")
    with bound(layout.releases, release, "dev-build", unregistered_architectures=(
            release.unregistered_architectures - missing)) as pinned:
        ctx.request = records.replace(request, engine_release=pinned)
        try:
            yield
        finally:
            ctx.request = request


def _gpu_from_log(log: ParsedLog, gpu: str | None) -> GpuPreset | None:
    from kvledger.plan.gpus import GpuPreset, gpu_preset

    total = log.figures.get("gpu_total_gib")
    if isinstance(total, Gib):
        return GpuPreset("the log's GPU", total.bytes, "given",
                         f"total {total} as the log printed it")
    return gpu_preset(gpu) if gpu else None


def explain_log(
    text: str,
    *,
    model: Any = None,
    gpu: str | None = None,
    engine: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Explanation:
    """Parse ``text`` and re-derive its figures. ``model`` overrides the model the log names
    (a catalog id, config.json, model directory, or dict); ``gpu`` names a GPU preset when
    the log does not print the device's total memory; ``overrides`` supplies settings an
    excerpt does not show (``{"tensor_parallel_size": 2}``), under the planner's names, and
    wins over the log."""
    log = parse_log(text, engine=engine)
    if overrides:
        log.settings.update(overrides)
        log.notes.append("settings given on the command line: " + ", ".join(
            f"{k}={v}" for k, v in overrides.items()))
    named = model if model is not None else (log.model or log.settings.get("hf_config_path"))
    problems: list[str] = []
    request = build_request(log, "vllm", problems, gpu)
    label = None if named is None else (
        "<config dict>" if isinstance(named, dict) else str(named))
    ctx = Context(log, request, None, None, label, _gpu_from_log(log, gpu), problems)
    _load_model(ctx, named, request)
    if log.engine == "vllm":
        from kvledger.report.suggest import vllm_suggestions
        from kvledger.report.vllm_checks import vllm_checks

        with _dev_build(ctx):  # named as its base release: the note says what was added
            checks = vllm_checks(ctx)
            suggestions = vllm_suggestions(ctx) if ctx.ready else []
    else:
        from kvledger.report.sglang_checks import sglang_checks

        checks = sglang_checks(ctx)
        suggestions = []
    return Explanation(
        engine=log.engine,
        engine_version=log.engine_version,
        engine_release=_replayed_as(log, request),
        model=ctx.model,
        settings=log.settings_json(),
        checks=tuple(checks),
        suggestions=tuple(suggestions),
        figures=log.figures_json(),
        notes=tuple(dict.fromkeys([*log.notes, *ctx.notes])),
    )

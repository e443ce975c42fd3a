"""The vLLM GPU budget under launch options (``launch.py``): online quantization changes the
weights line, ``--cpu-offload-gb`` shrinks it (and a ``cpu_offload`` line says by how much),
LoRA slots are a ``lora`` line subtracted from the KV budget (``plan/budget.py``
``with_launch_lines``). The CPU KV tier is no budget line: ``kv_tier_fields`` adds it to the
plan.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvledger import records
from kvledger.plan.budget import CPU_OFFLOAD, EXACT, LORA, Budget, BudgetLine, with_launch_lines
from kvledger.plan.engines.base import GpuBudgetInput
from kvledger.plan.engines.vllm.launch import VllmLaunch
from kvledger.plan.engines.vllm.releases.profile import VllmRelease
from kvledger.plan.weights import Weights


def launch_of(request: Any) -> VllmLaunch | None:
    launch = getattr(request, "vllm_launch", None)
    if launch is not None and not isinstance(launch, VllmLaunch):
        raise TypeError(f"vllm_launch must be a VllmLaunch, got {type(launch).__name__}")
    return launch


def _checkpoint_method(inp: GpuBudgetInput) -> str:
    section = inp.facts.config.get("quantization_config") or \
        inp.text_config.get("quantization_config")
    if isinstance(section, dict) and section.get("quant_method"):
        return str(section["quant_method"])
    return "modelopt" if inp.facts.hf_quant_config else ""


def _online_weights(inp: GpuBudgetInput, method: str) -> Weights | None:
    """The weights vLLM holds after quantizing online; None when the checkpoint's own
    method is named (vLLM then loads it as it is)."""
    from kvledger.plan.engines.vllm.online_quant import (
        NOT_MODELLED,
        ONLINE,
        OnlineQuantNotModelled,
        online_scheme,
    )
    from kvledger.plan.speculative import speculates_with_mtp
    from kvledger.plan.weights import WeightsError, model_weights

    own = _checkpoint_method(inp)
    if own:
        asked, mine = method.replace("-", "_").lower(), own.replace("-", "_").lower()
        shorthand = asked in ONLINE or asked in NOT_MODELLED
        if asked == mine or (not shorthand and asked.startswith(mine)):
            return None  # a kernel variant of the checkpoint's method (gptq_marlin)
        # ModelConfig._verify_quantization refuses a method other than the checkpoint's.
        raise OnlineQuantNotModelled(f"--quantization {method} on a {own} checkpoint: vLLM "
                                     "refuses a method other than the checkpoint's own")
    scheme = online_scheme(method)
    req = inp.request
    try:
        return model_weights(
            inp.text_config, model_dtype=inp.facts.model_dtype,
            tensor_parallel_size=req.tensor_parallel_size,
            pipeline_parallel_size=req.pipeline_parallel_size,
            speculative_mtp=speculates_with_mtp(req), config=inp.facts.config or None,
            online=scheme)
    except WeightsError as exc:
        raise OnlineQuantNotModelled(f"--quantization {method}: {exc}") from None


# Model types whose vLLM 0.33 class sets ``supports_encoder_tp_data = True`` (itself or by
# inheritance: Qwen3.5's classes derive from Qwen3VLForConditionalGeneration, GLM-4.5V's
# from Glm4vForConditionalGeneration); vLLM falls back to "weights" for the others
# (config/multimodal.py ``mm_encoder_tp_mode``).
ENCODER_TP_DATA = frozenset({
    "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe",
    "kimi_k25", "kimi_vl", "glm4v", "glm4v_moe", "internvl_chat", "step3_vl", "minicpmv",
    "llama4", "minimax_m3_vl", "kimi_k3",
})


def tower_weights(inp: GpuBudgetInput, launch: VllmLaunch, weights: Weights) -> Weights:
    """The weights line without the towers (``--language-model-only``), or with the whole
    towers on every TP rank (``--mm-encoder-tp-mode data``, where the model supports it).
    The towers' bytes are the estimate's (``plan/weights.tower_bytes``), whichever way the
    total was read; per GPU they were total / (TP × PP) like the rest."""
    if not launch.language_model_only and launch.mm_encoder_tp_mode != "data":
        return weights
    from kvledger.plan.budget import ESTIMATED
    from kvledger.plan.weights import WeightsError, tower_bytes

    config = inp.facts.config or inp.text_config
    try:
        towers = tower_bytes(config, inp.facts.model_dtype)
    except WeightsError:
        towers = 0
    req = inp.request
    tp, pp = req.tensor_parallel_size, req.pipeline_parallel_size
    share = -(-towers // (tp * pp))
    if launch.language_model_only:
        if not towers:
            return weights
        return records.replace(
            weights, total_bytes=weights.total_bytes - towers,
            per_rank_bytes=weights.per_rank_bytes - share, per_rank_basis=ESTIMATED,
            detail=f"{weights.detail}; less the towers' {towers:,} B (--language-model-only: "
                   "vLLM builds no tower, models/interfaces.py _mark_tower_model)")
    model_type = str(config.get("model_type") or "")
    if model_type not in ENCODER_TP_DATA or tp == 1 or not towers:
        return weights  # vLLM falls back to "weights": the towers are split by TP as before
    extra = -(-towers // pp) - share
    return records.replace(
        weights, per_rank_bytes=weights.per_rank_bytes + extra, per_rank_basis=ESTIMATED,
        detail=f"{weights.detail}; plus {extra:,} B: each of the {tp} TP ranks holds the "
               f"whole towers ({towers:,} B; --mm-encoder-tp-mode data)")


def launch_budget(inp: GpuBudgetInput, plain: Callable[[GpuBudgetInput], Budget],
                  release: VllmRelease | None = None) -> Budget:
    """``plain`` (the engine's budget) under ``inp.request.vllm_launch``; ``release``: the
    profile planned (the EPLB rules read it)."""
    launch = launch_of(inp.request)
    draft = None
    if launch is not None and launch.draft_config is not None:
        # A DFlash / DSpark draft's weights sit beside the target's (parallel_draft.py).
        from kvledger.plan.engines.vllm.parallel_draft import draft_weights

        draft = draft_weights(inp.facts, inp.request)
    if launch is None or not (launch.changes_weights or draft):
        return plain(inp)
    req = inp.request
    tp, pp = req.tensor_parallel_size, req.pipeline_parallel_size
    # vLLM refuses an EPLB setting while it builds its config, before it loads anything.
    eplb_line = _eplb_line(inp, launch, release) if launch.enable_eplb else None
    weights = inp.weights
    if launch.quantization is not None:
        weights = _online_weights(inp, launch.quantization) or weights
    weights = tower_weights(inp, launch, weights)
    if draft is not None:
        from kvledger.plan.budget import ESTIMATED

        added, how = draft
        weights = records.replace(
            weights, total_bytes=weights.total_bytes + added * tp,
            per_rank_bytes=weights.per_rank_bytes + added, per_rank_basis=ESTIMATED,
            detail=f"{weights.detail}; plus {added:,} B per GPU of {how}")
    offload_line = None
    if launch.cpu_offload_gb > 0:
        from kvledger.plan.engines.vllm.offload import cpu_offload

        off = cpu_offload(inp.text_config, launch, model_dtype=inp.facts.model_dtype, tp=tp,
                          pp=pp)
        moved = min(off.moved_bytes, weights.per_rank_bytes)
        weights = records.replace(
            weights, per_rank_bytes=weights.per_rank_bytes - moved,
            detail=f"{weights.detail}; less {moved:,} B moved to the CPU (cpu_offload)")
        offload_line = BudgetLine(CPU_OFFLOAD, f"(weights moved to the CPU, already left out "
                                  f"of the weights line: {off.detail})", moved, EXACT)
    budget = plain(records.replace(inp, weights=weights))
    lora_line = None
    if launch.enable_lora:
        from kvledger.plan.engines.vllm.lora import lora_bytes

        found = lora_bytes(inp.text_config, launch, model_dtype=inp.facts.model_dtype, tp=tp,
                           pp=pp, expert_parallel=bool(getattr(req, "enable_expert_parallel",
                                                               False)))
        lora_line = BudgetLine(LORA, f"− LoRA slots per GPU ({found.detail})", found.per_gpu,
                               found.basis)
    return with_launch_lines(budget, lora=lora_line, cpu_offload=offload_line, eplb=eplb_line)


def _eplb_line(inp: GpuBudgetInput, launch: VllmLaunch,
               release: VllmRelease | None) -> BudgetLine:
    """``--enable-eplb``: the first EP rank's redundant experts and rebalancing state
    (eplb.py), after vLLM's own refusals (config/parallel.py)."""
    from kvledger.plan.budget import EPLB, ESTIMATED
    from kvledger.plan.engines.vllm.eplb import EplbNotModelled, eplb_memory, parse_eplb_config
    from kvledger.plan.speculative import speculates_with_mtp
    from kvledger.plan.weights import WeightsError, estimate_weights

    req = inp.request
    if release is None or not release.sizes_eplb:
        from kvledger.plan.engines.vllm.releases import RELEASES

        read = sorted((r for r in RELEASES.values() if r.sizes_eplb),
                      key=lambda r: tuple(int(p) for p in r.version.split(".")))
        version = release.version if release is not None else "this release"
        raise EplbNotModelled(
            f"--enable-eplb under vLLM {version}: kvledger sizes EPLB from the source of the "
            f"releases {', '.join(r.version for r in read)}, and this release's was not read; "
            f"plan with --engine vllm=={read[0].version} or later")
    if not req.enable_expert_parallel:
        raise EplbNotModelled("vLLM refuses to start: enable_expert_parallel must be True to "
                              "use EPLB. (config/parallel.py); add --enable-expert-parallel")
    ep = req.tensor_parallel_size * req.data_parallel_size
    if ep <= 1:
        raise EplbNotModelled(
            "vLLM refuses to start: EPLB requires tensor, prefill-context, or data "
            f"parallelism, but got TP={req.tensor_parallel_size}, PCP=1, "
            f"DP={req.data_parallel_size}. (config/parallel.py)")
    if speculates_with_mtp(req):
        raise EplbNotModelled("--enable-eplb with an MTP draft: vLLM balances the draft's "
                              "experts too (eplb_utils.py maybe_register_speculator), which "
                              "kvledger does not size; drop one of them")
    settings = parse_eplb_config(launch.eplb_config, release.eplb_communicators)
    if not set(inp.facts.architectures) & release.eplb_architectures:
        # eplb_utils.py maybe_register_model: no MixtureOfExperts model, no EPLB state; the
        # model file passes no redundant experts to its MoE layers either.
        from kvledger.plan.budget import EXACT

        return BudgetLine(EPLB, f"− EPLB per GPU: nothing ({', '.join(inp.facts.architectures)} "
                          f"implements no MixtureOfExperts in vLLM {release.version}: "
                          "get_mixture_of_experts_model finds none, so --enable-eplb builds no "
                          "EPLB state and no redundant experts)", 0, EXACT)
    try:
        estimate = estimate_weights(inp.text_config, inp.facts.model_dtype,
                                    inp.facts.hf_quant_config)
    except WeightsError as exc:
        raise EplbNotModelled(f"--enable-eplb: {exc}") from None
    routed = (estimate.by_category or {}).get("routed_experts", 0)
    found = eplb_memory(inp.text_config, settings, routed_bytes=routed, ep_size=ep,
                        fixed_slots=release.eplb_fixed_slots)
    return BudgetLine(EPLB, f"− EPLB per GPU ({found.detail})", found.per_gpu, ESTIMATED)


def kv_tier_fields(request: Any, release: VllmRelease, *, bytes_per_block: int,
                   block_size: int, groups: int, use_mla: bool,
                   num_blocks: int = 0) -> dict[str, Any]:
    """``{"kv_offload": ...}`` for the plan's JSON when ``--kv-offloading-size`` is given;
    ``{"kv_transfer": ...}`` when ``--kv-transfer-config`` is (connectors.py)."""
    launch = launch_of(request)
    if launch is None:
        return {}
    if launch.kv_transfer_config is not None:
        return _kv_transfer_fields(request, launch, release, bytes_per_block=bytes_per_block,
                                   block_size=block_size, groups=groups, use_mla=use_mla,
                                   num_blocks=num_blocks)
    if launch.kv_offloading_size is None:
        return {}
    from kvledger.plan.engines.vllm.offload import OffloadNotModelled, kv_tier

    if not release.sizes_kv_connectors and launch.kv_offloading_backend != "lmcache":
        # --kv-offloading-size builds vLLM's OffloadingConnector (config/vllm.py
        # _post_init_kv_transfer_config), one of the connectors this release's profile says
        # were not read.
        raise OffloadNotModelled(
            f"--kv-offloading-size under {release.short}: its CPU tier is the "
            "OffloadingConnector, whose source kvledger has not read for this release; plan "
            "the GPU side without the flag, or the tier with an earlier --engine vllm==X "
            "whose connectors were read (engine-releases in the docs)")
    if request.pipeline_parallel_size > 1:
        raise OffloadNotModelled("--kv-offloading-size with pipeline parallelism: each stage's "
                                 "blocks differ, which the connector's sizing is not modelled for")
    tier = kv_tier(launch, bytes_per_block=bytes_per_block, block_size=block_size,
                   world_size=request.tensor_parallel_size, groups=groups, use_mla=use_mla)
    return {"kv_offload": tier.to_json()}


def given_budget_note(request: Any) -> list[str]:
    """A note when launch options that change the GPU budget meet a given KV budget."""
    launch = launch_of(request)
    if launch is None or not launch.changes_weights or request.kv_cache_memory_bytes is None:
        return []
    what = [name for name, on in (("LoRA slots", launch.enable_lora),
                                  ("online quantization", launch.quantization is not None),
                                  ("--cpu-offload-gb", launch.cpu_offload_gb > 0),
                                  ("EPLB's experts and buffers", launch.enable_eplb),
                                  ("--language-model-only / --mm-encoder-tp-mode",
                                   launch.language_model_only
                                   or launch.mm_encoder_tp_mode == "data")) if on]
    # gpu_worker.determine_available_memory: a given kv_cache_memory_bytes is the KV budget.
    return [f"{' and '.join(what)} change the weights' memory, not the given "
            "kv_cache_memory_bytes (vLLM then skips its memory profiling)"]


def _kv_transfer_fields(request: Any, launch: VllmLaunch, release: VllmRelease, *,
                        bytes_per_block: int,
                        block_size: int, groups: int, use_mla: bool,
                        num_blocks: int) -> dict[str, Any]:
    from kvledger.plan.engines.vllm.connectors import (
        ConnectorNotModelled,
        PoolFacts,
        check_release,
        parse,
        plan_connector,
    )
    check_release(release)
    if launch.kv_offloading_size is not None:
        # config/vllm.py _post_init_kv_transfer_config replaces the connector.
        raise ConnectorNotModelled("--kv-offloading-size with --kv-transfer-config: vLLM "
                                   "replaces the named connector with its offloading one; "
                                   "give one of the two")
    if request.pipeline_parallel_size > 1:
        raise ConnectorNotModelled("--kv-transfer-config with pipeline parallelism: each "
                                   "stage's blocks differ, which kvledger does not size")
    pool = PoolFacts(num_blocks=num_blocks, bytes_per_block=bytes_per_block,
                     block_size=block_size, world_size=request.tensor_parallel_size,
                     groups=groups, use_mla=use_mla)
    assert launch.kv_transfer_config is not None
    memory = plan_connector(parse(launch.kv_transfer_config), pool, release=release)
    return {"kv_transfer": memory.to_json()}

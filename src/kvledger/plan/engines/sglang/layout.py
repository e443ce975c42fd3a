"""The SGLang layout: SGLang 0.5.23's KV pool for a model, to the token.

``plan_sglang(facts, request, available_bytes, ...)`` runs SGLang's sequence on kvledger's
facts: resolve the settings SGLang resolves (KV dtype, page size, context length, attention
TP/DP: ``settings.py``), build SGLang's view of the model (``model.build``), carve out the
recurrent-state pool (``pools.mamba_state_pool``), size each pipeline stage's pool (``cells``
+ ``pools``), take the smallest token count over stages, apply ``--max-total-tokens``, and
resolve ``max_running_requests``. It returns ``SglangPlan``: ``kv_cache_tokens`` is SGLang's
``max_total_num_tokens`` (the "#tokens" of its "KV Cache is allocated" line, which
``sglang_log_line`` reproduces).

What is not reproduced is refused by name (``SglangLayoutError``): speculative decoding with a
separate draft model, with recurrent states or with sliding-window pools; NVFP4 KV on
standard attention; ROCm; page-size "auto" off Hopper / Ampere; the architectures
``model.py`` lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvledger.plan.engines.sglang import dsv4, encoder_decoder, log, served
from kvledger.plan.engines.sglang.cells import (
    DSA_QUANT_BLOCK,
    TORCH_NAMES,
    Cell,
    default_cell,
    element_size,
    kv_heads_per_rank,
    mha_bytes_per_layer,
    mla_row_dim,
)
from kvledger.plan.engines.sglang.dsv4_plan import plan_dsv4
from kvledger.plan.engines.sglang.model import (
    PURE_SSM_ARCHS,
    SglangLayoutError,
    SglangModel,
    build,
)
from kvledger.plan.engines.sglang.options import SglangOptions
from kvledger.plan.engines.sglang.pools import (
    GIB,
    Requests,
    SpecState,
    StatePool,
    SwaCells,
    SwaTokens,
    default_tokens,
    mamba_slots_per_request,
    mamba_state_pool,
    max_running_requests,
    swa_capped_tokens,
    swa_from_max_tokens,
    swa_request_cap,
    swa_tokens,
    validate_swa_pool,
)
from kvledger.plan.engines.sglang.releases.profile import sglang_words
from kvledger.plan.engines.sglang.result import SglangPlan, StagePlan
from kvledger.plan.engines.sglang.settings import Resolved, resolve
from kvledger.plan.engines.sglang.states import StateBytes, ssm_dtype, state_bytes
from kvledger.plan.request import PlanRequest

if TYPE_CHECKING:
    from kvledger.derive.layers import ModelFacts
    from kvledger.plan.engines.sglang.releases.profile import SglangRelease

def pp_indices(num_layers: int, pp: int) -> list[tuple[int, int]]:
    """SGLang's ``get_pp_indices`` (``srt/distributed/utils.py``, no
    ``SGLANG_PP_LAYER_PARTITION``): ``num_layers // pp`` each, the *last* ``num_layers % pp``
    stages one more. (vLLM gives the extra layers to the stages before the last.)"""
    if num_layers < pp:
        raise ValueError(f"pipeline_parallel_size {pp} exceeds the {num_layers} layers")
    base, extra = divmod(num_layers, pp)
    out = []
    for rank in range(pp):
        if rank >= pp - extra:
            start = rank * (base + 1) - (pp - extra)
            out.append((start, start + base + 1))
        else:
            out.append((rank * base, rank * base + base))
    return out


# -- sizing -------------------------------------------------------------------------------


def _in(ids: tuple[int, ...], rng: tuple[int, int]) -> tuple[int, ...]:
    return tuple(i for i in ids if rng[0] <= i < rng[1])


def _swa_cells(model: SglangModel, res: Resolved, rng: tuple[int, int]) -> SwaCells:
    assert model.heads is not None or not model.full_layers
    full = _in(model.full_layers, rng)
    swa = _in(model.swa_layers, rng)
    full_per = mha_bytes_per_layer(model.heads, res.kv_cache_dtype, res.attn_tp) \
        if model.heads is not None else 0
    assert model.swa_heads is not None
    swa_per = mha_bytes_per_layer(model.swa_heads, res.kv_cache_dtype, res.attn_tp)
    return SwaCells(full_per, swa_per, len(full), len(swa))


def _uses_request_cap(model: SglangModel, options: SglangOptions, res: Resolved,
                      cells: SwaCells) -> bool:
    """``SWARequestCapPoolConfigurator.is_applicable``."""
    return (options.max_running_requests is not None and options.disable_radix_cache
            and res.chunked_prefill_size > 0 and model.sliding_window is not None
            and cells.full_layers > 0)


def _stage_tokens(
    model: SglangModel, res: Resolved, options: SglangOptions, rng: tuple[int, int],
    kv_budget: int,
) -> tuple[int, int | None, float, Cell | None]:
    """(full tokens, swa tokens, cell bytes/token, default cell) for one stage's budget."""
    page = res.page_size
    if model.hybrid_swa:
        cells = _swa_cells(model, res, rng)
        if _uses_request_cap(model, options, res, cells):
            cap = _request_cap(model, res, options)
            out = swa_capped_tokens(kv_budget, cells, cap, page)
            # SGLang's _cell_size stays the ratio cell of HybridSWAPoolConfigurator.__init__.
            return out.full_tokens, out.swa_tokens, cells.cell(res.swa_full_tokens_ratio), None
        out = swa_tokens(kv_budget, cells, res.swa_full_tokens_ratio, page)
        return out.full_tokens, out.swa_tokens, cells.cell(res.swa_full_tokens_ratio), None
    full = _in(model.full_layers, rng)
    indexers = _in(model.dsa.layers, rng) if model.dsa is not None else ()
    cell = default_cell(model, res.kv_cache_dtype, attn_tp=res.attn_tp, layers=full,
                        indexer_layers=indexers, draft_layers=res.draft_layers,
                        dsa_scaled_fp8=res.dsa_scaled_fp8)
    zero_cell_tokens = 0
    if cell.bytes_per_token == 0:
        if model.attention_arch != "SSM":
            raise SglangLayoutError("this pipeline stage holds no KV layer; SGLang's sizing "
                                    "of such a stage is not reproduced")
        # pool_configurator.py DefaultPoolConfigurator.__init__: with no attention layer
        # anywhere, _zero_kv_max_tokens = --max-total-tokens or the context length.
        zero_cell_tokens = options.max_total_tokens or res.context_len
    tokens = default_tokens(kv_budget, cell.bytes_per_token, page, zero_cell_tokens)
    return tokens, None, float(cell.bytes_per_token), cell


def _request_cap(model: SglangModel, res: Resolved, options: SglangOptions) -> int:
    """``swa_request_cap`` for this model and options (only when ``_uses_request_cap``)."""
    assert options.max_running_requests is not None and model.sliding_window
    return swa_request_cap(window=model.sliding_window, page_size=res.page_size,
                           max_running_requests=options.max_running_requests,
                           attn_dp_size=res.attn_dp,
                           chunked_prefill_size=res.chunked_prefill_size, overlap=res.overlap)


def _recompute(model: SglangModel, res: Resolved, options: SglangOptions,
               rng: tuple[int, int], tokens: int) -> tuple[int, int | None]:
    """``calculate_pool_sizes_from_max_tokens`` after a constraint lowered the count."""
    page = res.page_size
    if model.hybrid_swa:
        cells = _swa_cells(model, res, rng)
        if _uses_request_cap(model, options, res, cells):
            cap = _request_cap(model, res, options)
            swa = -(-cap // page) * page
            return tokens // page * page, min(swa, tokens)
        out: SwaTokens = swa_from_max_tokens(tokens, cells, res.swa_full_tokens_ratio, page)
        return out.full_tokens, out.swa_tokens
    return tokens // page * page, None


# -- logs ---------------------------------------------------------------------------------


def _log_lines(model: SglangModel, res: Resolved, rng: tuple[int, int], tokens: int,
               swa: int | None, state: StatePool | None, sbytes: StateBytes | None,
               local_states: int) -> tuple[list[str], int]:
    """SGLang's allocation lines for one stage, and the KV bytes its buffers take."""
    page, dtype = res.page_size, res.kv_cache_dtype
    torch_name = TORCH_NAMES[dtype]
    size = element_size(dtype)
    rows = tokens + page
    lines: list[str] = []
    if state is not None and sbytes is not None and sbytes.layers:
        per_layer_conv = sbytes.conv_bytes_per_slot // sbytes.layers
        per_layer_ssm = sbytes.temporal_bytes_per_slot // sbytes.layers
        slots = state.max_mamba_cache_size + 1
        lines.append(log.mamba_line(state.max_mamba_cache_size,
                                    local_states * slots * per_layer_conv,
                                    local_states * slots * per_layer_ssm))
    full = _in(model.full_layers, rng)
    if model.attention_arch == "MLA":
        assert model.mla is not None
        row_bytes = mla_row_dim(model, dtype, res.dsa_scaled_fp8) * size
        if dtype == "nvfp4":
            # MLATokenToKVPoolFP4: packed (dim // 2) bytes per row; its scale buffer is not
            # in get_kv_size_bytes, so not in the logged size.
            row_bytes = mla_row_dim(model, dtype, res.dsa_scaled_fp8) // 2
        kv = rows * row_bytes * len(full)
        if model.dsa is not None:
            head = model.dsa.index_head_dim
            pages = (tokens + page + 1) // page
            row = page // model.dsa.index_kpool * (head + head // DSA_QUANT_BLOCK * 4)
            kv += pages * row * len(_in(model.dsa.layers, rng))
        lines.append(log.kv_single_line(torch_name, tokens, kv))
        return lines, kv
    if model.hybrid_swa:
        assert swa is not None and model.swa_heads is not None
        total = 0
        parts = []
        for label, heads, n, count in (("Full", model.heads, len(full), tokens),
                                       ("SWA", model.swa_heads, len(_in(model.swa_layers, rng)),
                                        swa)):
            if heads is None:
                k = v = 0
            else:
                h = kv_heads_per_rank(heads.kv_heads, res.attn_tp)
                k = (count + page) * h * heads.head_dim * n * size
                v = (count + page) * h * heads.v_head_dim * n * size
            parts.append(log.kv_line(torch_name, count, k, v, label))
            total += k + v
        lines.extend(parts)
        lines.append(log.swa_summary_line(total, swa, tokens))
        return lines, total
    if model.heads is None:
        # A pure state-space model: the KV pool has no attention layer, 0 bytes.
        lines.append(log.kv_line(torch_name, tokens, 0, 0))
        return lines, 0
    h = kv_heads_per_rank(model.heads.kv_heads, res.attn_tp)
    k = rows * h * model.heads.head_dim * len(full) * size
    v = rows * h * model.heads.v_head_dim * len(full) * size
    lines.append(log.kv_line(torch_name, tokens, k, v))
    return lines, k + v


# -- the plan -----------------------------------------------------------------------------


def plan_sglang(
    facts: ModelFacts,
    request: PlanRequest,
    available_bytes: int,
    *,
    options: SglangOptions | None = None,
    platform: str = "sm90",
    default_chunked_prefill_size: int = 8192,
    stage_available_bytes: Sequence[int] | None = None,
    release: SglangRelease | None = None,
) -> SglangPlan:
    """SGLang 0.5.23's pool for ``available_bytes`` of KV budget per GPU.

    ``platform`` is what SGLang's platform checks would see (``memory.gpu_arch``); with no
    GPU named it is Hopper. ``default_chunked_prefill_size`` is SGLang's GPU-memory default
    (``memory.default_chunked_prefill_size``); it matters only for the SWA request cap.
    ``stage_available_bytes`` gives each pipeline stage its own budget (a stage whose GPUs
    also hold model-local caches has less); default: ``available_bytes`` for every stage.
    """
    if isinstance(available_bytes, bool) or not isinstance(available_bytes, int):
        raise TypeError(f"available_bytes must be an int, got {available_bytes!r}")
    if available_bytes <= 0:
        raise ValueError(f"available_bytes must be > 0, got {available_bytes}")
    options = options or SglangOptions()
    if release is None:  # a library caller without a layout: bind as the engine binds
        from kvledger.plan.engines.base import get_layout

        layout: Any = get_layout("sglang", request.engine_release)  # a SglangEngine
        release = layout.profile
    model = build(facts, release)
    if model.architecture == dsv4.ARCH:
        return plan_dsv4(model, request, available_bytes, options, platform,
                         default_chunked_prefill_size)
    res = resolve(model, request, options, platform, default_chunked_prefill_size, release)
    pp = request.pipeline_parallel_size
    if pp > 1 and (no_pp := served.pipeline_parallel_refusal(facts.architectures, release)):
        raise SglangLayoutError(f"{sglang_words(release)} refuses to start: {no_pp}")
    if pp > 1 and model.architecture in encoder_decoder.ARCHS:
        raise SglangLayoutError(f"{model.architecture} under pipeline parallelism: SGLang's "
                                "model class does not split its layers into stages "
                                "(no start_layer / end_layer); not reproduced")
    ranges = pp_indices(model.num_layers, pp)
    budgets = list(stage_available_bytes) if stage_available_bytes is not None else \
        [available_bytes] * pp
    if len(budgets) != pp or any(b <= 0 for b in budgets):
        raise ValueError(f"stage_available_bytes must hold {pp} budgets > 0, got {budgets}")
    warnings: list[str] = []
    if model.backend == "transformers":
        warnings.append(f"{sglang_words(release)} has no model class for "
                        f"{model.architecture}: it serves "
                        "it through its Transformers backend (models/transformers.py)")
    if res.dsa_backends is not None and not res.dsa_scaled_fp8 and \
            res.kv_cache_dtype == "fp8_e4m3":
        warnings.append(f"DSA fp8 rows in the raw kv_lora_rank + rope layout, no per-block "
                        f"scales (DSA backends: {res.dsa_backends})")

    # Step 1: the state pool (charged on every stage at the largest stage's share).
    states: list[StatePool | None] = []
    kv_budgets: list[int] = []
    sbytes: StateBytes | None = None
    for stage_budget in budgets:
        budget_gb = stage_budget / GIB
        stage_state: StatePool | None = None
        if model.mambaish:
            # configs/mamba.py (Mamba-1) and configs/mamba2.py (pure Mamba-2) build their
            # params with Mamba2CacheParams' default dtype (mamba2_state_dtype(None)), as KDA
            # does: the config's mamba_ssm_dtype is not read.
            temporal = ssm_dtype(model.config, options.mamba_ssm_dtype,
                                 reads_config=not model.kda
                                 and model.architecture not in PURE_SSM_ARCHS)
            sbytes = state_bytes(model.states, res.attn_tp, temporal)
            ids = tuple(s.index for s in model.states)
            biggest = max(len(_in(ids, rng)) for rng in ranges)
            per_request = int(sbytes.per_request * (biggest / max(len(ids), 1)))
            spec = None
            if res.spec_draft_tokens is not None:
                assert res.max_running_requests is not None  # 48 unless given
                spec = SpecState(res.spec_draft_tokens, res.max_running_requests,
                                 mamba_slots_per_request(
                                     disable_radix_cache=options.disable_radix_cache,
                                     extra_buffer=res.mamba_strategy == "extra_buffer",
                                     overlap=res.overlap))
            # The schedule's max_running_requests: as given, or 48 with speculation.
            stage_state = mamba_state_pool(
                budget_gb, per_request, mamba_full_memory_ratio=res.mamba_full_memory_ratio,
                max_running_requests=res.max_running_requests,
                disable_radix_cache=options.disable_radix_cache, attn_dp_size=res.attn_dp,
                spec=spec)
            budget_gb = stage_state.rest_gb
            if budget_gb <= 0:
                raise ValueError("the recurrent-state pool leaves no memory for the KV cache")
        states.append(stage_state)
        kv_budgets.append(int(budget_gb * GIB))
    live = [st for st in states if st is not None]
    state = min(live, key=lambda st: st.max_mamba_cache_size) if live else None
    kv_budget = kv_budgets[0]

    # Step 2: tokens per stage, the MIN over stages, --max-total-tokens.
    own: list[tuple[int, int | None, float]] = []
    for rng, stage_kv in zip(ranges, kv_budgets, strict=True):
        tokens, swa, cell, _ = _stage_tokens(model, res, options, rng, stage_kv)
        own.append((tokens, swa, cell))
    if model.hybrid_swa:
        for _, swa, _ in own:
            if swa is not None and not _uses_request_cap(
                    model, options, res, _swa_cells(model, res, ranges[0])):
                validate_swa_pool(swa, model.sliding_window, res.page_size)
    capacity = min(t for t, _, _ in own)
    if options.max_total_tokens is not None:
        if options.max_total_tokens > capacity:
            warnings.append(f"max_total_tokens={options.max_total_tokens} is larger than the "
                            f"profiled value {capacity}; SGLang uses the profiled value")
        capacity = min(capacity, options.max_total_tokens)
    finals: list[tuple[int, int | None]] = []
    for rng, (tokens, swa, _) in zip(ranges, own, strict=True):
        finals.append((tokens, swa) if tokens == capacity else
                      _recompute(model, res, options, rng, capacity))
    full_tokens, swa_final = finals[0]
    if full_tokens <= 0:
        raise ValueError("Not enough memory: SGLang's KV pool would hold no token "
                         "(raise the budget or --mem-fraction-static)")

    # Step 3: requests.
    slots_per_request = mamba_slots_per_request(
        disable_radix_cache=options.disable_radix_cache,
        extra_buffer=res.mamba_strategy == "extra_buffer", overlap=res.overlap)
    reqs: Requests = max_running_requests(
        full_tokens, context_len=res.context_len, requested=res.max_running_requests,
        attn_dp_size=res.attn_dp,
        state_slots=state.max_mamba_cache_size if state is not None else None,
        slots_per_request=slots_per_request)

    stages: list[StagePlan] = []
    for k, (rng, (own_tokens, _, cell), (tokens, swa)) in enumerate(
            zip(ranges, own, finals, strict=True)):
        local_states = len(_in(tuple(s.index for s in model.states), rng))
        lines, kv_bytes = _log_lines(model, res, rng, tokens, swa, states[k], sbytes,
                                     local_states)
        stages.append(StagePlan(k, rng, len(_in(model.full_layers, rng)),
                                len(_in(model.swa_layers, rng)), own_tokens, cell, kv_bytes,
                                tuple(lines), budgets[k]))
    head = stages[0]
    kv_line = next(line for line in head.log_lines if "KV Cache is allocated" in line)
    encoder = model.encoder_tokens
    concurrency = full_tokens / (res.context_len + encoder)
    if swa_final is not None and model.sliding_window is not None:
        per_request = min(res.context_len, model.sliding_window + res.page_size)
        concurrency = min(concurrency, swa_final / per_request)
    concurrency = min(float(reqs.max_running_requests), concurrency)
    state_reserved = state.reserved_bytes + state.spec_reserved_bytes \
        if state is not None else 0
    binding = max(stages, key=lambda s: s.kv_bytes)
    rows: list[dict[str, Any]] = [{
        "name": "kv", "pool": "page", "entries": full_tokens // res.page_size,
        "entry_bytes": int(head.cell_bytes_per_token * res.page_size)
        if not model.hybrid_swa else int(_swa_cells(model, res, ranges[0]).full_cell_bytes()
                                          * res.page_size),
        "entries_per_req": -(-(res.context_len + encoder) // res.page_size),
        "reserved_bytes": binding.kv_bytes,
    }]
    if swa_final is not None:
        cells = _swa_cells(model, res, ranges[0])
        rows[0]["reserved_bytes"] = (full_tokens + res.page_size) * cells.full_cell_bytes()
        rows.append({
            "name": "swa", "pool": "page", "entries": swa_final // res.page_size,
            "entry_bytes": cells.swa_cell_bytes() * res.page_size,
            "entries_per_req": -(-min(res.context_len, (model.sliding_window or 0)
                                      + res.page_size) // res.page_size),
            "reserved_bytes": (swa_final + res.page_size) * cells.swa_cell_bytes(),
        })
    if state is not None:
        rows.append({
            "name": "mamba", "pool": "state", "entries": state.max_mamba_cache_size + 1,
            "entry_bytes": state.bytes_per_slot, "entries_per_req": slots_per_request,
            "reserved_bytes": state.reserved_bytes,
        })
    if state is not None and state.spec_reserved_bytes:
        assert res.spec_draft_tokens is not None
        rows.append({
            "name": "mamba_spec", "pool": "state", "entries": state.spec_slots,
            "entry_bytes": state.bytes_per_slot * res.spec_draft_tokens, "entries_per_req": 1,
            "reserved_bytes": state.spec_reserved_bytes,
        })
        warnings.append(
            f"speculative decoding: SGLang reserves {res.spec_draft_tokens} intermediate SSM "
            f"states and conv windows per request for {state.spec_slots} requests "
            f"({state.spec_reserved_bytes / GIB:.2f} GiB) before the KV pool")
        if not res.draft_layers and res.draft_note is None:
            # spec_aux_hidden_state.py _resolve_eagle_aux_hidden_state: a path-less draft
            # sizes its cell share from the target config's num_nextn_predict_layers.
            warnings.append(
                "speculative decoding: the target config has no num_nextn_predict_layers, so "
                "SGLang's KV cell holds no draft layer; the draft worker's own KV pool is "
                "not in this budget")
    if res.draft_note:
        warnings.append(res.draft_note)
    if reqs.capped_by == "state pool":
        warnings.append(
            f"max_running_requests is capped to {reqs.max_running_requests} by the mamba state "
            f"cache (max_mamba_cache_size={state.max_mamba_cache_size if state else 0}, "
            f"{slots_per_request} state slots per request)")
    if model.architecture == encoder_decoder.MLLAMA:
        warnings.append("each image request also holds its image tokens (media × tiles × "
                        "patches) in SGLang's token pool; the concurrency counts text only")
    if full_tokens < res.context_len:
        warnings.append(f"KV pool holds {full_tokens} tokens, fewer than the context length "
                        f"{res.context_len}: one full-length request cannot fit")
    return SglangPlan(
        model=facts.model,
        kv_cache_tokens=full_tokens,
        swa_tokens=swa_final,
        max_running_requests=reqs.max_running_requests,
        max_running_requests_capped_by=reqs.capped_by,
        page_size=res.page_size,
        context_len=res.context_len,
        kv_cache_dtype=res.kv_cache_dtype,
        cell_bytes_per_token=head.cell_bytes_per_token,
        available_bytes=available_bytes,
        kv_budget_bytes=kv_budget,
        reserved_bytes=binding.kv_bytes + state_reserved,
        max_concurrency=concurrency,
        state=state,
        state_bytes=sbytes,
        stages=tuple(stages),
        resolved=res,
        sglang_log_line=kv_line,
        sglang_log_lines=head.log_lines,
        warnings=tuple(warnings),
        pool_rows=tuple(rows),
        encoder_tokens=encoder,
    )

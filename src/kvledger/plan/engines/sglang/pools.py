"""From a KV byte budget to SGLang's token counts, request cap and state pool.

SGLang 0.5.23's sequence (``KVCacheConfigurator._resolve_memory_pool_config``,
``mem_cache/kv_cache_configurator.py``), reproduced step by step:

1. ``_profile_available_bytes``: the budget in GB (a float); for Mamba / linear-attention
   models ``_handle_max_mamba_cache`` first carves the recurrent-state pool out of it.
2. ``config_from_budget``: the pool configurator turns bytes into tokens
   (``calculate_pool_sizes``), then ``_apply_token_constraints`` applies
   ``--max-total-tokens`` and the pipeline-stage MIN, and a changed count is re-aligned
   (``calculate_pool_sizes_from_max_tokens``).
3. ``resolve_max_num_reqs``: the request cap from the token count, the context length,
   ``--max-running-requests`` and the state pool.

The float steps are kept as floats in the same order, so the integers that come out are the
ones SGLang computes (Python floats are the IEEE doubles SGLang uses).
"""

from __future__ import annotations

from kvledger.records import record

GIB = 1 << 30

# mem_cache/kv_cache_configurator.py: MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO.
MAMBA_SLOTS_PER_REQUEST_BASE = 3
# environ.py: SGLANG_SWA_EVICTION_INTERVAL default.
SWA_EVICTION_INTERVAL = 128


def align(tokens: int, page_size: int) -> int:
    """Round down to whole pages (every configurator: ``x // page_size * page_size``)."""
    return tokens // page_size * page_size


def ceil_align(tokens: int, page_size: int) -> int:
    return -(-tokens // page_size) * page_size


# -- step 1: the recurrent-state pool ------------------------------------------------------


@record(frozen=True)
class StatePool:
    """``_handle_max_mamba_cache``'s result: slots, bytes per slot, and what is left."""

    max_mamba_cache_size: int
    bytes_per_slot: int
    reserved_bytes: int  # (slots + 1 padding slot) × bytes per slot
    rest_gb: float  # the budget left for KV, in GB (SGLang's float)
    source: str  # how the slot count was chosen
    # Speculative decoding: the intermediate SSM states and conv windows SGLang reserves for
    # target verify, (capped requests + 1) × bytes per slot × draft tokens; 0 without it.
    spec_reserved_bytes: int = 0
    spec_slots: int = 0  # the capped request count + 1 padding slot it is reserved for


@record(frozen=True)
class SpecState:
    """What ``_handle_max_mamba_cache`` reads when it reserves the speculative states:
    ``speculative_num_draft_tokens`` (D), the resolved ``max_running_requests`` (48 unless
    given: ``_handle_eagle_family``) and ``_calculate_mamba_ratio`` (state slots/request)."""

    draft_tokens: int
    max_running_requests: int
    slots_per_request: int


def mamba_state_pool(
    rest_gb: float,
    per_request: int,
    *,
    mamba_full_memory_ratio: float,
    max_running_requests: int | None,
    disable_radix_cache: bool,
    attn_dp_size: int,
    spec: SpecState | None = None,
) -> StatePool:
    """``_handle_max_mamba_cache`` (``mem_cache/kv_cache_configurator.py``) without ReplaySSM,
    a fused draft (unified memory) or a ``--max-mamba-cache-size``: the slot count is
    ``max_running_requests`` per attention-DP worker when the radix cache is off and the cap
    is set, else it is solved from ``rest × r / (1 + r)`` with one padding slot;
    ``(slots + 1) × per_request`` leaves.

    With speculative decoding (``spec``; ``reserves_spec_state``) SGLang also reserves the
    target-verify scratch of ``memory_pool.py`` ``MambaPool`` (intermediate SSM states and
    conv windows per draft token), priced as ``per_request × (capped + 1) × D`` with
    ``capped = min(max(1, max_running_requests // dp), slots // ratio)``; in the ratio branch
    the slots come from the joint solve
    ``(budget − per_request·(1 + D)) // (per_request·(1 + D / ratio))``. With the radix cache
    off, ``capped + 1`` is ``slots + 1``."""
    spec_bytes = spec_slots = 0
    if disable_radix_cache and max_running_requests is not None:
        slots = max(1, max_running_requests // attn_dp_size)
        source = "max_running_requests (radix cache disabled)"
        if spec is not None:
            spec_slots = slots + 1
    else:
        budget_gb = rest_gb * mamba_full_memory_ratio / (1 + mamba_full_memory_ratio)
        budget_bytes = budget_gb * GIB
        source = f"mamba_full_memory_ratio {mamba_full_memory_ratio:g}"
        if spec is not None:
            d, ratio = spec.draft_tokens, spec.slots_per_request
            slots = int((budget_bytes - per_request * (1 + d) - 0)
                        // (per_request * (1 + d / ratio) + 0))
            spec_slots = min(max(1, spec.max_running_requests // attn_dp_size),
                             slots // ratio) + 1
            source += f", with {d} draft tokens' intermediate states"
        else:
            slots = int((budget_bytes - 0 - per_request) // per_request)
    if slots <= 0:
        raise ValueError(
            f"not enough memory for SGLang's recurrent-state cache: max_mamba_cache_size "
            f"would be {slots} ({per_request:,} B per request); raise the budget or "
            "mem_fraction_static, or lower max_running_requests"
            + (" or --speculative-num-draft-tokens" if spec is not None else ""))
    if spec is not None:
        spec_bytes = per_request * spec_slots * spec.draft_tokens
        # total_rest_memory -= intermediate_size / (1 << 30), before the state pool.
        rest_gb = rest_gb - spec_bytes / GIB
    reserved = (slots + 1) * per_request
    return StatePool(slots, per_request, reserved, rest_gb - reserved / GIB, source,
                     spec_bytes, spec_slots)


def mamba_slots_per_request(*, disable_radix_cache: bool, extra_buffer: bool,
                            overlap: bool) -> int:
    """``_calculate_mamba_ratio``: 1 without the radix cache, else 3 plus the tracking
    slots of the extra-buffer strategy (``get_mamba_tracking_slots``: 2 with the overlap
    scheduler, else 1)."""
    if disable_radix_cache:
        return 1
    tracking = (2 if overlap else 1) if extra_buffer else 0
    return MAMBA_SLOTS_PER_REQUEST_BASE + tracking


# -- step 2: tokens from bytes ------------------------------------------------------------


def default_tokens(available_bytes: int, cell: int, page_size: int, zero_cell_tokens: int) -> int:
    """``DefaultPoolConfigurator.calculate_pool_sizes`` (no KV-shard scratch)."""
    tokens = available_bytes // cell if cell else zero_cell_tokens
    return align(tokens, page_size)


@record(frozen=True)
class SwaCells:
    """``HybridSWAPoolConfigurator``'s per-token bytes (per layer) and layer counts."""

    full_per_token: int
    swa_per_token: int
    full_layers: int
    swa_layers: int
    draft_full_layers: int = 0
    draft_swa_layers: int = 0

    def full_cell_bytes(self) -> int:
        return self.full_per_token * (self.full_layers + self.draft_full_layers)

    def swa_cell_bytes(self) -> int:
        return self.swa_per_token * (self.swa_layers + self.draft_swa_layers)

    def cell(self, ratio: float) -> float:
        """``_recompute_cell_size``: bytes per *full* token (a float: the ratio is one)."""
        if self.full_layers == 0:
            return self.swa_per_token * self.swa_layers + \
                self.full_per_token * self.draft_full_layers + \
                self.swa_per_token * self.draft_swa_layers
        return self.full_cell_bytes() + ratio * self.swa_cell_bytes()


@record(frozen=True)
class SwaTokens:
    full_tokens: int
    swa_tokens: int


def swa_from_max_tokens(max_tokens: int, cells: SwaCells, ratio: float,
                        page_size: int) -> SwaTokens:
    """``HybridSWAPoolConfigurator._solve_pool_sizes``."""
    if cells.full_layers == 0:
        swa = align(max_tokens, page_size)
        return SwaTokens(swa, swa)
    full = align(max_tokens, page_size)
    return SwaTokens(full, align(int(full * ratio), page_size))


def swa_tokens(available_bytes: int, cells: SwaCells, ratio: float,
               page_size: int) -> SwaTokens:
    """``HybridSWAPoolConfigurator.calculate_pool_sizes`` (unified memory off)."""
    return swa_from_max_tokens(int(available_bytes // cells.cell(ratio)), cells, ratio,
                               page_size)


def swa_request_cap(*, window: int, page_size: int, max_running_requests: int,
                    attn_dp_size: int, chunked_prefill_size: int, overlap: bool) -> int:
    """``compute_swa_request_cap`` without speculative decoding or PD disaggregation:
    each request holds ``window + eviction_interval + page`` trailing tokens plus one page
    of decode allocation; in-flight prefill chunks and one page on top."""
    per_request = window + SWA_EVICTION_INTERVAL * 1 + page_size + page_size
    requests = max(1, max_running_requests // attn_dp_size)
    chunks = 2 if overlap else 1
    return per_request * requests + chunks * chunked_prefill_size + page_size


def swa_capped_tokens(available_bytes: int, cells: SwaCells, cap: int,
                      page_size: int) -> SwaTokens:
    """``SWARequestCapPoolConfigurator.calculate_pool_sizes``: the SWA pool sized from the
    request cap, the rest of the budget to the full pool."""
    swa = ceil_align(cap, page_size)
    fixed = swa * cells.swa_cell_bytes()
    full = int((available_bytes - fixed) // cells.full_cell_bytes()) // page_size * page_size
    if full <= 0:
        raise ValueError(
            f"SGLang's SWA pool cap ({swa} tokens, {fixed / GIB:.2f} GiB) leaves no room for "
            "the full KV pool; reduce max_running_requests or raise the budget"
        )
    return SwaTokens(full, swa)


def validate_swa_pool(swa_tokens: int, window: int | None, page_size: int) -> None:
    """``MemoryPoolConfigurator.validate_swa_pool_size``: SGLang refuses to start when the
    SWA pool cannot admit one request."""
    if window is not None and window + page_size >= swa_tokens:
        raise ValueError(
            f"SGLang would refuse to start: its SWA pool ({swa_tokens} tokens) cannot hold "
            f"one request (sliding window {window} + page {page_size}); raise "
            "swa_full_tokens_ratio or the budget"
        )


# -- step 3: requests ---------------------------------------------------------------------


@record(frozen=True)
class Requests:
    max_running_requests: int
    capped_by: str  # "estimate", "max_running_requests", "kv tokens" or "state pool"


def max_running_requests(
    tokens: int,
    *,
    context_len: int,
    requested: int | None,
    attn_dp_size: int,
    state_slots: int | None,
    slots_per_request: int,
) -> Requests:
    """``resolve_max_num_reqs``: an estimate of ``tokens / context_len × 512`` clamped to
    [2048, 4096] (or ``--max-running-requests`` per attention-DP worker), at most half the
    tokens, and at most the state pool's slots divided by the slots one request takes."""
    estimated = int(tokens / context_len * 512)
    estimated = max(min(estimated, 4096), 2048)
    if requested is not None:
        wanted, why = max(1, requested // attn_dp_size), "max_running_requests"
    else:
        wanted, why = estimated, "estimate"
    reqs = wanted
    if tokens // 2 < wanted:
        reqs, why = tokens // 2, "kv tokens"
    if state_slots is not None:
        cap = state_slots // slots_per_request
        if cap < reqs:
            reqs, why = cap, "state pool"
        if reqs <= 0:
            raise ValueError(
                f"SGLang's recurrent-state cache is too small to serve any request "
                f"(max_mamba_cache_size={state_slots}, {slots_per_request} slots per request)"
            )
    return Requests(reqs, why)

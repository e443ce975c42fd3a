"""What the SGLang layout returns: ``SglangPlan`` for one GPU, a ``StagePlan`` per pipeline
stage. Records of their own, apart from the sizing (``layout.py``) and from DeepSeek-V4's
sizing (``dsv4_plan.py``), which both build them.
"""

from __future__ import annotations

from typing import Any

from kvledger.plan.engines.sglang.pools import StatePool
from kvledger.plan.engines.sglang.settings import Resolved
from kvledger.plan.engines.sglang.states import StateBytes
from kvledger.records import field, record


@record(frozen=True)
class StagePlan:
    """One pipeline stage (one GPU of it) before and after the MIN over stages."""

    stage: int
    layer_range: tuple[int, int]
    full_layers: int
    swa_layers: int
    own_tokens: int  # what this stage's budget alone gives
    cell_bytes_per_token: float
    kv_bytes: int  # bytes the final token count reserves on this stage
    log_lines: tuple[str, ...]
    available_bytes: int  # this stage's budget (before its state pool)


@record(frozen=True)
class SglangPlan:
    """What ``plan_sglang`` returns: SGLang's numbers for one GPU, and how it got them."""

    model: str
    kv_cache_tokens: int  # max_total_num_tokens (the full pool for hybrid SWA)
    swa_tokens: int | None  # the sliding-window pool (hybrid SWA only)
    max_running_requests: int
    max_running_requests_capped_by: str
    page_size: int
    context_len: int
    kv_cache_dtype: str
    cell_bytes_per_token: float  # SGLang's _cell_size on the first stage
    available_bytes: int  # the budget the configurator was given
    kv_budget_bytes: int  # after the state pool
    reserved_bytes: int  # KV pool + state pool on the binding stage
    max_concurrency: float
    state: StatePool | None
    state_bytes: StateBytes | None
    stages: tuple[StagePlan, ...]
    resolved: Resolved
    sglang_log_line: str
    sglang_log_lines: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    pool_rows: tuple[dict[str, Any], ...] = field(default=())
    # Pool entries each request's encoder input takes beside its own tokens (Whisper's
    # padded audio frames, encoder_decoder.encoder_tokens); 0 for decoder-only models.
    encoder_tokens: int = 0

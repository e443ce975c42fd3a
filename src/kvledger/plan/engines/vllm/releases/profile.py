"""What one vLLM release profile states (``VllmRelease``); the profiles are ``v0_32.py``, …"""

from __future__ import annotations

from kvledger.plan.engines.release import Release
from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Mapping


@record(frozen=True, kw_only=True)
class VllmRelease(Release):
    """One vLLM release, as data."""

    transformers: str  # "transformers 5.19": the release vLLM's config classes come from
    # CacheConfig.gpu_memory_utilization's default (vllm/config/cache.py).
    default_gpu_memory_utilization: float
    # The offline LLM(...) class defaults (EngineArgs: SchedulerConfig's max_num_seqs and
    # max_num_batched_tokens for the LLM class usage context).
    default_max_num_seqs: int
    default_max_num_batched_tokens: int
    flag_table: str  # cli/serve/<file>: the release's server flags
    not_served: Mapping[str, str]  # model_type → why this release does not serve it
    no_cache_config: Mapping[str, str]  # model_type → why --kv-cache-dtype never reaches it

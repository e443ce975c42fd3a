"""SGLang 0.5.23's prefill/decode disaggregation (``--disaggregation-mode prefill|decode``):
what each role allocates beside its KV pool.

- Transfer (``disaggregation/mooncake/conn.py``, ``nixl/conn.py``
  ``register_buffer_to_engine``): the KV pool is registered with the transfer engine as it is
  (no GPU bytes); the small per-request metadata rows are registered as host memory. A GPU
  staging buffer exists only with ``SGLANG_DISAGG_STAGING_BUFFER=1`` (``environ.py``: off).
- Metadata rows (``managers/scheduler.py``, ``disaggregation/utils.py`` ``MetadataBuffers``), on
  the host: prefill ``2 × max_running_requests`` rows, decode ``2 × req_to_token rows``
  (``× 8`` for MiniMax sparse models). A row, with no speculative hidden state, no sampling
  mask, no DSA indices and no checksum: output ids, cached tokens, logprob value and index
  (16 × 4 B each), top-logprob value and index (128 × 4 B each), top-k p (16 × 4 B), top-k
  index (16 × 8 B), a 16 × float32 hidden-state pad, the bootstrap room (8 × 8 B) = 1,600 B.
- Decode (``arg_groups/pd_disaggregation_hook.py``): the radix cache is turned off unless
  ``--disaggregation-decode-enable-radix-cache``; ``--disaggregation-decode-extra-slots``
  (default 0, or twice the per-worker ``--max-running-requests`` when that is 32 or less)
  adds req_to_token rows of ``context_len + 4`` int32 each on the GPU
  (``decode.DecodeReqToTokenPool``, ``allocation_sizing.get_req_to_token_extra_context_len``).
- Decode retraction backup (``mem_cache/kv_cache_builder.py``
  ``resolve_decode_retraction_backup``): on CUDA, for an MHA pool, without the decode radix
  cache, KV offload or priority preemption, a retracted request's KV goes to a host pool: the
  HiCache host pool (``hicache.py``) at ratio ``max(0.2, min(context_len + 3, pool) / pool)``
  (``BACKUP_ONLY_HICACHE_RATIO``, ``decode_retraction_max_tokens``) unless HiCache or a ratio
  or size is given — the most it uses: auto-sizing may lower it to fit the host.
"""

from __future__ import annotations

from typing import Any

from kvledger.errors import PlanError
from kvledger.plan.engines.sglang.hicache import DEFAULT_LAYOUT, HostPool, host_pool
from kvledger.records import record

MODES = ("prefill", "decode")
BACKENDS = ("mooncake", "nixl")  # sized; DISAGG_TRANSFER_BACKEND_CHOICES has more
METADATA_ROW_BYTES = 4 * 16 * 4 + 2 * 128 * 4 + 16 * 4 + 16 * 8 + 16 * 4 + 8 * 8  # 1,600
BACKUP_ONLY_RATIO = 0.2  # kv_cache_builder.BACKUP_ONLY_HICACHE_RATIO
REQ_TO_TOKEN_EXTRA = 4  # get_req_to_token_extra_context_len, no speculative decoding, page 1


class DisaggregationNotModelled(PlanError):
    """A disaggregation setting kvledger does not size; names it."""


@record(frozen=True)
class SglangHostSettings:
    """The SGLang flags kvledger reads for a role (``None``: SGLang's default)."""

    mode: str | None = None
    transfer_backend: str = "mooncake"
    enable_hierarchical_cache: bool = False
    hicache_ratio: float | None = None
    hicache_size: float = 0.0
    hicache_mem_layout: str = DEFAULT_LAYOUT
    decode_extra_slots: int | None = None
    decode_enable_radix_cache: bool = False


@record(frozen=True)
class SglangRole:
    mode: str
    transfer_backend: str
    metadata_rows: int
    metadata_host_bytes: int
    extra_slots: int
    extra_slots_gpu_bytes: int
    retraction_backup: str | None
    host_pool: HostPool | None
    notes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "transfer_backend": self.transfer_backend,
                "gpu_bytes_per_gpu": self.extra_slots_gpu_bytes + (
                    self.host_pool.staging_gpu_bytes if self.host_pool else 0),
                "host_bytes_per_gpu": self.metadata_host_bytes + (
                    self.host_pool.bytes if self.host_pool else 0),
                "metadata_rows": self.metadata_rows,
                "metadata_host_bytes": self.metadata_host_bytes,
                "decode_extra_slots": self.extra_slots,
                "decode_extra_slots_gpu_bytes": self.extra_slots_gpu_bytes,
                "retraction_backup": self.retraction_backup,
                "host_pool": self.host_pool.to_json() if self.host_pool else None,
                "notes": list(self.notes)}


def plan_role(settings: SglangHostSettings, *, pool_tokens: int, bytes_per_token: int,
              page_size: int, context_len: int, max_running_requests: int,
              single_pool: bool) -> SglangRole:
    """One role's memory beside its KV pool (module docstring); ``single_pool``: the plan
    has one MHA/MLA token pool (no SWA, no state pool)."""
    mode = settings.mode or "null"
    if settings.transfer_backend not in BACKENDS and settings.mode is not None:
        raise DisaggregationNotModelled(
            f"--disaggregation-transfer-backend {settings.transfer_backend}: not modelled "
            f"(kvledger sizes {', '.join(BACKENDS)})")
    if (settings.enable_hierarchical_cache or settings.mode == "decode") and not single_pool:
        raise DisaggregationNotModelled(
            "a host KV pool (HiCache or the decode retraction backup) for a model with "
            "several KV pools: not modelled")
    notes: list[str] = []
    rows = extra = extra_bytes = 0
    backup = None
    pool: HostPool | None = None
    if settings.mode == "prefill":
        rows = 2 * max_running_requests
        notes.append("the bootstrap server and the KV registration add no KV bytes")
    elif settings.mode == "decode":
        rows = 2 * max_running_requests
        extra = settings.decode_extra_slots if settings.decode_extra_slots is not None else (
            2 * max_running_requests if max_running_requests <= 32 else 0)
        extra_bytes = extra * (context_len + REQ_TO_TOKEN_EXTRA) * 4
        if not settings.decode_enable_radix_cache:
            notes.append("the decode side runs without the radix cache (SGLang turns it off)")
        backup = "cpu_tensor" if settings.decode_enable_radix_cache else "host_pool"
    if settings.enable_hierarchical_cache or (backup == "host_pool"):
        ratio = settings.hicache_ratio
        default = 2.0
        label = "hicache"
        if backup == "host_pool" and not settings.enable_hierarchical_cache:
            label = "decode retraction backup"
            floor = min(context_len + REQ_TO_TOKEN_EXTRA - 1, pool_tokens)
            floor = -(-floor // page_size) * page_size  # ceil_align to the page
            default = max(BACKUP_ONLY_RATIO, floor / pool_tokens)
        pool = host_pool(device_tokens=pool_tokens, bytes_per_token=bytes_per_token,
                         page_size=page_size, ratio=ratio, size_gb=settings.hicache_size,
                         layout=settings.hicache_mem_layout, label=label,
                         default_ratio=default)
        if not pool.exact:
            notes.append(f"no --hicache-ratio or --hicache-size: ratio {default:g} is the most "
                         "SGLang uses; it lowers it until the host's pools fit "
                         "(hicache_auto_size.py)")
        if pool.staging_gpu_bytes:
            notes.append(f"page_first layout: up to {pool.staging_gpu_bytes:,} B of GPU "
                         "write-back staging, not taken out of the pool shown")
    return SglangRole(mode, settings.transfer_backend, rows, rows * METADATA_ROW_BYTES,
                      extra, extra_bytes, backup, pool, tuple(notes))

"""SGLang 0.5.23's HiCache host tier (``--enable-hierarchical-cache``): the host KV pool's
tokens and bytes, from ``mem_cache/pool_host/base.py`` ``HostKVCache.__init__`` and
``pool_host/mha.py``.

- Bytes per token (``MHATokenToKVPoolHost.get_size_per_token``): ``(head_dim + v_head_dim) ×
  kv heads on the GPU × layers × the KV dtype's size`` — the device pool's cell, so kvledger
  takes the SGLang plan's bytes per token. ``--hicache-mem-layout`` (``layer_first``,
  ``page_first`` — the default —, ``page_first_direct``) orders the same bytes differently.
- Tokens: ``--hicache-size`` GB (decimal: ``int(size × 1e9 // bytes_per_token)``) when > 0,
  else ``int(device pool tokens × --hicache-ratio)``; then a padding page is added:
  ``(tokens // page_size + 1) × page_size``. Host bytes = tokens × bytes per token, per GPU.
- Neither given: SGLang starts from ratio 2.0 (``kv_cache_builder.py``) and lowers it until the
  pools of every rank on the host fit ``--hicache-host-memory-fraction`` (0.8) of the host's
  free memory after a 10 GiB reserve (``hicache_auto_size.auto_size_hicache``): kvledger
  plans ratio 2.0 as the most it can be, and says so.
- ``page_first`` on CUDA also stages write-backs on the GPU (``prepare_mha_write_back_staging``):
  ``min(pages, 64) × page_size`` tokens of every layer, before the final KV sizing
  (``kv_cache_builder.prepare_hicache_staging``); kvledger reports those bytes beside the pool
  and does not take them out of it.
"""

from __future__ import annotations

from typing import Any

from kvledger.errors import PlanError
from kvledger.records import record

DEFAULT_RATIO = 2.0  # kv_cache_builder.py, cache mode
LAYOUTS = ("layer_first", "page_first", "page_first_direct")
DEFAULT_LAYOUT = "page_first"  # arg_groups/fields/memory.py
STAGING_PAGES = 64  # pool_host/base.py _WRITE_BACK_STAGING_PAGE_CHUNK


class HiCacheNotModelled(PlanError):
    """A HiCache setting kvledger does not size; names it."""


@record(frozen=True)
class HostPool:
    tokens: int
    bytes_per_token: int
    bytes: int  # per GPU
    ratio: float | None  # None: sized by --hicache-size
    size_gb: float
    layout: str
    exact: bool  # False: SGLang may lower the default ratio to fit the host
    staging_gpu_bytes: int  # page_first write-back staging on the GPU
    label: str

    def to_json(self) -> dict[str, Any]:
        return {"pool": self.label, "tokens": self.tokens,
                "bytes_per_token": self.bytes_per_token, "bytes_per_gpu": self.bytes,
                "hicache_ratio": self.ratio, "hicache_size_gb": self.size_gb or None,
                "layout": self.layout, "exact": self.exact,
                "staging_gpu_bytes": self.staging_gpu_bytes}


def host_pool(*, device_tokens: int, bytes_per_token: int, page_size: int,
              ratio: float | None, size_gb: float, layout: str,
              label: str = "hicache", default_ratio: float = DEFAULT_RATIO) -> HostPool:
    """The host pool ``HostKVCache`` allocates beside a device pool of ``device_tokens``."""
    if layout not in LAYOUTS:
        raise HiCacheNotModelled(f"--hicache-mem-layout {layout}: not modelled (kvledger sizes "
                                 f"{', '.join(LAYOUTS)})")
    if size_gb < 0 or (ratio is not None and ratio <= 0):
        raise HiCacheNotModelled("--hicache-ratio must be > 0 and --hicache-size >= 0")
    exact = True
    if size_gb > 0:
        tokens = int(size_gb * 1e9 // bytes_per_token)
        used_ratio = None
    else:
        exact = ratio is not None
        used_ratio = ratio if ratio is not None else default_ratio
        tokens = int(device_tokens * used_ratio)
    pages = tokens // page_size + 1
    tokens = pages * page_size
    staging = 0
    if layout == "page_first":
        # A fixed --hicache-size stages the full 64-page chunk.
        staged = STAGING_PAGES if size_gb > 0 else min(pages, STAGING_PAGES)
        staging = staged * page_size * bytes_per_token
    return HostPool(tokens, bytes_per_token, tokens * bytes_per_token, used_ratio, size_gb,
                    layout, exact, staging, label)


def plain_plan_tier(*, enabled: bool, ratio: float | None, size_gb: float | None,
                    layout: str | None, device_tokens: int, bytes_per_token: int,
                    page_size: int, context_len: int,
                    single_pool: bool) -> tuple[dict[str, Any] | None, list[str]]:
    """HiCache on an ordinary (not disaggregated) SGLang plan: the ``hicache`` JSON field and
    the lines the text shows. ``--hicache-ratio`` / ``--hicache-size`` without
    ``--enable-hierarchical-cache`` allocate nothing (SGLang builds the host pool only with
    it: ``kv_cache_builder.py``), which a note says."""
    given = [flag for flag, value in (("--hicache-ratio", ratio), ("--hicache-size", size_gb),
                                      ("--hicache-mem-layout", layout)) if value is not None]
    if not enabled:
        if given:
            return None, [f"{', '.join(given)} without --enable-hierarchical-cache: SGLang "
                          "builds no host tier"]
        return None, []
    if not single_pool:
        raise HiCacheNotModelled("--enable-hierarchical-cache on a model with several KV "
                                 "pools (sliding-window, state or indexer pools): the host "
                                 "tier of each is not modelled")
    pool = host_pool(device_tokens=device_tokens, bytes_per_token=bytes_per_token,
                     page_size=page_size, ratio=ratio, size_gb=size_gb or 0.0,
                     layout=layout or DEFAULT_LAYOUT)
    prefixes = pool.tokens // context_len if context_len > 0 else 0
    how = (f"--hicache-size {pool.size_gb:g} GB" if pool.size_gb else
           f"--hicache-ratio {pool.ratio:g}" + ("" if pool.exact else " (the most; SGLang "
                                                "lowers it until the host's pools fit, "
                                                "hicache_auto_size.py)"))
    lines = [f"HiCache host tier ({how}, {pool.layout}): {pool.tokens:,} tokens × "
             f"{pool.bytes_per_token:,} B = {pool.bytes:,} B ({pool.bytes / 2**30:.2f} GiB) of "
             f"host memory per GPU; {prefixes:,} whole prefix(es) of {context_len:,} tokens "
             "(capacity, not a hit rate)"]
    if pool.tokens <= device_tokens:
        # pool_host/base.py _allocate_host_buffer warns: the L2 tier adds little.
        lines.append(f"the host tier ({pool.tokens:,} tokens) is no larger than the GPU pool "
                     f"({device_tokens:,}): SGLang warns that it adds little")
    if pool.staging_gpu_bytes:
        lines.append(f"page_first layout: up to {pool.staging_gpu_bytes:,} B of GPU write-back "
                     "staging, not taken out of the pool shown")
    field = {**pool.to_json(), "host_bytes_per_gpu": pool.bytes,
             "whole_prefixes_at_context": prefixes, "context": context_len}
    return field, lines

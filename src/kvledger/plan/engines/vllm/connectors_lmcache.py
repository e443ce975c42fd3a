"""vLLM's ``LMCacheConnectorV1`` with the LMCache package (lmcache 0.5.6, the release read:
``pip download --no-deps lmcache``; vLLM 0.33.0's ``v1/lmcache_connector.py`` imports
``lmcache.integration.vllm.vllm_v1_adapter`` unless ``use_native`` is set).

Settings (``lmcache/v1/config.py`` ``_CONFIG_DEFINITIONS``): ``chunk_size`` 256 tokens,
``local_cpu`` true, ``max_local_cpu_size`` 5.0 GiB, ``local_disk`` None,
``max_local_disk_size`` 0.0 GiB. They come from ``LMCACHE_CONFIG_FILE`` or the ``LMCACHE_*``
environment variables (``LMCACHE_MAX_LOCAL_CPU_SIZE`` …), then ``kv_connector_extra_config``
keys ``lmcache.<name>`` override them (``vllm_v1_adapter._apply_extra_config``). kvledger
reads the extra-config keys (a serve line's ``LMCACHE_*`` variables are folded in as the same
keys); a config file it cannot see is not read.

The chunk (``lmcache/integration/vllm/utils.py``, ``v1/metadata.py`` ``get_shapes``): the KV
of ``chunk_size`` tokens for every layer on one GPU, ``[2, layers, chunk_size, kv_heads ×
head_dim]`` in the KV dtype (``KV_2LTD``): ``chunk_size`` × the GPU's bytes per token.

- GPU (``v1/gpu_connector/__init__.py`` ``CreateGPUConnector``): unless ``enable_pd``
  (``need_gpu_interm_buffer``), ``VLLMPagedMemGPUConnectorV2`` allocates one chunk-shaped
  ``gpu_buffer`` per GPU. It is created with the connector, after vLLM's memory profiling.
- Host (``v1/storage_backend/local_cpu_backend.py``): each GPU's worker allocates
  ``int(max_local_cpu_size × 2**30)`` bytes (pinned; ``MixedMemoryAllocator``) when
  ``local_cpu`` is on; each chunk takes its size rounded up to 4,096 bytes
  (``TensorMemoryAllocator.ALIGN_BYTES``), so the tier holds
  ``bytes // round_up(chunk, 4096)`` chunks of ``chunk_size`` tokens.
- Disk (``local_disk_backend.py``): ``int(max_local_disk_size × 2**30)`` bytes per GPU, chunks
  counted at their physical (aligned) size.

Not modelled, refused by name: MLA (``save_only_first_rank`` and the available-memory cap
apply), layerwise transfer (``use_layerwise``), LMCache's own P/D mode (``enable_pd``),
``use_native``, and any ``lmcache.*`` key not listed here.
"""

from __future__ import annotations

from typing import Any

from kvledger.plan.engines.vllm.connectors_records import (
    GIB,
    ConnectorMemory,
    ConnectorNotModelled,
    PoolFacts,
    Tier,
)

LMCACHE_RELEASE = "0.5.6"
ALIGN_BYTES = 4096  # lmcache/v1/memory_management.py TensorMemoryAllocator.ALIGN_BYTES
DEFAULTS: dict[str, Any] = {"chunk_size": 256, "local_cpu": True, "max_local_cpu_size": 5.0,
                            "local_disk": None, "max_local_disk_size": 0.0}
# Read by LMCache, no bytes moved (v1/config.py): where KV goes remotely, hashing, saving.
INERT = ("remote_url", "remote_serde", "save_decode_cache", "pre_caching_hash_algorithm",
         "lmcache_instance_id", "enable_controller", "lookup_url", "distributed_url")
REFUSED = {"use_layerwise": "layerwise transfer uses other GPU buffers",
           "enable_pd": "LMCache's own P/D transfer buffers (pd_buffer_size)",
           "enable_p2p": "the P2P paged CPU allocator",
           "local_cpu_use_hugepages": "huge pages change the host allocation"}
# env → extra-config key for a serve line's LMCACHE_* variables (v1/config.py env names).
ENV = {f"LMCACHE_{name.upper()}": f"lmcache.{name}" for name in DEFAULTS}


def _number(key: str, value: Any, at: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConnectorNotModelled(f"{at}{key} must be a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise ConnectorNotModelled(f"{at}{key} must be a number, got {value!r}") from None
    if number < 0:
        raise ConnectorNotModelled(f"{at}{key} must be >= 0, got {value!r}")
    return number


def _flag(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")


def settings(extra: dict[str, Any], at: str) -> dict[str, Any]:
    """LMCache's settings after the ``lmcache.*`` extra-config keys (module docstring)."""
    got = dict(DEFAULTS)
    for key, value in extra.items():
        name = key.removeprefix("lmcache.")
        if key == name:
            raise ConnectorNotModelled(f"{at}kv_connector_extra_config.{key} is not modelled "
                                       "(kvledger reads the lmcache.* keys)")
        if name in REFUSED:
            if _flag(value):
                raise ConnectorNotModelled(f"{at}{key}: {REFUSED[name]}, not modelled")
            continue
        if name in INERT:
            continue
        if name not in DEFAULTS:
            raise ConnectorNotModelled(f"{at}{key} is not modelled")
        got[name] = value
    chunk = _number("lmcache.chunk_size", got["chunk_size"], at)
    if chunk < 1 or chunk != int(chunk):
        raise ConnectorNotModelled(f"{at}lmcache.chunk_size must be a whole number of tokens")
    got["chunk_size"] = int(chunk)
    got["local_cpu"] = _flag(got["local_cpu"])
    got["max_local_cpu_size"] = _number("lmcache.max_local_cpu_size",
                                        got["max_local_cpu_size"], at)
    got["max_local_disk_size"] = _number("lmcache.max_local_disk_size",
                                         got["max_local_disk_size"], at)
    return got


def plan_lmcache(extra: dict[str, Any], pool: PoolFacts, *, role: str,
                 where: str) -> ConnectorMemory:
    if _flag(extra.get("use_native", False)):
        raise ConnectorNotModelled(f"{where}use_native: vLLM's bundled LMCache adapter is not "
                                   "modelled (the LMCache package's is)")
    if pool.use_mla:
        raise ConnectorNotModelled(f"{where}on an MLA model: LMCache saves on the first rank "
                                   "only and caps its size by free host memory, which kvledger "
                                   "does not model")
    got = settings({k: v for k, v in extra.items() if k != "use_native"}, where)
    chunk_tokens = got["chunk_size"]
    chunk = chunk_tokens * pool.bytes_per_token
    stored = -(-chunk // ALIGN_BYTES) * ALIGN_BYTES
    layout = (f"KV_2LTD chunks: {chunk_tokens} tokens × {pool.bytes_per_token:,} B per token "
              f"per GPU = {chunk:,} B ({stored:,} B aligned)")
    tiers = []
    host_per_gpu = 0
    if got["local_cpu"] and got["max_local_cpu_size"] > 0:
        host_per_gpu = int(got["max_local_cpu_size"] * GIB)
        tiers.append(Tier("cpu", host_per_gpu, stored, chunk_tokens, host_per_gpu // stored,
                          layout, per="gpu"))
    if got["local_disk"] and got["max_local_disk_size"] > 0:
        disk = int(got["max_local_disk_size"] * GIB)
        tiers.append(Tier("disk", disk, stored, chunk_tokens, disk // stored, layout,
                          per="gpu"))
    notes = [f"lmcache {LMCACHE_RELEASE}: a {chunk:,} B chunk buffer per GPU, allocated after "
             "vLLM sized the KV pool",
             f"host: {host_per_gpu:,} B pinned per GPU × {pool.world_size} GPU(s)",
             "LMCACHE_CONFIG_FILE is not read: kvledger plans LMCache's defaults and the "
             "lmcache.* keys given"]
    return ConnectorMemory("LMCacheConnectorV1", role, chunk, host_per_gpu * pool.world_size,
                           None, tuple(tiers), tuple(notes))

"""vLLM's KV connectors (``--kv-transfer-config``): the bytes each allocates beyond the GPU KV
pool, on the GPU and on the host, and what it changes in the engine's own plan — from vLLM
0.33.0's source (``vllm/distributed/kv_transfer/kv_connector/``, ``vllm/config/kv_transfer.py``).

When a connector's bytes land (``v1/worker/gpu_worker.py``): ``initialize_from_config`` calls
``ensure_kv_transfer_initialized`` after ``determine_available_memory`` has fixed the KV budget,
so a GPU buffer a connector allocates is *not* subtracted from the pool: it comes out of the
headroom above ``--gpu-memory-utilization``. kvledger reports it as ``gpu_bytes_per_gpu`` and
checks that it fits that headroom; the pool itself is unchanged.

Per connector (each registered in ``kv_connector/factory.py``):

- ``NixlConnector`` (``v1/nixl/base_worker.py``): ``register_kv_caches`` registers the existing
  KV tensors with NIXL (no GPU bytes). ``kv_buffer_device`` "cuda" (the default on CUDA) moves
  KV from GPU memory; "cpu" (``_NIXL_SUPPORTED_DEVICE``: cuda → cuda or cpu) makes
  ``initialize_host_xfer_buffer`` allocate one host tensor of each KV tensor's shape and dtype:
  the whole pool again, on the host. ``get_required_kvcache_layout`` (``nixl/connector.py``)
  asks for the heads-first layout "LBHNC" unless the model uses MLA — the same bytes, another
  order; a prefill and a decode instance with different TP sizes transfer through it.
- ``MooncakeConnector`` (``v1/mooncake/mooncake_connector.py``): ``register_kv_caches`` passes
  the KV tensors to the Transfer Engine's ``batch_register_memory`` (no GPU bytes, no host pool
  vLLM sizes); the same "LBHNC" layout rule.
- ``MoRIIOConnector`` (``v1/moriio/moriio_connector.py``, AMD's MoRI-IO transfer engine):
  ``MoRIIOConnectorWorker.register_kv_caches`` registers the existing KV tensors with the RDMA
  engine (``register_local_tensor``; KDA state caches through a zero-length uint8 alias of
  the same storage): no GPU or host bytes; no ``get_required_kvcache_layout`` override (the
  base's None); ``SupportsHMA``. Its extra-config keys are ports, addresses, timeouts and
  queue counts (``MoRIIOConfig.from_vllm_config`` in ``moriio_common.py``; ``read_mode``
  picks READ or WRITE transfers). The same in 0.33.0 and 0.34.0.
- ``LMCacheConnectorV1``: the LMCache package's adapter (``connectors_lmcache.py``).
- ``OffloadingConnector`` (``v1/offloading/config.py``, ``v1/kv_offload/cpu/spec.py``): no GPU
  bytes; a shared host region of ``cpu_bytes_to_use`` bytes over all ranks, cut into chunks of
  ``blocks_per_chunk`` GPU blocks of every layer on every rank, each rounded up to 4,096 bytes
  (``SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT``).
- ``MultiConnector`` (``v1/multi_connector.py``): each child in ``connectors`` is built as its
  own ``KVTransferConfig``; the bytes add up; the children must agree on the layout
  (``get_required_kvcache_layout`` raises otherwise), and the hybrid KV cache manager stays on
  only if every child supports it (``all_children_support_hma``).

A connector that does not implement ``SupportsHMA`` (LMCacheConnectorV1 among those sized here)
makes vLLM turn the hybrid KV cache manager off (``config/vllm.py``), which changes the pool of
a model with more than one KV cache group; kvledger refuses that case rather than plan the
wrong pool. ``--kv-offloading-size`` *replaces* the connector named here
(``_post_init_kv_transfer_config``), so the two are refused together.

vLLM 0.34.0 sizes all of the above as 0.33.0 does (the diff is read in releases/v0_34.py);
what moved is read from its profile: NixlConnector's ``transfer_mode`` ("pull" is 0.33's
connector, "push" the push-mode one kvledger does not size; ``nixl_transfer_mode``), the
connectors added to ``factory.py`` (``kv_connectors_added``), and which connectors turn the
extensible KV cache off (``extensible_cache_off``: config/vllm.py
``_resolve_extensible_kv_cache`` with each connector's ``kv_cache_access`` classmethod).

Not in vLLM 0.33.0 or 0.34.0: ``P2pNcclConnector`` (and its ``kv_buffer_size``:
``KVTransferConfig`` has no such field). Registered but not sized (refused by name): the rest
of ``factory.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kvledger.plan.engines.vllm.connectors_records import (
    ConnectorMemory,
    ConnectorNotModelled,
    PoolFacts,
    Tier,
)
from kvledger.plan.engines.vllm.releases.profile import VllmRelease

__all__ = ["ConnectorMemory", "ConnectorNotModelled", "PoolFacts", "Tier", "plan_connector"]

OFFLOAD_ALIGNMENT = 4096  # SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT (mmap.PAGESIZE on x86-64)
SIZED_RELEASE = "0.33.0"

# KVTransferConfig's fields (config/kv_transfer.py) and the roles it accepts.
FIELDS = ("kv_connector", "engine_id", "kv_buffer_device", "kv_role", "kv_port",
          "kv_connector_extra_config", "kv_connector_module_path", "enable_permute_local_kv",
          "kv_load_failure_policy")
ROLES = ("kv_producer", "kv_consumer", "kv_both")
# factory.py's registrations kvledger does not size, with why not.
NOT_SIZED = {
    "ExampleConnector": "an example that writes KV to local files",
    "ExampleHiddenStatesConnector": "an example that saves hidden states",
    "LMCacheMPConnector": "the standalone LMCache server sizes its own store",
    "NixlPullConnector": "its pull-mode buffers are not modelled",
    "NixlPushConnector": "its push-mode buffers are not modelled",
    "HiSparseConnector": "its host-resident sparse KV pool is not modelled",
    "DecodeBenchConnector": "a benchmark that fills KV with dummy values",
    "MooncakeStoreConnector": "the Mooncake store's segments are sized by its own server",
    "FlexKVConnectorV1": "FlexKV's own CPU/SSD tiers are not modelled",
    "SimpleCPUOffloadConnector": "its CPU block pool is not modelled",
    "HF3FSKVConnector": "its 3FS store is not modelled",
}
# Keys each sized connector reads that move no bytes (source: get_from_extra_config calls).
INERT_EXTRA = {
    "NixlConnector": ("backends", "kv_lease_duration", "kv_recompute_threshold",
                      "bidirectional_kv_xfer", "decoder_kv_blocks_ttl", "num_threads",
                      "engine_ttl", "enforce_handshake_compat"),
    "MooncakeConnector": ("num_workers", "mooncake_protocol", "device_name",
                          "bootstrap_server_address"),
    # moriio_common.py MoRIIOConfig.from_vllm_config, get_moriio_mode, resolve_host_ip.
    "MoRIIOConnector": ("read_mode", "host_ip", "backend", "transfer_timeout", "defer_timeout",
                        "recv_abort_timeout", "proxy_ip", "proxy_ping_port", "http_port",
                        "handshake_port", "notify_port", "qp_per_transfer", "post_batch_size",
                        "num_workers"),
    "OffloadingConnector": ("eviction_policy", "store_threshold", "max_tracker_size",
                            "offload_prompt_only", "self_describing_kv_events",
                            "sync_load_budget_bytes", "spec_name"),
}
# Connectors implementing SupportsHMA (``class X(KVConnectorBase_V1, SupportsHMA)``).
SUPPORTS_HMA = ("NixlConnector", "MooncakeConnector", "MoRIIOConnector", "OffloadingConnector",
                "MultiConnector")
LBHNC = ("NixlConnector", "MooncakeConnector")  # get_required_kvcache_layout, non-MLA


def parse(text: str) -> dict[str, Any]:
    """``--kv-transfer-config``'s JSON (vLLM parses the flag with ``json.loads``)."""
    from kvledger.plan.engines.vllm.launch import json_object

    return json_object(text, "--kv-transfer-config", ConnectorNotModelled)


def _version(release: VllmRelease | None) -> str:
    return SIZED_RELEASE if release is None else release.version


def check_release(release: VllmRelease) -> None:
    """The release's connectors were read (its profile's ``sizes_kv_connectors``)."""
    if not release.sizes_kv_connectors:
        raise ConnectorNotModelled(
            f"--kv-transfer-config under {release.short}: kvledger sizes KV connectors from "
            f"vLLM {SIZED_RELEASE}'s source, and this release's were not read; plan with "
            f"--engine vllm=={SIZED_RELEASE}")


def _fields(cfg: Mapping[str, Any], where: str,
            version: str = SIZED_RELEASE) -> tuple[str, str, str, dict[str, Any]]:
    if not isinstance(cfg, Mapping):
        raise ConnectorNotModelled(f"{where}must be a JSON object")
    for key in cfg:
        if key == "kv_buffer_size":
            raise ConnectorNotModelled(
                f"{where}kv_buffer_size: vLLM {version}'s KVTransferConfig has no such "
                "field (it belonged to the P2P NCCL connector, which this release does not "
                "have); drop it")
        if key not in FIELDS:
            raise ConnectorNotModelled(f"{where}{key}: not a KVTransferConfig field in vLLM "
                                       f"{version}")
    if cfg.get("kv_connector_module_path"):
        raise ConnectorNotModelled(f"{where}kv_connector_module_path: an out-of-tree connector; "
                                   "kvledger cannot size its buffers")
    name = cfg.get("kv_connector")
    if not isinstance(name, str) or not name:
        raise ConnectorNotModelled(f"{where}kv_connector: name a connector (NixlConnector, "
                                   "MooncakeConnector, LMCacheConnectorV1, OffloadingConnector, "
                                   "MultiConnector)")
    role = cfg.get("kv_role")
    if role not in ROLES:
        # KVTransferConfig.__post_init__ refuses a connector without a valid role.
        raise ConnectorNotModelled(f"{where}kv_role: vLLM needs one of {', '.join(ROLES)} with "
                                   f"a connector, got {role!r}")
    device = cfg.get("kv_buffer_device", "cuda")
    extra = cfg.get("kv_connector_extra_config", {})
    if not isinstance(extra, dict):
        raise ConnectorNotModelled(f"{where}kv_connector_extra_config must be a JSON object")
    return name, str(role), str(device), extra


def plan_connector(cfg: Mapping[str, Any], pool: PoolFacts, *,
                   where: str = "--kv-transfer-config ",
                   release: VllmRelease | None = None) -> ConnectorMemory:
    """The memory ``cfg`` (a ``KVTransferConfig`` as JSON) adds to an instance with ``pool``
    under ``release`` (None: vLLM 0.33.0's rules)."""
    version = _version(release)
    name, role, device, extra = _fields(cfg, where, version)
    at = f"{where}{name}"
    if name == "P2pNcclConnector":
        raise ConnectorNotModelled(f"{at}: vLLM {version} has no P2pNcclConnector "
                                   "(kv_connector/factory.py registers none); use NixlConnector")
    if name in NOT_SIZED:
        raise ConnectorNotModelled(f"{at}: not sized by kvledger ({NOT_SIZED[name]})")
    if release is not None and name in release.kv_connectors_added:
        raise ConnectorNotModelled(f"{at}: not sized by kvledger (new in vLLM {version}; its "
                                   "store is sized by its own server)")
    if name not in ("NixlConnector", "MooncakeConnector", "MoRIIOConnector",
                    "LMCacheConnectorV1", "OffloadingConnector", "MultiConnector"):
        raise ConnectorNotModelled(f"{at}: vLLM {version} registers no such connector")
    if name == "NixlConnector" and release is not None and release.nixl_transfer_mode:
        extra = _nixl_transfer_mode(extra, at, version)
    if pool.groups > 1 and name not in SUPPORTS_HMA:
        raise ConnectorNotModelled(
            f"{at} on a model with {pool.groups} KV cache groups: the connector does not "
            "support the hybrid KV cache manager, so vLLM turns it off and allocates another "
            "pool, which kvledger does not model")
    if name == "LMCacheConnectorV1":
        from kvledger.plan.engines.vllm.connectors_lmcache import plan_lmcache

        return plan_lmcache(extra, pool, role=role, where=f"{at}: ")
    if name == "MultiConnector":
        return _multi(cfg, extra, pool, role, at, release)
    for key in extra:
        if key not in INERT_EXTRA[name] and not (name == "OffloadingConnector" and key in (
                "cpu_bytes_to_use", "block_size", "blocks_per_chunk")):
            raise ConnectorNotModelled(f"{at}: kv_connector_extra_config.{key} is not modelled")
    layout = None if pool.use_mla or name not in LBHNC else "LBHNC"
    if name == "NixlConnector":
        if device not in ("cuda", "cpu"):
            # _NIXL_SUPPORTED_DEVICE["cuda"] = ("cuda", "cpu"): vLLM raises otherwise.
            raise ConnectorNotModelled(f"{at}: kv_buffer_device {device!r}: vLLM's NIXL "
                                       "connector on CUDA takes cuda or cpu")
        if device == "cpu":
            host = pool.num_blocks * pool.bytes_per_block * pool.world_size
            return ConnectorMemory(name, role, 0, host, layout, notes=(
                f"kv_buffer_device cpu: a host copy of every KV tensor ({pool.num_blocks:,} "
                f"blocks × {pool.bytes_per_block:,} B on each of {pool.world_size} GPU(s)); "
                "KV moves GPU → host → NIXL",))
        return ConnectorMemory(name, role, 0, 0, layout, notes=(
            "registers the GPU KV pool with NIXL: no bytes beyond it",))
    if name == "MooncakeConnector":
        return ConnectorMemory(name, role, 0, 0, layout, notes=(
            "registers the GPU KV pool with the Mooncake Transfer Engine "
            "(batch_register_memory): no bytes vLLM sizes beyond it",))
    if name == "MoRIIOConnector":
        return ConnectorMemory(name, role, 0, 0, layout, notes=(
            "registers the GPU KV pool with the MoRI-IO RDMA engine "
            "(MoRIIOConnectorWorker.register_kv_caches): no bytes beyond it",))
    return _offloading(extra, pool, role, at)


def _nixl_transfer_mode(extra: dict[str, Any], at: str, version: str) -> dict[str, Any]:
    """0.34 ``factory.py get_connector_class``: ``transfer_mode`` "pull" (the default) is
    NixlPullConnector, the connector sized here; "push" NixlPushConnector; anything else
    raises. ``ucx_backend_params`` (``nixl/base_worker.py``) only configures UCX. Both keys
    are dropped from what the sizing below checks."""
    mode = extra.get("transfer_mode", "pull")
    if mode == "push":
        raise ConnectorNotModelled(f"{at}: kv_connector_extra_config.transfer_mode push builds "
                                   f"NixlPushConnector in vLLM {version}, whose push-mode "
                                   "buffers are not modelled; use transfer_mode pull")
    if mode != "pull":
        raise ConnectorNotModelled(f"{at}: kv_connector_extra_config.transfer_mode {mode!r}: "
                                   f"vLLM {version} takes pull or push")
    return {k: v for k, v in extra.items() if k not in ("transfer_mode", "ucx_backend_params")}


def _multi(cfg: Mapping[str, Any], extra: dict[str, Any], pool: PoolFacts, role: str,
           at: str, release: VllmRelease | None) -> ConnectorMemory:
    children_cfg = extra.get("connectors")
    if set(extra) - {"connectors"}:
        key = sorted(set(extra) - {"connectors"})[0]
        raise ConnectorNotModelled(f"{at}: kv_connector_extra_config.{key} is not modelled")
    if not isinstance(children_cfg, list) or not children_cfg:
        raise ConnectorNotModelled(f"{at}: kv_connector_extra_config.connectors must list the "
                                   "child connectors")
    children = []
    for i, child in enumerate(children_cfg):
        if not isinstance(child, dict):
            raise ConnectorNotModelled(f"{at}: connectors[{i}] must be a JSON object")
        # A child inherits no role from its parent (each is its own KVTransferConfig).
        children.append(plan_connector(child, pool, where=f"{at}.connectors[{i}] ",
                                       release=release))
    layouts = {c.kv_layout for c in children if c.kv_layout is not None}
    if len(layouts) > 1:
        raise ConnectorNotModelled(f"{at}: the children ask for different KV layouts "
                                   f"({', '.join(sorted(layouts))}); vLLM refuses to start")
    tiers = tuple(t for c in children for t in c.tiers)
    return ConnectorMemory(
        "MultiConnector", role, sum(c.gpu_bytes_per_gpu for c in children),
        sum(c.host_bytes for c in children), next(iter(layouts), None), tiers,
        ("the children's bytes, added",), tuple(children))


def _offloading(extra: dict[str, Any], pool: PoolFacts, role: str, at: str) -> ConnectorMemory:
    spec = extra.get("spec_name", "CPUOffloadingSpec")
    if spec != "CPUOffloadingSpec":
        raise ConnectorNotModelled(f"{at}: kv_connector_extra_config.spec_name {spec!r} is not "
                                   "modelled (only CPUOffloadingSpec)")
    size = extra.get("cpu_bytes_to_use")
    if isinstance(size, bool) or not isinstance(size, int | float) or size <= 0:
        # CPUOffloadingSpec.__init__ raises when it is missing or falsy.
        raise ConnectorNotModelled(f"{at}: kv_connector_extra_config.cpu_bytes_to_use must be "
                                   "a positive number of bytes (vLLM requires it)")
    if pool.use_mla and pool.world_size > 1:
        raise ConnectorNotModelled(f"{at} with MLA over {pool.world_size} ranks: vLLM may keep "
                                   "one replicated copy, which kvledger does not model")
    if pool.groups > 1:
        raise ConnectorNotModelled(f"{at} on a model with {pool.groups} KV cache groups: the "
                                   "connector's per-group chunks are not modelled")
    per_chunk = _blocks_per_chunk(extra, pool.block_size, at)
    raw = pool.bytes_per_block * pool.world_size * per_chunk
    chunk = -(-raw // OFFLOAD_ALIGNMENT) * OFFLOAD_ALIGNMENT
    cpu_bytes = int(size)
    chunks = cpu_bytes // chunk
    tokens_per_chunk = pool.block_size * per_chunk
    tier = Tier("cpu", cpu_bytes, chunk, tokens_per_chunk, chunks,
                f"chunks of {per_chunk} GPU block(s) ({tokens_per_chunk} tokens) of every layer "
                f"on all {pool.world_size} rank(s): {raw:,} B, {chunk:,} B page-aligned")
    return ConnectorMemory("OffloadingConnector", role, 0, cpu_bytes, None, (tier,), (
        f"{chunks:,} chunks × {tokens_per_chunk} tokens in {cpu_bytes:,} B of host memory "
        "(pinned, one region shared by the ranks)",))


def _blocks_per_chunk(extra: dict[str, Any], block_size: int, at: str) -> int:
    """``v1/offloading/config.py``: ``blocks_per_chunk``, or ``block_size`` tokens that must
    be a multiple of the GPU block size; 1 when neither is given."""
    blocks, tokens = extra.get("blocks_per_chunk"), extra.get("block_size")
    if blocks is not None and tokens is not None:
        raise ConnectorNotModelled(f"{at}: give only one of block_size and blocks_per_chunk "
                                   "(vLLM refuses both)")
    if blocks is not None:
        if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks <= 0:
            raise ConnectorNotModelled(f"{at}: blocks_per_chunk must be an integer > 0")
        return blocks
    if tokens is not None:
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens <= 0 \
                or tokens % block_size:
            raise ConnectorNotModelled(f"{at}: block_size {tokens!r} must be a multiple of the "
                                       f"GPU block size ({block_size} tokens)")
        return tokens // block_size
    return 1


def gpu_headroom_check(memory: ConnectorMemory, *, gpu_total: int | None,
                       utilization: float | None) -> list[str]:
    """A warning when the connector's GPU bytes do not fit above the utilization share."""
    if not memory.gpu_bytes_per_gpu or gpu_total is None or utilization is None:
        return []
    headroom = gpu_total - int(gpu_total * utilization)
    if memory.gpu_bytes_per_gpu <= headroom:
        return []
    return [f"{memory.connector} allocates {memory.gpu_bytes_per_gpu:,} B per GPU after vLLM "
            f"sized the KV pool, more than the {headroom:,} B left above "
            f"gpu_memory_utilization {utilization:g}: lower the utilization"]


# vLLM 0.34 config/kv_transfer.py KVCacheAccess, from each connector's ``kv_cache_access``
# classmethod (v1/base.py KVConnectorBase_V1: IN_PROCESS unless overridden).
REGISTERS, EXPORTS_FABRIC, LEGACY_IPC = "registers", "exports_fabric", "legacy_ipc"


def _access(cfg: Mapping[str, Any]) -> set[str]:
    name = cfg.get("kv_connector")
    extra = cfg.get("kv_connector_extra_config") or {}
    if name == "MultiConnector":  # multi_connector.py: its children's flags, or-ed
        found: set[str] = set()
        for child in extra.get("connectors") or ():
            if isinstance(child, Mapping):
                found |= _access(child)
        return found
    if name in ("NixlConnector", "NixlPullConnector", "NixlPushConnector"):
        # nixl/connector.py NixlBaseConnector.kv_cache_access: a cpu kv_buffer_device moves
        # KV through host buffers (IN_PROCESS); otherwise REGISTERS | EXPORTS_FABRIC.
        return set() if cfg.get("kv_buffer_device") == "cpu" else {REGISTERS, EXPORTS_FABRIC}
    if name in ("MooncakeConnector", "MooncakeStoreConnector", "MoRIIOConnector",
                "UMBPStoreConnector"):
        return {REGISTERS}
    if name == "LMCacheMPConnector":  # lmcache_mp_connector.py: cudaIpcGetMemHandle
        return {LEGACY_IPC}
    return set()  # OffloadingConnector, LMCacheConnectorV1, ...: the base class's IN_PROCESS


def _custom_mem_pool(cfg: Mapping[str, Any]) -> bool:
    """config/kv_transfer.py KVTransferConfig.uses_custom_mem_pool."""
    extra = cfg.get("kv_connector_extra_config") or {}
    configs = [extra]
    if cfg.get("kv_connector") == "MultiConnector":
        configs += [c.get("kv_connector_extra_config") or {}
                    for c in extra.get("connectors") or () if isinstance(c, Mapping)]
    return any(isinstance(c, Mapping) and c.get("custom_mem_pool") for c in configs)


def extensible_cache_off(text: str, *, requested: bool | None,
                         rocm: bool = False) -> str | None:
    """Why vLLM 0.34 (config/vllm.py ``VllmConfig._resolve_extensible_kv_cache``, on CUDA)
    sizes the KV cache without the extensible KV cache with this ``--kv-transfer-config``;
    None when the connector leaves it on. ``requested``: ``--enable-extensible-kv-cache``
    (None when not given).

    A connector sharing the cache through legacy CUDA IPC, or a ``custom_mem_pool``, turns it
    off. One whose peers import the cache through FABRIC handles (NIXL with the cuda buffer
    device) needs an IMEX channel (utils/vmm_driver.py ``imex_channel_available``:
    /dev/nvidia-caps-imex-channels/channel*); without one, and with the flag not given, vLLM
    turns the mode off. kvledger assumes no IMEX channel — the usual H100/H200 host, where
    only multi-node NVLink systems run the IMEX daemon; give --enable-extensible-kv-cache to
    plan the mode on, as vLLM then keeps it (with a warning that in-host transfers use TCP).

    On ROCm (``rocm``) a connector that registers or exports the cache
    (``KVCacheAccess.needs_single_chunk``: NIXL with the cuda buffer device, Mooncake, MoRIIO,
    UMBP) turns it off: "UCX and RDMA cannot yet register driver-mapped memory". Where the mode
    is unsupported and ``--enable-extensible-kv-cache`` asks for it, vLLM refuses to start
    ("enable_extensible_kv_cache: <why>.").
    """
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(cfg, Mapping) or not cfg.get("kv_connector"):
        return None
    access = _access(cfg)
    unsupported = None
    if LEGACY_IPC in access:
        unsupported = "the connector shares the cache through legacy CUDA IPC"
    elif _custom_mem_pool(cfg):
        unsupported = "the connector allocates it from its custom_mem_pool"
    elif rocm and access & {REGISTERS, EXPORTS_FABRIC}:
        unsupported = ("on ROCm, UCX and RDMA cannot yet register driver-mapped memory, which "
                       "the connector needs (it registers the KV cache)")
    if unsupported is not None:
        if requested:
            raise ConnectorNotModelled(f"vLLM refuses to start: enable_extensible_kv_cache: "
                                       f"{unsupported}. (config/vllm.py "
                                       "_resolve_extensible_kv_cache); drop "
                                       "--enable-extensible-kv-cache")
        return unsupported
    if EXPORTS_FABRIC in access and requested is None:
        return ("NIXL exports the cache through FABRIC handles, which need an IMEX channel "
                "(assumed absent: --enable-extensible-kv-cache keeps the mode on)")
    return None

"""The ATOM snapshot kvledger reproduces, its defaults, its flag names and its log lines.

Everything here was read in ROCm/ATOM at ``COMMIT`` (the newest snapshot fetched, 22 Aug
2026). ``atom/model_ops/attentions/sub_pool_spec.py`` entered at ``SUB_POOL_SPEC_COMMIT``
(#1771) and is byte-identical at ``COMMIT``. Each default cites the line it comes from.
"""

from __future__ import annotations

from kvledger.plan.engines.release import Release
from kvledger.records import record


@record(frozen=True, kw_only=True)
class AtomRelease(Release):
    """One ATOM snapshot: ATOM has no tagged release, so a commit names it (``version`` is the
    short commit: what a user reads as "which ATOM")."""

    commit: str
    date: str


COMMIT = "ffdf3bb5ddf8a15a64d521a2eeb3bc7438f9ac21"
SUB_POOL_SPEC_COMMIT = "042e8f1c029b9c5dc09dad7fca93b82533b89975"
NEWEST = AtomRelease(engine="atom", product="ATOM", version=COMMIT[:9], commit=COMMIT,
                     date="2026-08-22")
RELEASES: dict[str, AtomRelease] = {NEWEST.version: NEWEST}

# atom/config.py Config: gpu_memory_utilization: float = 0.9; max_num_seqs: int = 512;
# kv_cache_block_size: int = 16; kv_cache_dtype: str = "bf16". The CLI
# (atom/model_engine/arg_utils.py EngineArgs.add_cli_args) has the same defaults.
GPU_MEMORY_UTILIZATION = 0.9
MAX_NUM_SEQS = 512
BLOCK_SIZE = 16
# atom/config.py Config.__post_init__: any "DeepseekV4" architecture forces
# kv_cache_block_size = 256 (2 × lcm(4, 128)), whatever --block-size says.
V4_BLOCK_SIZE = 256
# ModelRunner.get_num_blocks: safety_margin = int(total * 0.02).
SAFETY_FRACTION = 0.02
# ModelRunner._estimate_cudagraph_overhead, the default --cudagraph-mode FULL (not
# piecewise): overhead = activation_bytes * 0.2, activation_bytes = peak − current.
CUDAGRAPH_ACTIVATION_FRACTION = 0.2

# arg_utils.py: --kv_cache_dtype choices ["bf16", "fp8"] (default "bf16"); kvledger's names
# for the same two.
KV_DTYPES = {"auto": "bf16", "bfloat16": "bf16", "fp8": "fp8", "fp8_e4m3": "fp8"}
# aiter dtypes.d_dtypes[...].itemsize: bf16 2 B, fp8 1 B.
KV_DTYPE_BYTES = {"bf16": 2, "fp8": 1}
KV_DTYPE_NAMES = {"bf16": "bfloat16", "fp8": "fp8_e4m3"}

# ATOM's own flag names (arg_utils.py), for messages.
FLAGS = {
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "max_num_seqs": "--max-num-seqs",
    "block_size": "--block-size",
    "kv_cache_dtype": "--kv_cache_dtype",
    "index_cache_dtype": "--index-cache-dtype",
    "tensor_parallel_size": "--tensor-parallel-size",
    "pipeline_parallel_size": "--pipeline-parallel-size",
    "method": "--method",
    "num_speculative_tokens": "--num-speculative-tokens",
}

GIB = 1 << 30


def sub_pool_line(name: str, entries: int, entry_bytes: int, reserved_bytes: int) -> str:
    """``get_num_blocks`` logs one line per entry class, in sorted name order."""
    return (f"sub-pool {name}: entries={entries}, entry_bytes={entry_bytes}, "
            f"reserved={reserved_bytes / GIB:.2f}GB")


def budget_line(available_bytes: int, block_bytes: int, num_blocks: int) -> str:
    """The tail of ``get_num_blocks``' "Memory budget: ..." line: the fields kvledger knows
    from a given budget (the GPU fields before it are measured on the device)."""
    return (f"available_for_kv={available_bytes / GIB:.2f}GB, block_bytes={block_bytes}, "
            f"num_kvcache_blocks={num_blocks}")

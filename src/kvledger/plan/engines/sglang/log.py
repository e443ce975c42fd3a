"""The lines SGLang 0.5.23 logs when it allocates its pools, formatted exactly as it does.

``KVCache._finalize_allocation_log`` (``mem_cache/memory_pool.py``) prints
``"{label}KV Cache is allocated. dtype: {torch dtype}, #tokens: {size}, K size: {k:.2f} GB,
V size: {v:.2f} GB"`` for pools that return K and V sizes apart (MHA), and ``"... KV size:
{kv:.2f} GB"`` for one buffer (MLA, with DSA's index keys added). Sizes are the buffers'
bytes over 2^30: every per-layer buffer has ``size + page_size`` rows (the padded slot).
Hybrid SWA pools print one line per sub-pool, labelled ``Full`` and ``SWA``
(``SWAKVPool.__init__``, ``mem_cache/swa_memory_pool.py``), then a summary line. The Mamba
pool prints ``"Mamba Cache is allocated. max_mamba_cache_size: {n}, conv_state size:
{c:.2f}GB, ssm_state size: {s:.2f}GB "`` (``MambaPool.__init__``), its tensors holding
``n + 1`` slots.
"""

from __future__ import annotations

GB = 1 << 30


def kv_line(torch_dtype: str, tokens: int, k_bytes: int, v_bytes: int, label: str = "") -> str:
    prefix = f"{label} KV Cache" if label else "KV Cache"
    return (f"{prefix} is allocated. dtype: {torch_dtype}, #tokens: {tokens}, "
            f"K size: {k_bytes / GB:.2f} GB, V size: {v_bytes / GB:.2f} GB")


def kv_single_line(torch_dtype: str, tokens: int, kv_bytes: int) -> str:
    return (f"KV Cache is allocated. dtype: {torch_dtype}, #tokens: {tokens}, "
            f"KV size: {kv_bytes / GB:.2f} GB")


def swa_summary_line(total_bytes: int, swa_tokens: int, full_tokens: int) -> str:
    return (f"SWAKVPool mem usage: {total_bytes / GB:.2f} GB, swa size: {swa_tokens}, "
            f"full size: {full_tokens}")


def mamba_line(slots: int, conv_bytes: int, ssm_bytes: int) -> str:
    return (f"Mamba Cache is allocated. max_mamba_cache_size: {slots}, "
            f"conv_state size: {conv_bytes / GB:.2f}GB, ssm_state size: {ssm_bytes / GB:.2f}GB ")

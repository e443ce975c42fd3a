"""SGLang 0.5.23's DeepSeek-V4 pools: ``DSV4PoolConfigurator`` on its default CUDA path.

DeepSeek-V4 has no per-token cell: ``DSV4PoolConfigurator`` (``model_executor/
pool_configurator.py``) prices one *full* token as the compressed KV its compressed layers add
plus a ratio of a sliding-window token, subtracts fixed per-request state, and derives every
other pool from the full token count. Each rule, with where SGLang states it:

* **Settings** (``arg_groups/model_overrides/deepseek_v4.py``: ``_deepseek_v4_overrides``;
  ``arg_groups/deepseek_v4_hook.py``: ``apply_deepseek_v4_defaults``; ``arg_groups/
  overrides.py``: ``_deepseek_v4_kv_cache_dtype``): page size 256, ``swa_full_tokens_ratio``
  0.1 (for ``deepseek_v4``, not V4.1 — and set so, it counts as the operator's:
  ``_operator_swa_full_tokens_ratio``, so the SWA pool is sized by ratio, never by the
  request cap), ``max_running_requests`` 256, KV dtype ``auto`` → ``fp8_e4m3``, attention
  backend ``flashmla`` (``_default_dsv4_attention_backend``: ``flashmla_mega`` is V4.1-only).
* **Layers** (``configs/model_config.py`` ``_derive_model_shapes``' V4 branch:
  ``qk_nope_head_dim = head_dim − qk_rope_head_dim``; ``mem_cache/deepseek_v4_memory_pool.py``
  ``collect_sources_by_ratio``): every layer of ``compress_ratios[:num_hidden_layers]`` keeps
  sliding-window KV; ratio-4 and ratio-128 layers own compressed KV too (ratio 1 / 2 only
  for ``kv_source_layer_ids``, a V4.1 key).
* **Bytes** (``_get_paged_kv_bytes_per_token``, ``select_dsv4_kv_layout`` with
  ``SGLANG_DSV4_KV_LAYOUT`` "v4" → ``KVLayout.V4`` in ``kernels/ops/attention/dsv4/
  kv_layout.py``: 576 data + 8 scale bytes per token, a page padded to a multiple of 576 B):
  ``page_bytes(p) / p`` with ``p`` = 256 / ratio tokens per page (256 for the SWA pool).
  A SWA token costs that × all layers plus the ratio-4 compress state it drags along
  (``_get_bytes_per_swa_token``: ring 8 / page × (2·2·head_dim + 2·2·index_head_dim) × 4 B
  float32 state, ``SGLANG_DSV4_COMPRESS_STATE_DTYPE``). A full token costs
  0.1 × the SWA token + per ratio-4 layer (paged / 4 + indexer / 4, the indexer
  ``index_head_dim + index_head_dim // 128 × 4`` B: ``get_dsv4_indexer_bytes_per_token``)
  + per ratio-128 layer paged / 128 (``_compressed_bytes_per_full_token``).
* **Fixed bytes** (``_get_c128_state_fixed_bytes``): each ratio-128 layer's compress-state
  ring, ``((requests + 1) × 128 + 128 + 1)`` rows rounded up to 128, × 2·head_dim × 4 B.
* **Tokens** (``calculate_pool_sizes``): ``int((budget − fixed) / full_token_bytes)`` whole
  pages (no low-ratio padding without ratio-1/2 layers); SWA ``int(full × ratio)`` whole
  pages (``_get_swa_tokens``), checked by ``validate_swa_pool_size``; c4 ``full // 4``,
  c128 ``full // 128``, the c4 state ``swa // page × 8`` (``_compute_dsv4_sizes``).

Not reproduced, refused by name: DeepSeek-V4.1 (``deepseek_v41``), ratio-1/2 layers,
speculative decoding (ring sizes and the draft inflation), pipeline parallelism, DP attention,
a KV dtype other than fp8_e4m3. An asked page size is overridden by the 256 (oracle case
cov-deepseek-v4 ran with ``--page-size 1``), so it is warned about, not refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.records import record

ARCH = "DeepseekV4ForCausalLM"
PAGE_SIZE = 256  # _deepseek_v4_overrides (CUDA)
DEFAULT_SWA_RATIO = 0.1  # _deepseek_v4_overrides for deepseek_v4
DEFAULT_MAX_RUNNING_REQUESTS = 256  # apply_deepseek_v4_defaults
# KVLayout.V4 (kernels/ops/attention/dsv4/kv_layout.py).
V4_TOKEN_BYTES = 576 + 8
V4_PAGE_ALIGN = 576
# get_compress_state_ring_size without speculation: ratio 4 → 8 rows, 128 → 128.
RING = {4: 8, 128: 128}
STATE_DTYPE_BYTES = 4  # SGLANG_DSV4_COMPRESS_STATE_DTYPE default float32
INDEX_QUANT_BLOCK = 128


class Unreproduced(ValueError):
    """A DeepSeek-V4 setting outside SGLang's default path reproduced here."""


@record(frozen=True)
class Dsv4Geometry:
    """What ``DSV4PoolConfigurator.__init__`` reads from the config."""

    num_layers: int
    ratio4_layers: int
    ratio128_layers: int
    attn_head_dim: int  # qk_nope_head_dim + qk_rope_head_dim (= head_dim)
    index_head_dim: int
    window: int


def _int(config: Mapping[str, Any], key: str) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise Unreproduced(f"SGLang's DeepSeek-V4 pool reads {key}, which is {value!r}")
    return value


def geometry(config: Mapping[str, Any]) -> Dsv4Geometry:
    if config.get("model_type") != "deepseek_v4":
        raise Unreproduced(f"model_type {config.get('model_type')!r}: only deepseek_v4's "
                           "pool (not V4.1's) is reproduced")
    layers = _int(config, "num_hidden_layers")
    ratios = config.get("compress_ratios")
    if not isinstance(ratios, list) or len(ratios) < layers:
        raise Unreproduced(f"compress_ratios must list the {layers} layers' ratios")
    stage = ratios[:layers]
    odd = sorted({r for r in stage if r not in (0, 4, 128)}, key=str)
    if odd:
        raise Unreproduced(f"compress ratios {odd} (SGLang's ratio-1/2 kv-source layers, "
                           "a V4.1 layout) are not reproduced")
    if config.get("kv_source_layer_ids"):
        raise Unreproduced("kv_source_layer_ids (V4.1 KV sharing) is not reproduced")
    head = _int(config, "head_dim")
    rope = _int(config, "qk_rope_head_dim")
    if rope >= head:
        raise Unreproduced(f"qk_rope_head_dim {rope} is not below head_dim {head}")
    return Dsv4Geometry(layers, stage.count(4), stage.count(128), head,
                        _int(config, "index_head_dim"), _int(config, "sliding_window"))


def paged_bytes_per_token(ratio: int, page_size: int = PAGE_SIZE) -> float:
    """``_get_paged_kv_bytes_per_token``: a V4-layout page of ``page_size / ratio`` tokens,
    padded to a multiple of 576 B, over its tokens (``ratio`` 0: the SWA pool)."""
    tokens = page_size // ratio if ratio else page_size
    page = -(-tokens * V4_TOKEN_BYTES // V4_PAGE_ALIGN) * V4_PAGE_ALIGN
    return page / tokens


def swa_token_bytes(geo: Dsv4Geometry) -> float:
    """``_get_bytes_per_swa_token``: paged SWA KV on every layer + the ratio-4 compress
    state one SWA slot carries."""
    state = 2 * 2 * geo.attn_head_dim * STATE_DTYPE_BYTES
    index_state = 2 * 2 * geo.index_head_dim * STATE_DTYPE_BYTES
    ring_ratio = (RING[4] if geo.ratio4_layers else 0) / PAGE_SIZE
    return paged_bytes_per_token(0) * geo.num_layers + \
        ring_ratio * (state + index_state) * geo.ratio4_layers


def full_token_bytes(geo: Dsv4Geometry, swa_ratio: float) -> float:
    """``_get_bytes_per_full_token`` in ratio mode."""
    head = geo.index_head_dim
    indexer = head + head // INDEX_QUANT_BLOCK * 4
    ratio4 = 1 / 4 * paged_bytes_per_token(4) + 1 / 4 * indexer
    ratio128 = 1 / 128 * paged_bytes_per_token(128)
    return swa_ratio * swa_token_bytes(geo) + ratio4 * geo.ratio4_layers + \
        ratio128 * geo.ratio128_layers


def c128_state_bytes(geo: Dsv4Geometry, requests_per_worker: int) -> int:
    """``_get_c128_state_fixed_bytes`` (offline c128 compression)."""
    if not geo.ratio128_layers:
        return 0
    ring = RING[128]
    rows = (requests_per_worker + 1) * ring + ring + 1
    rows = -(-rows // 128) * 128
    return rows * 2 * geo.attn_head_dim * STATE_DTYPE_BYTES * geo.ratio128_layers


@record(frozen=True)
class Dsv4Sizes:
    full_tokens: int
    swa_tokens: int
    c4_tokens: int
    c128_tokens: int
    c4_state_pool_size: int
    full_token_bytes: float
    fixed_bytes: int


def sizes_for_tokens(geo: Dsv4Geometry, full: int, swa_ratio: float, bpft: float,
                     fixed: int) -> Dsv4Sizes:
    """``_compute_dsv4_sizes`` (ratio mode)."""
    full = full // PAGE_SIZE * PAGE_SIZE
    swa = int(full * swa_ratio) // PAGE_SIZE * PAGE_SIZE
    return Dsv4Sizes(full, swa, full // 4, full // 128,
                     swa // PAGE_SIZE * (RING[4] if geo.ratio4_layers else 0), bpft, fixed)


def pool_sizes(geo: Dsv4Geometry, available_bytes: int, *, swa_ratio: float,
               requests_per_worker: int) -> Dsv4Sizes:
    """``calculate_pool_sizes`` for ``available_bytes`` of budget."""
    bpft = full_token_bytes(geo, swa_ratio)
    fixed = c128_state_bytes(geo, requests_per_worker)
    full = int(max(available_bytes - fixed, 0) / bpft)
    return sizes_for_tokens(geo, full, swa_ratio, bpft, fixed)


def log_lines(sizes: Dsv4Sizes, available_bytes: int) -> tuple[str, str]:
    """The two lines ``calculate_pool_sizes`` / ``_to_config`` log (c128 state pool 0 until
    ``finalize_with_max_running_requests``)."""
    gb = 1 << 30
    memory = (f"DSV4 memory calculation: unified=False, unified_fp8=False, "
              f"dspark_draft_bf16=False, bytes_per_full_token={sizes.full_token_bytes:.2f}, "
              f"available_bytes={available_bytes / gb:.2f} GB, "
              f"c128_state_fixed={sizes.fixed_bytes / gb:.2f} GB, "
              f"c2_state_fixed={0:.2f} GB, swa_fixed={0:.2f} GB, "
              f"swa_ring_fixed={0:.2f} GB, c4_state_fixed={0:.2f} GB, "
              f"full_token={sizes.full_tokens}")
    pools = (f"DSV4 pool sizes: full={sizes.full_tokens}, swa={sizes.swa_tokens}, "
             f"c4={sizes.c4_tokens}, c128={sizes.c128_tokens}, "
             f"c4_state={sizes.c4_state_pool_size}, c128_state=0")
    return memory, pools

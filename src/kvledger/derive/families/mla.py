"""Multi-head latent attention: DeepSeek-V2/V3/R1, Kimi-K2, and the DSA sparse-attention
models built on it, DeepSeek-V3.2 and GLM-5.x (``glm_moe_dsa``).

Facts, as vLLM models them (vllm/model_executor/models/deepseek_v2.py, deepseek_mtp.py):

* Every decoder layer caches one MLA latent per token: ``kv_lora_rank`` compressed KV plus
  ``qk_rope_head_dim`` decoupled rope key (vLLM ``MLAAttentionSpec``, num_kv_heads 1,
  head_size = 512 + 64 = 576 for every DeepSeek config; replicated on every TP rank).
  ``num_key_value_heads``, ``v_head_dim`` and ``qk_nope_head_dim`` shape the up-projections,
  not the cache.
* A config with ``index_topk`` is a DSA model (vLLM: ``is_v32 = hasattr(config,
  "index_topk")``). Its layers also cache the lightning-indexer keys: ``index_head_dim``
  values as fp8 plus one fp32 scale per 128 values — 128 + 4 = 132 bytes per token, stored
  as uint8 whatever ``kv_cache_dtype`` says (vLLM ``Indexer``: ``head_dim +
  head_dim // quant_block_size * 4``, ``DeepseekV32IndexerCache`` dtype uint8).
* IndexCache (GLM-5.x): only some layers run an indexer; the others reuse the top-k of the
  last layer that did, and own no indexer cache. vLLM's rule: with ``index_topk_pattern``
  unset, layer ``i`` skips when ``max(i - index_skip_topk_offset + 1, 0) %
  index_topk_freq != 0`` (defaults 2 and 1); a pattern marks skipping layers with "S".
  GLM configs also list ``indexer_types`` ("full"/"shared"); it must agree.
* MTP / next-n layers (``num_nextn_predict_layers``) are full decoder layers after the
  backbone, with role MTP; on DSA models they always own a full indexer (vLLM: "MTP/nextn
  layers always build a full indexer"). The vLLM oracle shows they are allocated only when
  speculative decoding uses them (DeepSeek-V3: 61 MLA layers, 62 with ``--speculative-method
  mtp``) — that choice belongs to the planner.
* fp8 KV on a DSA model: vLLM turns ``fp8`` into FlashMLA's sparse ``fp8_ds_mla`` layout —
  the 512 latent values in fp8 with one fp32 scale per 128, the 64 rope values kept in bf16:
  512 + 4x4 + 64x2 = 656 bytes (vLLM ``DeepseekV32ForCausalLM.verify_and_update_config``,
  ``MLAAttentionSpec.real_page_size_bytes`` "V3.2 main MLA: 656-byte custom layout").
  Dense MLA at fp8 is plain 1 byte per value: 576 (oracle: page 9216 B / 16 tokens).
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.layers import MLA, Indexer, LayerCache, Role, ceil_div
from kvledger.derive.registry import Derived
from kvledger.records import record

FAMILY = "mla"

# The DSA indexer key cache: fp8 values, one fp32 scale per 128 (vLLM Indexer).
INDEXER_DTYPE = "fp8_e4m3"
INDEXER_QUANT_BLOCK = 128
INDEXER_SCALE_BYTES = 4

# Which KV element types an engine's MLA backends can store is the engine's rule, not a fact
# of the model: derive states the latent at whatever element type it is given, and each
# layout refuses what its engine refuses (vLLM: nvfp4 and fp8_e5m2 on MLA, with vLLM's own
# reason, plan/engines/vllm/resolve.py). Refusing here hid that reason behind this family's.


@record(frozen=True, kw_only=True)
class SparseMLA(MLA):
    """MLA read by DSA sparse kernels. At 16/32-bit it is plain MLA; at fp8 vLLM stores
    FlashMLA's ``fp8_ds_mla`` layout: the latent in fp8 with one fp32 scale per
    ``SCALE_GROUP`` values, the rope part kept in bf16 (656 B for 512 + 64).
    """

    SCALE_GROUP: ClassVar[int] = 128
    SCALE_BYTES: ClassVar[int] = 4  # one fp32 scale per group
    ROPE_BYTES_PER_VALUE: ClassVar[int] = 2  # bf16 rope in the fp8 layout
    FP8_LAYOUT: ClassVar[str] = "fp8_ds_mla"
    # False where the engine's chosen kernel keeps fp8 as one-byte rows (vLLM's
    # FLASHINFER_MLA_SPARSE on SM10x; SGLang's trtllm / tilelang / ROCm DSA kernels): the
    # engine, not the model, decides, so derive states the packed layout and a plan unpacks.
    packed: bool = True

    @property
    def is_fp8_layout(self) -> bool:
        return self.packed and self.kv_dtype.name.startswith("fp8")

    def bytes_per_token(self) -> int:
        if not self.is_fp8_layout:
            return super().bytes_per_token()
        scales = ceil_div(self.latent_dim, self.SCALE_GROUP) * self.SCALE_BYTES
        return self.latent_dim + scales + self.rope_dim * self.ROPE_BYTES_PER_VALUE

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        if self.is_fp8_layout:
            out["layout"] = self.FP8_LAYOUT
        return out


@record(frozen=True, kw_only=True)
class DSAIndexer(Indexer):
    """The DSA indexer key cache. Its element type is fixed by the architecture (fp8 + fp32
    scales, stored as uint8), so a KV dtype never changes it: ``with_dtype`` keeps the layer.
    """

    def with_dtype(self, dtype: str) -> Self:
        resolve_dtype(dtype)  # reject unknown names, change nothing
        return self


def indexer_owners(cfg: Config, num_layers: int) -> list[bool]:
    """Which backbone layers own a DSA indexer (vLLM's IndexCache rule, see module doc)."""
    freq = cfg.int("index_topk_freq", 1)
    offset = cfg.int("index_skip_topk_offset", 2)
    if freq < 1:
        raise ConfigError(f"{cfg.model}: index_topk_freq must be >= 1, got {freq}")
    pattern = cfg.get("index_topk_pattern")
    owners: list[bool] = []
    for i in range(num_layers):
        if pattern is None:
            skip = max(i - offset + 1, 0) % freq != 0
        else:
            if not isinstance(pattern, (str, list)):
                raise ConfigError(f"{cfg.model}: index_topk_pattern must be a string or list")
            # vLLM: layers beyond the pattern's length keep their indexer.
            skip = i < len(pattern) and pattern[i] == "S"
        owners.append(not skip)
    listed = cfg.get("indexer_types")
    if listed is not None:
        if not isinstance(listed, list) or len(listed) != num_layers:
            raise ConfigError(f"{cfg.model}: indexer_types must list {num_layers} layers")
        unknown = sorted({str(t) for t in listed} - {"full", "shared"})
        if unknown:
            raise UnsupportedArchitecture(
                f"{cfg.model}: indexer_types has {unknown}; the {FAMILY} family knows "
                "'full' and 'shared'",
                model_type=cfg.model_type,
            )
        from_types = [t == "full" for t in listed]
        if from_types != owners:
            bad = [i for i, (a, b) in enumerate(zip(from_types, owners, strict=True)) if a != b]
            raise ConfigError(
                f"{cfg.model}: indexer_types disagrees with index_topk_freq/"
                f"index_skip_topk_offset/index_topk_pattern at layers {bad}; refusing to guess "
                "which layers own an indexer cache"
            )
    if owners and not owners[0]:
        raise ConfigError(f"{cfg.model}: layer 0 must own an indexer (nothing to share from)")
    return owners


# layer_types entries that mean "DSA on this layer": GLM-5.x NVFP4 states
# "deepseek_sparse_attention", which transformers 5.19 remaps to "indexed_attention"
# (configuration_utils._LEGACY_LAYER_TYPE_REMAP); GlmMoeDsaConfig / DeepseekV32Config fill
# every layer with "indexed_attention" when the file states none.
DSA_LAYER_TYPES = frozenset({"deepseek_sparse_attention", "indexed_attention"})


def _check_layer_types(text: Config, num_layers: int) -> None:
    """vLLM's deepseek_v2.py never reads ``layer_types``: every layer is (DSA) MLA. A list
    that says so is accepted; any other entry is a layer kind vLLM would not build."""
    types = text.get("layer_types")
    if types is None:
        return
    if not isinstance(types, list) or len(types) != num_layers:
        raise ConfigError(f"{text.model}: layer_types must list {num_layers} layers")
    other = sorted({str(t) for t in types} - DSA_LAYER_TYPES)
    if other:
        raise UnsupportedArchitecture(
            f"unsupported: {text.model_type} layer_types has {other}; vLLM's deepseek_v2.py "
            f"builds DSA MLA on every layer (understood: {', '.join(sorted(DSA_LAYER_TYPES))})",
            model_type=text.model_type,
        )


def _latent_dims(text: Config) -> tuple[int, int]:
    """(``kv_lora_rank``, ``qk_rope_head_dim``), both positive, or a refusal: without them
    the config is not MLA and the family does not guess its cache."""
    latent = text.int("kv_lora_rank", 0)
    rope = text.int("qk_rope_head_dim", 0)
    if latent <= 0 or rope <= 0:
        raise UnsupportedArchitecture(
            f"{text.model}: {text.model_type} without kv_lora_rank/qk_rope_head_dim is not MLA "
            "and the mla family refuses to guess its cache",
            model_type=text.model_type,
        )
    return latent, rope


def derive(text: Config, kv_dtype: str) -> Derived:
    kv_name = resolve_dtype(kv_dtype).name
    num_layers = text.int("num_hidden_layers", minimum=1)
    _check_layer_types(text, num_layers)
    # vLLM falls back to plain MHA (DeepseekAttention) without MLA dims; we do not.
    latent, rope = _latent_dims(text)
    mtp = text.int("num_nextn_predict_layers", 0)
    if mtp < 0:
        raise ConfigError(f"{text.model}: num_nextn_predict_layers must be >= 0, got {mtp}")

    sparse = "index_topk" in text
    if text.model_type in ("deepseek_v32", "glm_moe_dsa") and not sparse:
        raise ConfigError(f"{text.model}: {text.model_type} config has no 'index_topk' (DSA)")

    notes: list[str] = []
    layers: list[LayerCache] = []
    if not sparse:
        for i in range(num_layers + mtp):
            role = Role.DECODER if i < num_layers else Role.MTP
            layers.append(MLA(index=i, role=role, dtype=kv_name, latent_dim=latent, rope_dim=rope))
    else:
        if text.get("q_lora_rank") is None:
            raise ConfigError(f"{text.model}: DSA needs q_lora_rank (vLLM asserts it)")
        index_dim = text.int("index_head_dim", minimum=1)
        owners = indexer_owners(text, num_layers) + [True] * mtp  # MTP: always a full indexer
        owner = 0
        for i in range(num_layers + mtp):
            role = Role.DECODER if i < num_layers else Role.MTP
            layers.append(
                SparseMLA(index=i, role=role, dtype=kv_name, latent_dim=latent, rope_dim=rope)
            )
            if owners[i]:
                owner = i
            layers.append(
                DSAIndexer(
                    index=i,
                    role=role,
                    dtype=INDEXER_DTYPE,
                    head_dim=index_dim,
                    quant_block=INDEXER_QUANT_BLOCK,
                    scale_bytes=INDEXER_SCALE_BYTES,
                    shares_with=None if owners[i] else owner,
                    note="" if owners[i] else f"reuses the top-k of layer {owner}'s indexer",
                )
            )
        notes.append(
            f"DSA indexer keys are fp8 + one fp32 scale per {INDEXER_QUANT_BLOCK} values "
            "whatever the KV dtype (vLLM Indexer cache, uint8)"
        )
        shared = num_layers - sum(owners[:num_layers])
        if shared:
            notes.append(
                f"IndexCache: {num_layers - shared} of {num_layers} layers own an indexer cache; "
                f"{shared} reuse an earlier layer's top-k"
            )
        if kv_name.startswith("fp8"):
            notes.append("fp8 KV on a DSA model uses FlashMLA's fp8_ds_mla layout (656 B/token)")
    if mtp:
        notes.append(
            f"{mtp} MTP layer(s) (role mtp) hold cache only when speculative decoding uses them"
        )
    return Derived(layers=layers, notes=notes, extras={"mtp_layers": mtp})


def longcat_flash(text: Config, kv_dtype: str) -> Derived:
    """LongCat-Flash (vLLM longcat_flash.py ``FlashDecoderLayer``): every one of
    ``num_layers`` decoder layers holds two ``DeepseekV2MLAAttention`` (``self_attn[0]`` and
    ``self_attn[1]``), each caching one latent of ``kv_lora_rank + qk_rope_head_dim`` per
    token, so the cache has ``2 * num_layers`` MLA layers. Its MTP layer (longcat_flash_mtp.py)
    is a drafter only and is not modelled."""
    kv_name = resolve_dtype(kv_dtype).name
    num_layers = text.int("num_layers", minimum=1)
    # vLLM's is_deepseek_mla needs kv_lora_rank; without it MLA is off and the model file
    # still builds MLA modules: no cache kvledger can state.
    latent, rope = _latent_dims(text)
    layers: list[LayerCache] = [
        MLA(index=i, role=Role.DECODER, dtype=kv_name, latent_dim=latent, rope_dim=rope)
        for i in range(2 * num_layers)
    ]
    return Derived(layers, [f"two MLA attentions in each of the {num_layers} decoder layers "
                            f"(longcat_flash.py): {2 * num_layers} cached layers"])

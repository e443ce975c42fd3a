"""Gated DeltaNet hybrids: Qwen3-Next, Qwen3.5, Qwen3.6 (``qwen3_next``, ``qwen3_5``,
``qwen3_5_moe``; the Qwen3.5 family keeps its language model in ``text_config``).

Layer pattern (vLLM ``Qwen3NextConfig.layer_types`` / ``qwen3_5``): ``layer_types`` when the
config lists it, else every ``full_attention_interval``-th layer (1-based) is full attention
and the rest are linear (GDN). When both are given they must agree.

* GDN layers: ``GatedDeltaNetState`` from ``linear_num_key_heads``, ``linear_num_value_heads``,
  ``linear_key_head_dim``, ``linear_value_head_dim``, ``linear_conv_kernel_dim``
  (vLLM ``Qwen3NextGatedDeltaNet`` -> ``gated_delta_net_state_shape``).
* Full-attention layers: GQA with ``num_key_value_heads`` x ``head_dim`` for K and V. The
  output gate (``attn_output_gate``) gates the output only; it caches nothing.
* MTP layers (``mtp_num_hidden_layers`` for Qwen3.5, ``num_nextn_predict_layers`` for
  Qwen3-Next, 1 when the config omits it, as vLLM's MTP models default): full-attention
  decoder layers of the same geometry (vLLM ``Qwen3_5MTP`` / ``Qwen3NextMTP`` build
  ``Qwen3NextDecoderLayer(layer_type="full_attention")``).

State dtypes: conv in the model dtype; the recurrent state in ``mamba_ssm_dtype`` when the
Qwen3.5 text config states it (vLLM ``Qwen3_5ForConditionalGenerationConfig`` copies it into
``mamba_ssm_cache_dtype``), else it follows the conv dtype.
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError, UnsupportedArchitecture
from kvledger.derive.kvdtype import model_dtype
from kvledger.derive.layers import FullAttention, LayerCache, Role
from kvledger.derive.registry import Derived
from kvledger.derive.states import GatedDeltaNetState

FAMILY = "gdn"

LINEAR = "linear_attention"
FULL = "full_attention"


def layer_types(text: Config, num_layers: int) -> list[str]:
    """Per-layer ``linear_attention`` / ``full_attention``, cross-checked."""
    interval = text.get("full_attention_interval")
    from_interval: list[str] | None = None
    if interval is not None:
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise ConfigError(f"{text.model}: full_attention_interval must be a positive int")
        from_interval = [FULL if (i + 1) % interval == 0 else LINEAR for i in range(num_layers)]
    listed = text.get("layer_types")
    if listed is None:
        if from_interval is None:
            raise ConfigError(
                f"{text.model}: config has neither 'layer_types' nor 'full_attention_interval'"
            )
        return from_interval
    if not isinstance(listed, list) or len(listed) != num_layers:
        raise ConfigError(f"{text.model}: layer_types must list {num_layers} layers")
    unknown = sorted({t for t in listed if t not in (LINEAR, FULL)})
    if unknown:
        raise UnsupportedArchitecture(
            f"{text.model}: layer_types has {unknown}, which the {FAMILY} family does not know"
        )
    if from_interval is not None and from_interval != listed:
        raise ConfigError(
            f"{text.model}: layer_types disagrees with full_attention_interval={interval}"
        )
    return list(listed)


# The key vLLM's MTP model reads for its layer count, per model type (the row's ``mtp_key``):
# ``Qwen3NextMultiTokenPredictor.__init__`` (models/qwen3_next_mtp.py):
#     self.num_mtp_layers = getattr(config, "num_nextn_predict_layers", 1)
# ``Qwen3_5MultiTokenPredictor.__init__`` (models/qwen3_5_mtp.py), on hf_text_config:
#     self.num_mtp_layers = getattr(config, "mtp_num_hidden_layers", 1)
# Neither transformers config class (Qwen3NextConfig, Qwen3_5TextConfig in 5.19) defines the
# attribute, so a config.json without it gets vLLM's default: 1 MTP layer. (Qwen3-Next's
# published configs state neither key, and its checkpoints ship the mtp.* weights.)
NEXTN = "num_nextn_predict_layers"
MTP_HIDDEN = "mtp_num_hidden_layers"
VLLM_MTP_DEFAULT = 1


def _mtp_layers(text: Config, key: str, warnings: list[str]) -> int:
    count = text.int(key) if key in text else VLLM_MTP_DEFAULT
    other = MTP_HIDDEN if key == NEXTN else NEXTN
    if other in text and text.int(other) != count:
        warnings.append(
            f"{text.model}: {other}={text.int(other)} disagrees with {key}={count}; vLLM's "
            f"MTP model reads {key} for this model type, and so does this plan"
        )
    return count


def derive(text: Config, kv_dtype: str, *, mtp_key: str = NEXTN) -> Derived:
    """The model type's row decides which keys reach here: ``mamba_ssm_dtype`` and
    ``mtp_num_hidden_layers`` are Qwen3.5 keys (vLLM honours the dtype only for the Qwen3.5
    architectures), so a qwen3_next config carrying them is refused by the guard;
    ``use_sliding_window`` is an off key of every row (Qwen3-Next has no window).

    ``mtp_key``: the key vLLM's MTP model for this type reads (see ``NEXTN``); "" for a type
    vLLM has no MTP drafter for (OLMo-Hybrid). The MTP layers are facts of the checkpoint; a
    layout counts them only when speculating with MTP."""
    if mtp_key not in (NEXTN, MTP_HIDDEN, ""):
        raise ValueError(f"gdn: mtp_key must be {NEXTN!r}, {MTP_HIDDEN!r} or '' (a model with "
                         f"no MTP drafter), got {mtp_key!r}")
    n = text.int("num_hidden_layers")
    kinds = layer_types(text, n)
    mdtype = model_dtype(text)
    notes: list[str] = []

    ssm = text.get("mamba_ssm_dtype")
    state = GatedDeltaNetState(
        index=0,
        num_k_heads=text.int("linear_num_key_heads"),
        num_v_heads=text.int("linear_num_value_heads"),
        head_k_dim=text.int("linear_key_head_dim"),
        head_v_dim=text.int("linear_value_head_dim"),
        conv_kernel=text.int("linear_conv_kernel_dim"),
        conv_dtype=mdtype,
        temporal_dtype=str(ssm) if ssm is not None else mdtype,
        temporal_dtype_source=("config mamba_ssm_dtype" if ssm is not None
                               else "follows conv dtype (config states none)"),
        temporal_follows_conv=ssm is None,
    )
    kv_heads = text.int("num_key_value_heads")
    heads = text.int("num_attention_heads")
    head_dim = text.int("head_dim") if "head_dim" in text else text.int("hidden_size") // heads
    attn = FullAttention(index=0, k_heads=kv_heads, k_dim=head_dim, v_heads=kv_heads,
                         v_dim=head_dim, dtype=kv_dtype)

    layers: list[LayerCache] = []
    for i, kind in enumerate(kinds):
        template: LayerCache = state if kind == LINEAR else attn
        layers.append(_at(template, i, Role.DECODER))
    warnings: list[str] = []
    mtp = _mtp_layers(text, mtp_key, warnings) if mtp_key else 0
    for k in range(mtp):
        layers.append(_at(attn, n + k, Role.MTP))
    notes.append(
        f"Gated DeltaNet state: conv {state.conv_dtype}, recurrent {state.temporal_dtype} "
        f"({state.temporal_dtype_source}); kv_cache_dtype does not apply to it"
    )
    if mtp:
        stated = "" if mtp_key in text else f" ({mtp_key} not stated: vLLM's default)"
        notes.append(f"{mtp} MTP layer(s){stated}: full attention, same geometry as the "
                     "decoder's; planned only with --speculative-method mtp")
    return Derived(layers=layers, notes=notes, warnings=warnings)


def _at(template: LayerCache, index: int, role: Role) -> LayerCache:
    return template.at(index, role)

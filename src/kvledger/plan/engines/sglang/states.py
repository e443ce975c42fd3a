"""SGLang's recurrent-state pool: per-request bytes of Mamba2 and Gated DeltaNet layers.

``BaseLinearStateParams.mamba_cache_per_req`` (``configs/mamba_utils.py``) is
``(conv numel × conv itemsize + temporal numel × ssm itemsize) × layers`` with the shapes of
``Mamba2StateShape.create``:

* conv ``((I + 2·G'·N) / tp, K − 1)`` with ``G' = G + extra_groups_for_head_shards(G, tp)``
  (no widening for speculative tokens), temporal ``(H / tp, head_dim, N)``;
* Gated DeltaNet (``Qwen3NextConfig.mamba2_cache_params``) is the same shape with
  ``I = Hv·dv``, ``G = Hk``, ``H = Hv``, ``head_dim = dv``, ``N = dk``;
* Mamba-1 (``configs/mamba.py``: ``_mamba1_cache_params`` → ``Mamba2StateShape.create_full_rank``)
  is the full-rank form: conv ``(I / tp, K − 1)`` (the conv covers ``intermediate_size`` only)
  and temporal ``(I / tp, 1, N)``;
* Kimi Delta Attention (``configs/kimi_linear.py``: ``KimiLinearConfig.mamba2_cache_params``,
  ``KimiLinearStateShape.create``) passes only ``linear_attn_config``'s ``num_heads``,
  ``head_dim`` and ``short_conv_kernel_size``, so K heads and dim are the V ones: one conv
  state ``(K − 1, H·d/tp + 2 · H·d/tp)`` (each block split by ``divide`` apart) and a
  temporal ``(H/tp, d, d)``, on the ``linear_layer_ids`` (``kda_layers``, 1-based);
* LFM2's short convolution (``configs/lfm2.py``: ``Lfm2Config.mamba2_cache_params``) is the
  same shape with ``I = hidden_size``, ``G = 1``, ``H = tp``, ``N = 0``: a conv state of
  ``(hidden / tp, K − 1)`` and an empty temporal state.

Dtypes (``mamba2_state_dtype``): the conv state is bfloat16 (``SGLANG_MAMBA_CONV_DTYPE``
default), whatever the model dtype; the temporal state is ``--mamba-ssm-dtype``, else the
config's ``mamba_ssm_dtype`` (text config first), else float32. Nemotron-H's
``mamba_ssm_cache_dtype`` is not read by SGLang. KDA's ``KimiLinearCacheParams`` takes the
field default ``mamba2_state_dtype(None)``: no config is read, so its temporal state is
``--mamba-ssm-dtype`` (``serving_hook.py`` sets ``SGLANG_MAMBA_SSM_DTYPE`` from it) or float32.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvledger.derive.layers import RecurrentState
from kvledger.derive.states import (
    GatedDeltaNetState,
    KDAState,
    Mamba1State,
    Mamba2State,
    ShortConvState,
    extra_groups_for_head_shards,
)
from kvledger.plan.engines.sglang.model import SglangLayoutError
from kvledger.records import record

_ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}
CONV_DTYPE = "bfloat16"


def _exact(numerator: int, tp: int, what: str) -> int:
    """``sglang.srt.distributed.utils.divide``: SGLang asserts an exact split."""
    if numerator % tp:
        raise SglangLayoutError(f"{what} = {numerator} is not divisible by the attention "
                                f"tensor-parallel size {tp}")
    return numerator // tp


@record(frozen=True)
class StateShape:
    conv_numel: int
    temporal_numel: int


def state_shape(layer: RecurrentState, tp: int) -> StateShape:
    if isinstance(layer, ShortConvState):
        # N = 0: the conv row is I / tp wide and the temporal state holds nothing.
        conv = _exact(layer.intermediate_size, tp, "short conv dim") * (layer.conv_kernel - 1)
        return StateShape(conv, 0)
    if isinstance(layer, Mamba1State):
        # create_full_rank: num_heads = I, head_dim = 1, conv_dim = I (asserts I % tp == 0).
        inner = _exact(layer.intermediate_size, tp, "Mamba-1 intermediate_size")
        return StateShape(inner * (layer.conv_kernel - 1), inner * layer.state_size)
    if isinstance(layer, KDAState):
        # KimiLinearStateShape.create(num_heads, head_dim, conv_kernel_size): num_k_heads and
        # head_k_dim default to them (the config's are not passed).
        proj = _exact(layer.num_heads * layer.head_dim, tp, "KDA projection")
        conv = (layer.conv_kernel - 1) * (proj + 2 * proj)
        temporal = _exact(layer.num_heads, tp, "KDA heads") * layer.head_dim * layer.head_dim
        return StateShape(conv, temporal)
    if isinstance(layer, Mamba2State):
        inner, groups, heads = layer.intermediate_size, layer.n_groups, layer.num_heads
        head_dim, state, kernel = layer.head_dim, layer.state_size, layer.conv_kernel
    elif isinstance(layer, GatedDeltaNetState):
        inner, groups = layer.num_v_heads * layer.head_v_dim, layer.num_k_heads
        heads, head_dim = layer.num_v_heads, layer.head_v_dim
        state, kernel = layer.head_k_dim, layer.conv_kernel
    else:
        raise SglangLayoutError(f"state kind {layer.state_kind} is not reproduced for SGLang")
    groups += extra_groups_for_head_shards(groups, tp)
    conv = _exact(inner + 2 * groups * state, tp, "conv dim") * (kernel - 1)
    temporal = _exact(heads, tp, "state heads") * head_dim * state
    return StateShape(conv, temporal)


def ssm_dtype(config: Mapping[str, Any], option: str | None, *, reads_config: bool = True
              ) -> str:
    """The temporal state's dtype; ``reads_config`` False for KDA (``mamba2_state_dtype(None)``).
    """
    if option is not None:
        return option
    if not reads_config:
        return "float32"
    text = config.get("text_config")
    for view in (text if isinstance(text, Mapping) else None, config):
        if view is not None and view.get("mamba_ssm_dtype") is not None:
            value = str(view["mamba_ssm_dtype"])
            # An unknown name falls back to float32 (SGLang logs a warning).
            return value if value in _ITEMSIZE else "float32"
    return "float32"


@record(frozen=True)
class StateBytes:
    """One rank's state pool geometry: bytes per request and the conv / temporal split."""

    layers: int
    conv_bytes_per_slot: int
    temporal_bytes_per_slot: int
    temporal_dtype: str

    @property
    def per_request(self) -> int:
        return self.conv_bytes_per_slot + self.temporal_bytes_per_slot


def state_bytes(states: Sequence[RecurrentState], tp: int, temporal_dtype: str) -> StateBytes:
    shapes = {state_shape(layer, tp) for layer in states}
    if len(shapes) > 1:
        raise SglangLayoutError("recurrent layers with different state shapes: SGLang keeps "
                                "one shape for every layer of its state pool")
    if not shapes:
        return StateBytes(0, 0, 0, temporal_dtype)
    shape = shapes.pop()
    n = len(states)
    return StateBytes(n, shape.conv_numel * _ITEMSIZE[CONV_DTYPE] * n,
                      shape.temporal_numel * _ITEMSIZE[temporal_dtype] * n, temporal_dtype)

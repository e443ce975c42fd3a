"""Recurrent-state layer facts: Mamba1, Mamba2, Gated DeltaNet, Kimi KDA, short conv.

Each class states the per-request state tensors one tensor-parallel rank holds, with the
shapes and split rules of vLLM's ``MambaStateShapeCalculator``
(vllm/model_executor/layers/mamba/mamba_utils.py), because a vLLM-exact layout builds its
``MambaSpec`` straight from ``tensors()``. Conv states use vLLM's default "SD" layout:
``(state_len, dim)`` with the TP-split channel dim innermost.

Element types are facts of the model as it runs when no engine option overrides them:

* the **conv** state (the short causal-convolution window) is kept in the model dtype
  (vLLM: ``mamba_cache_dtype`` "auto" resolves to the model dtype);
* the **temporal** state (SSM / delta-rule matrix) follows the conv dtype unless the model
  says otherwise: a config key (Qwen3.5 ``mamba_ssm_dtype``, Nemotron-H
  ``mamba_ssm_cache_dtype``), an architecture default vLLM applies (Nemotron-H: float32),
  or the architecture itself (KDA keeps its recurrent state in float32 unconditionally,
  ``MambaStateDtypeCalculator.kda_state_dtype``).

Each tensor carries its ``role`` so a layout can apply its engine's dtype policy (vLLM's
``mamba_cache_dtype`` acts on CONV, ``mamba_ssm_cache_dtype`` on TEMPORAL);
``with_state_dtypes`` does that without losing which dtypes are fixed by the model.

The KV element type (``kv_cache_dtype``) does **not** apply to recurrent state — in vLLM it
never changes Mamba/GDN/KDA state dtypes — so ``with_dtype`` leaves these layers unchanged.
Rejected alternative: letting ``with_dtype("fp8")`` shrink states would report memory vLLM
never saves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Self

from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.layers import RecurrentState, StateTensor


class StateRole(StrEnum):
    """What a state tensor is, for engines whose dtype options act per role."""

    CONV = "conv"  # causal-conv window: (conv_kernel - 1 [+ spec tokens]) rows of channels
    TEMPORAL = "temporal"  # SSM / recurrent matrix, fixed size


@dataclass(frozen=True)
class RoleTensor(StateTensor):
    """A state tensor with its role and where its dtype came from."""

    role: StateRole = StateRole.TEMPORAL
    dtype_source: str = ""

    def least(self, axis: int) -> int:
        """A conv state's rows (``conv_kernel - 1``) may be 0: a kernel of 1 keeps no history,
        and vLLM allocates the ``(0, dim)`` tensor as is (Jamba test config with
        ``mamba_d_conv`` 1, oracle-checked). Every other dimension is at least 1: a zero head
        or channel count is a broken config, never an empty state."""
        return 0 if self.role is StateRole.CONV and axis == 0 else 1


def divide_exact(numerator: int, tp: int, what: str) -> int:
    """vLLM's ``divide``: the split must be exact, else vLLM asserts at load time."""
    if tp < 1:
        raise ValueError(f"tensor parallel size must be >= 1, got {tp}")
    if numerator % tp:
        raise ValueError(f"{what} = {numerator} is not divisible by tensor parallel size {tp}")
    return numerator // tp


def _dtype_name(dtype: str) -> str:
    return resolve_dtype(dtype).name


@dataclass(frozen=True, kw_only=True)
class ConvState(RecurrentState):
    """Shared dtype handling for every kind with a conv window (all of them here).

    ``dtype`` (the base field) mirrors ``conv_dtype`` for display.
    """

    conv_dtype: str = "bfloat16"
    conv_dtype_source: str = "model dtype"

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "conv_dtype", _dtype_name(self.conv_dtype))
        object.__setattr__(self, "dtype", self.conv_dtype)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        # Dtypes and their sources are stated per tensor below; drop the field-level copies.
        for key in ("conv_dtype", "conv_dtype_source", "temporal_dtype",
                    "temporal_dtype_source", "temporal_follows_conv", "temporal_dtype_fixed"):
            out.pop(key, None)
        out["tensors"] = [
            {"name": t.name, "shape": list(t.shape), "dtype": t.dtype, "role": str(t.role),
             "dtype_source": t.dtype_source}
            for t in self.tensors()
            if isinstance(t, RoleTensor)
        ]
        return out

    def _conv(self, shape: tuple[int, ...]) -> RoleTensor:
        return RoleTensor("conv", shape, self.conv_dtype, StateRole.CONV, self.conv_dtype_source)

    def with_dtype(self, dtype: str) -> Self:
        """KV element types do not apply to recurrent state (see module docstring)."""
        resolve_dtype(dtype)  # still reject unknown names
        return self

    def with_state_dtypes(self, *, conv: str | None = None, temporal: str | None = None,
                          source: str = "engine option") -> Self:
        """Apply an engine's state-dtype options (vLLM ``mamba_cache_dtype`` = conv,
        ``mamba_ssm_cache_dtype`` = temporal); ``None`` keeps the model's own."""
        changes: dict[str, Any] = {}
        if conv is not None:
            changes.update(conv_dtype=_dtype_name(conv), conv_dtype_source=source)
        return dataclasses.replace(self, **changes) if changes else self


@dataclass(frozen=True, kw_only=True)
class ConvTemporalState(ConvState):
    """A conv window plus a temporal state whose dtype may follow the conv dtype."""

    temporal_dtype: str = "bfloat16"
    temporal_dtype_source: str = "follows conv dtype"
    # True when the model states no temporal dtype, so it follows the conv dtype
    # (vLLM: mamba_ssm_cache_dtype "auto" -> the conv state dtype).
    temporal_follows_conv: bool = True
    # True when the architecture fixes the temporal dtype whatever the engine options say.
    temporal_dtype_fixed: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.temporal_follows_conv:
            object.__setattr__(self, "temporal_dtype", self.conv_dtype)
        object.__setattr__(self, "temporal_dtype", _dtype_name(self.temporal_dtype))

    def _temporal(self, shape: tuple[int, ...]) -> RoleTensor:
        return RoleTensor("temporal", shape, self.temporal_dtype, StateRole.TEMPORAL,
                          self.temporal_dtype_source)

    def with_state_dtypes(self, *, conv: str | None = None, temporal: str | None = None,
                          source: str = "engine option") -> Self:
        out = super().with_state_dtypes(conv=conv, source=source)
        if temporal is not None and not self.temporal_dtype_fixed:
            out = dataclasses.replace(out, temporal_dtype=_dtype_name(temporal),
                                      temporal_dtype_source=source,
                                      temporal_follows_conv=False)
        return out


@dataclass(frozen=True, kw_only=True)
class Mamba1State(ConvTemporalState):
    """Mamba (S6). vLLM ``mamba1_state_shape``: conv ``(k-1, I/tp)``, ssm ``(I/tp, N)``.

    vLLM does not widen the Mamba1 conv window for speculative tokens.
    """

    state_kind: ClassVar[str] = "mamba1"
    intermediate_size: int
    state_size: int
    conv_kernel: int

    def tensors(self) -> Sequence[RoleTensor]:
        inner = divide_exact(self.intermediate_size, self.tp, "mamba intermediate_size")
        return (self._conv((self.conv_kernel - 1, inner)),
                self._temporal((inner, self.state_size)))


def extra_groups_for_head_shards(n_groups: int, tp: int) -> int:
    """vLLM ``extra_groups_for_head_shards``: groups are replicated so every head shard has
    the group it reads; 0 when ``n_groups % tp == 0``, else ``tp - n_groups``."""
    return 0 if n_groups % tp == 0 else tp - n_groups


@dataclass(frozen=True, kw_only=True)
class Mamba2State(ConvTemporalState):
    """Mamba2 (SSD). vLLM ``mamba2_state_shape``:
    conv ``(k-1+spec, (I + 2·G'·N)/tp)`` with ``G' = G + extra_groups_for_head_shards``,
    ssm ``(H/tp, head_dim, N)``.
    """

    state_kind: ClassVar[str] = "mamba2"
    intermediate_size: int
    n_groups: int
    num_heads: int
    head_dim: int
    state_size: int
    conv_kernel: int
    spec_tokens: int = 0  # vLLM widens the conv window by num_speculative_tokens

    def tensors(self) -> Sequence[RoleTensor]:
        groups = self.n_groups + extra_groups_for_head_shards(self.n_groups, self.tp)
        conv_dim = self.intermediate_size + 2 * groups * self.state_size
        rows = self.conv_kernel - 1 + self.spec_tokens
        return (
            self._conv((rows, divide_exact(conv_dim, self.tp, "mamba2 conv dim"))),
            self._temporal((divide_exact(self.num_heads, self.tp, "mamba heads"),
                            self.head_dim, self.state_size)),
        )


@dataclass(frozen=True, kw_only=True)
class GatedDeltaNetState(ConvTemporalState):
    """Gated DeltaNet (Qwen3-Next, Qwen3.5). vLLM ``gated_delta_net_state_shape``:
    conv over q, k, v channels ``(k-1+spec, (2·Hk·dk + Hv·dv)/tp)``,
    recurrent ``(Hv/tp, dv, dk)``.
    """

    state_kind: ClassVar[str] = "gated_delta_net"
    num_k_heads: int
    num_v_heads: int
    head_k_dim: int
    head_v_dim: int
    conv_kernel: int
    spec_tokens: int = 0

    def tensors(self) -> Sequence[RoleTensor]:
        conv_dim = 2 * self.num_k_heads * self.head_k_dim + self.num_v_heads * self.head_v_dim
        rows = self.conv_kernel - 1 + self.spec_tokens
        return (
            self._conv((rows, divide_exact(conv_dim, self.tp, "GDN conv dim"))),
            self._temporal((divide_exact(self.num_v_heads, self.tp, "GDN value heads"),
                            self.head_v_dim, self.head_k_dim)),
        )


@dataclass(frozen=True, kw_only=True)
class KDAState(ConvTemporalState):
    """Kimi Delta Attention (Kimi-Linear / Kimi-K3, GLM-5.3-Flash). vLLM ``kda_state_shape``:
    one conv state over q, k, v ``(k-1+spec, (H·d + 2·Hk·dk)/tp)``, recurrent
    ``(H/tp, d, d)``. The recurrent state is float32 by architecture
    (``kda_state_dtype`` returns float32 whatever ``mamba_ssm_cache_dtype`` says).
    """

    state_kind: ClassVar[str] = "kda"
    num_heads: int
    head_dim: int
    num_k_heads: int | None = None  # vLLM default: num_heads
    head_k_dim: int | None = None  # vLLM default: head_dim
    conv_kernel: int
    spec_tokens: int = 0
    temporal_dtype: str = "float32"
    temporal_dtype_source: str = "architecture: KDA recurrent state is float32"
    temporal_follows_conv: bool = False
    temporal_dtype_fixed: bool = True

    def tensors(self) -> Sequence[RoleTensor]:
        k_heads = self.num_heads if self.num_k_heads is None else self.num_k_heads
        k_dim = self.head_dim if self.head_k_dim is None else self.head_k_dim
        conv_dim = self.num_heads * self.head_dim + 2 * k_heads * k_dim
        rows = self.conv_kernel - 1 + self.spec_tokens
        return (
            self._conv((rows, divide_exact(conv_dim, self.tp, "KDA conv dim"))),
            self._temporal((divide_exact(self.num_heads, self.tp, "KDA heads"),
                            self.head_dim, self.head_dim)),
        )


@dataclass(frozen=True, kw_only=True)
class ShortConvState(ConvState):
    """Short convolution only (LFM2-style). vLLM ``short_conv_state_shape``:
    ``(k-1, I/tp)``; no speculative widening."""

    state_kind: ClassVar[str] = "short_conv"
    intermediate_size: int
    conv_kernel: int

    def tensors(self) -> Sequence[RoleTensor]:
        inner = divide_exact(self.intermediate_size, self.tp, "short conv dim")
        return (self._conv((self.conv_kernel - 1, inner)),)

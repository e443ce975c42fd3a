"""What expert-parallel load balancing (``--enable-eplb``, ``--eplb-config``) takes from one
vLLM GPU's KV budget.

Read in vLLM 0.32.0, 0.33.0 and 0.34.0 (the three agree but for the slot count named below):

- ``config/parallel.py``: EPLB needs ``--enable-expert-parallel`` ("enable_expert_parallel
  must be True to use EPLB.") and an expert-parallel group of more than one GPU (TP × DP > 1,
  PCP 1 here); without an ``eplb_config.num_redundant_experts``,
  ``compute_eplb_num_redundant_experts`` takes the fewest that make ``N + R`` a multiple of
  the EP size: ``(EP − N % EP) % EP``.
- ``model_executor/layers/fused_moe/layer.py`` ``determine_expert_counts``: each MoE layer
  holds ``N + R`` physical experts, and ``expert_map_manager.py`` ``determine_expert_map``
  gives rank r ``(N + R) // EP`` of them, one more for the first ``(N + R) % EP`` ranks. The
  first rank holds the most: ``ceil((N + R) / EP)`` experts a layer, where without EPLB it
  held ``ceil(N / EP)``.
- ``distributed/eplb/eplb_state.py`` ``EplbState.add_model`` (called while the model loads,
  after the start-up snapshot, so its tensors are taken from the KV budget): a receive buffer
  ``[torch.empty_like(w) for w in model.expert_weights[0]]`` — one MoE layer's local expert
  weights and scales (``routed_experts.py get_expert_weights``) —; the load window
  ``(window_size, L, N + R)`` int32; ``expert_load_pass_buffer`` ``(L, N + R)`` int32; the
  maps ``physical_to_logical_map`` ``(L, N + R)``, ``logical_replica_count`` ``(L, N)``,
  ``last_expert_load`` ``(L, N)`` and ``logical_to_physical_map`` ``(L, N, slots)``, all
  int64. ``slots`` is 1,024 in 0.32 and 0.33 (``MAX_EXPERT_REDUNDANCY + 1``) and ``R + 1`` in
  0.34 (elastic EP aside): the release field ``eplb_fixed_slots``.

Not counted: the communicator's own buffers (NCCL's, reserved by a dummy collective in the
profile run; ``eplb_communicator.py``), which the non-torch estimate holds. The expert bytes are
the weight estimate's routed-expert share (``plan/weights.py``), an even split over the
experts and the MoE layers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.errors import PlanError
from kvledger.records import record

EPLB = "eplb"  # the budget line's key (plan/budget.py with_launch_lines)
INT32, INT64 = 4, 8
# config/parallel.py EPLBConfig: its fields (0.32 to 0.34) and the defaults read here.
EPLB_FIELDS = ("window_size", "step_interval", "num_redundant_experts", "log_balancedness",
               "log_balancedness_interval", "use_async", "policy", "communicator",
               "enable_migration_batching")
DEFAULT_WINDOW = 1000


class EplbNotModelled(PlanError):
    """An EPLB setting kvledger does not size, or one vLLM refuses; names it."""


@record(frozen=True)
class EplbSettings:
    """``--eplb-config`` as vLLM reads it (``EPLBConfig``)."""

    num_redundant_experts: int | None = None  # None: vLLM's fewest valid
    window_size: int = DEFAULT_WINDOW


def parse_eplb_config(text: str | None,
                      communicators: frozenset[str] = frozenset()) -> EplbSettings:
    """``--eplb-config``'s JSON (``EPLBConfig(**dict)``: unknown keys, a ``policy`` other than
    "default" and a ``communicator`` outside the release's ``EPLBCommunicatorBackend``
    (``communicators``) are refused there)."""
    if text is None:
        return EplbSettings()
    from kvledger.plan.engines.vllm.launch import json_object

    value = json_object(text, "--eplb-config", EplbNotModelled)
    for key in value:
        if key not in EPLB_FIELDS:
            raise EplbNotModelled(f"--eplb-config {key}: not an EPLBConfig field (vLLM refuses "
                                  "unknown keys)")
    redundant = value.get("num_redundant_experts")
    window = value.get("window_size", DEFAULT_WINDOW)
    for name, number, least in (("num_redundant_experts", redundant, 0),
                                ("window_size", window, 1)):
        if number is not None and (isinstance(number, bool) or not isinstance(number, int)
                                   or number < least):
            raise EplbNotModelled(f"--eplb-config {name} must be a whole number >= {least}, "
                                  f"got {number!r}")
    if value.get("policy", "default") != "default":
        raise EplbNotModelled(f"vLLM refuses to start: --eplb-config policy must be 'default' "
                              f"(EPLBPolicyOption), got {value['policy']!r}")
    communicator = value.get("communicator")
    if communicator is not None and communicator not in communicators:
        raise EplbNotModelled(f"vLLM refuses to start: --eplb-config communicator must be one of "
                              f"{', '.join(sorted(communicators))} (EPLBCommunicatorBackend), "
                              f"got {communicator!r}")
    if communicator == "symm_mem":
        # eplb_state.py: no caller buffer with symm_mem; its own symmetric-memory rows are
        # not read here.
        raise EplbNotModelled("--eplb-config communicator symm_mem: its symmetric-memory "
                              "buffers are not sized; drop the key to plan vLLM's default")
    return EplbSettings(redundant, window)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@record(frozen=True)
class EplbMemory:
    """What EPLB adds on the first EP rank (the one with the most experts)."""

    per_gpu: int
    detail: str
    redundant_experts: int
    local_experts: int  # on the first rank, per MoE layer


def eplb_memory(text: Mapping[str, Any], settings: EplbSettings, *, routed_bytes: int,
                ep_size: int, fixed_slots: int | None) -> EplbMemory:
    """EPLB's bytes on the first EP rank (module docstring). ``routed_bytes``: the routed
    experts of every MoE layer, the whole model; ``fixed_slots``: the release's slot count
    (None: R + 1)."""
    from kvledger.derive.config import Config
    from kvledger.derive.params import ALIASES
    from kvledger.derive.params.decoder import moe_layers

    experts = next((text[k] for k in ALIASES["experts"] if isinstance(text.get(k), int)), None)
    layers = next((text[k] for k in ALIASES["layers"] if isinstance(text.get(k), int)), None)
    if not experts or not layers:
        raise EplbNotModelled("--enable-eplb on a model whose config states no routed expert "
                              "count: vLLM balances only mixture-of-experts layers")
    moe = sum(moe_layers(Config(text, model="model"), layers))
    if not moe or routed_bytes <= 0:
        raise EplbNotModelled("--enable-eplb: the config has no mixture-of-experts layer")
    redundant = settings.num_redundant_experts
    if redundant is None:
        redundant = (ep_size - experts % ep_size) % ep_size
    physical = experts + redundant
    local, before = _ceil(physical, ep_size), _ceil(experts, ep_size)
    per_expert = routed_bytes // (experts * moe)  # one expert of one layer
    extra = (local - before) * per_expert * moe
    buffer = local * per_expert
    slots = fixed_slots if fixed_slots is not None else redundant + 1
    window = settings.window_size * moe * physical * INT32
    maps = moe * (physical * (INT32 + INT64) + experts * (2 * INT64 + slots * INT64))
    total = extra + buffer + window + maps
    detail = (f"{redundant} redundant expert(s) over EP {ep_size}: the first rank holds "
              f"{local} of {physical} physical experts a layer ({before} without EPLB) × "
              f"{moe} MoE layers × {per_expert:,} B = +{extra:,} B; the rebalancing buffer, one "
              f"layer's {local} experts: {buffer:,} B; the load window {settings.window_size} × "
              f"{moe} × {physical} × 4 B = {window:,} B; the expert maps ({slots} slots a "
              f"logical expert) {maps:,} B (eplb_state.py EplbState.add_model, "
              "expert_map_manager.py determine_expert_map); the communicator's own buffers are "
              "in the non-torch estimate")
    return EplbMemory(total, detail, redundant, local)

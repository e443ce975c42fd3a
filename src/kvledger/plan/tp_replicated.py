"""The weights vLLM and SGLang keep whole on every tensor-parallel rank.

An engine's ``WeightSplit`` gives these parts 1 GPU (``REPLICATED_ON_TP``): each TP rank holds
them whole, divided by nothing but PP. Read in each engine's model files:

- ``attn_unsharded`` (derive's ``Parameters.unsharded_attention``): MLA's ``q_a_proj`` and
  ``kv_a_proj_with_mqa``, which have no head dimension to shard (they feed the latent every
  rank caches whole) — vLLM 0.34 ``deepseek_v2.py`` ``DeepSeekV2FusedQkvAProjLinear``
  (``disable_tp``) and ``ReplicatedLinear``, ``models/deepseek_v32/attention.py``,
  ``minicpm3.py`` (0.26's ``deepseek_v2.py`` the same, ``ReplicatedLinear``); SGLang 0.5.23
  ``deepseek_v2.py`` ``fused_qkv_a_proj_with_mqa`` / ``kv_a_proj_with_mqa``
  (``ReplicatedLinear``) — and the DSA indexer's ``wq_b`` (``ReplicatedLinear``: "no tensor
  parallel, just replicated") and ``wk`` (``disable_tp``);
- ``router``: every MoE gate — vLLM 0.34 ``GateLinear`` (``fused_moe/router/gate_linear.py``,
  a ``ReplicatedLinear``) or a router built of them (``dbrx.py``, ``longcat_flash.py``,
  ``zaya.py``); vLLM 0.26 ``ReplicatedLinear`` or ``nn.Linear``; SGLang 0.5.23
  ``ReplicatedLinear``, a gate ``Parameter`` (``deepseek_v2.py MoEGate``, ``glm4_moe.py``) or
  ``TinyGemmLinear`` (``gpt_oss.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

UNSHARDED_ATTN = "attn_unsharded"
REPLICATED_ON_TP: Mapping[str, int] = {UNSHARDED_ATTN: 1, "router": 1}


def has_replicated_parts(config: Mapping[str, Any]) -> bool:
    """Whether a (text) config has parts ``REPLICATED_ON_TP`` keeps whole: MLA or experts."""
    from kvledger.derive.params import ALIASES

    if config.get("kv_lora_rank") is not None:
        return True
    return any(isinstance(config.get(k), int) and config[k] > 0 for k in ALIASES["experts"])

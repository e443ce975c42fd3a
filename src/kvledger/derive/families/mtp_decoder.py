"""Standard decoders whose checkpoints ship next-n (MTP) layers that vLLM's drafter builds
with the backbone's own attention geometry: ERNIE-4.5-MoE and GLM-4.5 / 4.6 / 4.7.

vLLM 0.32, read for facts:

* ``SpeculativeConfig`` (config/speculative.py) turns ``--speculative-method mtp`` on these
  into ``ernie_mtp`` / ``glm4_moe_mtp`` drafters with ``n_predict = num_nextn_predict_layers``.
* The drafter builds layers ``num_hidden_layers .. num_hidden_layers + num_nextn_predict_layers
  - 1`` (``ErnieMultiTokenPredictor`` / ``Glm4MoeMultiTokenPredictor``: ``mtp_start_layer_idx``,
  ``num_mtp_layers``), each one decoder layer with its own KV cache: ernie_mtp.py builds a
  ``LlamaDecoderLayer``, glm4_moe_mtp.py a ``Glm4MoeDecoderLayer`` — the backbone's attention,
  so the same KV heads and head dim as every backbone layer.

The backbone itself is the standard handler's (``families/standard.py``); the MTP layers are
``Role.MTP`` copies of its layer, which the vLLM layout keeps only under MTP speculation.
Why not an option of ``standard.derive``: only these rows need it, and the standard handler
stays the plain Llama rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kvledger.derive.config import Config
from kvledger.derive.errors import UnsupportedArchitecture
from kvledger.derive.families.standard import derive as standard_derive
from kvledger.derive.layers import FullAttention, LayerCache, Role
from kvledger.derive.registry import Derived


def derive(
    cfg: Config,
    kv_dtype: str,
    *,
    mtp_key: str = "num_nextn_predict_layers",
    require: Iterable[str] = (),
    **standard_options: Any,
) -> Derived:
    """The standard decoder, then ``cfg[mtp_key]`` MTP layers of the same geometry.

    ``require``: keys the model file reads without a fallback (glm4_moe.py reads
    ``config.head_dim`` and ``Glm4MoeConfig`` defines none), so a config without them does not
    load in vLLM and is refused here rather than given a guessed size.
    """
    for key in require:
        cfg.require(key)
    base = standard_derive(cfg, kv_dtype, **standard_options)
    mtp = cfg.int(mtp_key, 0)
    if not mtp or not base.layers:
        return base  # no decoder layers: derive_model refuses the config (num_hidden_layers)
    first = base.layers[0]
    if not isinstance(first, FullAttention) or any(layer != first.at(layer.index)
                                                   for layer in base.layers):
        raise UnsupportedArchitecture(
            f"unsupported: {cfg.model_type} with {mtp_key}={mtp} and layers that differ "
            "(windows or geometry): which layer vLLM's MTP drafter copies is not checked",
            model_type=cfg.model_type,
        )
    n = len(base.layers)
    layers: list[LayerCache] = [*base.layers]
    layers.extend(first.at(n + k, Role.MTP) for k in range(mtp))
    notes = [*base.notes,
             f"{mtp} MTP layer(s) (role mtp, {mtp_key}) hold cache only when speculative "
             "decoding uses them"]
    return Derived(layers=layers, notes=notes, extras={**base.extras, "mtp_layers": mtp},
                   warnings=base.warnings)

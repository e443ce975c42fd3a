"""The whole checkpoint's weights, as ``kvledger inspect`` reports them: parameters, what the
safetensors store, what vLLM serves, by dtype (the per-GPU weights a plan subtracts are
``plan/weights.py``'s ``model_weights``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.plan.weights import (
    WeightsError,
    count_parameters,
    estimate_weights,
    model_weights,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kvledger.source.headers import SafetensorsTotals

_SAFETENSORS_NAME = {"bfloat16": "BF16", "float16": "F16", "float32": "F32", "float64": "F64"}


def checkpoint_weights(
    config: Mapping[str, Any], *, model_dtype: str, exact: SafetensorsTotals | None = None,
    hf_quant: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole checkpoint's weights, as ``kvledger inspect`` reports them.

    ``parameters``: the architecture's count (``derive/params/``: decoder, MTP layers and
    towers). ``stored_bytes``: what its safetensors hold (MTP layers and towers included) —
    the headers' total when ``exact`` is given, else the estimate at the config's dtype.
    ``served_bytes``: what vLLM holds over all ranks at ``--dtype auto`` without MTP
    speculation (``model_weights``). ``by_dtype``: stored bytes per safetensors dtype (the
    estimate's: per dense dtype and quantization method). ``basis``: exact or estimated.
    ``warnings``: where the count is not exact. A config the count refuses gives
    ``basis`` "unavailable" and ``why``, the other fields null.
    """
    try:
        params = count_parameters(config)
        n_params: int | None = params.total
        warnings = list(params.warnings)
    except WeightsError as exc:
        n_params, warnings = None, [str(exc)]
    try:
        served = model_weights(config, model_dtype=model_dtype, exact=exact,
                               hf_quant=hf_quant, config=config)
        if exact is not None:
            stored: int = exact.total_bytes
            by_dtype: dict[str, int] = dict(exact.by_dtype)
        else:
            est = estimate_weights(config, model_dtype, hf_quant, stored=True)
            stored = est.bytes
            by_dtype = {_SAFETENSORS_NAME.get(k, k): v for k, v in (est.by_dtype or {}).items()}
    except WeightsError as exc:
        return {"parameters": n_params, "stored_bytes": None, "served_bytes": None,
                "basis": "unavailable", "by_dtype": None, "why": str(exc),
                "warnings": warnings}
    return {"parameters": n_params, "stored_bytes": stored, "served_bytes": served.total_bytes,
            "basis": served.basis, "by_dtype": by_dtype, "warnings": warnings}

"""Resolve the KV element type: explicit option > the checkpoint's KV quantization scheme >
the config's own dtype. Unknown schemes raise rather than fall back.
"""

from __future__ import annotations

from typing import Any

from kvledger.declare.dtypes import resolve_dtype
from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError

# hf_quant_config.json `kv_cache_quant_algo` (NVIDIA ModelOpt) → registry name
_MODELOPT_KV = {"FP8": "fp8_e4m3", "NVFP4": "nvfp4", "INT8": "int8"}


def _from_kv_scheme(scheme: Any, model: str) -> str:
    """compressed-tensors ``kv_cache_scheme``: {"num_bits": 8, "type": "float", ...}.

    ModelOpt checkpoints (e.g. Qwen3-32B-FP8-Static-PerTensor) write the scheme as a bare
    algorithm name (``"kv_cache_scheme": "FP8"``), the same names as ``kv_cache_quant_algo``.
    """
    if isinstance(scheme, str):
        name = _MODELOPT_KV.get(scheme.upper())
        if name is None:
            raise ConfigError(f"{model}: unrecognised kv_cache_scheme {scheme!r}")
        return name
    if not isinstance(scheme, dict):
        raise ConfigError(f"{model}: quantization_config.kv_cache_scheme is not an object")
    bits, kind = scheme.get("num_bits"), scheme.get("type")
    if bits == 8 and kind == "float":
        return "fp8_e4m3"
    if bits == 8 and kind == "int":
        return "int8"
    if bits == 4 and kind == "float":
        return "nvfp4"
    raise ConfigError(
        f"{model}: unrecognised kv_cache_scheme num_bits={bits!r} type={kind!r}"
    )


def resolve_kv_dtype(
    cfg: Config, hf_quant: dict[str, Any] | None, explicit: str | None
) -> tuple[str, str]:
    """(registry name, where it came from)."""
    if explicit is not None and explicit != "auto":
        return resolve_dtype(explicit).name, "option"
    text = cfg.text()
    for view in (text, cfg):
        qc = view.get("quantization_config")
        if isinstance(qc, dict) and qc.get("kv_cache_scheme") is not None:
            return _from_kv_scheme(qc["kv_cache_scheme"], cfg.model), "quantization_config"
    if hf_quant:
        algo = (hf_quant.get("quantization") or {}).get("kv_cache_quant_algo")
        if algo is not None:
            name = _MODELOPT_KV.get(str(algo).upper())
            if name is None:
                raise ConfigError(f"{cfg.model}: unrecognised kv_cache_quant_algo {algo!r}")
            return name, "hf_quant_config"
    stated = text.dtype()
    if stated is None:
        # transformers loads a config without a dtype in float32: a fact, not a guess.
        return "float32", "default (config states no dtype; transformers loads float32)"
    return resolve_dtype(stated).name, "config"


def model_dtype(cfg: Config) -> str:
    stated = cfg.text().dtype()
    return resolve_dtype(stated).name if stated else "float32"

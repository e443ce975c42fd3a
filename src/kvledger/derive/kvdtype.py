"""Moved to ``kvledger.derive.quant`` (one vocabulary per quant_method + the KV scheme a
checkpoint declares); kept so existing imports keep working."""

from kvledger.derive.quant import model_dtype, resolve_kv_dtype

__all__ = ["model_dtype", "resolve_kv_dtype"]

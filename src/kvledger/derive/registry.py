"""model_type → the family module that knows it.

Lazy by design: a family module is imported only when a config of its type is derived, so
``import kvledger`` and the CLI start-up stay fast. An unregistered ``model_type`` fails
closed with ``UnsupportedArchitecture``; there is no "dense fallback".
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol

from kvledger.derive.config import Config
from kvledger.derive.errors import UnsupportedArchitecture
from kvledger.derive.layers import LayerCache

# model_type (top-level, as in config.json) → module under kvledger.derive.families
FAMILIES: dict[str, str] = {
    # dense and GQA decoders
    "llama": "dense",
    "mistral": "dense",
    "mixtral": "dense",
    "qwen2": "dense",
    "qwen2_moe": "dense",
    "qwen3": "dense",
    "qwen3_moe": "dense",
    "phi3": "dense",
    "phi3small": "dense",
    "gpt2": "dense",
    "cohere": "dense",
    "minimax_m2": "dense",
    # interleaved windows / chunked local attention
    "gemma2": "interleaved",
    "gemma3": "interleaved",
    "gemma3_text": "interleaved",
    "gpt_oss": "interleaved",
    "llama4": "interleaved",
    "llama4_text": "interleaved",
    # per-layer heterogeneous blocks
    "nemotron-nas": "nas",
    # encoder-decoder and cross-attention
    "whisper": "encdec",
    "mllama": "encdec",
    # multi-head latent attention and sparse indexers
    "deepseek_v2": "mla",
    "deepseek_v3": "mla",
    "kimi_k2": "mla",
    "deepseek_v32": "mla",
    "glm_moe_dsa": "mla",
    "deepseek_v4": "deepseek_v4",
    # MiniMax lightning / sparse
    "minimax_m1": "minimax",
    "minimax_m3": "minimax",
    # gated delta-net hybrids
    "qwen3_next": "gdn",
    "qwen3_5": "gdn",
    "qwen3_5_moe": "gdn",
    # Kimi delta attention hybrids
    "kimi_k3": "kda",
    "kimi_linear": "kda",
    "glm5_next": "kda",
    # Mamba hybrids
    "nemotron_h": "mamba",
    "zamba2": "mamba",
    "mamba": "mamba",
    "mamba2": "mamba",
}


@dataclass
class Derived:
    """What a family returns: the per-layer facts, plus notes and layout hints."""

    layers: list[LayerCache]
    notes: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)


class Family(Protocol):
    FAMILY: str
    CHECKED_KEYS: frozenset[str]

    def derive(self, cfg: Config, kv_dtype: str) -> Derived: ...


def family_for(model_type: str, architectures: tuple[str, ...] = ()) -> ModuleType:
    module = FAMILIES.get(model_type)
    if module is None:
        raise UnsupportedArchitecture(
            f"unsupported: model_type {model_type or '(none)'!r} "
            f"(architectures {list(architectures)}) has no kvledger family; "
            f"known model types: {', '.join(sorted(FAMILIES))}",
            model_type=model_type,
            architectures=architectures,
        )
    try:
        return importlib.import_module(f"kvledger.derive.families.{module}")
    except ModuleNotFoundError as exc:  # registered but not written yet
        if exc.name != f"kvledger.derive.families.{module}":
            raise
        raise UnsupportedArchitecture(
            f"unsupported: model_type {model_type!r} is registered to family {module!r}, "
            "which is not implemented yet",
            model_type=model_type,
            architectures=architectures,
        ) from None
